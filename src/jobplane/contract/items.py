"""The DynamoDB writes that both the compiled state machine and the runtime make, each built once.

A run normally records its own end (the compiled ``Finish`` / ``<step>: failed`` states); when
it cannot (stopped, timed out as a whole) the reconciler writes the same record and releases
the same claim through :class:`jobplane.platform.repository.Repository`. Both used to spell the
write out, in two languages, and drifted. Here each write is one builder whose values are either
literals or :class:`Ref` (a JSONPath or intrinsic the state machine evaluates); it renders as
ASL ``Parameters`` (``{"S.$": "$$.Execution.Name"}``) for the compiler or as boto3's typed
values for the repository, which refuses a Ref.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Union

from jobplane.contract import datamodel as dm
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.types import JsonObject


@dataclass(frozen=True)
class Ref:
    """A value the state machine fills in when it runs: a JSONPath or an intrinsic function."""

    expr: str


Text = Union[str, Ref]


@dataclass(frozen=True)
class StringSet:
    """A one-element string set (claims are a set of execution names)."""

    value: Text


@dataclass(frozen=True)
class Number:
    value: int


Value = Union[Text, StringSet, Number]


def formatted(prefix: str, value: Text) -> Text:
    """``prefix + value``: now for a literal, when the state machine runs for a Ref."""
    if isinstance(value, Ref):
        return Ref(f"States.Format('{prefix}{{}}', {value.expr})")
    return prefix + value


def as_asl(values: dict[str, Value]) -> dict[str, JsonObject]:
    """DynamoDB JSON for an ASL ``Parameters`` block: a Ref becomes a ``.$`` field."""
    out: dict[str, JsonObject] = {}
    for name, v in values.items():
        if isinstance(v, str):  # the commonest first: compiling 1,000 jobs renders 400,000 values
            out[name] = {"S": v}
        elif isinstance(v, Ref):
            out[name] = {"S.$": v.expr}
        elif isinstance(v, StringSet):
            out[name] = ({"SS.$": f"States.Array({v.value.expr})"} if isinstance(v.value, Ref)
                         else {"SS": [v.value]})
        else:
            out[name] = {"N": str(v.value)}
    return out


def as_boto(values: dict[str, Value]) -> dict[str, JsonObject]:
    """DynamoDB JSON for a boto3 call; every value must be known (no Ref)."""
    def known(v: Text) -> str:
        if isinstance(v, Ref):
            raise TypeError(f"{v.expr} is only known inside the state machine")
        return v

    out: dict[str, JsonObject] = {}
    for name, v in values.items():
        if isinstance(v, StringSet):
            out[name] = {"SS": [known(v.value)]}
        elif isinstance(v, Number):
            out[name] = {"N": str(v.value)}
        else:
            out[name] = {"S": known(v)}
    return out


@dataclass(frozen=True)
class Update:
    """An UpdateItem (or a transaction's Update) on the table."""

    key: dict[str, Value]
    expression: str
    values: dict[str, Value]
    names: dict[str, str] = field(default_factory=dict)
    condition: str | None = None

    def _params(self, table: str, render: Callable[[dict[str, Value]], JsonObject]) -> JsonObject:
        out: JsonObject = {"TableName": table, "Key": render(self.key), "UpdateExpression": self.expression}
        if self.condition:
            out["ConditionExpression"] = self.condition
        if self.names:
            out["ExpressionAttributeNames"] = dict(self.names)
        out["ExpressionAttributeValues"] = render(self.values)
        return out

    def asl(self, table: str) -> JsonObject:
        return self._params(table, as_asl)

    def boto(self, table: str) -> JsonObject:
        return self._params(table, as_boto)


@dataclass(frozen=True)
class Put:
    """A PutItem (or a transaction's Put) on the table."""

    item: dict[str, Value]
    condition: str | None = None

    def _params(self, table: str, render: Callable[[dict[str, Value]], JsonObject]) -> JsonObject:
        out: JsonObject = {"TableName": table, "Item": render(self.item)}
        if self.condition:
            out["ConditionExpression"] = self.condition
        return out

    def asl(self, table: str) -> JsonObject:
        return self._params(table, as_asl)

    def boto(self, table: str) -> JsonObject:
        return self._params(table, as_boto)


def job_key(job: str) -> dict[str, Value]:
    return {"pk": dm.job_partition(job), "sk": dm.STATE_SK}


def execution_key(execution: Text) -> dict[str, Value]:
    return {"pk": formatted(dm.EXEC_PREFIX, execution), "sk": dm.EXEC_SK}


def release_job(job: str, *, execution: Text, status: ExecutionStatus | str, started_at: Text,
                finished_at: Text) -> Update:
    """The job-state half of a run's end: note the outcome, when the run started and ended (the
    jobs page sorts by how long the last run took), and drop the run's claim.

    A success ends any block (acknowledged or not); any other end starts a new one,
    unacknowledged (SKIP_IF_FAILED fires skip until a success or an acknowledgement).

    The same update files the state under its new status in the status index (gsi3,
    datamodel.GSI_BY_STATUS), so the index and ``last_status`` change together. A global secondary
    index holds only the items that have its key attributes ("Global secondary indexes are sparse
    by default. [...] Only items in the base table that contain those attributes appear in the
    index", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-general-sparse-indexes.html):
    a job no run ever claimed is in no partition of it. The claim files it under RUNNING
    (compiler/asl.py ``claim_update``); this files it under its status even if another run of
    the job still holds the claim (one update cannot ask whether ``running`` is left empty), and
    the reconciler, which handles every run's end, files that one back (Repository.refile_status)."""
    status = ExecutionStatus(status)
    blocks = ", ".join(dm.ATTR_BLOCKS)
    # a rejected approval (REJECTED) is no failure: it neither starts nor ends a failure block
    block = "" if status == ExecutionStatus.REJECTED else (f" REMOVE {dm.ATTR_BLOCKED_BY}, {blocks}, {dm.ATTR_ACKNOWLEDGED_BY}"
             if status == ExecutionStatus.SUCCEEDED else
             f", {dm.ATTR_BLOCKED_BY} = :me, " + ", ".join(f"{b} = :me" for b in dm.ATTR_BLOCKS)
             + f" REMOVE {dm.ATTR_ACKNOWLEDGED_BY}")
    return Update(
        key=job_key(job),
        expression=(f"SET {dm.ATTR_LAST_STATUS} = :st, {dm.ATTR_LAST_EXECUTION} = :me, "
                    f"{dm.ATTR_LAST_STARTED_AT} = :started, {dm.ATTR_LAST_FINISHED_AT} = :now, "
                    f"{dm.ATTR_STATUS_PK} = :stpk, {dm.ATTR_STATUS_SK} = :job" + block
                    + " DELETE #running :meset"),
        names={"#running": dm.ATTR_RUNNING},
        values={":st": status.value, ":me": execution, ":started": started_at, ":now": finished_at,
                ":stpk": dm.status_partition(status.value), ":job": job, ":meset": StringSet(execution)},
    )


def release_claim(job: str, *, execution: str) -> Update:
    """Drop a run's claim and nothing else: the end of a run another run replaced (a REPLACE
    job), which says nothing about how the job is doing, so its last status, failure block and
    last run stay as they were (the replacing run sets them when it ends)."""
    return Update(key=job_key(job), expression="DELETE #running :meset", names={"#running": dm.ATTR_RUNNING},
                  values={":meset": StringSet(execution)})


def execution_record(*, execution: Text, execution_arn: Text | None, job: str, team: str,
                     status: ExecutionStatus | str, trigger: Text | None, scheduled_time: Text | None,
                     requested_by: Text | None, input_json: Text, started_at: Text | None, finished_at: Text | None,
                     steps: Text | None = None,
                     failed_step: Text | None = None, skip_reason: str | None = None,
                     blocked_by: Text | None = None, error: str | None = None,
                     only_if_new: bool = False, alert_pending: bool = False, abort_reason: str | None = None,
                     blackout: str | None = None, blackout_action: str | None = None) -> Put:
    """The final record of a run or a skip (docs/data-model.md).

    It joins the job's history (gsi1, by start time) and, unless it succeeded or the platform
    stopped it on purpose (``abort_reason``: a replaced run is no failure), the feed of its
    status (gsi2, by end time: failures, skips, missed fires). ``only_if_new``: do not replace a record already written."""
    status = ExecutionStatus(status)
    item: dict[str, Value | None] = {
        **execution_key(execution),
        dm.ATTR_EXECUTION: execution, dm.ATTR_EXECUTION_ARN: execution_arn, "job": job, "team": team,
        "status": status.value, "trigger": trigger, "scheduled_time": scheduled_time,
        "requested_by": requested_by, "input": input_json, "started_at": started_at, "finished_at": finished_at,
        "gsi1pk": dm.job_partition(job), "gsi1sk": started_at,
        dm.ATTR_STEPS: steps,
    }
    if skip_reason is not None:
        item["skip_reason"] = skip_reason
    if abort_reason is not None:
        item[dm.ATTR_ABORT_REASON] = abort_reason
    if blackout is not None:  # BLACKED_OUT: the window (contract/blackouts.py) and what it does
        item |= {"blackout": blackout, "blackout_action": blackout_action}
    feed = None if abort_reason is not None else dm.feed_of(status.value)
    if feed is not None:
        item |= {"gsi2pk": feed, "gsi2sk": finished_at}
    item |= {"failed_step": failed_step, dm.ATTR_BLOCKED_BY: blocked_by, "error": error,
             dm.ATTR_ALERT_PENDING: Number(1) if alert_pending else None}
    return Put({k: v for k, v in item.items() if v is not None},
               condition="attribute_not_exists(pk)" if only_if_new else None)
