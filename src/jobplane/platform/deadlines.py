"""Deadlines: each scheduled fire of a job with ``deadline`` must have a run that SUCCEEDED by
its due time (contract/deadlines.py); one that has not raises one DEADLINE alert, and a RECOVERED
note when its run lands.

It is per fire, not per execution: a fire's runs are its scheduled run, a backfill's run of it
("run it as that fire" is a one-fire backfill) and every re-run of any of them (``rerun_of``,
followed back to the fire), so a retry, a re-run or a backfill that succeeds in time meets it.

The periodic check (``jobplane dev``'s catch-up thread; on AWS the periodic Lambda,
:func:`jobplane.platform.slow.handler`) calls :meth:`DeadlineWatch.check`. Each pass, for each
job with a deadline, takes the fires the schedule made (:func:`fires`, the fire ledger's own
computation: a closed day of a calendar is no fire there, so none here) since the job's
schedules were created (fires before it was deployed are not its) and within :data:`LOOK_BACK`,
and for each fire not yet decided:

* a run SUCCEEDED by the due time: MET, recorded;
* the due time passed without one: BREACHED, recorded and alerted (what is still running, at
  which step, or what failed or was skipped, or that nothing ran);
* before the due time, a breach already certain is alerted early, saying why: the fire's run
  failed (or was skipped) and nothing of it is running (a step being retried is a run still
  running), or the run's remaining steps typically take longer than the time left (the median
  of each step's successful attempts in the job's recent successful runs);
* a breached fire whose run then SUCCEEDED gets one RECOVERED note.

The alert's bound: a breach is alerted at the first pass at or after the due time, so within one
check interval of it (``slow_check_schedule``, 5 minutes by default, on AWS; ``jobplane dev``'s
catch-up interval locally).

One outcome item per fire (pk ``DEADLINE#<job>#<fire>``; gsi1 ``DEADLINES#<job>`` by fire, which
the reports read) is written with a condition, so two checkers, or a checker after a restart,
never alert a fire twice; its ``alert_pending`` flag is an outbox (set with the outcome, cleared
once published: a crash between publishes it again on the next pass, never loses it).
"""

from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo
from typing import Callable, Iterable

from jobplane.contract import datamodel as dm
from jobplane.contract import deadlines as spec
from jobplane.contract import execution_input, names
from jobplane.contract.attribute_values import item_of, plain
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.clock import iso_millis, parse_iso
from jobplane.contract.notifications import NotificationMessage, Outcome, event_of, publish
from jobplane.contract.records import ExecutionRecord, JobState
from jobplane.contract.statuses import Event, ExecutionStatus, Trigger
from jobplane.contract.types import Client, Item, JsonObject
from jobplane.contract.blackouts import outside
from jobplane.platform import run_metrics
from jobplane.platform.backfill_model import plan_fires
from jobplane.platform.context import PlatformContext
from jobplane.platform.run_history import RunHistory
from jobplane.platform.control.reads import Reads
from jobplane.platform.control.views import ExecutionView
from jobplane.platform.repository import query_items

log = logging.getLogger(__name__)

#: Fires this far back are looked at (a due time is at most a day after its fire).
LOOK_BACK = timedelta(hours=36)
#: An outcome is kept 100 days: the reports cover 30 and 90.
RETENTION = timedelta(days=100)
#: How many of the job's newest successful runs give a step's typical duration.
HISTORY = 20
#: Skips that are not the fire's own outcome: a duplicate delivery of a fire that did run. (A
#: closed day of a calendar is no fire at all: calendar_fires never lists it, nor is one deployed.)
NOT_THE_FIRE = ("DUPLICATE",)
MET, BREACHED = "MET", "BREACHED"
#: An outcome whose alert is still unpublished this long after it was recorded is published by
#: the next pass (the pass that recorded it stopped between the two).
OUTBOX_AFTER = timedelta(minutes=2)

Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(timezone.utc)


def deadline_pk(job: str, fire: str) -> str:
    return f"DEADLINE#{job}#{fire}"


def job_deadlines_partition(job: str) -> str:
    """gsi1 partition of a job's deadline outcomes, sorted by fire."""
    return f"DEADLINES#{job}"


def fires(context: PlatformContext, entry: CatalogJob, start: datetime, end: datetime) -> list[datetime]:
    """The job's scheduled fires from ``start`` to ``end``: the one computation the fire ledger
    and backfills use (platform/backfill_model.py), so the deadline checker sees the same fires."""
    return plan_fires(entry.schedule, entry.timezone, start, end, context.schedule_anchors(entry), entry.calendar_schedule)


@dataclass(frozen=True)
class FireOutcome:
    """A fire's recorded outcome (the item the checker writes; the reports read it)."""

    job: str
    team: str
    fire: str
    due: str
    outcome: str  # MET or BREACHED
    reason: str = ""
    early: bool = False
    alerted_at: str | None = None
    succeeded_at: str | None = None
    execution: str | None = None
    alert_pending: bool = False
    recovered_pending: bool = False
    recovered_at: str | None = None
    #: an early alert's fire whose due time passed unmet: its DeadlineMet 0 was written
    met_noted: bool = False

    @property
    def met(self) -> bool:
        """Its run SUCCEEDED by the due time (an early alert's fire can still meet it, re-run)."""
        return _by(self.succeeded_at, self.due)

    @classmethod
    def from_item(cls, item: Item) -> FireOutcome:
        p = plain(item)

        def text(name: str) -> str | None:
            value = p.get(name)
            return value if isinstance(value, str) else None

        return cls(job=text("job") or "", team=text("team") or "", fire=text("fire") or "", due=text("due") or "",
                   outcome=text("outcome") or "", reason=text("reason") or "", early=bool(p.get("early")),
                   alerted_at=text("alerted_at"), succeeded_at=text("succeeded_at"), execution=text("execution"),
                   alert_pending="alert_pending" in p, recovered_pending="recovered_pending" in p,
                   recovered_at=text("recovered_at"), met_noted=bool(p.get("met_noted")))


@dataclass
class _Fire:
    """What one fire's runs say at this pass."""

    at: str
    records: list[ExecutionRecord] = field(default_factory=list)
    running: list[ExecutionView] = field(default_factory=list)

    def success(self) -> ExecutionRecord | None:
        done = [r for r in self.records if r.status == ExecutionStatus.SUCCEEDED.value and r.finished_at]
        return min(done, key=lambda r: r.finished_at or "") if done else None

    def ended(self) -> list[ExecutionRecord]:
        """Its runs that ended without success, newest last (a duplicate skip is not one)."""
        return sorted((r for r in self.records if r.status != ExecutionStatus.SUCCEEDED.value
                       and r.skip_reason not in NOT_THE_FIRE), key=lambda r: r.finished_at or r.started_at or "")


def _fire_key(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return execution_input.iso(parse_iso(value))
    except ValueError:
        return None


class DeadlineWatch:
    """``reads``: the control plane's read service (a running run's view); the rest is read from
    its platform context."""

    def __init__(self, reads: Reads, sns: Client, topic_arn: str, clock: Clock = _now,
                 metrics: Callable[[str], None] | None = None):
        self.reads, self.context = reads, reads.context
        # where a decided fire's metric line goes (platform/run_metrics.py): the periodic
        # Lambda's stdout on AWS, `jobplane dev`'s metrics file; None: not written
        self.metrics = metrics
        self.sns = sns
        self.topic_arn = topic_arn
        self.clock = clock
        self.ddb = self.context.ddb
        self.table = self.context.deployment.table

    def watched(self) -> list[CatalogJob]:
        return sorted((e for e in self.context.entries.values() if e.deadline and e.schedule),
                      key=lambda e: e.name)

    # -- the pass --------------------------------------------------------------------------------
    def check(self, only: set[str] | None = None) -> list[str]:
        """One pass over every job with a deadline (``only``: these jobs'); returns what it
        alerted and noted, as ``job fire DEADLINE|RECOVERED`` lines."""
        watched = [e for e in self.watched() if only is None or e.name in only]
        if not watched:
            return []
        now = self.clock()
        said: list[str] = []
        for entry in watched:
            try:
                said.extend(self._job(entry, now, deployed_since(self.context, entry)))
            except Exception:  # one job's trouble keeps no other job's deadline from being watched
                log.exception("the deadline check of %s failed", entry.name)
        return said

    def _job(self, entry: CatalogJob, now: datetime, created: datetime | None) -> list[str]:
        if created is None or not entry.enabled:
            return []  # not deployed, or deployed DISABLED: nothing was expected
        deadline = spec.parse(entry.deadline)
        since = max(created, now - LOOK_BACK)
        recorded = {o.fire: o for o in self.outcomes(entry.name, execution_input.iso(since))}
        said = self._outbox(entry, recorded.values())
        try:
            # a fire inside a blackout window has no deadline (suspended: contract/blackouts.py)
            expected = outside(entry.windows, fires(self.context, entry, since, now))
        except ValueError as e:
            log.warning("%s: no fires to hold to the deadline: %s", entry.name, e)
            return said
        open_fires = [t for t in expected if (o := recorded.get(execution_input.iso(t))) is None
                      or (o.outcome == BREACHED and o.succeeded_at is None)]
        if not open_fires:
            return said
        runs, missed = self._runs(entry, open_fires[0])
        state = self.context.repo.job_state(entry.name)
        history: list[ExecutionRecord] | None = None
        for t in open_fires:
            at = execution_input.iso(t)
            due = deadline.due(t, entry.timezone)
            seen = runs.get(at) or _Fire(at)
            if not seen.records and not seen.running and not self._expected(t, at, state, missed):
                continue
            known = recorded.get(at)
            success = seen.success()
            if known is not None:  # breached and alerted: a success now is its recovery
                if success is not None and self._recover(entry, known, success):
                    said.append(f"{entry.name} {at} RECOVERED")
                elif success is None and known.early and not known.met_noted and now >= due:
                    self._noted_missed(known)  # an early alert's fire not met by its due time
                continue
            if success is not None and _by(success.finished_at, iso_millis(due)):
                self._decide(entry, at, due, MET, success=success)
                continue
            if success is not None:  # it landed after the due time before any pass saw the breach
                reason = f"its run {success.execution} SUCCEEDED at {success.finished_at}, after the deadline"
                if self._decide(entry, at, due, BREACHED, reason=reason, success=success, execution=success.execution):
                    said.append(f"{entry.name} {at} DEADLINE")
                continue
            if now >= due:
                reason, execution = self._still(entry, seen)
                if self._decide(entry, at, due, BREACHED, reason=reason, execution=execution):
                    said.append(f"{entry.name} {at} DEADLINE")
                continue
            if history is None and seen.running:
                history = self._successes(entry)
            certain = self._certain(entry, seen, due, now, history or [])
            if certain is not None:
                reason, execution = certain
                if self._decide(entry, at, due, BREACHED, reason=reason, execution=execution, early=True):
                    said.append(f"{entry.name} {at} DEADLINE (early)")
        return said

    # -- what a fire's runs say ------------------------------------------------------------------
    def _runs(self, entry: CatalogJob, first: datetime) -> tuple[dict[str, _Fire], set[str]]:
        """The runs of the fires from ``first`` on, by fire: every record of the job started
        since a minute before it (a fire's run starts at or after its fire; a backfill's and a
        re-run's later still), and the runs in flight; a re-run counts for the fire of the run
        it re-runs. And the fires the ledger recorded MISSED."""
        kwargs: JsonObject = {
            "TableName": self.table, "IndexName": dm.GSI_BY_OWNER,
            "KeyConditionExpression": "gsi1pk = :p AND gsi1sk >= :a",
            "ExpressionAttributeValues": {":p": {"S": dm.job_partition(entry.name)},
                                          ":a": {"S": iso_millis(first - timedelta(minutes=1))}}}
        records = [ExecutionRecord.from_item(i) for i in query_items(self.ddb, kwargs)[0]]
        by_name = {r.execution: r for r in records}
        cache: dict[str, str | None] = {}

        def fire_of(trigger: str | None, scheduled: str | None, rerun_of: str | None, depth: int = 0) -> str | None:
            if trigger in (Trigger.SCHEDULE.value, Trigger.BACKFILL.value):
                return _fire_key(scheduled)
            if trigger == Trigger.RERUN.value and rerun_of and depth < 20:
                if rerun_of not in cache:
                    original = by_name.get(rerun_of) or self.context.repo.execution(rerun_of)
                    cache[rerun_of] = None if original is None else fire_of(
                        original.input.trigger, original.input.scheduled_time, original.input.rerun_of, depth + 1)
                return cache[rerun_of]
            return None

        out: dict[str, _Fire] = {}
        missed: set[str] = set()
        for r in records:
            if r.status == ExecutionStatus.MISSED.value:
                if key := _fire_key(r.scheduled_time):
                    missed.add(key)
                continue
            key = fire_of(r.input.trigger, r.input.scheduled_time, r.input.rerun_of)
            if key:
                out.setdefault(key, _Fire(key)).records.append(r)
        for view in self.reads.running_executions(entry.name):
            if view.record is not None:
                continue  # ended: its record is read above
            key = fire_of(view.input.trigger, view.input.scheduled_time, view.input.rerun_of)
            if key:
                out.setdefault(key, _Fire(key)).running.append(view)
        return out, missed

    @staticmethod
    def _expected(t: datetime, at: str, state: JobState | None, missed: set[str]) -> bool:
        """Whether a fire nothing ran for was expected to run: not while the job is paused, nor
        one the fire ledger has accounted for without recording it MISSED (it was inside a pause:
        the ledger reads the pause history). The ledger runs first in each pass."""
        if state is None:
            return True
        if state.paused_at and t >= parse_iso(state.paused_at):
            return False
        checked = parse_iso(state.fires_checked_until) if state.fires_checked_until else None
        return at in missed or checked is None or t > checked

    def _still(self, entry: CatalogJob, seen: _Fire) -> tuple[str, str | None]:
        """What keeps the fire from having succeeded, in words, and the run to link to."""
        if seen.running:
            view = seen.running[-1]
            step = _running_step(view)
            return (f"still running: run {view.execution}" + (f", at step {step}" if step else "")
                    + (f", started {view.started_at}" if view.started_at else "")), view.execution
        ended = seen.ended()
        if ended:
            last = ended[-1]
            return _ended_words(last), last.execution
        return ("no run of this fire started (see the fire ledger's MISSED record; run it as that fire with "
                f"`jobplane backfill {entry.name} --from {seen.at} --to {seen.at}`)"), None

    def _certain(self, entry: CatalogJob, seen: _Fire, due: datetime, now: datetime,
                 history: list[ExecutionRecord]) -> tuple[str, str | None] | None:
        """Why the breach is already certain before the due time, or None."""
        if not seen.running:
            ended = seen.ended()
            if not ended:
                return None  # not started yet: it still may
            last = ended[-1]
            return (f"breach certain before the deadline: {_ended_words(last)}, and nothing of this fire is "
                    "running or retrying (a re-run or a backfill of it that succeeds in time still meets it)"), \
                last.execution
        view = seen.running[-1]
        step = _running_step(view)
        if step is None:
            return None
        if (predicted := self._at_this_rate(entry, step, view, due, history)) is not None:
            return predicted, view.execution
        if not history:
            return None
        remaining = _remaining(entry, step, view, history, now)
        if remaining is None:
            return None
        left = due - now
        if remaining <= left:
            return None
        return (f"breach certain before the deadline: run {view.execution} is at step {step}; the steps left "
                f"typically take {_words(remaining)} (median of the job's last {len(history)} successful runs), "
                f"and {_words(left)} is left"), view.execution

    def _at_this_rate(self, entry: CatalogJob, step: str, view: ExecutionView, due: datetime,
                      history: list[ExecutionRecord]) -> str | None:
        """The predictive deadline (docs/progress.md): the running step reports its progress, and
        at its rate since the attempt began it ends after the due time, with the later steps'
        typical durations (from the history: none counted without it) after it. One read of the
        run's progress records; a step that reported no total has no ETA and is left to the rest."""
        progress = next((p for p in self.reads.step_progress(view.job, view.execution) if p.step == step and not p.ended), None)
        eta = progress.eta_seconds if progress is not None else None
        if progress is None or eta is None:
            return None
        ends = datetime.fromtimestamp(progress.updated_at + eta, timezone.utc)
        later = _remaining_after(entry, step, history)
        if later:
            ends += later
        if ends <= due:
            return None
        then = "" if not later else f" and its later steps typically take {_words(later)} more,"
        zone = ZoneInfo(entry.timezone)
        return (f"at this rate it ends {_local(ends, zone)}, after the deadline (due {_local(due, zone)}): run "
                f"{view.execution}'s step {step} is at {progress.words()}{then} (ETA from the step's progress "
                "since its attempt began)")

    def _successes(self, entry: CatalogJob) -> list[ExecutionRecord]:
        """The job's newest successful runs with their step timelines (the history)."""
        page = self.context.repo.executions(entry.name, limit=100)
        return [r for r in page.items if r.status == ExecutionStatus.SUCCEEDED.value and r.timeline][:HISTORY]

    # -- the outcome items -----------------------------------------------------------------------
    def outcomes(self, job: str, since: str, until: str | None = None) -> list[FireOutcome]:
        return outcomes(self.ddb, self.table, job, since, until)

    def _decide(self, entry: CatalogJob, fire: str, due: datetime, outcome: str, *, reason: str = "",
                success: ExecutionRecord | None = None, execution: str | None = None, early: bool = False) -> bool:
        """Record the fire's outcome once (a conditional put); a breach is then alerted. True:
        this pass recorded it."""
        now = self.clock()
        values: JsonObject = {
            "pk": deadline_pk(entry.name, fire), "sk": "DEADLINE", "gsi1pk": job_deadlines_partition(entry.name),
            "gsi1sk": fire, "job": entry.name, "team": entry.team, "fire": fire, "due": iso_millis(due),
            "outcome": outcome, "reason": reason or None, "early": True if early else None,
            "succeeded_at": success.finished_at if success else None,
            "execution": execution or (success.execution if success else None),
            "alerted_at": iso_millis(now) if outcome == BREACHED else None,
            "alert_pending": True if outcome == BREACHED else None,
            dm.ATTR_EXPIRES_AT: int((parse_iso(fire) + RETENTION).timestamp())}
        try:
            self.ddb.put_item(TableName=self.table, Item=item_of(values),
                              ConditionExpression="attribute_not_exists(pk)")
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False
        if not early:  # final: met, or breached at or after the due time (an early alert's run may still make it)
            self._metric(lambda: run_metrics.deadline_line(entry.team, entry.name, iso_millis(due), outcome == MET,
                                                           success.finished_at if success else None, iso_millis(now)))
        if outcome == BREACHED:
            RunHistory(self.ddb, self.table).note_breach(entry.name, fire)  # its run's mark says so
            recorded = FireOutcome.from_item(item_of(values))
            self._publish(entry, recorded, "DEADLINE")
            self._clear(entry.name, fire, "alert_pending")
        return True

    def _noted_missed(self, known: FireOutcome) -> None:
        """An early alert's fire whose due time passed without a success: its ``DeadlineMet`` 0,
        once (a conditional mark on the outcome; a recovery after it writes the slack alone)."""
        try:
            self.ddb.update_item(
                TableName=self.table, Key={"pk": {"S": deadline_pk(known.job, known.fire)}, "sk": {"S": "DEADLINE"}},
                UpdateExpression="SET met_noted = :y",
                ConditionExpression="attribute_not_exists(met_noted) AND attribute_not_exists(succeeded_at)",
                ExpressionAttributeValues={":y": {"BOOL": True}})
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return
        self._metric(lambda: run_metrics.deadline_line(known.team, known.job, known.due, False, None,
                                                       iso_millis(self.clock())))

    def _metric(self, line: Callable[[], str]) -> None:
        run_metrics.write_best_effort(self.metrics, line, "a deadline")

    def _recover(self, entry: CatalogJob, known: FireOutcome, success: ExecutionRecord) -> bool:
        """Note that a breached fire's run SUCCEEDED (once: a conditional update)."""
        try:
            self.ddb.update_item(
                TableName=self.table, Key={"pk": {"S": deadline_pk(entry.name, known.fire)}, "sk": {"S": "DEADLINE"}},
                UpdateExpression="SET succeeded_at = :s, #ex = :e, recovered_pending = :y, recovered_at = :now",
                ConditionExpression="attribute_not_exists(succeeded_at)",
                ExpressionAttributeNames={"#ex": "execution"},
                ExpressionAttributeValues=item_of({":s": success.finished_at, ":e": success.execution, ":y": True,
                                                   ":now": iso_millis(self.clock())}))
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False
        # an early alert's fire is decided now unless the due time passed first (_noted_missed)
        met = _by(success.finished_at, known.due) if known.early and not known.met_noted else None
        self._metric(lambda: run_metrics.deadline_line(known.team, known.job, known.due, met, success.finished_at,
                                                       iso_millis(self.clock())))
        note = FireOutcome(job=known.job, team=known.team, fire=known.fire, due=known.due, outcome=known.outcome,
                           reason=f"run {success.execution} SUCCEEDED at {success.finished_at}"
                                  + (" (in time after all)" if _by(success.finished_at, known.due)
                                     else f", {_late(known.due, success.finished_at)} after the deadline"),
                           succeeded_at=success.finished_at, execution=success.execution)
        self._publish(entry, note, "RECOVERED")
        self._clear(entry.name, known.fire, "recovered_pending")
        return True

    def _outbox(self, entry: CatalogJob, recorded: Iterable[FireOutcome]) -> list[str]:
        """Publish what a pass that stopped midway recorded and did not publish (once it is
        :data:`OUTBOX_AFTER` old: a pass still publishing it is not raced)."""
        said = []
        before = iso_millis(self.clock() - OUTBOX_AFTER)
        for o in recorded:
            if o.alert_pending and (o.alerted_at or "") <= before:
                self._publish(entry, o, "DEADLINE")
                self._clear(entry.name, o.fire, "alert_pending")
                said.append(f"{entry.name} {o.fire} DEADLINE")
            if o.recovered_pending and (o.recovered_at or "") <= before:
                self._publish(entry, o, "RECOVERED")
                self._clear(entry.name, o.fire, "recovered_pending")
                said.append(f"{entry.name} {o.fire} RECOVERED")
        return said

    def _clear(self, job: str, fire: str, flag: str) -> None:
        self.ddb.update_item(TableName=self.table, Key={"pk": {"S": deadline_pk(job, fire)}, "sk": {"S": "DEADLINE"}},
                             UpdateExpression=f"REMOVE {flag}")

    def _publish(self, entry: CatalogJob, o: FireOutcome, status: str) -> None:
        execution = o.execution or dm.missed_execution(entry.name, o.fire)
        if status == "RECOVERED":
            error = f"deadline {entry.deadline} of the fire {o.fire} (due {o.due}): recovered: {o.reason}"
        else:
            error = (f"the fire {o.fire} has not SUCCEEDED by its deadline {entry.deadline} (due {o.due}): {o.reason}"
                     if not o.early else f"the fire {o.fire} will miss its deadline {entry.deadline} (due {o.due}): "
                                         f"{o.reason}")
        publish(self.sns, self.topic_arn, NotificationMessage(
            version=1, event=event_of(Event.DEADLINE.value), job=entry.name, team=entry.team, execution=execution,
            execution_arn="", trigger=Trigger.SCHEDULE.value, scheduled_time=o.fire,
            requested_by="EventBridge Scheduler", finished_at=iso_millis(self.clock()),
            outcome=Outcome.model_validate({"status": status, "due": o.due, "early": o.early}), channels=entry.notify.channels,
            events=[event_of(getattr(e, "value", e)) for e in entry.notify.events] or None,
            runbook=entry.runbook.model_dump() if entry.runbook else None, error=error))
        log.debug("%s: %s", entry.name, error)


def outcomes(ddb: Client, table: str, job: str, since: str, until: str | None = None) -> list[FireOutcome]:
    """The job's recorded outcomes of fires from ``since`` (and to ``until``), oldest first:
    one Query of its gsi1 partition."""
    condition = "gsi1pk = :p AND gsi1sk >= :a" if until is None else "gsi1pk = :p AND gsi1sk BETWEEN :a AND :b"
    values: JsonObject = {":p": {"S": job_deadlines_partition(job)}, ":a": {"S": since}}
    if until is not None:
        values[":b"] = {"S": until}
    kwargs: JsonObject = {"TableName": table, "IndexName": dm.GSI_BY_OWNER, "KeyConditionExpression": condition,
                          "ExpressionAttributeValues": values}
    return [FireOutcome.from_item(i) for i in query_items(ddb, kwargs)[0]]


def deployed_since(context: PlatformContext, entry: CatalogJob) -> datetime | None:
    """When the job's schedules were first created (the earliest of them; None: not deployed):
    fires before it are not the job's to answer for. GetSchedule's CreationDate, through the
    control plane's anchors (platform/anchors.py: read once, then refreshed in the background),
    so a pass asks only about the jobs with a deadline, not every schedule of the group."""
    prefix = context.deployment.name_prefix
    times = [t for i in range(len(entry.schedule))
             if (t := context.anchors.get(names.schedule_name(prefix, entry.name, i))) is not None]
    return min(times).astimezone(timezone.utc) if times else None


def _by(done: str | None, due: str) -> bool:
    """``done`` (a time as a record or an outcome holds it) is at or before ``due``."""
    if not done:
        return False
    try:
        return parse_iso(done) <= parse_iso(due)
    except ValueError:
        return False


def _running_step(view: ExecutionView) -> str | None:
    return next((r.step for r in reversed(view.timeline) if r.outcome == "running"), None)


def _ended_words(record: ExecutionRecord) -> str:
    if record.status == ExecutionStatus.SKIPPED.value:
        return f"its run was skipped ({record.skip_reason or 'no reason given'}): {record.execution}"
    return (f"run {record.execution} {record.status}" + (f" at step {record.failed_step}" if record.failed_step else "")
            + (f": {record.error[:300]}" if record.error else ""))


def _durations(history: list[ExecutionRecord]) -> dict[str, list[float]]:
    """Each step's successful attempts' durations (seconds) in ``history``."""
    typical: dict[str, list[float]] = {}
    for record in history:
        for a in record.timeline:
            if a.outcome == "succeeded" and a.started_at and a.finished_at:
                typical.setdefault(a.step, []).append((parse_iso(a.finished_at) - parse_iso(a.started_at)).total_seconds())
    return typical


def _remaining(entry: CatalogJob, step: str, view: ExecutionView, history: list[ExecutionRecord],
               now: datetime) -> timedelta | None:
    """The typical time the run still needs: the running step's typical duration less what it
    has run, and each later step's (a parallel group's: its slowest member's). None when a step
    has no history."""
    typical = _durations(history)

    def median(name: str) -> float | None:
        values = typical.get(name)
        return statistics.median(values) if values else None

    order = [(s.name, [m.name for m in s.parallel] if s.parallel else [s.name]) for s in entry.steps]
    index = next((i for i, (name, members) in enumerate(order) if step == name or step in members), None)
    if index is None:
        return None
    total = 0.0
    for i, (_, members) in enumerate(order[index:]):
        durations = [median(m) for m in members]
        if any(d is None for d in durations):
            return None
        longest = max(d for d in durations if d is not None)
        if i == 0:
            began = next((r.started_at for r in reversed(view.timeline) if r.step == step and r.started_at), None)
            ran = max((now - parse_iso(began)).total_seconds(), 0.0) if began else 0.0
            longest = max(longest - ran, 0.0)
        total += longest
    return timedelta(seconds=total)


def _local(t: datetime, zone: ZoneInfo) -> str:
    """``t`` as the job's wall time, with its day: a deadline is the job's, in its timezone."""
    return t.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def _remaining_after(entry: CatalogJob, step: str, history: list[ExecutionRecord]) -> timedelta | None:
    """The typical time of the steps after ``step`` (a group's slowest member each), from the
    history's successful attempts; None when there is no history or a later step has none."""
    if not history:
        return None
    order = [[m.name for m in s.parallel] if s.parallel else [s.name] for s in entry.steps]
    index = next((i for i, members in enumerate(order) if step in members or step == entry.steps[i].name), None)
    if index is None:
        return None
    typical = _durations(history)
    total = 0.0
    for members in order[index + 1:]:
        if any(m not in typical for m in members):
            return None
        total += max(statistics.median(typical[m]) for m in members)
    return timedelta(seconds=total)


def _words(d: timedelta) -> str:
    seconds = max(int(d.total_seconds()), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _late(due: str, at: str | None) -> str:
    return _words(parse_iso(at) - parse_iso(due)) if at else "?"
