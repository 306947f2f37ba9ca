"""The states of an approval step (``jp.approval``, compiler/kinds/approval.py).

``<step>`` is one Task: the AWS SDK integration ``dynamodb:putItem`` with ``.waitForTaskToken``
writes the approval's record (contract/approvals.py), the task token from ``$$.Task.Token`` in it,
and Step Functions waits until the platform calls SendTaskSuccess (approved: the run goes on) or
SendTaskFailure with ``Approval.Rejected`` (the run ends REJECTED), or until the approval's
``timeout`` (the Task's ``TimeoutSeconds``: ``States.Timeout``), when ``<step>: approval
timeout`` marks the record TIMED_OUT and the step takes its ``on_timeout``.

Why the SDK integration and not the optimised ``dynamodb:putItem``: the optimised DynamoDB
integration supports Request Response only, the AWS SDK integrations support the callback pattern
("Integration pattern support", https://docs.aws.amazon.com/step-functions/latest/dg/connect-to-resource.html;
"Wait for a Callback with Task Token", same page, #connect-wait-token). Why a record and not a
Lambda: no Lambda in the hot path (docs/architecture.md), and the state machine writes the record
with the same role it writes every record with. A ``TimeoutSeconds`` on a callback Task bounds
the wait whatever heartbeats arrive; a late SendTaskSuccess then fails with TaskTimedOut
("SendTaskHeartbeat", https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskHeartbeat.html;
"SendTaskSuccess" errors, https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskSuccess.html).

A rejected run is recorded REJECTED (its own status: no failure alert, no failure block) and its
execution ends without error; the wait keeps the run RUNNING, so a job ``deadline`` still raises
DEADLINE while an approval is pending (platform/deadlines.py reads runs, not steps).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from jobplane.compiler.state_data import ERROR, FAILED_STEP_VAR
from jobplane.compiler.states import DISCARD, Catch, Retry, Task
from jobplane.compiler.terraform_iam import statement
from jobplane.contract import approvals as ca
from jobplane.contract import datamodel as dm
from jobplane.contract import items
from jobplane.contract import states as sn
from jobplane.contract.bindings import token
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.items import Number, Ref
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import GroupBuilder
    from jobplane.compiler.model import Step

#: The callback pattern on the AWS SDK integration of DynamoDB PutItem.
PUT_AND_WAIT = "arn:aws:states:::aws-sdk:dynamodb:putItem.waitForTaskToken"
UPDATE_ITEM = "arn:aws:states:::dynamodb:updateItem"
_TRANSIENT = ("ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerErrorException",
              "RequestLimitExceededException")
#: The record's write, retried on DynamoDB's transient errors (the SDK integration's names:
#: "DynamoDb.<name>Exception", compiler/asl.py sdk_error); a retry writes it again with a new token.
PUT_RETRY = Retry(tuple(f"DynamoDb.{e}" for e in _TRANSIENT), 5, interval=1, backoff=2.0, max_delay=20,
                  full_jitter=True)


# what the running execution knows about itself (as compiler/asl.py names them; not imported from
# there: the ASL builder imports the kinds, which import this module when asked for states)
EXECUTION_NAME = Ref("$$.Execution.Name")
EXECUTION_ARN = Ref("$$.Execution.Id")
NOW = Ref("$$.State.EnteredTime")
REQUESTED_BY = ExecutionInput.ref("requested_by")


def _key(step: Step) -> dict[str, items.Value]:
    return {"pk": items.formatted(ca.PREFIX, EXECUTION_NAME), "sk": step.name}


def approval_states(b: GroupBuilder, step: Step, nxt: str) -> str:
    """Add the approval's states, going on to ``nxt`` once approved; return the first one's name."""
    spec = step.target
    name = sn.attempt(step.name)
    rejected = sn.approval_rejected(step.name)
    timed_out = sn.approval_timeout(step.name)
    failed = b.step_failure_state(step, ExecutionStatus.FAILED, b.graph, True)

    record = b.record_state(ExecutionStatus.REJECTED, step.name)
    record.next = None  # a rejection is no failure: recorded, no alert, the execution ends cleanly
    record.comment = "Rejected: recorded REJECTED, no failure alert"
    b.graph.add(rejected, record)

    values: dict[str, items.Value] = {
        **_key(step),
        ca.TOKEN: Ref("$$.Task.Token"),
        "job": b.job.name, "team": b.job.team,
        dm.ATTR_EXECUTION: EXECUTION_NAME, dm.ATTR_EXECUTION_ARN: EXECUTION_ARN, "step": step.name,
        ca.STATUS: ca.ApprovalStatus.PENDING.value,
        ca.APPROVERS: json.dumps(list(spec.approvers)),
        ca.FOUR_EYES: "1" if spec.four_eyes else "0",
        ca.STARTED_BY: REQUESTED_BY,
        ca.ASKED_AT: NOW,
        ca.TIMEOUT: Number(spec.timeout),
        ca.ON_TIMEOUT: spec.on_timeout,
        ca.REMINDERS: Number(0),
        "gsi2pk": ca.PENDING_PARTITION,
        "gsi2sk": Ref("States.Format('{}#{}', $$.State.EnteredTime, $$.Execution.Name)"),
    }
    if spec.prompt:
        values[ca.PROMPT] = spec.prompt
    channel = spec.channel or next((c for c in b.job.notify.channels if c.startswith("#")), None)
    if channel:
        values[ca.CHANNEL] = channel
    if spec.remind:
        values[ca.REMIND] = Number(spec.remind)
    b.graph.add(name, Task(
        comment=f"Wait for a person's decision (at most {spec.timeout}s, then {spec.on_timeout}); the task token "
                "is kept in the approval's record only",
        resource=PUT_AND_WAIT,
        parameters={"TableName": token("table_name"), "Item": items.as_asl(values)},
        result_path=DISCARD,
        timeout_seconds=spec.timeout,
        retry=[PUT_RETRY],
        catch=[Catch([ca.REJECTED_ERROR], rejected, "$.approval"),
               Catch(["States.Timeout"], timed_out, "$.approval", assign={FAILED_STEP_VAR: step.name}),
               Catch(["States.ALL"], failed, ERROR)],
        next=nxt))

    on_timeout = ca.OnTimeout(spec.on_timeout)
    then = {ca.OnTimeout.APPROVE: nxt, ca.OnTimeout.REJECT: rejected,
            ca.OnTimeout.FAIL: b.step_failure_state(step, ExecutionStatus.TIMED_OUT, b.graph, True)}[on_timeout]
    b.graph.add(timed_out, Task(
        comment=f"Nobody decided in time: the record says so (unless a decision just landed), then {on_timeout.value}",
        resource=UPDATE_ITEM,
        parameters={"TableName": token("table_name"), "Key": items.as_asl(_key(step)),
                    "UpdateExpression": f"SET #st = :timedout, {ca.DECIDED_AT} = :now REMOVE gsi2pk, gsi2sk",
                    "ConditionExpression": "#st = :pending",
                    "ExpressionAttributeNames": {"#st": ca.STATUS},
                    "ExpressionAttributeValues": items.as_asl({
                        ":timedout": ca.ApprovalStatus.TIMED_OUT.value, ":pending": ca.ApprovalStatus.PENDING.value,
                        ":now": NOW})},
        result_path=DISCARD,
        retry=[b.ddb_retry],
        catch=[Catch(["DynamoDB.ConditionalCheckFailedException"], then, DISCARD_PATH)],
        next=then))
    return name


#: Where a caught error goes when nothing reads it (a decision that landed as the wait timed out).
DISCARD_PATH = "$.approval_race"


def role_statements() -> list[JsonObject]:
    """What the state machine's role calls for its approvals: the record's write and its timeout
    mark, on approval records only (the claim's statement names the job's and executions' keys)."""
    return [statement("ApprovalRecords", ["dynamodb:PutItem", "dynamodb:UpdateItem"], ["${local.platform.table_arn}"],
                      [{"test": "ForAllValues:StringLike", "variable": "dynamodb:LeadingKeys",
                        "values": [f"{ca.PREFIX}*"]}])]

