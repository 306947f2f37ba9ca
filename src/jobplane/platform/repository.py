"""The platform repository: every read and write of job state, executions, skips and audit
entries outside the state machines goes through here (reconciler, CLI, portal, tests), so the
key design of :mod:`jobplane.contract.datamodel` is used in one place. No query scans.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from jobplane.contract import datamodel as dm
from jobplane.contract import execution_input, items
from jobplane.contract.statuses import Trigger
from jobplane.platform.clock import now_iso, seconds_between
from jobplane.platform.timeline import attempt_rows

#: The claim refuses a scheduled fire while this is set (contract/datamodel.ATTR_PAUSE_PREFIX).
PAUSE_SCHEDULE = f"{dm.ATTR_PAUSE_PREFIX}{Trigger.SCHEDULE.value}"
#: What the claim writes of scheduled fires: the newest claimed, and how many were ever claimed.
FIRED_SCHEDULE = f"{dm.ATTR_FIRED_PREFIX}{Trigger.SCHEDULE.value}"
CLAIMS_SCHEDULE = f"{dm.ATTR_CLAIMS_PREFIX}{Trigger.SCHEDULE.value}"

_des, _ser = TypeDeserializer(), TypeSerializer()


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    # Most values are strings: read them directly (the deserializer's dispatch is ~1/10 of the
    # jobs page's work at 1,000 jobs), everything else as boto3 reads it.
    out = {}
    for k, v in item.items():
        text = v.get("S") if len(v) == 1 else None
        out[k] = text if type(text) is str else _des.deserialize(v)
    return out


def query_items(ddb: Any, kwargs: dict[str, Any], limit: int | None = None) -> tuple[list[dict[str, Any]], Any]:
    """A Query read page by page (DynamoDB answers at most 1 MB at a time) until ``limit`` items,
    or all of them: the items, and the key a next read would go on from (None at the end)."""
    kwargs = dict(kwargs)
    items: list[dict[str, Any]] = []
    while True:
        if limit is not None:
            kwargs["Limit"] = limit - len(items)
        out = ddb.query(**kwargs)
        items += out.get("Items", [])
        last = out.get("LastEvaluatedKey")
        if not last or (limit is not None and len(items) >= limit):
            return items, last
        kwargs["ExclusiveStartKey"] = last


def _job_key(job: str) -> dict[str, Any]:
    return items.as_boto(items.job_key(job))


def _exec_key(execution: str) -> dict[str, Any]:
    return items.as_boto(items.execution_key(execution))


@dataclass(frozen=True)
class JobState:
    job: str
    team: str = ""
    running: frozenset[str] = frozenset()
    holder: str | None = None
    last_status: str | None = None
    last_execution: str | None = None
    last_finished_at: str | None = None
    last_started_at: str | None = None  # of the last run that ended (none before this was kept)
    blocked_by: str | None = None  # the failed run that blocks SKIP_IF_FAILED fires...
    acknowledged_by: str | None = None  # ...unless someone acknowledged it
    paused_by: str | None = None
    paused_reason: str | None = None
    paused_at: str | None = None
    # an open episode of missed fires (platform/missed.py): the first, how many, why
    missed_since: str | None = None
    missed_count: int = 0
    missed_cause: str | None = None
    # the fire ledger's own (platform/missed.py reads them with LEDGER_ATTRIBUTES): its watermark
    # and the claim count for it, the alert's outbox flag; and what the claims wrote: the newest
    # scheduled fire claimed and how many were ever claimed
    fires_checked_until: str | None = None
    fires_claims_checked: int | None = None
    missed_alert_pending: bool = False
    fired_schedule: str | None = None
    claims_schedule: int = 0

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    @property
    def last_duration(self) -> float | None:
        """Seconds the last run that ended took, when both its times are known."""
        if not (self.last_started_at and self.last_finished_at):
            return None
        return max(seconds_between(self.last_started_at, self.last_finished_at), 0.0)

    @property
    def blocked(self) -> bool:
        """A failure blocks scheduled fires of SKIP_IF_FAILED jobs (not yet acknowledged)."""
        return self.blocked_by is not None and self.acknowledged_by is None

    #: Every attribute :meth:`from_item` reads: the jobs' state query asks for these alone. A
    #: claimed job's item also holds its duplicate keys (``fire_*``, the other triggers'
    #: ``fired_*`` and ``claims_*``), blocks and index keys, which no reader of a state needs;
    #: leaving them out of the answer is what DynamoDB sends and every client parses (~40% of the
    #: jobs page's store time at 1,000 jobs, bench/portal.py). Readers of a few fields ask for
    #: fewer (the jobs page, the fire ledger).
    ATTRIBUTES = ("job", "team", dm.ATTR_RUNNING, dm.ATTR_HOLDER, dm.ATTR_LAST_STATUS, dm.ATTR_LAST_EXECUTION,
                  dm.ATTR_LAST_FINISHED_AT, dm.ATTR_LAST_STARTED_AT, dm.ATTR_BLOCKED_BY, dm.ATTR_ACKNOWLEDGED_BY,
                  dm.ATTR_PAUSED_BY, dm.ATTR_PAUSED_REASON, dm.ATTR_PAUSED_AT, dm.ATTR_MISSED_SINCE,
                  dm.ATTR_MISSED_COUNT, dm.ATTR_MISSED_CAUSE, dm.ATTR_FIRES_CHECKED, dm.ATTR_FIRES_CLAIMS,
                  dm.ATTR_MISSED_ALERT, FIRED_SCHEDULE, CLAIMS_SCHEDULE)

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> JobState:
        p = _plain(item)
        # A claim's name set is read defensively: one malformed item (an execution once named
        # null) must not take every page that lists jobs down.
        running = frozenset(r for r in p.get(dm.ATTR_RUNNING) or () if isinstance(r, str) and r)
        return cls(job=p.get("job") or str(p.get("pk", "")).removeprefix(dm.JOB_PREFIX), team=p.get("team", ""), running=running,
                   holder=p.get(dm.ATTR_HOLDER), last_status=p.get(dm.ATTR_LAST_STATUS),
                   last_execution=p.get(dm.ATTR_LAST_EXECUTION), last_finished_at=p.get(dm.ATTR_LAST_FINISHED_AT),
                   last_started_at=p.get(dm.ATTR_LAST_STARTED_AT),
                   blocked_by=p.get(dm.ATTR_BLOCKED_BY), acknowledged_by=p.get(dm.ATTR_ACKNOWLEDGED_BY),
                   paused_by=p.get(dm.ATTR_PAUSED_BY),
                   paused_reason=p.get(dm.ATTR_PAUSED_REASON), paused_at=p.get(dm.ATTR_PAUSED_AT),
                   missed_since=p.get(dm.ATTR_MISSED_SINCE), missed_count=int(p.get(dm.ATTR_MISSED_COUNT) or 0),
                   missed_cause=p.get(dm.ATTR_MISSED_CAUSE), fires_checked_until=p.get(dm.ATTR_FIRES_CHECKED),
                   fires_claims_checked=None if p.get(dm.ATTR_FIRES_CLAIMS) is None else int(p[dm.ATTR_FIRES_CLAIMS]),
                   missed_alert_pending=dm.ATTR_MISSED_ALERT in p, fired_schedule=p.get(FIRED_SCHEDULE),
                   claims_schedule=int(p.get(CLAIMS_SCHEDULE) or 0))


@dataclass(frozen=True)
class Execution:
    execution: str
    job: str
    status: str
    trigger: str | None = None
    scheduled_time: str | None = None
    requested_by: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    failed_step: str | None = None
    skip_reason: str | None = None
    error: str | None = None
    input: dict[str, Any] = field(default_factory=dict)
    blocked_by: str | None = None  # a LAST_FAILED skip: the failed run that blocked it
    steps: dict[str, Any] = field(default_factory=dict)
    execution_arn: str | None = None
    expires_at: int | None = None
    team: str = ""
    timeline: list[dict[str, Any]] = field(default_factory=list)
    transitions: int | None = None
    rerun_by: tuple[str, ...] = ()
    after_runs: tuple[str, ...] = ()  # the runs of downstream jobs this run's end started (``after``)
    after_jobs: tuple[str, ...] = ()  # ...and their jobs
    alert_pending: bool = False  # recorded by the reconciler, its alert not yet published

    @property
    def resume_from(self) -> str | None:
        return self.input.get("resume_from")

    @property
    def rerun_of(self) -> str | None:
        return self.input.get("rerun_of")

    @property
    def upstream(self) -> str | None:
        """The run of another job whose end started this one (``after``)."""
        value = self.input.get("upstream")
        return value if isinstance(value, str) else None

    def attempts(self, step: str) -> list[dict[str, Any]]:
        """The step's attempts in order, each with its outcome, exit code and, for a failed one,
        error, StopCode and reason (:func:`jobplane.platform.timeline.attempt_rows`)."""
        return [row for row in attempt_rows(self.steps, self.timeline) if row["step"] == step]

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Execution:
        p = _plain(item)
        return cls(
            execution=p["execution"], job=p["job"], status=p["status"], trigger=p.get("trigger"),
            scheduled_time=p.get("scheduled_time"), requested_by=p.get("requested_by"),
            started_at=p.get("started_at"), finished_at=p.get("finished_at"), failed_step=p.get("failed_step"),
            skip_reason=p.get("skip_reason"), error=p.get("error"),
            input=json.loads(p["input"]) if p.get("input") else {},
            steps=json.loads(p["steps"]) if p.get("steps") else {},
            execution_arn=p.get("execution_arn"),
            expires_at=int(p["expires_at"]) if p.get("expires_at") is not None else None,
            team=p.get("team", ""), timeline=json.loads(p["timeline"]) if p.get("timeline") else [],
            transitions=int(p["transitions"]) if p.get("transitions") is not None else None,
            rerun_by=tuple(sorted(p.get("rerun_by", ()))), blocked_by=p.get(dm.ATTR_BLOCKED_BY),
            after_runs=tuple(sorted(p.get(dm.ATTR_AFTER_RUNS, ()))),
            after_jobs=tuple(sorted(p.get(dm.ATTR_AFTER_JOBS, ()))),
            alert_pending=dm.ATTR_ALERT_PENDING in p,
        )


@dataclass(frozen=True)
class Page:
    items: list[Any]
    cursor: str | None  # pass back to get the next page


class Repository:
    def __init__(self, dynamodb: Any, table: str):
        self.ddb = dynamodb
        self.table = table

    # -- reads ------------------------------------------------------------------------------
    def job_state(self, job: str) -> JobState | None:
        item = self.ddb.get_item(TableName=self.table, Key=_job_key(job), ConsistentRead=True).get("Item")
        return JobState.from_item(item) if item else None

    def job_states(self, attributes: tuple[str, ...] = JobState.ATTRIBUTES) -> list[JobState]:
        """Every job that has a state (it ran, was claimed or paused), by name. Each writer that
        puts a state in the JOBS partition also sets its ``job``, so the projection holds it.
        ``attributes``: a reader that shows fewer (the jobs page) reads fewer; the fields of the
        others keep their defaults."""
        page = self._query(dm.GSI_BY_OWNER, "gsi1pk", dm.JOBS_PARTITION, None, True, attributes=attributes)
        return [JobState.from_item(i) for i in page.items]

    def execution(self, name: str) -> Execution | None:
        item = self.ddb.get_item(TableName=self.table, Key=_exec_key(name), ConsistentRead=True).get("Item")
        return Execution.from_item(item) if item else None

    def executions(self, job: str, limit: int = 20, cursor: str | None = None) -> Page:
        """A job's executions (runs and skips), newest first."""
        return self._executions(dm.GSI_BY_OWNER, "gsi1pk", dm.job_partition(job), limit, cursor)

    def recent_failures(self, limit: int = 50, cursor: str | None = None) -> Page:
        return self._executions(dm.GSI_BY_KIND, "gsi2pk", dm.FAILURES_PARTITION, limit, cursor)

    def recent_skips(self, limit: int = 50, cursor: str | None = None) -> Page:
        return self._executions(dm.GSI_BY_KIND, "gsi2pk", dm.SKIPS_PARTITION, limit, cursor)

    def _executions(self, index: str, key: str, value: str, limit: int, cursor: str | None) -> Page:
        page = self._query(index, key, value, limit, False, cursor)
        return Page([Execution.from_item(i) for i in page.items], page.cursor)

    def _query(self, index: str, key: str, value: str, limit: int | None, forward: bool,
               cursor: str | None = None, attributes: tuple[str, ...] = ()) -> Page:
        kwargs: dict[str, Any] = {"TableName": self.table, "IndexName": index,
                                  "KeyConditionExpression": "#k = :v", "ExpressionAttributeNames": {"#k": key},
                                  "ExpressionAttributeValues": {":v": {"S": value}}, "ScanIndexForward": forward}
        if attributes:  # by placeholder: some attribute names are DynamoDB reserved words
            names = {f"#a{i}": a for i, a in enumerate(attributes)}
            kwargs["ProjectionExpression"] = ", ".join(names)
            kwargs["ExpressionAttributeNames"] |= names
        if cursor:
            kwargs["ExclusiveStartKey"] = json.loads(cursor)
        items, last = query_items(self.ddb, kwargs, limit)
        return Page(items, json.dumps(last) if last else None)

    # -- writes outside the state machine ------------------------------------------------------
    def finish_without_cleanup(self, *, job: str, team: str, execution: str, execution_arn: str, status: str,
                               started_at: str, finished_at: str, input_json: str, failed_step: str | None,
                               error: str | None) -> bool:
        """Record the end of an execution that could not run its own cleanup, and release its
        claim, in one transaction: the same two writes its state machine would have made
        (:mod:`jobplane.contract.items`), the record marked ``alert_pending`` until
        :meth:`alert_published`. False if a final record already exists (nothing changed)."""
        parsed = execution_input.complete(json.loads(input_json or "{}"), started_at)
        given = {f: parsed[f] for f in ("trigger", "scheduled_time", "requested_by") if isinstance(parsed.get(f), str)}
        record = items.execution_record(
            execution=execution, execution_arn=execution_arn, job=job, team=team, status=status,
            trigger=given.get("trigger"), scheduled_time=given.get("scheduled_time"),
            requested_by=given.get("requested_by"), input_json=input_json, started_at=started_at,
            finished_at=finished_at, steps="{}", failed_step=failed_step, error=error, only_if_new=True,
            alert_pending=True)
        release = items.release_job(job, execution=execution, status=status, started_at=started_at,
                                    finished_at=finished_at)
        try:
            self.ddb.transact_write_items(TransactItems=[{"Put": record.boto(self.table)},
                                                         {"Update": release.boto(self.table)}])
        except self.ddb.exceptions.TransactionCanceledException:
            return False
        self.release_holder(job, execution_arn)
        return True

    def alert_published(self, execution: str) -> None:
        """The record's alert went out (finish_without_cleanup left it pending)."""
        self.ddb.update_item(TableName=self.table, Key=_exec_key(execution),
                             UpdateExpression=f"REMOVE {dm.ATTR_ALERT_PENDING}",
                             ConditionExpression="attribute_exists(pk)")

    def release_holder(self, job: str, execution_arn: str) -> bool:
        """Clear ``holder`` if it still names this execution (the fence: never someone else's)."""
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job), UpdateExpression="REMOVE holder",
                                 ConditionExpression="holder = :me", ExpressionAttributeValues={":me": {"S": execution_arn}})
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def finalize(self, execution: str, expires_at: int, timeline: list[dict[str, Any]], transitions: int,
                 error: str | None = None) -> bool:
        """Add what the execution history (and the failed step's log) knows to a final record,
        and its TTL. False if there is no record; any other error is raised."""
        values = {":e": {"N": str(expires_at)}, ":t": {"S": json.dumps(timeline)}, ":n": {"N": str(transitions)}}
        update = "SET expires_at = :e, timeline = :t, transitions = :n"
        if error:
            update += ", #error = if_not_exists(#error, :err)"
            values[":err"] = {"S": error}
        try:
            self.ddb.update_item(TableName=self.table, Key=_exec_key(execution), UpdateExpression=update,
                                 ConditionExpression="attribute_exists(pk)", ExpressionAttributeValues=values,
                                 **({"ExpressionAttributeNames": {"#error": "error"}} if error else {}))
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def mark_slow(self, execution: str, expires_at: int) -> bool:
        """True the first time only: whoever writes the marker announces the slow run."""
        try:
            self.ddb.put_item(TableName=self.table, Item={"pk": {"S": dm.slow_pk(execution)}, "sk": {"S": dm.SLOW_SK},
                                                          "expires_at": {"N": str(expires_at)}},
                              ConditionExpression="attribute_not_exists(pk)")
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def link_rerun(self, original: str, rerun: str) -> None:
        """Remember on the original that ``rerun`` re-ran it (lineage both ways, no scan)."""
        try:
            self.ddb.update_item(TableName=self.table, Key=_exec_key(original),
                                 UpdateExpression="ADD rerun_by :r", ConditionExpression="attribute_exists(pk)",
                                 ExpressionAttributeValues={":r": {"SS": [rerun]}})
        except self.ddb.exceptions.ConditionalCheckFailedException:
            pass

    def set_paused(self, job: str, team: str, actor: str, reason: str, at: str) -> None:
        self.ddb.update_item(TableName=self.table, Key=_job_key(job),
                             UpdateExpression="SET paused_by = :a, paused_reason = :r, paused_at = :t, #pause = :t, "
                                              "team = if_not_exists(team, :team), job = if_not_exists(job, :job), "
                                              "gsi1pk = :jobs, gsi1sk = :job",
                             ExpressionAttributeNames={"#pause": PAUSE_SCHEDULE},
                             ExpressionAttributeValues={":a": {"S": actor}, ":r": {"S": reason}, ":t": {"S": at},
                                                        ":team": {"S": team}, ":job": {"S": job},
                                                        ":jobs": {"S": dm.JOBS_PARTITION}})

    def clear_paused(self, job: str) -> bool:
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job),
                                 UpdateExpression="REMOVE paused_by, paused_reason, paused_at, #pause",
                                 ExpressionAttributeNames={"#pause": PAUSE_SCHEDULE},
                                 ConditionExpression="attribute_exists(paused_at)")
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def release_claim(self, job: str, execution: str, execution_arn: str | None) -> bool:
        """Drop a dead execution's claim: its name from ``running`` and, if it is the holder,
        ``holder``. The caller has checked that the execution is no longer running."""
        names = {"#running": dm.ATTR_RUNNING}
        values: dict[str, Any] = {":meset": {"SS": [execution]}, ":me": {"S": execution}}
        update = "DELETE #running :meset"
        condition = "contains(#running, :me)"
        if execution_arn:
            values[":arn"] = {"S": execution_arn}
            update = "REMOVE holder " + update
            condition = f"({condition}) OR holder = :arn"
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job), UpdateExpression=update,
                                 ConditionExpression=condition, ExpressionAttributeNames=names,
                                 ExpressionAttributeValues=values)
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def add_audit(self, actor: str, action: str, job: str, execution: str | None = None, reason: str = "",
                  details: dict[str, Any] | None = None) -> str:
        at = now_iso()
        entry_id = uuid.uuid4().hex
        item = {"pk": dm.audit_pk(entry_id), "sk": dm.AUDIT_SK, "actor": actor, "action": action, "job": job,
                "reason": reason, "at": at, "gsi1pk": dm.AUDIT_PARTITION, "gsi1sk": at,
                "gsi2pk": dm.job_audit_partition(job), "gsi2sk": at,
                "details": json.dumps(details or {}, sort_keys=True)}
        if execution:
            item["execution"] = execution
        self.ddb.put_item(TableName=self.table, Item={k: _ser.serialize(v) for k, v in item.items()})
        return entry_id

    def delete_audit(self, entry_id: str) -> None:
        """Only for an action that failed after its entry was written (ControlPlane.audited)."""
        self.ddb.delete_item(TableName=self.table, Key={"pk": {"S": dm.audit_pk(entry_id)}, "sk": {"S": dm.AUDIT_SK}})

    def audit_log(self, limit: int = 100) -> list[dict[str, Any]]:
        return [_plain(i) for i in self._query(dm.GSI_BY_OWNER, "gsi1pk", dm.AUDIT_PARTITION, limit, False).items]

    def acknowledge_failure(self, job: str, blocked_by: str | None = None, actor: str = "") -> bool:
        """Unblock a SKIP_IF_FAILED job without a successful run (the control plane audits it):
        scheduled runs go ahead again; the failure stays recorded as acknowledged, so the next
        success still announces RECOVERED (docs/notifications.md). With ``blocked_by``, only if
        that execution is still the one blocking, unacknowledged."""
        if blocked_by is None:
            state = self.job_state(job)
            if state is None or not state.blocked:
                return False
            blocked_by = state.blocked_by
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job),
                                 UpdateExpression=f"REMOVE {', '.join(dm.ATTR_BLOCKS)} SET {dm.ATTR_ACKNOWLEDGED_BY} = :a",
                                 ConditionExpression=f"{dm.ATTR_BLOCKED_BY} = :b AND attribute_not_exists({dm.ATTR_ACKNOWLEDGED_BY})",
                                 ExpressionAttributeValues={":b": {"S": blocked_by}, ":a": {"S": actor or "unknown"}})
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False
        return True
