"""Run after another job: the EventBridge rule a job's ``after`` compiles to, defined once for the
compiler (Terraform) and the local engine (which delivers the same status events).

Step Functions sends an "Execution Status Change" event to EventBridge when an execution ends
(https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-integration.html; detail:
``executionArn``, ``stateMachineArn``, ``name``, ``status``, ...). A rule per (downstream,
upstream) matches the upstream state machine's terminal status and starts the downstream state
machine with an input transformer. The event cannot say what the run recorded (a run that the
policy skipped ends SUCCEEDED too) and may arrive twice, so the downstream machine reads the
upstream's record first and marks it (``Upstream: ...`` states, compiler/asl.py): a skip starts
nothing, and a second delivery finds its mark and is recorded as a DUPLICATE skip.
"""

from __future__ import annotations

import json
from typing import Literal

from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.statuses import ExecutionStatus, Trigger
from jobplane.contract.types import JsonObject

On = Literal["SUCCEEDED", "FAILED"]

#: Per ``on``: the Step Functions statuses the rule matches...
EVENT_STATUSES: dict[str, tuple[str, ...]] = {"SUCCEEDED": ("SUCCEEDED",), "FAILED": ("FAILED",)}
#: ...and the upstream record's statuses that start the downstream job (a failed or timed-out
#: step ends the execution FAILED; a skip ends it SUCCEEDED and starts nothing).
RECORD_STATUSES: dict[str, tuple[str, ...]] = {
    "SUCCEEDED": (ExecutionStatus.SUCCEEDED.value,),
    "FAILED": (ExecutionStatus.FAILED.value, ExecutionStatus.TIMED_OUT.value),
}

#: The input transformer: the event's values it reads...
INPUT_PATHS = {"name": "$.detail.name", "time": "$.time"}
#: ...and the input it sends (EventBridge replaces <name> and <time>). ``scheduled_time`` is
#: replaced by the upstream run's own before the claim; ``params`` by the job's.
INPUT_TEMPLATE = ('{"trigger":"' + Trigger.UPSTREAM.value + '","scheduled_time":"<time>","requested_by":"after <name>",'
                  '"params":{},"resume_from":null,"rerun_of":null,"upstream":"<name>"}')


def input_template(definition: str | None = None) -> str:
    """:data:`INPUT_TEMPLATE`, with the digest of the downstream job's definition its compile
    stamped (contract/definition_digest.py): a run started by the rule carries it as any other."""
    if definition is None:
        return INPUT_TEMPLATE
    return INPUT_TEMPLATE[:-1] + f',"definition":{json.dumps(definition)}}}'


def event_pattern(upstream_state_machine_arn: str, on: str) -> JsonObject:
    return {"source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"],
            "detail": {"status": list(EVENT_STATUSES[on]), "stateMachineArn": [upstream_state_machine_arn]}}


def transformed_input(name: str, time: str, definition: str | None = None) -> ExecutionInput:
    """What the rule's target sends for an event (the local engine's delivery)."""
    return ExecutionInput.read(json.loads(input_template(definition).replace("<name>", name).replace("<time>", time)),
                               None)


def rule_name(prefix: str, job: str, upstream: str) -> str:
    """The rule (and its target) of ``job``'s wait for ``upstream``: at most 64 characters."""
    import hashlib

    name = f"{prefix}-after-{upstream}-{job}"
    if len(name) <= 64:
        return name
    return f"{name[:55]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
