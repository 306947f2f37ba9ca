"""The fires of a job with a calendar: the one computation every reader of fires uses.

A job that names a calendar (``calendar: 'jp-business'``) fires on business days only. Its
schedule holds business-day rules (``business(...)``, written by ``jp.businessDays`` and
``jp.monthly(business_day=..)``/``(day=.., shift=..)``) and plain ``cron()``/``at()``
expressions, which the calendar filters: a fire on a closed day is skipped, or moved to the next
or previous business day at the same wall time (``on_closed_day``).

:func:`calendar_fires` gives the fires between two instants with a note for each one moved and
each closed day skipped: ``jobplane next``, the fire ledger, backfills, ``jobplane plan``'s
calendar diff and the portal all call it (through
:func:`jobplane.platform.backfill_model.plan_fires` or :func:`job_fires`). :func:`expand`
compiles the same fires over the calendar's horizon into the EventBridge cron expressions
that are deployed (one per month and time group, with the year), so what fires is what this
computes: nothing starts on a closed day, and nothing in AWS reads a calendar.
"""

from __future__ import annotations

import calendar as _months
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from jobplane.contract.schedule import (AtExpression, CronExpression, RateExpression, ScheduleError, _localize, _steady,
                                        iter_fire_times, parse, validate_timezone)

if TYPE_CHECKING:  # the catalog's pydantic model; `jobplane validate` imports this module without pydantic
    from jobplane.contract.calendars import CatalogCalendar

RULE_PREFIX = "business("
_RULE_RE = re.compile(r"business\((days|monthly)((?: [a-z_]+=[^ ()]+)*)\)")
_TIME_RE = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")
SHIFTS = ("skip", "next", "previous")
#: How far a closed stretch may push a fire (the longest closures are ~10 days; a month covers any).
_MARGIN = timedelta(days=40)
#: More than any clock change moves a wall time (the largest are 2 hours).
_SLACK = timedelta(hours=3)


def ordinal(n: int) -> str:
    if n < 0:
        return "last" if n == -1 else f"{ordinal(-n)} from last"
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


@dataclass(frozen=True)
class Rule:
    """A business-day rule: every business day (``days``), or one day a month: the n-th
    business day (``business_day``, negative from the end), or a day of the month shifted
    off a closed day (``day`` and ``shift``)."""
    source: str
    kind: str
    times: tuple[tuple[int, int], ...]
    business_day: int | None = None
    day: int | None = None
    shift: str = "skip"


def is_rule(text: str) -> bool:
    return isinstance(text, str) and text.startswith(RULE_PREFIX)


def parse_rule(text: str) -> Rule:
    m = _RULE_RE.fullmatch(text)
    if not m:
        raise ScheduleError(f"{text!r}: a business-day rule is business(days at=HH:MM) or business(monthly "
                            "business_day=N at=HH:MM) or business(monthly day=D shift=previous|next at=HH:MM); "
                            "write it with jp.businessDays() or jp.monthly()")
    kind = m.group(1)
    args: dict[str, str] = {}
    for part in m.group(2).split():
        key, _, value = part.partition("=")
        if key in args:
            raise ScheduleError(f"{text!r}: {key} is given twice")
        args[key] = value
    allowed = {"days": {"at"}, "monthly": {"at", "business_day", "day", "shift"}}[kind]
    if unknown := sorted(set(args) - allowed):
        raise ScheduleError(f"{text!r}: unknown {', '.join(unknown)}; {kind} takes {', '.join(sorted(allowed))}")
    times = []
    for t in args.get("at", "00:00").split(","):
        tm = _TIME_RE.fullmatch(t)
        if not tm:
            raise ScheduleError(f"{text!r}: at={t!r} is not HH:MM (00:00-23:59)")
        times.append((int(tm.group(1)), int(tm.group(2))))
    if len(set(times)) != len(times):
        raise ScheduleError(f"{text!r}: a time is listed twice")
    if kind == "days":
        return Rule(text, kind, tuple(sorted(times)))
    if ("business_day" in args) == ("day" in args):
        raise ScheduleError(f"{text!r}: monthly takes business_day=N (the N-th business day; -1 the last) or "
                            "day=D with shift=previous|next|skip, not both")
    if "business_day" in args:
        if "shift" in args:
            raise ScheduleError(f"{text!r}: shift is for day=D; the N-th business day is a business day already")
        try:
            n = int(args["business_day"])
        except ValueError:
            n = 0
        if not (1 <= n <= 23 or -23 <= n <= -1):
            raise ScheduleError(f"{text!r}: business_day is 1-23 (from the month's start) or -1..-23 (from its end)")
        return Rule(text, kind, tuple(sorted(times)), business_day=n)
    try:
        day = int(args["day"])
    except ValueError:
        day = 0
    if not 1 <= day <= 31:
        raise ScheduleError(f"{text!r}: day is 1-31 (a day past the month's end is its last day)")
    shift = args.get("shift", "skip")
    if shift not in SHIFTS:
        raise ScheduleError(f"{text!r}: shift is previous, next or skip, not {shift!r}")
    return Rule(text, kind, tuple(sorted(times)), day=day, shift=shift)


@dataclass(frozen=True)
class CalendarSchedule:
    """What computes a calendar job's fires: its declared schedule (rules and plain expressions),
    its calendar, what a plain fire on a closed day does, and its timezone."""
    schedule: tuple[str, ...]
    calendar: CatalogCalendar
    on_closed_day: str
    timezone: str


@dataclass(frozen=True)
class Fire:
    at: datetime  # UTC
    note: str | None = None  # e.g. "moved from Sun 2026-01-25 (Sunday)"


@dataclass(frozen=True)
class Skipped:
    at: datetime  # the wall time it would have had, in the job's zone (may not exist)
    reason: str  # why the day is closed
    expression: str


@dataclass
class FireWindow:
    fires: list[Fire] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    keep_skipped: bool = True  # False: only the fires are wanted (expand)

    @property
    def times(self) -> list[datetime]:
        return [f.at for f in self.fires]


def _day_text(d: date) -> str:
    return d.strftime("%a %Y-%m-%d")


def _shifted(cal: CatalogCalendar, d: date, direction: int) -> date:
    n = 0
    while not cal.is_open(d) and n < 400:
        d += timedelta(days=direction)
        n += 1
    return d


Wall = tuple[int, int, int]  # hour, minute, second in the job's zone


def _wall(d: date, hms: Wall, tz: ZoneInfo) -> datetime | None:
    return _localize(datetime(d.year, d.month, d.day, *hms), tz)


def _months_between(first: date, last: date) -> list[tuple[int, int]]:
    out = []
    y, m = first.year, first.month
    while (y, m) <= (last.year, last.month):
        out.append((y, m))
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def _day_times(expr: CronExpression | AtExpression, d: date, times: tuple[Wall, ...]) -> tuple[Wall, ...]:
    """The wall times ``expr`` fires at on day ``d`` (before daylight-saving rules); ``times``:
    a cron's times of day, made once."""
    if isinstance(expr, AtExpression):
        w = expr.when
        return ((w.hour, w.minute, w.second),) if w.date() == d else ()
    return times if expr.matches_day(d) else ()


#: (day, its wall times, the note of its fires): a day's fires, before daylight-saving rules.
Candidate = tuple[date, tuple[Wall, ...], str | None]


def _moved_note(d: date, reason: str, shift: str) -> str:
    return f"moved from {_day_text(d)} ({reason}) to the {shift} business day"


def _rule_fires(rule: Rule, cal: CatalogCalendar, tz: ZoneInfo, first: date, last: date,
                out: FireWindow) -> list[Candidate]:
    """The rule's fires on days ``first``..``last`` (and the closed days' fires skipped into
    ``out``)."""
    times = tuple((h, m, 0) for h, m in rule.times)
    days: list[tuple[date, str | None]] = []
    if rule.kind == "days":
        d = first
        while d <= last:
            reason = cal.closed_reason(d)
            if reason is None:
                days.append((d, None))
            elif out.keep_skipped:
                out.skipped.extend(Skipped(datetime(d.year, d.month, d.day, h, m, tzinfo=tz), reason, rule.source)
                                   for h, m in rule.times)
            d += timedelta(days=1)
        return [(d, times, note) for d, note in days]
    # a shifted day may leave its month: the months around the window are looked at too
    span = (first - _MARGIN, last + _MARGIN) if rule.day is not None and rule.shift != "skip" else (first, last)
    for y, m in _months_between(*span):
        length = _months.monthrange(y, m)[1]
        if rule.business_day is not None:
            opened = [date(y, m, i) for i in range(1, length + 1) if cal.is_open(date(y, m, i))]
            n = rule.business_day
            if (n > 0 and n <= len(opened)) or (n < 0 and -n <= len(opened)):
                days.append((opened[n - 1 if n > 0 else n], None))
            continue
        assert rule.day is not None
        target = date(y, m, min(rule.day, length))
        reason = cal.closed_reason(target)
        if reason is None:
            days.append((target, None))
        elif rule.shift == "skip":
            if first <= target <= last:
                out.skipped.extend(Skipped(datetime(y, m, target.day, h, mi, tzinfo=tz), reason, rule.source)
                                   for h, mi in rule.times)
        else:
            days.append((_shifted(cal, target, 1 if rule.shift == "next" else -1),
                         _moved_note(target, reason, rule.shift)))
    return [(d, times, note) for d, note in days if first <= d <= last]


@lru_cache(maxsize=4096)
def _parsed(expression: str) -> tuple[CronExpression | AtExpression, tuple[Wall, ...]]:
    """A cron()/at() expression and a cron's times of day, made once per expression."""
    expr = parse(expression)
    if isinstance(expr, RateExpression):
        raise ValueError(f"{expression}: a calendar filters cron() and at() schedules, not rate()")
    return expr, tuple((h, m, 0) for h, m in expr.times_of_day()) if isinstance(expr, CronExpression) else ()


def _plain_fires(expression: str, cs: CalendarSchedule, tz: ZoneInfo, first: date, last: date,
                 out: FireWindow) -> list[Candidate]:
    """A cron()/at() expression's fires on days ``first``..``last`` filtered by the calendar:
    an open day's as they are; a closed day's skipped, or moved to the business day its shift
    finds (looked for from days up to a margin around the window, whose fires may land in it)."""
    expr, made = _parsed(expression)
    cal, shift = cs.calendar, cs.on_closed_day
    out_list: list[Candidate] = []
    d, until = (first, last) if shift == "skip" else (first - _MARGIN, last + _MARGIN)
    while d <= until:
        reason = cal.closed_reason(d)
        if reason is None:
            if first <= d <= last:
                if times := _day_times(expr, d, made):
                    out_list.append((d, times, None))
        elif shift == "skip":
            if out.keep_skipped:
                out.skipped.extend(Skipped(datetime(d.year, d.month, d.day, *hms, tzinfo=tz), reason, expression)
                                   for hms in _day_times(expr, d, made))
        else:
            target = _shifted(cal, d, 1 if shift == "next" else -1)
            if first <= target <= last:
                if times := _day_times(expr, d, made):
                    out_list.append((target, times, _moved_note(d, reason, shift)))
        d += timedelta(days=1)
    return out_list


def _candidates(cs: CalendarSchedule, tz: ZoneInfo, first: date, last: date, out: FireWindow) -> list[Candidate]:
    return [c for expression in cs.schedule for c in (
        _rule_fires(parse_rule(expression), cs.calendar, tz, first, last, out) if is_rule(expression)
        else _plain_fires(expression, cs, tz, first, last, out))]


@lru_cache(maxsize=16384)
def _day_offset(d: date, tz: ZoneInfo) -> timedelta | None:
    """The one UTC offset of day ``d`` in ``tz``; None when a clock change falls on it."""
    midnight = _wall(d, (0, 0, 0), tz) if _steady(d, tz) else None
    return midnight.utcoffset() if midnight is not None else None


def calendar_fires(cs: CalendarSchedule, start: datetime, end: datetime,
                   anchors: tuple[datetime | None, ...] = (), skipped: bool = True) -> FireWindow:
    """Every fire of a calendar job from ``start`` to ``end`` (aware; both included), in order,
    once each, with a note for each fire moved off a closed day; and the closed days' fires
    skipped in that window. A day beyond the calendar's compiled years is judged by its weekend
    alone, and its fires say so. The cost is per day of the window (and of a margin around it
    when fires move), not per fire: a minutely job's short window is a few days' checks."""
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("start and end must be timezone-aware")
    tz = validate_timezone(cs.timezone)
    cal = cs.calendar
    # a day either side: a wall time near midnight may be either side of a UTC instant
    first, last = start.astimezone(tz).date() - timedelta(days=1), end.astimezone(tz).date() + timedelta(days=1)
    out = FireWindow(keep_skipped=skipped)  # the ledger and backfills want the fires only
    found: dict[datetime, str | None] = {}
    # wall times outside the window are not localized (a minutely job's day is 1,440): on a day
    # with no clock change a wall time and its instant are in the same order; on a day with one,
    # a few hours either side are looked at
    exact = (start.astimezone(tz).replace(tzinfo=None), end.astimezone(tz).replace(tzinfo=None))
    for d, times, note in _candidates(cs, tz, first, last, out):
        offset = _day_offset(d, tz)
        lo, hi = exact if offset is not None else (exact[0] - _SLACK, exact[1] + _SLACK)
        day_start = datetime(d.year, d.month, d.day)
        if not (lo <= day_start and day_start + timedelta(days=1) <= hi):
            low = (lo.hour, lo.minute, lo.second) if lo.date() == d else (0, 0, 0) if lo.date() < d else (24, 0, 0)
            high = (hi.hour, hi.minute, hi.second) if hi.date() == d else (24, 0, 0) if hi.date() > d else (-1, 0, 0)
            times = times[bisect_left(times, low):bisect_right(times, high)]
        shown = note
        if cal.beyond(d) and note is None:
            shown = f"beyond the calendar's compiled years ({cal.first_year}-{cal.last_year}): holidays unknown"
        for hms in times:
            if offset is not None:  # no clock change this day: the wall time less the day's offset
                utc = datetime(d.year, d.month, d.day, *hms, tzinfo=timezone.utc) - offset
            else:
                aware = _wall(d, hms, tz)
                if aware is None:
                    continue  # a wall time a daylight-saving change skips does not fire (schedule.py)
                utc = aware.astimezone(timezone.utc)
            if start <= utc <= end and (utc not in found or shown is None):  # one fire a time, plain wins
                found[utc] = shown
    out.fires = [Fire(t, found[t]) for t in sorted(found)]
    lo, hi = start.astimezone(tz).replace(tzinfo=None), end.astimezone(tz).replace(tzinfo=None)
    out.skipped = sorted((s for s in out.skipped if lo <= s.at.replace(tzinfo=None) <= hi),
                         key=lambda s: (s.at.replace(tzinfo=None), s.expression))
    return out


def next_calendar_fires(cs: CalendarSchedule, after: datetime, count: int) -> FireWindow:
    """The next ``count`` fires strictly after ``after`` (and the closed days skipped before the
    last of them), looking up to 5 years ahead."""
    span = timedelta(days=31)
    while True:
        window = calendar_fires(cs, after + timedelta(microseconds=1), after + span)
        if len(window.fires) >= count or span > timedelta(days=5 * 366):
            fires = window.fires[:count]
            if len(window.fires) > count:
                limit = fires[-1].at.astimezone(validate_timezone(cs.timezone)).replace(tzinfo=None)
                window.skipped = [s for s in window.skipped if s.at.replace(tzinfo=None) < limit]
            window.fires = fires
            return window
        span *= 4


def expand(cs: CalendarSchedule) -> list[str]:
    """The EventBridge cron expressions that fire exactly :func:`calendar_fires` over the
    calendar's years: one per (year, days, times of day), listing the months that share them;
    evaluated in the job's timezone like any cron, daylight-saving rules included."""
    tz = validate_timezone(cs.timezone)
    cal = cs.calendar
    # the days' wall times, not each fire: a wall time a daylight-saving change skips is skipped
    # by EventBridge as by calendar_fires, and a repeated one fires once in both
    candidates = _candidates(cs, tz, date(cal.first_year, 1, 1), date(cal.last_year, 12, 31),
                             FireWindow(keep_skipped=False))
    per_day: dict[date, list[tuple[Wall, ...]]] = {}
    for d, times, _ in candidates:
        if cal.first_year <= d.year <= cal.last_year:
            per_day.setdefault(d, []).append(times)
    # a cron's days share one tuple of times: each distinct list of them is made a set once
    sets: dict[tuple[int, ...], frozenset[tuple[int, int]]] = {}
    by_month: dict[tuple[int, int, frozenset[tuple[int, int]]], set[int]] = {}
    for d, lists in per_day.items():
        key = tuple(id(t) for t in lists)
        if key not in sets:
            sets[key] = frozenset((h, m) for times in lists for h, m, _ in times)
        by_month.setdefault((d.year, d.month, sets[key]), set()).add(d.day)
    by_minutes: dict[tuple[int, frozenset[int], frozenset[int], frozenset[int]], set[int]] = {}
    split: dict[frozenset[tuple[int, int]], list[tuple[frozenset[int], frozenset[int]]]] = {}
    for (y, m, walls), days in by_month.items():
        if walls not in split:  # the times of day as minutes x hours products, made once per set
            hours: dict[int, set[int]] = {}
            for h, mi in walls:
                hours.setdefault(h, set()).add(mi)
            grouped: dict[frozenset[int], set[int]] = {}
            for h, mins in hours.items():
                grouped.setdefault(frozenset(mins), set()).add(h)
            split[walls] = [(mins, frozenset(hour_set)) for mins, hour_set in grouped.items()]
        for minutes, hs in split[walls]:
            by_minutes.setdefault((y, frozenset(days), minutes, hs), set()).add(m)
    out = [f"cron({_csv(minutes)} {_csv(hs)} {_csv(days)} {_csv(months)} ? {y})"
           for (y, days, minutes, hs), months in by_minutes.items()]
    return sorted(out, key=lambda e: (_sort_key(e), e))


def _csv(values: frozenset[int] | set[int]) -> str:
    """A cron field's list, runs of three or more as ranges ('1-5,8'): EventBridge takes an
    expression of at most 256 characters."""
    items: list[list[int]] = []
    run: list[int] = []
    for v in sorted(values):
        if run and v != run[-1] + 1:
            items.append(run)
            run = []
        run.append(v)
    items.append(run)
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) >= 3 else ",".join(map(str, r)) for r in items if r)


def _sort_key(expression: str) -> tuple[int, int, int]:
    minutes, hour, days, months, _, year = expression[5:-1].split()
    return int(year), int(re.split("[,-]", months)[0]), int(re.split("[,-]", days)[0])


def describe(expression: str) -> str:
    """A business-day rule in words (plain expressions are described elsewhere)."""
    rule = parse_rule(expression)
    at = ", ".join(f"{h:02d}:{m:02d}" for h, m in rule.times)
    if rule.kind == "days":
        return f"every business day at {at}"
    if rule.business_day is not None:
        return f"the {ordinal(rule.business_day)} business day of each month at {at}"
    where = {"skip": "skipped when closed", "next": "or the next business day",
             "previous": "or the business day before"}[rule.shift]
    return f"day {rule.day} of each month ({where}) at {at}"


__all__ = ["AtExpression", "CalendarSchedule", "CronExpression", "Fire", "FireWindow", "Rule", "Skipped",
           "calendar_fires", "describe", "expand", "is_rule", "next_calendar_fires", "parse_rule"]
