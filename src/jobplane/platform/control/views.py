"""What an operator sees of a job and of an execution: a record composed with the live state,
and the next fire times."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime, timezone
from collections.abc import Sequence

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.schedule import next_fire_times, parse
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.attempts import Attempt
from jobplane.contract.records import ExecutionRecord, JobState
from jobplane.contract.types import JsonObject


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


JOB_SORTS = ("failures", "duration")
RECENT_FAILURES = 200


@dataclass(frozen=True)
class LiveExecution:
    """What Step Functions says of an execution (DescribeExecution and its history): all there
    is while it runs, and the timeline of one that just ended, until the reconciler stores it
    on the record."""

    execution_arn: str
    status: str
    started_at: str | None
    finished_at: str | None
    timeline: tuple[Attempt, ...]
    transitions: int
    error: str | None = None  # DescribeExecution's error and cause
    sent: JsonObject = field(default_factory=dict)  # the input as it was sent


@dataclass(frozen=True)
class ExecutionView:
    """One execution as an operator sees it: its final record composed with what Step
    Functions says of it now (``live``); either may be missing, never both."""

    execution: str
    job: str
    execution_arn: str
    input: ExecutionInput  # as the run had it (a console start's missing fields filled in)
    record: ExecutionRecord | None
    live: LiveExecution | None
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
        """The record's, once the reconciler stored it; the history's until then."""
        if self.record and (self.record.transitions is not None or self.live is None):
            return self.record.timeline
        return self.live.timeline if self.live else ()

    @property
    def transitions(self) -> int | None:
        if self.record and self.record.transitions is not None:
            return self.record.transitions
        return self.live.transitions if self.live else None

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


def next_fires(entry: CatalogJob, count: int = 3, after: datetime | None = None,
               anchors: tuple[datetime | None, ...] = ()) -> list[datetime]:
    """The job's next fire times over all its schedules, in its timezone (none when disabled).

    ``anchors``: per schedule, when a rate() schedule started (its StartDate, else its
    CreationDate): EventBridge Scheduler counts a rate from there, not from now."""
    if not entry.scheduled:
        return []
    if after is None:  # for display: the same minute gives the same answer, so cache by minute...
        now = datetime.now(timezone.utc)
        minute = now.replace(second=0, microsecond=0)
        fires = _next_fires(tuple(entry.schedule), entry.timezone, count + 1, minute, tuple(anchors))
        return [t for t in fires if t > now][:count]  # ...and drop a rate() fire earlier in this minute
    return list(_next_fires(tuple(entry.schedule), entry.timezone, count, after, tuple(anchors)))


@lru_cache(maxsize=8192)
def _next_fires(schedule: tuple[str, ...], zone: str, count: int, after: datetime,
                anchors: tuple[datetime | None, ...] = ()) -> tuple[datetime, ...]:
    times = [t for i, expression in enumerate(schedule)
             for t in next_fire_times(parse(expression), zone, after, count, anchors[i] if i < len(anchors) else None)]
    return tuple(sorted(times)[:count])
