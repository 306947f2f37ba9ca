"""Backfill: run a job for the fires of a past window, exactly the missed ones by default.

A backfill is an operator action on the control plane, not a new service: on AWS its runs are
ordinary executions of the deployed state machine, started with the portal's role (trigger
``backfill``, ``scheduled_time`` = the fire, so the job's code sees the time it should have run
for). Its progress lives in the table, and any driver moves it on: the CLI that created it, the
portal's background driver, or ``jobplane dev``'s after a restart. Drivers can run at once: each
step of a backfill is a conditional save, execution names are deterministic per fire and try
(Step Functions starts a name once), and each fire is leased before its run starts, so a fire is
never run twice at once, whoever drives and however many backfills cover it.

The job's policy holds (its rules for backfills: contract/policies.py): its claim decides as for
any run; a job that skips (or replaces) while running is backfilled one fire at a time, in order,
waiting while another run holds the claim (a run the policy skipped anyway is tried again, never
dropped); a job that skips after a failure halts its backfill at the first failed fire until
someone resumes it.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Callable

from jobplane.contract import audit
from jobplane.contract import datamodel as dm
from jobplane.contract import execution_input, policies
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.quoting import quoted
from jobplane.contract.schedule import validate_timezone
from jobplane.contract.statuses import FAILED_STATUSES, ExecutionStatus, SkipReason, Trigger
from jobplane.platform.control.access import Actor, as_actor
from jobplane.platform.backfill_model import (MAX_CONCURRENT, Backfill, Fire, FireState, Mode, Status, execution_name,
                                              fires_json, plan_fires, window_time)
from jobplane.platform.backfill_store import BackfillStore
from jobplane.contract.clock import iso_millis, now_iso, parse_iso
from jobplane.platform.control import Conflict, Invalid, NotFound, check_reason
from jobplane.platform.control.runs import Runs, with_calendar_defaults
from jobplane.platform.repository import query_items
from jobplane.contract.types import JsonObject

log = logging.getLogger(__name__)

#: What a backfill id looks like (``bf-`` and 12 hex digits); anything else is no backfill.
BACKFILL_ID = re.compile(r"bf-[0-9a-f]{12}")

#: A lease whose execution never started (its driver died between the two) is taken over after this.
ORPHAN_LEASE_SECONDS = 60
#: What a run the policy skipped because another run held the claim is: not an outcome, a wait.
_WAIT_REASONS = {SkipReason.RUNNING.value, SkipReason.CLAIM_CONFLICT.value}
_NOT_STARTED = "NOT_STARTED"


#: The earliest time a backfill window may start at (year 1 overflowed the plan's arithmetic: a 500).
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class PlannedFire:
    at: str  # UTC ISO
    local: datetime  # the same instant in the job's timezone (what the schedule says)
    covered_by: str | None  # what already covers it ("SUCCEEDED <execution>", "in flight ...")
    runs: bool  # whether a backfill in the asked mode starts it


@dataclass(frozen=True)
class Cover:
    """What already covers a fire: a record, a run in flight, another backfill's lease."""

    text: str
    in_flight: bool = False  # never started again, even by ``--all``


class Backfills:
    """Over the control plane's service of actions, ``runs`` (a backfill's creation and its starts
    are authorized and audited there), its reads and its platform context."""

    def __init__(self, runs: Runs):
        self.runs, self.reads, self.context = runs, runs.reads, runs.context
        self.store = BackfillStore(self.context.ddb, self.context.deployment.table)

    # -- reads --------------------------------------------------------------------------------
    def get(self, backfill_id: str) -> Backfill:
        bf = self.store.get(backfill_id) if BACKFILL_ID.fullmatch(backfill_id) else None
        if bf is None:
            raise NotFound(f"no backfill named {quoted(backfill_id, 40)}", {"backfill": backfill_id[:40]})
        return bf

    def of_job(self, job: str, limit: int = 20) -> list[Backfill]:
        self.reads.entry(job)
        return self.store.of_job(job, limit)

    def preview(self, job: str, start: str, end: str, mode: Mode | str = Mode.ONLY_MISSED) -> list[PlannedFire]:
        """The window's fires, what covers each already, and which a backfill would start."""
        entry = self.reads.entry(job)
        mode = _mode(mode)
        t1, t2 = self._window(entry, start, end)
        return self._plan(entry, t1, t2, mode)

    def plan_window(self, entry: CatalogJob, t1: datetime, t2: datetime, mode: Mode = Mode.ONLY_MISSED,
                    records_first: bool = False) -> list[PlannedFire]:
        """:meth:`preview` of a window already checked (the fire ledger's, platform/missed.py).
        ``records_first``: read the runs in flight and the leases only when the records leave a
        fire uncovered (the same answer; one read instead of three when every fire has a record)."""
        return self._plan(entry, t1, t2, mode, records_first)

    def _plan(self, entry: CatalogJob, t1: datetime, t2: datetime, mode: Mode,
              records_first: bool = False) -> list[PlannedFire]:
        try:
            fires = plan_fires(entry.schedule, entry.timezone, t1, t2, self.context.schedule_anchors(entry),
                               entry.calendar_schedule)
        except ValueError as e:
            raise Invalid(f"{entry.name}: {e}", {"to": "window too wide"}) from None
        covered = self._covered(entry, t1, t2, fires if records_first else None)
        zone = validate_timezone(entry.timezone)
        out = []
        for t in fires:
            at = execution_input.iso(t)
            by = covered.get(at)
            runs = by is None or (mode == Mode.ALL and not by.in_flight)
            out.append(PlannedFire(at, t.astimezone(zone), by.text if by else None, runs))
        return out

    def _window(self, entry: CatalogJob, start: str, end: str) -> tuple[datetime, datetime]:
        if not entry.schedule:
            raise Invalid(f"{entry.name} has no schedule: there are no past fires to backfill (start it with `run`)",
                          {"job": "no schedule"})
        problems: dict[str, str] = {}
        times: dict[str, datetime] = {}
        for field, text in (("from", start), ("to", end)):
            try:
                times[field] = window_time(str(text), entry.timezone)
            except ValueError as e:
                problems[field] = str(e)
                continue
            if times[field] < EARLIEST:  # no schedule fired then; and year 1 overflows what the plan reckons
                problems[field] = f"{text!r} is before {EARLIEST.year}: no schedule fired then"
        if problems:
            raise Invalid("; ".join(f"{k}: {v}" for k, v in problems.items()), problems)
        t1, t2 = times["from"], times["to"]
        if t1 > t2:
            raise Invalid(f"from ({execution_input.iso(t1)}) is after to ({execution_input.iso(t2)})", {"from": "after to"})
        if t2 > datetime.now(timezone.utc):
            raise Invalid(f"to ({execution_input.iso(t2)}) is in the future: a backfill runs past fires only; "
                          "the schedule runs the others", {"to": "in the future"})
        return t1, t2

    def _covered(self, entry: CatalogJob, t1: datetime, t2: datetime,
                 fires: list[datetime] | None = None) -> dict[str, Cover]:
        """Fires of the window that already have a record (run, skipped, duplicate), a run in
        flight or another backfill's lease: what ``--only-missed`` leaves alone. With ``fires``
        (the window's), runs in flight and leases are read only if a record leaves one uncovered."""
        a, b = execution_input.iso(t1), execution_input.iso(t2)
        covered: dict[str, Cover] = {}
        # Every record of a run started since the window opened (a fire's run starts at or after
        # it); a minute early, as a record's millisecond times sort before the same second's 'Z'.
        kwargs: JsonObject = {
            "TableName": self.context.deployment.table, "IndexName": dm.GSI_BY_OWNER,
            "KeyConditionExpression": "gsi1pk = :p AND gsi1sk >= :a",
            "ExpressionAttributeValues": {":p": {"S": dm.job_partition(entry.name)},
                                          ":a": {"S": iso_millis(t1 - timedelta(minutes=1))}},
            "ProjectionExpression": "execution, scheduled_time, #st, #tr, skip_reason",
            "ExpressionAttributeNames": {"#st": "status", "#tr": "trigger"}}
        for item in query_items(self.context.ddb, kwargs)[0]:
            trigger, status = item.get("trigger", {}).get("S"), item.get("status", {}).get("S")
            if trigger not in (Trigger.SCHEDULE.value, Trigger.BACKFILL.value) or "scheduled_time" not in item:
                continue
            if trigger == Trigger.BACKFILL.value and status == ExecutionStatus.SKIPPED.value:
                continue  # a backfill's run that waited for a claim: its fire is tried again
            fire = _fire_key(item["scheduled_time"]["S"])
            if fire and a <= fire <= b:
                covered.setdefault(fire, Cover(f"{status} {item['execution']['S']}"))
        if fires is not None and all(execution_input.iso(t) in covered for t in fires):
            return covered
        for fire, execution in self._scheduled_in_flight(entry.name).items():
            if a <= fire <= b:
                covered[fire] = Cover(f"in flight: {execution}", in_flight=True)
        for fire, lease in self.store.leases(entry.name, a, b).items():
            if lease.state == "running":
                covered[fire] = Cover(f"in flight: {lease.execution} (backfill {lease.backfill})", in_flight=True)
            else:
                covered.setdefault(fire, Cover(f"backfilled by {lease.backfill}: {lease.execution}"))
        return covered

    # -- actions ------------------------------------------------------------------------------
    def create(self, job: str, actor: Actor | str, start: str, end: str, *, mode: Mode | str = Mode.ONLY_MISSED,
               max_concurrent: int = 1, params: JsonObject | None = None, reason: str = "") -> Backfill:
        """Plan the window and save the backfill (audited); a driver starts its fires."""
        entry = self.reads.entry(job)
        who = self.runs.authorize(actor, job)  # once: the audit entry below takes what it found
        check_reason(reason)
        mode = _mode(mode)
        if not 1 <= max_concurrent <= MAX_CONCURRENT:
            raise Invalid(f"max_concurrent is 1 to {MAX_CONCURRENT}", {"max_concurrent": "out of range"})
        if policies.of(entry.policy).backfills_in_order:
            max_concurrent = 1  # its claim would skip (or stop) a second run: one at a time, in order
        overrides = self.runs.checked_params(entry, params)
        t1, t2 = self._window(entry, start, end)
        planned = self._plan(entry, t1, t2, mode)
        fires = [Fire(p.at) for p in planned if p.runs]
        if not planned:
            raise Invalid(f"no fire of {entry.name} falls between {execution_input.iso(t1)} and "
                          f"{execution_input.iso(t2)}", {"to": "no fires"})
        if not fires:
            raise Conflict(f"every one of the {len(planned)} fires in the window already has a record or a run in "
                           "flight; mode 'all' re-runs them", {"fires": len(planned)})
        bf = Backfill(id=f"bf-{secrets.token_hex(6)}", job=job, team=entry.team, start=execution_input.iso(t1),
                      end=execution_input.iso(t2), mode=mode, max_concurrent=max_concurrent,
                      params={**entry.params, **overrides}, requested_by=who.actor.name,
                      reason=reason,
                      created_at=now_iso(), fires=fires)
        event = audit.StartBackfill(job, bf.id, bf.start, bf.end, mode.value, len(fires), max_concurrent, overrides)
        self.runs.audited(who, event, reason, lambda: self.store.create(bf), undo=[lambda: self.store.delete(bf.id)])
        return bf

    def cancel(self, backfill_id: str, actor: Actor | str, reason: str) -> Backfill:
        """No further fire starts; runs already started finish and are recorded."""
        check_reason(reason)
        return self._set_status(backfill_id, actor, reason, audit.CancelBackfill, (Status.RUNNING, Status.HALTED),
                                Status.CANCELLED, f"cancelled by {as_actor(actor).name}: {reason}")

    def resume(self, backfill_id: str, actor: Actor | str, reason: str) -> Backfill:
        """A halted or cancelled backfill goes on with its fires not yet started."""
        check_reason(reason)
        return self._set_status(backfill_id, actor, reason, audit.ResumeBackfill, (Status.HALTED, Status.CANCELLED),
                                Status.RUNNING, None)

    def _set_status(self, backfill_id: str, actor: Actor | str, reason: str, action: type[audit.CancelBackfill],
                    from_: tuple[Status, ...],
                    to: Status, note: str | None) -> Backfill:
        while True:
            bf = self.get(backfill_id)
            if bf.status not in from_:
                raise Conflict(f"{bf.id} is {bf.status.value}", {"backfill": bf.id, "status": bf.status.value})
            bf.status, bf.note = to, note
            bf.finished_at = now_iso() if to != Status.RUNNING else None

            def act(bf: Backfill = bf) -> None:
                if not self.store.save(bf):
                    raise _Moved  # a driver saved progress in between: no entry kept, read again

            try:
                self.runs.audited(actor, action(bf.job, bf.id), reason, act)
                return bf
            except _Moved:
                continue

    # -- driving ------------------------------------------------------------------------------
    def tick(self, backfill_id: str) -> Backfill:
        """One step: note how the runs in flight ended, start the next fires the policy and
        ``max_concurrent`` allow, and save. Safe to call from several drivers at once."""
        bf = self.get(backfill_id)
        if not bf.driven:
            return bf
        before = (bf.status, bf.note, fires_json(bf.fires))
        entry = self.context.entries.get(bf.job)
        for fire in [f for f in bf.fires if f.state == FireState.RUNNING]:
            self._follow(bf, fire, entry)
        if bf.status == Status.RUNNING and entry is None:  # removed from the definitions since
            bf.status, bf.finished_at = Status.HALTED, now_iso()
            bf.note = f"{bf.job} is no longer in the catalog: nothing more to start"
        if bf.status == Status.RUNNING and entry is not None:
            self._start_next(bf, entry)
        if bf.status == Status.RUNNING and all(f.state in (FireState.DONE, FireState.TAKEN) for f in bf.fires):
            bf.status, bf.finished_at = Status.COMPLETED, now_iso()
        if (bf.status, bf.note, fires_json(bf.fires)) == before:
            return bf  # nothing moved (runs still going): no write, the drivers poll every few seconds
        if not self.store.save(bf):
            return self.get(backfill_id)  # another driver moved it on
        return bf

    def _follow(self, bf: Backfill, fire: Fire, entry: CatalogJob | None) -> None:
        assert fire.execution is not None
        outcome = self._outcome(bf.job, fire.execution)
        if outcome is None:
            return
        status, skip_reason = outcome
        if status == _NOT_STARTED or (status == ExecutionStatus.SKIPPED.value and skip_reason in _WAIT_REASONS):
            # never started (its driver stopped in between), or the policy made it wait: again
            self.store.finish_lease(bf.job, fire.at, fire.execution, keep=False)
            fire.state = FireState.PENDING
            if status != _NOT_STARTED:
                fire.note = f"{fire.execution} skipped ({skip_reason}): tried again"
            fire.execution = None
            return
        self.store.finish_lease(bf.job, fire.at, fire.execution, keep=True)
        fire.state, fire.status = FireState.DONE, status
        if (entry is not None and policies.of(entry.policy).halts_backfill_on_failure
                and status in {s.value for s in FAILED_STATUSES}):
            if bf.status == Status.RUNNING:
                bf.status, bf.finished_at = Status.HALTED, now_iso()
                bf.note = (f"the run for {fire.at} ended {status} and {bf.job} skips after a failure "
                           f"({entry.policy.value}): fix the cause, then resume the backfill")

    def _start_next(self, bf: Backfill, entry: CatalogJob) -> None:
        in_flight = sum(f.state == FireState.RUNNING for f in bf.fires)
        others: dict[str, str] | None = None  # fires of runs in flight that no backfill started
        for fire in [f for f in bf.fires if f.state == FireState.PENDING]:
            if in_flight >= bf.max_concurrent:
                return
            if policies.of(entry.policy).backfills_in_order:
                state = self.context.repo.job_state(bf.job)
                if state and state.running:
                    return  # another run holds the claim: wait for it, in order
            if others is None:  # a scheduled run may have started since the backfill was planned
                others = self._scheduled_in_flight(bf.job)
            if fire.at in others:
                fire.state, fire.note = FireState.TAKEN, f"run by {others[fire.at]} (in flight when it was its turn)"
                continue
            fire.tries += 1
            name = execution_name(bf.id, fire.at, fire.tries)
            holder = self._lease(bf, fire, name)
            if holder is not None:
                fire.tries -= 1
                fire.state, fire.note = FireState.TAKEN, holder
                continue
            payload = execution_input.backfill(bf.requested_by, parse_iso(fire.at), bf.params, bf.id,
                                               entry.definition)
            # each fire its own (a January fire: last_closed December); today: the day it is started
            payload = with_calendar_defaults(entry, payload, datetime.now(timezone.utc))
            try:
                self.runs.start_execution(bf.job, payload, name)
            except self.context.sfn.exceptions.ExecutionAlreadyExists:
                pass  # another driver of this backfill started it: the same run
            except Conflict as e:  # the job is not deployed (any more)
                self.store.finish_lease(bf.job, fire.at, name, keep=False)
                fire.tries -= 1
                bf.status, bf.finished_at, bf.note = Status.HALTED, now_iso(), e.message
                return
            fire.state, fire.execution = FireState.RUNNING, name
            in_flight += 1

    def _scheduled_in_flight(self, job: str) -> dict[str, str]:
        """Fire -> execution, for the job's scheduled runs in flight (a backfill's own hold leases)."""
        out = {}
        for view in self.reads.running_executions(job):
            fire = _fire_key(view.input.scheduled_time)
            if view.input.trigger == Trigger.SCHEDULE.value and fire:
                out[fire] = view.execution
        return out

    def _lease(self, bf: Backfill, fire: Fire, name: str) -> str | None:
        """None when ``fire`` is leased for ``name``, else what holds it."""
        held = self.store.lease(bf.job, fire.at, bf.id, name, over_done=bf.mode == Mode.ALL)
        if held is None:
            return None
        if held.state == "running":
            outcome = self._outcome(bf.job, held.execution)
            orphan = (outcome is not None and outcome[0] == _NOT_STARTED
                      and (datetime.now(timezone.utc) - parse_iso(held.leased_at)).total_seconds() > ORPHAN_LEASE_SECONDS)
            if orphan or (outcome is not None and outcome[0] != _NOT_STARTED and bf.mode == Mode.ALL):
                if self.store.lease(bf.job, fire.at, bf.id, name, over_done=False, replacing=held.execution) is None:
                    return None
        return f"run by {held.execution} (backfill {held.backfill})"

    def _outcome(self, job: str, execution: str) -> tuple[str, str | None] | None:
        """How ``execution`` ended (its record's status and skip reason), None while it runs."""
        record = self.context.repo.execution(execution)
        if record is not None:
            return record.status, record.skip_reason
        try:
            d = self.context.sfn.describe_execution(executionArn=self.context.deployment.execution_arn(job, execution))
        except self.context.sfn.exceptions.ExecutionDoesNotExist:
            return _NOT_STARTED, None
        return None if d["status"] == ExecutionStatus.RUNNING.value else (d["status"], None)

    def follow(self, backfill_id: str, on_change: Callable[[Backfill], None], interval: float = 1.0,
               stop: threading.Event | None = None) -> Backfill:
        """Drive ``backfill_id`` until it needs no more driving (the CLI), calling ``on_change``
        after each step that changed it."""
        version = -1
        while True:
            bf = self.tick(backfill_id)
            if bf.version != version:
                version = bf.version
                on_change(bf)
            if not bf.driven or (stop is not None and stop.is_set()):
                return bf
            time.sleep(interval)


class BackfillDriver:
    """Moves every running backfill on, in the background of a long-lived process (the portal,
    ``jobplane dev``): a backfill created from the portal or left by an interrupted CLI runs to
    its end without anyone watching."""

    def __init__(self, backfills: Backfills, interval: float = 2.0):
        self.backfills = backfills
        self.interval = interval

    def drive_once(self) -> list[str]:
        """One move of every running backfill; returns the ones moved without trouble."""
        moved = []
        for backfill_id in self.backfills.store.active_ids():
            try:
                self.backfills.tick(backfill_id)
                moved.append(backfill_id)
            except Exception:  # one backfill's trouble must not stop the others
                log.exception("could not move backfill %s on", backfill_id)
        return moved

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            try:
                self.drive_once()
            except Exception:
                log.exception("backfill driver")


class _Moved(Exception):
    pass


def _mode(mode: Mode | str) -> Mode:
    try:
        return Mode(mode)
    except ValueError:
        raise Invalid(f"mode must be {' or '.join(m.value for m in Mode)}", {"mode": "unknown"}) from None


def _fire_key(text: str) -> str | None:
    """A scheduled_time as a fire key (UTC ISO, second precision), None if it is not a time."""
    try:
        return execution_input.iso(parse_iso(text))
    except ValueError:
        return None
