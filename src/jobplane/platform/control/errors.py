"""The control plane's typed errors, which the portal maps to 404/409/400 and the CLI prints,
and the checks of what an operator sends, made before anything changes."""

from __future__ import annotations

import json

from jobplane.contract.types import JsonObject


#: Bounds on what an operator sends, checked before anything changes.
MAX_REASON = 500
MAX_PARAMS_BYTES = 4096


class ControlError(Exception):
    code = "error"

    def __init__(self, message: str, details: JsonObject | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}


class NotFound(ControlError):
    code = "not_found"


class Conflict(ControlError):
    code = "conflict"


class Invalid(ControlError):
    code = "validation_error"


class Forbidden(ControlError):
    """The actor may not act on this job (platform/control/access.py)."""

    code = "forbidden"


_CURSOR_KEYS = {"pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk"}


def check_cursor(cursor: str | None, index_keys: tuple[str, ...] = ()) -> str | None:
    """A paging cursor must have the shape of one a page returned: a DynamoDB key of the table's
    string key attributes (with the queried index's, ``index_keys``), as JSON. What the store
    still refuses is answered 400 as well (ControlPlane._paged)."""
    if cursor is None:
        return None
    try:
        value = json.loads(cursor)
    except (ValueError, RecursionError):  # RecursionError: ~1,000 brackets fit in a cursor
        value = None
    if (isinstance(value, dict) and {"pk", "sk", *index_keys} <= set(value) <= _CURSOR_KEYS
            and all(isinstance(v, dict) and list(v) == ["S"] and isinstance(v["S"], str) and 0 < len(v["S"]) <= 1024
                    for v in value.values())):
        return cursor
    raise Invalid("cursor is not one this API returned", {"cursor": "invalid"})


def check_reason(reason: str, required: bool = True) -> None:
    """Checked before any side effect: a reason is what the audit log says, so it is bounded."""
    if required and (not reason or not reason.strip()):
        raise Invalid("a reason is required", {"reason": "required"})
    if len(reason) > MAX_REASON:
        raise Invalid(f"the reason is {len(reason)} characters; at most {MAX_REASON}", {"reason": "too long"})
