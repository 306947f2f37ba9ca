"""The records of a run, each defined once: a job's state, an execution's final record (its
input is :class:`jobplane.contract.execution_input.ExecutionInput`, its step attempts
:class:`jobplane.contract.attempts.Attempt`), and the audit entry of an operator's action.

The compiled state machines write the items (:mod:`jobplane.contract.items` builds those
writes); the repository reads them back into these records with ``from_item``; the portal's
API models derive from their JSON Schema (:mod:`jobplane.contract.record_schema`), so a field
added here is a field of the API. ``to_item`` gives the item back as DynamoDB holds it (a test
reads items the state machines wrote and holds ``to_item(from_item(item))`` to them).
Descriptions live in each field's metadata: they are the API's descriptions too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from jobplane.contract.audit_event import AuditEvent, details_text
from jobplane.contract import datamodel as dm
from jobplane.contract import items
from jobplane.contract.attempts import Attempt, attempt_rows, timeline_of
from jobplane.contract.attribute_values import item_of, json_object, json_text, plain
from jobplane.contract.clock import seconds_between
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.statuses import Trigger
from jobplane.contract.record_schema import doc
from jobplane.contract.types import Item, JsonObject, JsonValue

#: The claim refuses a scheduled fire while this is set (datamodel.ATTR_PAUSE_PREFIX).
PAUSE_SCHEDULE = f"{dm.ATTR_PAUSE_PREFIX}{Trigger.SCHEDULE.value}"
#: What the claim writes of scheduled fires: the newest claimed, and how many were ever claimed.
FIRED_SCHEDULE = f"{dm.ATTR_FIRED_PREFIX}{Trigger.SCHEDULE.value}"
CLAIMS_SCHEDULE = f"{dm.ATTR_CLAIMS_PREFIX}{Trigger.SCHEDULE.value}"


def _counts(value: object) -> dict[str, int]:
    """A snooze's counts, read defensively (a malformed item must not take a page down)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): int(v) for k, v in value.items() if isinstance(v, (int, float))}


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, (set, frozenset, list, tuple)) else []


@dataclass(frozen=True)
class Snooze:
    """A job's snooze in force: what every listing of the job shows beside it."""
    until: str
    by: str | None
    reason: str | None


@dataclass(frozen=True)
class JobState:
    """A job's state item (pk ``JOB#<job>``, sk ``STATE``): its claims, its last run, a block, a
    pause, the fire ledger. The claim writes most of it (compiler/asl.py, ``Claim``)."""

    job: str
    team: str = ""
    running: frozenset[str] = field(default=frozenset(), metadata=doc("executions holding a claim"))
    holder: str | None = field(default=None, metadata=doc("execution ARN of the latest exclusive claim"))
    last_status: str | None = None
    last_execution: str | None = None
    last_finished_at: str | None = None
    last_started_at: str | None = field(default=None, metadata=doc("of the last run that ended"))
    blocked_by: str | None = field(default=None, metadata=doc("the failed run that blocks SKIP_IF_FAILED fires"))
    acknowledged_by: str | None = field(default=None, metadata=doc("who acknowledged the failure that blocked it"))
    paused_by: str | None = None
    paused_reason: str | None = None
    paused_at: str | None = None
    missed_since: str | None = field(default=None, metadata=doc(
        "an open episode of missed fires: the first scheduled fire that neither ran nor was skipped; "
        "the job's executions list each as status MISSED"))
    missed_count: int = field(default=0, metadata=doc("how many fires the open episode has missed"))
    missed_cause: str | None = field(default=None, metadata=doc("why, as far as AWS tells"))
    snoozed_until: str | None = field(default=None, metadata=doc(
        "the job's alerts are held until then (ISO 8601 UTC) and summarised when the snooze ends"))
    snoozed_by: str | None = None
    snooze_reason: str | None = None
    snooze_held: tuple[str, ...] = field(default=(), metadata=doc(
        "the first alerts held during the snooze (at most 20), each '<EVENT>[ recovered] <execution>'"))
    snooze_counts: dict[str, int] = field(default_factory=dict, metadata=doc(
        "how many alerts the snooze held, by '<EVENT>[ recovered]'"))
    snooze_finishing: str | None = field(default=None, metadata=doc("when a checker took the snooze's summary on"))
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
                  dm.ATTR_MISSED_ALERT, FIRED_SCHEDULE, CLAIMS_SCHEDULE, dm.ATTR_SNOOZED_UNTIL, dm.ATTR_SNOOZED_BY,
                  dm.ATTR_SNOOZE_REASON, dm.ATTR_SNOOZE_HELD, dm.ATTR_SNOOZE_COUNTS, dm.ATTR_SNOOZE_FINISHING)

    def snoozed(self, now: str) -> bool:
        """Its alerts are held at ``now`` (ISO 8601 UTC: the same form, so the strings compare)."""
        return self.snoozed_until is not None and now < self.snoozed_until

    def snooze_at(self, now: str) -> Snooze | None:
        """The snooze in force at ``now``, or None: an expired one is not shown (it ends by itself)."""
        if self.snoozed_until is None or not self.snoozed(now):
            return None
        return Snooze(self.snoozed_until, self.snoozed_by, self.snooze_reason)

    @property
    def snooze_held_count(self) -> int:
        return sum(self.snooze_counts.values())

    @classmethod
    def from_item(cls, item: Item) -> JobState:
        p = plain(item)
        # A claim's name set is read defensively: one malformed item (an execution once named
        # null) must not take every page that lists jobs down.
        running = frozenset(r for r in p.get(dm.ATTR_RUNNING) or () if isinstance(r, str) and r)
        checked = p.get(dm.ATTR_FIRES_CLAIMS)
        return cls(job=_text(p, "job") or str(p.get("pk", "")).removeprefix(dm.JOB_PREFIX),
                   team=_text(p, "team") or "", running=running,
                   holder=_text(p, dm.ATTR_HOLDER), last_status=_text(p, dm.ATTR_LAST_STATUS),
                   last_execution=_text(p, dm.ATTR_LAST_EXECUTION), last_finished_at=_text(p, dm.ATTR_LAST_FINISHED_AT),
                   last_started_at=_text(p, dm.ATTR_LAST_STARTED_AT),
                   blocked_by=_text(p, dm.ATTR_BLOCKED_BY), acknowledged_by=_text(p, dm.ATTR_ACKNOWLEDGED_BY),
                   paused_by=_text(p, dm.ATTR_PAUSED_BY),
                   paused_reason=_text(p, dm.ATTR_PAUSED_REASON), paused_at=_text(p, dm.ATTR_PAUSED_AT),
                   missed_since=_text(p, dm.ATTR_MISSED_SINCE), missed_count=int(p.get(dm.ATTR_MISSED_COUNT) or 0),
                   missed_cause=_text(p, dm.ATTR_MISSED_CAUSE), fires_checked_until=_text(p, dm.ATTR_FIRES_CHECKED),
                   fires_claims_checked=None if checked is None else int(checked),
                   missed_alert_pending=dm.ATTR_MISSED_ALERT in p, fired_schedule=_text(p, FIRED_SCHEDULE),
                   claims_schedule=int(p.get(CLAIMS_SCHEDULE) or 0), snoozed_until=_text(p, dm.ATTR_SNOOZED_UNTIL),
                   snoozed_by=_text(p, dm.ATTR_SNOOZED_BY), snooze_reason=_text(p, dm.ATTR_SNOOZE_REASON),
                   snooze_held=tuple(sorted(h for h in _strings(p.get(dm.ATTR_SNOOZE_HELD)))),
                   snooze_counts=_counts(p.get(dm.ATTR_SNOOZE_COUNTS)),
                   snooze_finishing=_text(p, dm.ATTR_SNOOZE_FINISHING))

    def to_item(self) -> Item:
        """The attributes :meth:`from_item` reads, with the item's keys (what the claim and the
        pause write of them; other triggers' duplicate keys are not part of the record)."""
        values: JsonObject = {
            "pk": dm.job_partition(self.job), "sk": dm.STATE_SK, "gsi1pk": dm.JOBS_PARTITION, "gsi1sk": self.job,
            "job": self.job, "team": self.team or None, dm.ATTR_RUNNING: set(self.running) or None,
            dm.ATTR_HOLDER: self.holder, dm.ATTR_LAST_STATUS: self.last_status,
            dm.ATTR_LAST_EXECUTION: self.last_execution, dm.ATTR_LAST_FINISHED_AT: self.last_finished_at,
            dm.ATTR_LAST_STARTED_AT: self.last_started_at, dm.ATTR_BLOCKED_BY: self.blocked_by,
            dm.ATTR_ACKNOWLEDGED_BY: self.acknowledged_by, dm.ATTR_PAUSED_BY: self.paused_by,
            dm.ATTR_PAUSED_REASON: self.paused_reason, dm.ATTR_PAUSED_AT: self.paused_at,
            PAUSE_SCHEDULE: self.paused_at, dm.ATTR_MISSED_SINCE: self.missed_since,
            dm.ATTR_MISSED_COUNT: self.missed_count or None, dm.ATTR_MISSED_CAUSE: self.missed_cause,
            dm.ATTR_FIRES_CHECKED: self.fires_checked_until, dm.ATTR_FIRES_CLAIMS: self.fires_claims_checked,
            dm.ATTR_MISSED_ALERT: 1 if self.missed_alert_pending else None, FIRED_SCHEDULE: self.fired_schedule,
            CLAIMS_SCHEDULE: self.claims_schedule or None, dm.ATTR_SNOOZED_UNTIL: self.snoozed_until,
            dm.ATTR_SNOOZED_BY: self.snoozed_by, dm.ATTR_SNOOZE_REASON: self.snooze_reason,
            dm.ATTR_SNOOZE_HELD: set(self.snooze_held) or None,
            dm.ATTR_SNOOZE_COUNTS: dict(self.snooze_counts) if self.snoozed_until else None,
            dm.ATTR_SNOOZE_FINISHING: self.snooze_finishing,
        }
        return item_of(values)


@dataclass(frozen=True)
class ExecutionRecord:
    """An execution's final record (pk ``EXEC#<execution>``): a run's end, a skip, or a missed
    fire (docs/data-model.md). The state machine writes it when it ends
    (``items.execution_record``); the reconciler adds the history's timeline and a TTL."""

    execution: str
    job: str
    status: str = field(metadata=doc("SUCCEEDED, FAILED, TIMED_OUT, ABORTED, SKIPPED or MISSED"))
    trigger: str | None = None
    scheduled_time: str | None = None
    requested_by: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    failed_step: str | None = None
    skip_reason: str | None = None
    abort_reason: str | None = field(default=None, metadata=doc(
        "an ABORTED run the platform stopped on purpose: REPLACED (a newer run of a REPLACE job); no alert"))
    error: str | None = None
    given: JsonObject = field(default_factory=dict, metadata=doc(
        "the execution's input as it was sent (a console start's may lack fields; see input)"))
    blocked_by: str | None = field(default=None, metadata=doc("a LAST_FAILED skip: the failed run that blocked it"))
    steps: JsonObject | None = field(default=None, metadata=doc(
        "each step's attempts' results, as the run kept them (none for a skip or a missed fire)"))
    execution_arn: str | None = None
    expires_at: int | None = None
    team: str = ""
    timeline: tuple[Attempt, ...] = ()
    transitions: int | None = field(default=None, metadata=doc("state transitions the execution used (billed)"))
    rerun_by: tuple[str, ...] = ()
    after_runs: tuple[str, ...] = field(default=(), metadata=doc("runs of jobs this run's end started"))
    after_jobs: tuple[str, ...] = ()  # ...and their jobs
    alert_pending: bool = False  # recorded by the reconciler, its alert not yet published
    blackout: str | None = field(default=None, metadata=doc(
        "a BLACKED_OUT fire: the blackout window it fell inside (contract/blackouts.py)"))
    blackout_action: str | None = None  # ...and what the window does with it: skip or defer

    @property
    def input(self) -> ExecutionInput:
        """The input the run had (missing fields as the state machine's defaults, with no
        params: the control plane reads it again with the job's declared params)."""
        return ExecutionInput.read(self.given, self.started_at)

    @classmethod
    def from_item(cls, item: Item) -> ExecutionRecord:
        p = plain(item)
        steps = json_text(p.get("steps"))
        return cls(
            execution=str(p["execution"]), job=str(p["job"]), status=str(p["status"]), trigger=_text(p, "trigger"),
            scheduled_time=_text(p, "scheduled_time"), requested_by=_text(p, "requested_by"),
            started_at=_text(p, "started_at"), finished_at=_text(p, "finished_at"), failed_step=_text(p, "failed_step"),
            skip_reason=_text(p, "skip_reason"), abort_reason=_text(p, dm.ATTR_ABORT_REASON), error=_text(p, "error"),
            given=json_object(p.get("input")), steps=steps if isinstance(steps, dict) else None,
            execution_arn=_text(p, dm.ATTR_EXECUTION_ARN), expires_at=_int(p.get(dm.ATTR_EXPIRES_AT)),
            team=_text(p, "team") or "", timeline=timeline_of(json_text(p.get("timeline"))),
            transitions=_int(p.get("transitions")),
            rerun_by=tuple(sorted(p.get("rerun_by", ()))), blocked_by=_text(p, dm.ATTR_BLOCKED_BY),
            after_runs=tuple(sorted(p.get(dm.ATTR_AFTER_RUNS, ()))),
            after_jobs=tuple(sorted(p.get(dm.ATTR_AFTER_JOBS, ()))),
            alert_pending=dm.ATTR_ALERT_PENDING in p,
            blackout=_text(p, "blackout"), blackout_action=_text(p, "blackout_action"),
        )

    def to_item(self) -> Item:
        """The item as the state machine, the reconciler and the fire ledger leave it: what a
        run's end writes, by the same builder (``items.execution_record``: keys, indexes, the
        feed of its status), then what is added later (its timeline, TTL, lineage). JSON
        attributes are compact."""
        written = items.execution_record(
            execution=self.execution, execution_arn=self.execution_arn, job=self.job, team=self.team,
            status=self.status, trigger=self.trigger, scheduled_time=self.scheduled_time,
            requested_by=self.requested_by, input_json=_dumps(self.given), started_at=self.started_at,
            finished_at=self.finished_at, steps=None if self.steps is None else _dumps(self.steps),
            failed_step=self.failed_step, skip_reason=self.skip_reason, blocked_by=self.blocked_by, error=self.error,
            alert_pending=self.alert_pending, abort_reason=self.abort_reason, blackout=self.blackout,
            blackout_action=self.blackout_action)
        later: JsonObject = {
            dm.ATTR_EXPIRES_AT: self.expires_at,
            "timeline": _dumps([a.to_json() for a in self.timeline]) if self.transitions is not None else None,
            "transitions": self.transitions, "rerun_by": set(self.rerun_by) or None,
            dm.ATTR_AFTER_RUNS: set(self.after_runs) or None, dm.ATTR_AFTER_JOBS: set(self.after_jobs) or None,
        }
        return items.as_boto(written.item) | item_of(later)

    def attempts(self, step: str) -> list[Attempt]:
        """The step's attempts in order, each with its outcome, exit code and, for a failed one,
        error, StopCode and reason (:func:`jobplane.platform.timeline.attempt_rows`)."""
        return [row for row in attempt_rows(self.steps or {}, self.timeline) if row.step == step]


def _text(p: JsonObject, name: str) -> str | None:
    value = p.get(name)
    return value if isinstance(value, str) else None


def _int(value: JsonValue) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _dumps(value: JsonValue) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class AuditEntry:
    """One operator action (pk ``AUDIT#<id>``), written before the action and removed if the
    action fails (``ControlPlane.audited``): who did what to which job, when and why, and by
    which right (``authority``). ``event`` is what happened, typed (contract/audit.py); the
    stored ``action``, ``execution`` and ``details`` are its serialised form, as entries always
    held them."""

    id: str
    at: str
    actor: str
    action: str = field(metadata=doc("run, rerun, rerun_from_failed_step, stop, pause, resume, acknowledge, ..."))
    job: str
    execution: str | None = None
    reason: str = ""
    details: str = field(default="{}", metadata=doc("what the action was given, as sorted JSON"))
    authority: str = field(default="", metadata=doc(
        "by which right the actor acted: 'team <name>' (a member), 'admin', 'operator' (an operator identity, "
        "docs/operate.md), 'platform' (the platform itself); empty for entries written before it was recorded"))

    @classmethod
    def of(cls, event: AuditEvent, id: str, at: str, actor: str, reason: str = "", authority: str = "") -> AuditEntry:
        return cls(id=id, at=at, actor=actor, action=event.action, job=event.job, execution=event.execution,
                   reason=reason, details=details_text(event), authority=authority)

    @property
    def event(self) -> AuditEvent:
        from jobplane.contract.audit import event_of  # every kind: built when an entry is read

        return event_of(self.action, self.job, self.execution, self.details)

    def to_item(self) -> Item:
        values: JsonObject = {
            "pk": dm.audit_pk(self.id), "sk": dm.AUDIT_SK, "actor": self.actor, "action": self.action,
            "job": self.job, "reason": self.reason, "at": self.at, "gsi1pk": dm.AUDIT_PARTITION, "gsi1sk": self.at,
            "gsi2pk": dm.job_audit_partition(self.job), "gsi2sk": self.at, "details": self.details,
            "execution": self.execution or None, "authority": self.authority or None}
        return item_of(values)

    @classmethod
    def from_item(cls, item: Item) -> AuditEntry:
        p = plain(item)
        return cls(id=str(p.get("pk", "")).removeprefix(dm.AUDIT_PREFIX), at=_text(p, "at") or "",
                   actor=_text(p, "actor") or "", action=_text(p, "action") or "", job=_text(p, "job") or "",
                   execution=_text(p, "execution"), reason=_text(p, "reason") or "",
                   details=_text(p, "details") or "{}", authority=_text(p, "authority") or "")
