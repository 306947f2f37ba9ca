"""Spread start times: a job's fires moved later by a stable offset derived from its name.

Hundreds of jobs written for 00:00 start in the same second: RunTask's 20 calls a second, a
shared database and the pools all meet the herd at once (kubernetes#91652; Jenkins' ``H``).
``spread: '30m'`` moves every fire of the job by an offset in ``[0, 30)`` whole minutes, the
same for every compile: ``sha256(spread_seed or name)``, not Python's ``hash``, which changes
per process (PYTHONHASHSEED). EventBridge Scheduler fires on whole minutes, so the offset is one.

The offset is resolved when the job is read (:func:`spread_schedule`): the schedules deployed,
the catalog, the fire ledger, deadlines, backfills, ``jobplane next`` and ``plan`` all see the
moved expressions and nothing at run time knows a spread exists, so lateness and missed fires
stay exact. What cannot be moved as written is refused, naming the expression:

* a fire moved past local midnight when its rule names days (a weekday, a day of the month,
  some months, a calendar: the moved fire would land on a day its rule does not name; an
  every-day cron wraps instead, since every day fires),
* ``rate()``, whose fires count from its deployment, not from a time of day,
* a wall-time deadline the moved fire would reach (contract/deadlines.py), or one a fire wrapped
  past midnight would leave a day away,
* a moved fire that lands in a daylight-saving gap of the job's zone where the written one did
  not: EventBridge skips a local time that does not exist, so the move would drop that fire.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from jobplane.contract import business_fires as bf
from jobplane.contract.quoting import quoted
from jobplane.contract.schedule import AtExpression, CronExpression, RateExpression, ScheduleError, parse

#: The widest spread: a day. Beyond it a job's fires would move onto other days.
MAX_SPREAD_S = 86_400
_DAY = 24 * 60
_ARG_RE = re.compile(r" at=[^ ()]+")


def offset_minutes(spread_s: int, seed: str) -> int:
    """The job's offset in whole minutes, in ``[0, spread)``: stable across compiles, machines
    and Python versions (a digest of ``seed``), spread evenly over the window."""
    window = max(1, spread_s // 60)
    return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big") % window


@dataclass(frozen=True)
class Spread:
    """A job's resolved spread: the offset and each expression as written with what it became."""

    offset: int  # minutes
    moved: tuple[tuple[str, tuple[str, ...]], ...]

    def expressions(self) -> list[str]:
        """The job's schedule after the move, in the written order, each once."""
        out: list[str] = []
        for _, new in self.moved:
            out.extend(e for e in new if e not in out)
        return out


class SpreadError(ValueError):
    """An expression the offset cannot move as written (the message says why and what to do)."""


def spread_schedule(schedule: list[str], offset: int, calendar: bool) -> Spread:
    """Every expression of ``schedule`` moved ``offset`` minutes later, or SpreadError naming
    the first that cannot be (``calendar``: the job's fires are filtered by business day)."""
    return Spread(offset, tuple((text, tuple(move(text, offset, calendar))) for text in schedule))


def move(text: str, offset: int, calendar: bool) -> list[str]:
    """One expression moved ``offset`` minutes later: a cron may become two (the minutes that
    carry into the next hour form their own hours), every other kind stays one."""
    if offset == 0:
        return [text]
    if bf.is_rule(text):
        return [_move_rule(text, offset)]
    expr = parse(text)
    if isinstance(expr, RateExpression):
        raise SpreadError(f"{text} fires every interval from its deployment, not at a time of day, so there is no "
                          "start to spread: drop `spread`, or write the schedule as a cron()")
    if isinstance(expr, AtExpression):
        moved = expr.when + timedelta(minutes=offset)
        if calendar and moved.date() != expr.when.date():
            raise _past_midnight(text, offset, (expr.when.hour, expr.when.minute))
        return [f"at({moved.strftime('%Y-%m-%dT%H:%M:%S')})"]
    assert isinstance(expr, CronExpression)
    return _move_cron(text, expr, offset, calendar)


def _move_cron(text: str, expr: CronExpression, offset: int, calendar: bool) -> list[str]:
    every_day = (not calendar and expr.months == frozenset(range(1, 13)) and expr.years is None
                 and {expr.dom, expr.dow} <= {"*", "?"})
    shifted: dict[int, set[int]] = {}  # hour -> minutes
    for h, m in expr.times_of_day():
        t = h * 60 + m + offset
        if t >= _DAY and not every_day:
            raise _past_midnight(text, offset, (h, m))
        t %= _DAY
        shifted.setdefault(t // 60, set()).add(t % 60)
    rest = text.strip()[len("cron("):-1].split()[2:]  # day-of-month month day-of-week year, as written
    by_minutes: dict[tuple[int, ...], list[int]] = {}
    for hour in sorted(shifted):
        by_minutes.setdefault(tuple(sorted(shifted[hour])), []).append(hour)
    return [f"cron({_field(list(minutes), 60)} {_field(hours, 24)} {' '.join(rest)})"
            for minutes, hours in sorted(by_minutes.items(), key=lambda kv: kv[1][0])]


def _field(values: list[int], size: int) -> str:
    return "*" if len(values) == size else ",".join(str(v) for v in values)


def _move_rule(text: str, offset: int) -> str:
    rule = bf.parse_rule(text)
    times = []
    for h, m in rule.times:
        t = h * 60 + m + offset
        if t >= _DAY:
            raise _past_midnight(text, offset, (h, m))
        times.append(f"{t // 60:02d}:{t % 60:02d}")
    at = " at=" + ",".join(sorted(times))
    return _ARG_RE.sub(at, text) if _ARG_RE.search(text) else text[:-1] + at + ")"


def _past_midnight(text: str, offset: int, at: tuple[int, int]) -> SpreadError:
    return SpreadError(f"the spread's offset (+{offset} min, from the job's name) moves the {at[0]:02d}:{at[1]:02d} fire "
                       f"of {text} past local midnight, onto a day its rule does not name: narrow `spread`, set "
                       "`spread_seed` for another offset, or fire earlier")


def deadline_problems(spread: Spread, deadline_at: tuple[int, int] | None, deadline_text: str) -> Iterator[str]:
    """A wall-time deadline the moved fires reach (one of each expression at most)."""
    if deadline_at is None:
        return
    if (wrapped := wraps(spread)) is not None:
        yield (f"{quoted(deadline_text)} is a wall time on the fire's day, and the spread's offset (+{spread.offset} min) "
               f"moves a fire of {wrapped} past midnight, onto the next day: narrow `spread`, set `spread_seed` for "
               "another offset, or give the deadline as a duration after the fire")
        return
    for written, moved in spread.moved:
        for text in moved:
            try:
                times = (bf.parse_rule(text).times if bf.is_rule(text) else _times(text))
            except ScheduleError:
                continue
            late = [t for t in times if t >= deadline_at]
            if late:
                yield (f"{quoted(deadline_text)} is not after {late[-1][0]:02d}:{late[-1][1]:02d}, where the spread's "
                       f"offset (+{spread.offset} min) moves a fire of {written}: narrow `spread`, set `spread_seed` "
                       "for another offset, or move the deadline")
                break


def _times(text: str) -> list[tuple[int, int]]:
    expr = parse(text)
    if isinstance(expr, CronExpression):
        return expr.times_of_day()
    if isinstance(expr, AtExpression):
        return [(expr.when.hour, expr.when.minute)]
    return []


#: The years whose clock changes a move is checked against: zones' rules repeat year to year, so
#: two years hold every change a rule makes (a compile's verdict does not move with the date).
DST_YEARS = (2027, 2028)


def dst_problems(spread: Spread, zone: str) -> Iterator[str]:
    """A moved fire that lands in a clock change's gap of ``zone`` (a local time that does not
    exist: EventBridge skips it) where its written time did not."""
    tz = ZoneInfo(zone)
    days = [d for d in _change_days(tz)]
    if not days or spread.offset == 0:
        return
    for written, _ in spread.moved:
        try:
            expr = None if bf.is_rule(written) else parse(written)
            times = bf.parse_rule(written).times if bf.is_rule(written) else _times(written)
        except ScheduleError:
            continue
        for d in days:
            if isinstance(expr, CronExpression) and not expr.matches_day(d):
                continue
            if isinstance(expr, AtExpression) and expr.when.date() != d:
                continue
            for h, m in times:
                moved = datetime(d.year, d.month, d.day, h, m) + timedelta(minutes=spread.offset)
                if _missing(moved, tz) and not _missing(datetime(d.year, d.month, d.day, h, m), tz):
                    yield (f"the spread's offset (+{spread.offset} min) moves the {h:02d}:{m:02d} fire of {written} "
                           f"to {moved:%H:%M}, a time that does not exist on {moved:%Y-%m-%d} in {zone} (the clock "
                           "skips it): EventBridge would skip that fire; narrow `spread` or set `spread_seed` for "
                           "another offset")
                    return


def _change_days(tz: ZoneInfo) -> list[date]:
    """The days of :data:`DST_YEARS` on which ``tz``'s clock jumps forward."""
    out = []
    for year in DST_YEARS:
        d = date(year, 1, 1)
        while d.year == year:
            a = datetime(d.year, d.month, d.day, tzinfo=tz).utcoffset()
            nxt = d + timedelta(days=1)
            b = datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz).utcoffset()
            if a is not None and b is not None and b > a:
                out.append(d)
            d = nxt
    return out


def _missing(local: datetime, tz: ZoneInfo) -> bool:
    """Whether the wall time ``local`` does not exist in ``tz`` (a spring-forward gap)."""
    aware = local.replace(tzinfo=tz)
    return aware.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None) != local


def wraps(spread: Spread) -> str | None:
    """An expression whose fires the move wrapped past midnight (an every-day cron), if any."""
    for written, _ in spread.moved:
        try:
            times = bf.parse_rule(written).times if bf.is_rule(written) else _times(written)
        except ScheduleError:
            continue
        if any(h * 60 + m + spread.offset >= _DAY for h, m in times):
            return written
    return None
