"""The proof that an imported job fires when its source did: every fire over a window (366 days
by default, so both daylight-saving changes of any zone fall in it), the source's as its own
scheduler computes them, the written job's as ``jobplane next`` does (the same function,
:func:`jobplane.contract.schedule.iter_fire_times`, on the schedules of the file as validated).

The source side is computed by the source dialect's oracle (:mod:`jobplane.importer.dialects`),
never by the code under test: cronsim (healthchecks.io's cron evaluator, which follows Debian
cron, DST rules included) for Unix cron, Celery crontab and GitHub Actions' cron (with GitHub's
documented DST rule); for EventBridge sources the source semantics *are* EventBridge's, so both
sides use ``iter_fire_times`` and the check proves that what was written is what was read.

Cron's fires on a day without a clock change are the day's matching (day-of-month, month,
day-of-week) times its (hour, minute) set, and so are EventBridge's; so each side's day set and
time set are computed once and compared day by day, and only days with a clock change are
walked fire by fire. A minutely job is then 366 day checks plus two walks of ~1,440 fires,
not half a million fires a side.

Cron's DST rules (cron(8), Debian): a job at a fixed time that a spring-forward skips runs right
after the change (cronsim: at the first minute that exists), one in a repeated hour runs once;
a job with ``*`` in its minute or hour runs by the new clock, so in a repeated hour twice.
EventBridge skips a time that does not exist and runs a repeated one once. Those days differ,
and the difference is reported with its instant like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from functools import lru_cache
from collections.abc import Callable, Iterator
from typing import Literal
from zoneinfo import ZoneInfo

from cronsim import CronSim

from jobplane.contract.schedule_kinds import kind_of
from jobplane.importer.dialects import CronOracle, ExpressionOracle, IntervalOracle, Oracle, Walker
from jobplane.importer.entries import SourceSchedule
from jobplane.importer.formats import dialect_named

WINDOW_DAYS = 366
#: How far the window widens to reach a first fire when the usual one holds none (``0 0 29 2 *``
#: from March 2097 waits for 2104: 2100 is no leap year); past it the proof says it proved nothing.
MAX_WINDOW_DAYS = 8 * 366
Status = Literal["same", "differs", "interval", "unproven"]


@dataclass(frozen=True)
class Difference:
    when: datetime  # aware, in the job's zone
    source_fires: bool  # True: the source fires here and the job does not; False: the other way

    def __str__(self) -> str:
        utc = self.when.astimezone(timezone.utc).strftime("%H:%M UTC")
        where = f"{self.when.strftime('%Y-%m-%d %a %H:%M %Z')} ({utc})"
        return f"{where}: " + ("the source fires, the job does not" if self.source_fires
                               else "the job fires, the source does not")


@dataclass(frozen=True)
class Verdict:
    status: Status
    fires: int  # the source's fires in the window
    differences: tuple[Difference, ...] = ()
    dst_only: bool = False  # every difference falls on a day the zone's clock changes
    start: date | None = None
    days: int = WINDOW_DAYS

    @property
    def first(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    def summary(self) -> str:
        if self.status == "interval":
            return "same interval (not clock-aligned: EventBridge counts from the schedule's creation)"
        if self.status == "unproven":
            return (f"not proven: neither the source nor the job fires in the {self.days:,} days from "
                    f"{self.start}")
        if self.status == "same":
            plural = "fire" if self.fires == 1 else "fires"
            if self.days > WINDOW_DAYS:  # widened to reach the first fire
                return f"yes ({self.fires} {plural} in {self.days:,} days, widened to the first fire)"
            return f"yes ({self.fires} {plural})"
        more = f" and {len(self.differences) - 1} more" if len(self.differences) > 1 else ""
        dst = " (only on daylight-saving change days)" if self.dst_only else ""
        return f"no: first at {self.first}{more}{dst}"


def verify(sources: tuple[SourceSchedule, ...], schedules: list[str], tz: str, start: datetime,
           days: int = WINDOW_DAYS) -> Verdict:
    """Compare the fires of ``sources`` with those of the job's EventBridge ``schedules``, both
    in the zone ``tz``, on the ``days`` local days after ``start``. A window in which neither
    side fires proves nothing ("same, 0 fires" was reported for ``0 0 29 2 *`` from 2026): it is
    widened to the day of the first fire of either side, up to :data:`MAX_WINDOW_DAYS`; with no
    fire even then the verdict is ``unproven``."""
    oracles = [dialect_named(s.dialect).oracle(s) for s in sources]
    if any(isinstance(o, IntervalOracle) for o in oracles) or any(kind_of(e).counts_from_deployment
                                                                  for e in schedules):
        return Verdict("interval", 0)
    verdict = _compare(oracles, schedules, ZoneInfo(tz), start, days)
    if verdict.status != "same" or verdict.fires or verdict.start is None:
        return verdict
    first = _first_fire_day(oracles, schedules, verdict.start, MAX_WINDOW_DAYS)
    if first is None:
        return Verdict("unproven", 0, start=verdict.start, days=MAX_WINDOW_DAYS)
    return _compare(oracles, schedules, ZoneInfo(tz), start, max(days, (first - verdict.start).days + 1))


def _first_fire_day(oracles: list[Oracle], schedules: list[str], first: date, days: int) -> date | None:
    """The first local day from ``first`` on which either side has a fire time (by its day and
    time sets; the comparison that follows walks the clock changes)."""
    sides = [_DaySide.of_source(o, first, days) for o in oracles] + \
        [_DaySide.of_expression(e, first, days) for e in schedules]
    return min((d for side in sides if side.times for d in side.days if d >= first), default=None)


def _compare(oracles: list[Oracle], schedules: list[str], zone: ZoneInfo, start: datetime, days: int) -> Verdict:
    first_day = start.astimezone(zone).date() + timedelta(days=1)
    window = [first_day + timedelta(days=i) for i in range(days)]
    changes = _clock_change_days(zone, first_day, days)
    src_days = [_DaySide.of_source(o, first_day, days) for o in oracles]
    job_days = [_DaySide.of_expression(e, first_day, days) for e in schedules]
    fires = 0
    diffs: list[Difference] = []
    if len(src_days) == 1 and len(job_days) == 1 and src_days[0].times == job_days[0].times \
            and src_days[0].days - changes == job_days[0].days - changes:
        # the common case, one schedule a side agreeing on every ordinary day: walk only the changes
        fires = len(src_days[0].days.intersection(window) - changes) * len(src_days[0].times)
        window = sorted(changes.intersection(window))
    for day in window:
        if day in changes:
            src = set().union(*(side.walk(day, zone) for side in src_days))
            job = set().union(*(side.walk(day, zone) for side in job_days))
        else:
            src_t = set().union(*(side.times_on(day) for side in src_days))
            job_t = set().union(*(side.times_on(day) for side in job_days))
            if src_t == job_t:
                fires += len(src_t)
                continue
            src = {_at(day, t, zone) for t in src_t}
            job = {_at(day, t, zone) for t in job_t}
        fires += len(src)
        diffs.extend(Difference(w.astimezone(zone), True) for w in src - job)
        diffs.extend(Difference(w.astimezone(zone), False) for w in job - src)
    diffs.sort(key=lambda d: d.when)
    dst_only = bool(diffs) and all(d.when.date() in changes for d in diffs)
    return Verdict("differs" if diffs else "same", fires, tuple(diffs), dst_only, first_day, days)


def _at(day: date, hm: tuple[int, int], zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(*hm), tzinfo=zone)


@lru_cache(maxsize=256)
def _clock_change_days(zone: ZoneInfo, first: date, days: int) -> frozenset[date]:
    """Days on which the zone's UTC offset changes (and the day after, for a change at midnight)."""
    out: set[date] = set()
    for i in range(days + 1):
        d = first + timedelta(days=i)
        here = datetime.combine(d, time(0), tzinfo=zone).utcoffset()
        there = datetime.combine(d + timedelta(days=1), time(0), tzinfo=zone).utcoffset()
        if here != there:
            out.update({d, d + timedelta(days=1)})
    return frozenset(out)


class _DaySide:
    """One schedule as days and times of day (ordinary days) and as a fire-by-fire walk
    (clock-change days)."""

    def __init__(self, days: frozenset[date], times: frozenset[tuple[int, int]], walker: Walker):
        self.days, self.times, self._walker = days, times, walker

    def times_on(self, day: date) -> frozenset[tuple[int, int]]:
        return self.times if day in self.days else frozenset()

    def walk(self, day: date, zone: ZoneInfo) -> set[datetime]:
        begin = datetime.combine(day, time(0), tzinfo=zone) - timedelta(seconds=1)
        end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone)
        out = set()
        for t in self._walker(begin, zone):
            if t >= end:
                break
            out.add(t.astimezone(timezone.utc))
        return out

    @classmethod
    def of_source(cls, oracle: Oracle, first: date, days: int) -> _DaySide:
        if isinstance(oracle, ExpressionOracle):
            return cls.of_expression(oracle.expression, first, days)
        if not isinstance(oracle, CronOracle):
            raise ValueError("an interval has no days and times")
        minute, hour, dom, month, dow = oracle.fields.split()
        text = oracle.fields

        def cronsim(begin: datetime, z: ZoneInfo) -> Iterator[datetime]:  # cronsim's own iterator
            return CronSim(text, begin)

        return cls(_cron_days(f"{dom} {month} {dow}", first, days), _cron_times(f"{minute} {hour}"),
                   oracle.walker or cronsim)

    @classmethod
    def of_expression(cls, expression: str, first: date, days: int) -> _DaySide:
        kind = kind_of(expression)
        on_days, times = kind.days(expression, first, days), kind.times_of_day(expression)
        if on_days is None or times is None:
            raise ValueError(f"{kind.name}() has no days and times")

        def walker(begin: datetime, z: ZoneInfo) -> Iterator[datetime]:
            return kind.fires(expression, z, begin)

        return cls(on_days, frozenset(times), walker)


@lru_cache(maxsize=4096)
def _cron_days(day_fields: str, first: date, days: int) -> frozenset[date]:
    """The days cron's day fields match, by cronsim (UTC midnight: no clock changes)."""
    begin = datetime.combine(first, time(0), tzinfo=timezone.utc) - timedelta(seconds=1)
    end = first + timedelta(days=days)
    out = set()
    for t in CronSim(f"0 0 {day_fields}", begin):
        if t.date() >= end:
            break
        out.add(t.date())
    return frozenset(out)


@lru_cache(maxsize=4096)
def _cron_times(time_fields: str) -> frozenset[tuple[int, int]]:
    """The (hour, minute) pairs cron's time fields match, by cronsim over one UTC day."""
    begin = datetime(2001, 1, 1, tzinfo=timezone.utc) - timedelta(seconds=1)
    out = set()
    for t in CronSim(f"{time_fields} * * *", begin):
        if t.date() != date(2001, 1, 1):
            break
        out.add((t.hour, t.minute))
    return frozenset(out)
