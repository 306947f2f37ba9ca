"""The loose shapes that stay loose, named (as Starlette's ``types.py`` names ``Scope``).

Everything jobplane itself defines across a module boundary is a typed record
(:mod:`jobplane.contract.records`, :mod:`jobplane.contract.execution_input`, the catalog). What
is left untyped is somebody else's document passed through as a whole: the JSON a service
accepts or answers (an ASL state, a Terraform block, a boto3 response), whose schema is that
service's, not ours. Naming each says which it is at every use, and keeps ``Any`` to this file
and the few places that decode a value before checking it.
"""

from __future__ import annotations

from typing import Any, TypeAlias

#: A JSON value read from outside and not yet checked (a job's params, an API body's field).
JsonValue: TypeAlias = Any
#: A JSON object built or read whole: an ASL state, a Terraform block, an SNS message, an event.
JsonObject: TypeAlias = dict[str, Any]
#: A job's params: names to JSON values, as the job's definition or a person gave them.
Params: TypeAlias = dict[str, Any]
#: One DynamoDB attribute value in the service's typed JSON (``{"S": "..."}``, ``{"SS": [...]}``).
AttributeValue: TypeAlias = dict[str, Any]
#: A DynamoDB item (or key) in the service's typed JSON.
Item: TypeAlias = dict[str, AttributeValue]
#: A boto3 client or one of its answers: boto3 builds both at run time from the service model,
#: so without generated stubs they have no static type (the calls are checked by the IAM tests
#: and the local AWS instead).
Client: TypeAlias = Any
Response: TypeAlias = dict[str, Any]
