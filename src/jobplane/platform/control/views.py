"""What an operator sees of a job and of an execution: a record composed with the live state,
and the next fire times."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime, timezone
from collections.abc import Sequence
from typing import TYPE_CHECKING

from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.attempts import Attempt
from jobplane.contract.records import ExecutionRecord, JobState
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:  # the catalog's models (pydantic) load with the catalog, not with a run's view
    from jobplane.contract.catalog import CatalogJob


@dataclass(frozen=True)
class JobSummary:
    entry: CatalogJob
    state: JobState | None
    next_fires: list[datetime] = field(default_factory=list)
    recent_failures: int = 0  # among the newest RECENT_FAILURES failures across jobs

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def team(self) -> str:
        return self.entry.team

    @property
    def running(self) -> list[str]:
        return sorted(self.state.running) if self.state else []

    @property
    def paused(self) -> bool:
        return bool(self.state and self.state.paused)

    @property
    def blocked_by(self) -> str | None:
        """The unacknowledged failed run that holds back the job's scheduled fires. Every
        failure is kept in the state as ``blocked_by`` whatever the policy (the claim reads it
        only under a policy that skips after a failure: contract/policies.py), so under any
        other policy nothing is blocked, whatever the state says: the portal once showed a
        SKIP_IF_RUNNING job as "blocked by failure" after a stopped run."""
        from jobplane.contract import policies

        state = self.state
        if state is None or not state.blocked or not policies.of(self.entry.policy).skips_after_failure:
            return None
        return state.blocked_by


JOB_SORTS = ("failures", "duration")
RECENT_FAILURES = 200


@dataclass(frozen=True)
class JobWindow:
    """One page of the jobs that match a filter (Reads.job_window): the page's jobs, how many
    match in all, and where the page starts among them."""

    jobs: list[JobSummary]
    total: int
    offset: int


@dataclass(frozen=True)
class LiveExecution:
    """What DescribeExecution says of an execution that has no record yet (it runs)."""

    status: str
    started_at: str | None
    finished_at: str | None
    error: str | None = None  # DescribeExecution's error and cause
    sent: JsonObject = field(default_factory=dict)  # the input as it was sent


@dataclass(frozen=True)
class ExecutionHistory:
    """The step attempts and state transitions the execution history shows: read while a run
    has no record, or a record no timeline yet (the reconciler stores it a moment after)."""

    timeline: tuple[Attempt, ...]
    transitions: int


@dataclass(frozen=True)
class ExecutionSubject:
    """What an action on an execution needs to authorize the actor: its job, and its record if
    it has one (one GetItem; while it runs, the job comes from the job states). Never its
    history or logs, which a page needs and an action does not."""

    execution: str
    job: str
    record: ExecutionRecord | None


@dataclass(frozen=True)
class ExecutionView:
    """One execution as an operator sees it: its final record, or while it has none what
    Step Functions says of it (``live``), with its history when the record does not hold it."""

    execution: str
    job: str
    execution_arn: str
    input: ExecutionInput  # as the run had it (a console start's missing fields filled in)
    record: ExecutionRecord | None
    live: LiveExecution | None
    history: ExecutionHistory | None = None
    #: the failed step's error line from its log, until the reconciler adds it to the record
    log_error: str | None = None

    def __post_init__(self) -> None:
        assert self.record is not None or self.live is not None, "a view of nothing"

    @property
    def known(self) -> ExecutionRecord | LiveExecution:
        """The record once it exists (the run's own account), else what Step Functions says."""
        if self.record is not None:
            return self.record
        assert self.live is not None
        return self.live

    @property
    def status(self) -> str:
        return self.known.status

    @property
    def started_at(self) -> str | None:
        return self.known.started_at

    @property
    def finished_at(self) -> str | None:
        return self.known.finished_at

    @property
    def timeline(self) -> Sequence[Attempt]:
        """The history's when it was read, else the record's (the reconciler stored it)."""
        if self.history is not None:
            return self.history.timeline
        return self.record.timeline if self.record else ()

    @property
    def transitions(self) -> int | None:
        if self.history is not None:
            return self.history.transitions
        return self.record.transitions if self.record else None

    @property
    def rerun_by(self) -> tuple[str, ...]:
        return self.record.rerun_by if self.record else ()

    @property
    def after_runs(self) -> tuple[str, ...]:
        return self.record.after_runs if self.record else ()

    @property
    def failed_step(self) -> str | None:
        return self.record.failed_step if self.record else None

    @property
    def error(self) -> str | None:
        if self.record:
            return self.record.error or self.log_error
        return self.live.error if self.live else None

    @property
    def running(self) -> bool:
        return self.status == ExecutionStatus.RUNNING.value

    @property
    def waiting(self) -> bool:
        """Running, with every open attempt waiting for its pool's slot (docs/pools.md): the
        word an operator reads is WAITING, not RUNNING."""
        open_rows = [r for r in self.timeline if r.finished_at is None]
        return self.running and bool(open_rows) and all(r.waiting for r in open_rows)

    @property
    def status_word(self) -> str:
        """The status as shown: WAITING for a run whose steps all wait for a pool, else the status."""
        return "WAITING" if self.waiting else self.status


def next_fires(entry: CatalogJob, count: int = 3, after: datetime | None = None,
               anchors: tuple[datetime | None, ...] = ()) -> list[datetime]:
    """The job's next fire times over all its schedules, in its timezone (none when disabled).

    ``anchors``: per schedule, when a rate() schedule started (its StartDate, else its
    CreationDate): EventBridge Scheduler counts a rate from there, not from now."""
    if not entry.scheduled:
        return []
    if entry.calendar_schedule is not None:  # a calendar job: its business-day fires (UTC)
        from jobplane.contract.job_fires import next_job_fires

        return [f.at for f in next_job_fires(entry, after or datetime.now(timezone.utc), count).fires]
    if after is None:  # for display: the same minute gives the same answer, so cache by minute...
        now = datetime.now(timezone.utc)
        minute = now.replace(second=0, microsecond=0)
        fires = _next_fires(tuple(entry.schedule), entry.timezone, count + 1, minute, tuple(anchors))
        return [t for t in fires if t > now][:count]  # ...and drop a rate() fire earlier in this minute
    return list(_next_fires(tuple(entry.schedule), entry.timezone, count, after, tuple(anchors)))


@lru_cache(maxsize=8192)
def _next_fires(schedule: tuple[str, ...], zone: str, count: int, after: datetime,
                anchors: tuple[datetime | None, ...] = ()) -> tuple[datetime, ...]:
    """The next fires of a job without a calendar, by job_fires' enumerator, in the job's zone."""
    from jobplane.contract.job_fires import JobSchedule, next_job_fires
    from jobplane.contract.schedule import validate_timezone

    tz = validate_timezone(zone)
    return tuple(f.at.astimezone(tz) for f in next_job_fires(JobSchedule(schedule, zone), after, count, anchors).fires)
