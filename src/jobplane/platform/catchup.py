"""Catch up what a lost status event would have done.

Step Functions sends its "Execution Status Change" events on a *best-effort* basis
(https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-states.html: "Delivery type:
Best effort"), and two parts of the platform start from them: the reconciler, which records a
run that could not record itself (stopped, timed out), releases its claim and sends its alert;
and the `after` rules, which start a job when another one ends. A lost event would drop a
record and an alert, or a run, and tell no one, so the platform's periodic check (the slow-run
check's schedule, every 5 minutes by default; a thread in ``jobplane dev``) looks for both.

:class:`LostEndings`: a run that ended without recording itself still holds its claim (the job
state's ``running``): every claim is looked up, and one whose execution has ended is handed to
the reconciler, as its event would have been. The reconciler is idempotent (its record is
written only if none exists), so a check that meets the event's own delivery does nothing twice.

:class:`UpstreamCatchUp`: the upstream run's record says what its event started: each
downstream run marks it (``after_jobs``, the compiled ``Upstream: once`` state). A run of the
upstream job that ended as the downstream waits for, at least :data:`GRACE` ago and within
:data:`WINDOW`, with no mark of the downstream job, and whose execution ended with a status the
rule matches, is started now, as the rule would have. Only a run *newer than one that did start
the downstream* counts: that earlier mark shows the rule existed, so adding ``after`` to a job
never starts it for upstream runs that ended before the rule was deployed.

Started at most once: the name is derived from the job and the upstream run (Step Functions
refuses a name twice), and the downstream run itself marks the upstream record as the rule's run
would; an event that arrives after all is then recorded as a DUPLICATE skip. Each start has its
audit entry (actor ``jobplane``, action ``catch-up``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from datetime import datetime, timedelta, timezone
from typing import Callable

from jobplane.contract import audit
from jobplane.contract import execution_input, upstream
from jobplane.contract.clock import parse_iso
from jobplane.platform.context import PlatformContext
from jobplane.platform.control import Conflict
from jobplane.platform.control.runs import Runs
from jobplane.platform.reconciler import Reconciler
from jobplane.contract.records import ExecutionRecord

log = logging.getLogger(__name__)

#: An upstream run this recent may still have its event on the way: EventBridge delivers within
#: seconds, and retries a target it could not start (the compiled rules' retry policy).
GRACE = timedelta(minutes=10)
#: An upstream run older than this is left to an operator (docs/operate.md): a downstream run a
#: day late may do more harm than good.
WINDOW = timedelta(hours=24)
#: How many of the upstream job's newest records are read, per job it starts (one Query).
LOOK_BACK = 50
ACTOR = "jobplane"

Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(timezone.utc)


def catch_up_name(job: str, upstream_execution: str) -> str:
    """The execution name of ``job``'s run for an upstream run: the same for every check, and
    unique across jobs (records are keyed by execution name alone)."""
    return "catchup-" + hashlib.sha256(f"{job}\n{upstream_execution}".encode()).hexdigest()[:32]


class UpstreamCatchUp:
    """``runs``: the control plane's service of actions (a catch-up is an audited start)."""

    def __init__(self, runs: Runs, clock: Clock = _now):
        self.runs, self.context = runs, runs.context
        self.clock = clock

    def check(self) -> list[str]:
        """Start every downstream run a lost event did not start; their execution names."""
        now = self.clock()
        waiting: dict[str, list[tuple[str, str]]] = {}  # upstream job -> [(job, on)]
        for entry in self.context.entries.values():
            for after in entry.after:
                waiting.setdefault(after.job, []).append((entry.name, after.on))
        started = []
        for upstream_job, jobs in waiting.items():
            records = self._newest(upstream_job)  # one Query, whatever number of jobs wait for it
            for job, on in jobs:
                for record in self._missed(job, on, records, now):
                    name = self.start(job, record, now)
                    if name is not None:
                        started.append(name)
        return started

    def _newest(self, upstream_job: str) -> list[ExecutionRecord]:
        return self.context.repo.executions(upstream_job, limit=LOOK_BACK).items  # newest first

    def missed(self, job: str, upstream_job: str, on: str, now: datetime) -> list[ExecutionRecord]:
        """The runs of ``upstream_job`` whose event should have started ``job`` and did not."""
        return self._missed(job, on, self._newest(upstream_job), now)

    def _missed(self, job: str, on: str, records: list[ExecutionRecord], now: datetime) -> list[ExecutionRecord]:
        wanted = upstream.RECORD_STATUSES[on]
        candidates: list[ExecutionRecord] = []
        for record in records:
            if record.status not in wanted or not record.finished_at:
                continue
            if job in record.after_jobs:
                return [r for r in candidates if self.rule_matches(r, on)]  # the rule existed for these
            if now - WINDOW <= parse_iso(record.finished_at) <= now - GRACE:
                candidates.append(record)
        return []  # no run in sight ever started it: the rule may be newer than all of them

    def rule_matches(self, record: ExecutionRecord, on: str) -> bool:
        """Whether the rule matches the execution's own status, as its event would have carried
        it: a TIMED_OUT record is a step's timeout (the execution FAILED: the rule of
        ``on: 'FAILED'`` starts) or the whole job's (the execution TIMED_OUT: it does not)."""
        if not record.execution_arn:
            return False
        sfn = self.context.sfn
        try:
            status = sfn.describe_execution(executionArn=record.execution_arn)["status"]
        except sfn.exceptions.ExecutionDoesNotExist:
            return False
        return status in upstream.EVENT_STATUSES[on]

    def start(self, job: str, record: ExecutionRecord, now: datetime) -> str | None:
        name = catch_up_name(job, record.execution)
        payload = dataclasses.replace(upstream.transformed_input(record.execution, execution_input.iso(now),
                                                                 self.runs.reads.brief(job).definition),
                                      requested_by=f"catch-up after {record.execution}")
        reason = (f"the status event of {record.job} run {record.execution} ({record.status}, ended "
                  f"{record.finished_at}) did not start {job}")
        try:
            self.runs.audited(ACTOR, audit.CatchUp(job, name, record.execution), reason,
                                 lambda: self.runs.start_execution(job, payload, name))
        except self.context.sfn.exceptions.ExecutionAlreadyExists:
            return None  # an earlier check started it; its run marks the upstream record
        except Conflict as e:  # the job is in the catalog but its state machine is not deployed
            log.error("cannot catch up %s after %s: %s", job, record.execution, e)
            return None
        log.warning("started %s as %s: %s", job, name, reason)
        return name


class LostEndings:
    def __init__(self, context: PlatformContext, reconciler: Reconciler):
        self.context = context
        self.reconciler = reconciler

    def check(self) -> list[str]:
        """Reconcile every ended run that still holds its job's claim; the names it recorded."""
        recorded = []
        sfn = self.context.sfn
        for state in self.context.repo.job_states():  # one Query for every job
            for name in sorted(state.running):
                arn = self.context.deployment.execution_arn(state.job, name)
                try:
                    status = sfn.describe_execution(executionArn=arn)["status"]
                except sfn.exceptions.ExecutionDoesNotExist:
                    continue  # the claim's next contender takes it over (Skip: check holder)
                if status != "RUNNING" and self.reconciler.handle(arn, status) == "recorded":
                    log.warning("recorded %s run %s (%s): its status event never reached the reconciler",
                                state.job, name, status)
                    recorded.append(name)
        return recorded


def run(stop: threading.Event, checks: list[Callable[[], list[str]]], interval: float = 60.0) -> None:
    """``jobplane dev``: the checks at once (a start after a stop, or a crash, accounts for what
    happened meanwhile: fires missed while nothing ran them, endings nobody heard), then every
    ``interval`` seconds until ``stop``. A pass stops between checks once ``stop`` is set: the
    dev platform joins this thread for 10 s and then stops the local AWS, and a pass over
    5,000 jobs on a loaded machine outlasted that, so the checks after it failed against a
    stopped endpoint (a catch-up check that did not run is run by the next start's pass)."""
    while True:
        for check in checks:
            if stop.is_set():
                return
            try:
                check()
            except Exception:
                log.exception("catch-up check %s failed", getattr(check, "__qualname__", check))
        if stop.wait(interval):
            return
