"""A job's month, for a team's monthly review (issue 67 part 2): how many runs, how many
succeeded, how long they took (median, p95), how late they started, the fires that never ran,
the deadline kept, and the failures, each linkable.

Computed from the records, never from metrics: a report must be exact, and metric delivery
(CloudWatch EMF) is at least once, so a count from metrics can be off (docs/metrics.md). The
records are the runs' own (``EXEC#``, one per run, skip or missed fire, kept 400 days) read
newest first through the job's index (gsi1, by start) until the month is behind; deadlines
come from the deadline checker's outcomes (kept 100 days: an older month has none).

The month is the job's: its timezone's first day 00:00 to the next month's. A run belongs to
the month of its fire (``scheduled_time``) if it has one, else of its start: a fire at 23:59 on
the 31st whose run ends on the 1st counts for the month it was for.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.clock import parse_iso
from jobplane.contract.records import ExecutionRecord
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.types import JsonObject
from jobplane.platform.context import PlatformContext

MONTH_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
#: A run that started this long before the month can still be a fire of it (a late start is
#: rare; a run is at most its job's timeout long, and the index is ordered by start).
_LOOK_BEFORE = timedelta(days=2)
#: The ended outcomes that count as runs that tried (the success rate's denominator): a skip is
#: the policy at work, a missed fire never ran (and an ABORTED run a REPLACE job's newer run
#: stopped is not counted either: ``MonthReport.replaced``).
TRIED = (ExecutionStatus.SUCCEEDED.value, ExecutionStatus.FAILED.value, ExecutionStatus.TIMED_OUT.value,
         ExecutionStatus.ABORTED.value)


class BadMonth(ValueError):
    pass


@dataclass(frozen=True)
class Spread:
    """Seconds: the median and the 95th percentile (nearest rank) of ``count`` values."""

    count: int
    median: float | None
    p95: float | None

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        if not values:
            return cls(0, None, None)
        ordered = sorted(values)
        rank = max(1, -(-95 * len(ordered) // 100))  # nearest rank: ceil(0.95 n)
        return cls(len(ordered), statistics.median(ordered), ordered[rank - 1])

    def to_json(self) -> JsonObject:
        return {"count": self.count, "median_seconds": self.median, "p95_seconds": self.p95}


@dataclass(frozen=True)
class Failure:
    execution: str
    status: str
    at: str | None
    step: str | None
    error: str | None


@dataclass(frozen=True)
class MonthReport:
    job: str
    team: str
    month: str
    timezone: str
    counts: dict[str, int]  # by status (SUCCEEDED, FAILED, ..., SKIPPED, MISSED)
    duration: Spread  # of the SUCCEEDED runs
    start_delay: Spread  # scheduled runs: start minus the fire (backfills and manual runs excluded)
    deadline_fires: int  # fires the deadline checker decided in the month (none without a deadline)
    deadline_met: int
    failures: tuple[Failure, ...] = field(default=())  # newest first
    replaced: int = 0  # of the ABORTED, those a REPLACE job's newer run stopped: not counted as runs

    @property
    def runs(self) -> int:
        return sum(self.counts.get(s, 0) for s in TRIED) - self.replaced

    @property
    def success_rate(self) -> float | None:
        return self.counts.get(ExecutionStatus.SUCCEEDED.value, 0) / self.runs if self.runs else None

    @property
    def on_time(self) -> float | None:
        return self.deadline_met / self.deadline_fires if self.deadline_fires else None

    def to_json(self) -> JsonObject:
        return {"job": self.job, "team": self.team, "month": self.month, "timezone": self.timezone,
                "counts": dict(self.counts), "runs": self.runs, "replaced": self.replaced, "success_rate": self.success_rate,
                "duration": self.duration.to_json(), "start_delay": self.start_delay.to_json(),
                "missed_fires": self.counts.get(ExecutionStatus.MISSED.value, 0),
                "deadline": {"fires": self.deadline_fires, "met": self.deadline_met, "on_time": self.on_time},
                "failures": [f.__dict__ for f in self.failures]}

    def lines(self) -> list[str]:
        """The report as `jobplane report` prints it."""
        def secs(v: float | None) -> str:
            return "-" if v is None else _words(v)

        def pct(v: float | None) -> str:
            return "-" if v is None else f"{100 * v:.1f}%"

        out = [f"{self.job} ({self.team}), {self.month} ({self.timezone})",
               f"  runs: {self.runs} ({', '.join(f'{k} {v}' for k, v in sorted(self.counts.items())) or 'none'})",
               f"  success rate: {pct(self.success_rate)}",
               f"  duration (succeeded): median {secs(self.duration.median)}, p95 {secs(self.duration.p95)}",
               f"  start delay (scheduled): median {secs(self.start_delay.median)}, p95 {secs(self.start_delay.p95)}",
               f"  missed fires: {self.counts.get(ExecutionStatus.MISSED.value, 0)}"]
        if self.deadline_fires:
            out.append(f"  deadline: {self.deadline_met}/{self.deadline_fires} fires on time ({pct(self.on_time)})")
        for f in self.failures:
            out.append(f"  {f.status} {f.at or ''} {f.execution}" + (f" at {f.step}" if f.step else "")
                       + (f": {f.error[:120]}" if f.error else ""))
        return out


def month_bounds(month: str, zone: str) -> tuple[datetime, datetime]:
    """The month's start and end (exclusive), UTC, in ``zone``'s wall time."""
    m = MONTH_RE.fullmatch(month)
    if m is None:
        raise BadMonth(f"month must be YYYY-MM (e.g. 2026-11), not {month!r}")
    year, number = int(m[1]), int(m[2])
    tz = ZoneInfo(zone)
    start = datetime(year, number, 1, tzinfo=tz)
    end = datetime(year + (number == 12), number % 12 + 1, 1, tzinfo=tz)
    return start.astimezone(timezone.utc), end.astimezone(timezone.utc)


def last_month(zone: str, now: datetime) -> str:
    """The last whole month in ``zone`` at ``now``: what a monthly review looks at."""
    local = now.astimezone(ZoneInfo(zone))
    year, month = (local.year, local.month - 1) if local.month > 1 else (local.year - 1, 12)
    return f"{year:04d}-{month:02d}"


def job_month(context: PlatformContext, entry: CatalogJob, month: str) -> MonthReport:
    """The job's report for ``month`` (YYYY-MM) in its timezone."""
    zone = entry.timezone
    start, end = month_bounds(month, zone)
    counts: dict[str, int] = {}
    durations: list[float] = []
    delays: list[float] = []
    failures: list[Failure] = []
    replaced = 0
    for record in _records(context, entry.name, start, end):
        at = _when(record)
        if at is None or not start <= at < end:
            continue
        counts[record.status] = counts.get(record.status, 0) + 1
        if record.status == ExecutionStatus.ABORTED.value and record.abort_reason:
            replaced += 1  # a REPLACE job's newer run stopped it: the policy at work, not a run that failed
        if record.status == ExecutionStatus.SUCCEEDED.value and record.started_at and record.finished_at:
            durations.append((parse_iso(record.finished_at) - parse_iso(record.started_at)).total_seconds())
        if record.trigger == "schedule" and record.scheduled_time and record.started_at:
            delays.append(max((parse_iso(record.started_at) - parse_iso(record.scheduled_time)).total_seconds(), 0.0))
        if record.status in (ExecutionStatus.FAILED.value, ExecutionStatus.TIMED_OUT.value) or (
                record.status == ExecutionStatus.ABORTED.value and not record.abort_reason):
            failures.append(Failure(record.execution, record.status, record.finished_at or record.started_at,
                                    record.failed_step, record.error))
    fires, met = _deadlines(context, entry, start, end)
    return MonthReport(entry.name, entry.team, month, zone, counts, Spread.of(durations), Spread.of(delays),
                       fires, met, tuple(failures), replaced)


def _when(record: ExecutionRecord) -> datetime | None:
    text = record.scheduled_time or record.started_at or record.finished_at
    return parse_iso(text) if text else None


def _records(context: PlatformContext, job: str, start: datetime, end: datetime) -> Iterator[ExecutionRecord]:
    """The job's records that started around the month: from ``_LOOK_BEFORE`` before it (a fire
    of the month's first minutes that started early is rare, but a run of the previous month's
    last fire starts in it) to ``_LOOK_BEFORE`` after (a fire of its last minutes that started
    late), by the index's start key: an old month reads its own pages only."""
    from jobplane.contract import execution_input

    yield from context.repo.executions_started(job, execution_input.iso(start - _LOOK_BEFORE),
                                               execution_input.iso(end + _LOOK_BEFORE))


def _deadlines(context: PlatformContext, entry: CatalogJob, start: datetime, end: datetime) -> tuple[int, int]:
    if not entry.deadline:
        return 0, 0
    from jobplane.contract import execution_input
    from jobplane.platform.deadlines import outcomes

    decided = outcomes(context.ddb, context.deployment.table, entry.name, execution_input.iso(start),
                       execution_input.iso(end))
    in_month = [o for o in decided if start <= parse_iso(o.fire) < end]
    return len(in_month), sum(1 for o in in_month if o.met)


def _words(seconds: float) -> str:
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    if s >= 60:
        return f"{s // 60} min {s % 60} s"
    return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"


@dataclass(frozen=True)
class TeamMonth:
    """A team's month: each of its jobs' reports (each in its job's own timezone) and the team's
    totals over them, for the monthly review that asks "how did we do" before "which job"."""

    team: str
    month: str
    jobs: tuple[MonthReport, ...]  # by name

    @property
    def runs(self) -> int:
        return sum(r.runs for r in self.jobs)

    @property
    def succeeded(self) -> int:
        return sum(r.counts.get(ExecutionStatus.SUCCEEDED.value, 0) for r in self.jobs)

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.runs if self.runs else None

    @property
    def missed_fires(self) -> int:
        return sum(r.counts.get(ExecutionStatus.MISSED.value, 0) for r in self.jobs)

    @property
    def failures(self) -> int:
        return sum(len(r.failures) for r in self.jobs)

    @property
    def deadline_fires(self) -> int:
        return sum(r.deadline_fires for r in self.jobs)

    @property
    def deadline_met(self) -> int:
        return sum(r.deadline_met for r in self.jobs)

    @property
    def on_time(self) -> float | None:
        return self.deadline_met / self.deadline_fires if self.deadline_fires else None

    def to_json(self) -> JsonObject:
        return {"team": self.team, "month": self.month, "runs": self.runs, "succeeded": self.succeeded,
                "success_rate": self.success_rate, "missed_fires": self.missed_fires, "failures": self.failures,
                "deadline": {"fires": self.deadline_fires, "met": self.deadline_met, "on_time": self.on_time},
                "jobs": [r.to_json() for r in self.jobs]}

    def lines(self) -> list[str]:
        """The team's month as `jobplane report --team` prints it: the totals, then a line a job."""
        def pct(v: float | None) -> str:
            return "-" if v is None else f"{100 * v:.1f}%"

        out = [f"team {self.team}, {self.month} (each job in its own timezone): {len(self.jobs)} jobs",
               f"  runs: {self.runs}, success rate {pct(self.success_rate)}, failures {self.failures}, "
               f"missed fires {self.missed_fires}"
               + (f", deadline {self.deadline_met}/{self.deadline_fires} on time ({pct(self.on_time)})"
                  if self.deadline_fires else "")]
        width = max((len(r.job) for r in self.jobs), default=0)
        for r in self.jobs:
            out.append(f"  {r.job:<{width}}  runs {r.runs:>5}  success {pct(r.success_rate):>6}  "
                       f"p95 {'-' if r.duration.p95 is None else _words(r.duration.p95):>12}  "
                       f"missed {r.counts.get(ExecutionStatus.MISSED.value, 0):>3}  failures {len(r.failures):>3}"
                       + (f"  on time {pct(r.on_time)}" if r.deadline_fires else ""))
        return out


#: Jobs whose months are read side by side (each is its own Queries, mostly waiting for DynamoDB).
TEAM_WORKERS = 6


def team_month(context: PlatformContext, entries: list[CatalogJob], team: str, month: str) -> TeamMonth:
    """``team``'s month (YYYY-MM): each of its jobs' month in the job's own timezone. An unknown
    month is refused before any read (:class:`BadMonth`)."""
    from concurrent.futures import ThreadPoolExecutor

    mine = sorted((e for e in entries if e.team == team), key=lambda e: e.name)
    for e in mine[:1]:
        month_bounds(month, e.timezone)  # BadMonth before any read
    if len(mine) <= 1:
        return TeamMonth(team, month, tuple(job_month(context, e, month) for e in mine))
    with ThreadPoolExecutor(max_workers=min(TEAM_WORKERS, len(mine)), thread_name_prefix="report") as pool:
        return TeamMonth(team, month, tuple(pool.map(lambda e: job_month(context, e, month), mine)))


def team_last_month(entries: list[CatalogJob], team: str, now: datetime) -> str:
    """The last whole month for a team's review: in the timezone most of its jobs use (UTC
    without jobs), so a Tokyo team's review on the 1st at 03:00 is of the month that just ended."""
    from collections import Counter

    zones = Counter(e.timezone for e in entries if e.team == team)
    return last_month(zones.most_common(1)[0][0] if zones else "UTC", now)
