"""EventBridge Scheduler expressions: parsing, validation and upcoming fire times.

One implementation serves the compiler (validation), ``jobplane next``, the plan, the portal and
the local scheduler, so that what a developer is shown is what fires. It follows EventBridge
Scheduler, not Unix cron:

* ``cron(minutes hours day-of-month month day-of-week year)``: six fields; day-of-week is 1-7 =
  SUN-SAT; exactly one of day-of-month and day-of-week is ``?``; ``L`` (last day of the month, or
  ``nL`` the last weekday n of the month), ``W`` (nearest weekday, ``LW`` the last weekday) and
  ``#`` (``n#k``, the k-th weekday n) as documented by AWS.
* ``rate(value unit)``: fixed interval from the schedule's start (not aligned to the clock).
* ``at(yyyy-mm-ddThh:mm:ss)``: once.

Times are evaluated as wall-clock times in the schedule's IANA timezone. Across daylight-saving
changes EventBridge Scheduler skips a local time that does not exist (spring forward) and fires a
repeated local time once (fall back, at its first occurrence); so do we.

Unix cron was considered through ``croniter``/``cronsim``: both number weekdays 0-6 from Sunday,
neither has the year field and their DST rules differ, so we evaluate EventBridge semantics here
and use ``cronsim`` only as an independent oracle in tests.
"""

from __future__ import annotations

from jobplane.contract.quoting import quoted

import calendar
import re
from bisect import bisect_right
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Iterator
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

MONTHS = {name: i for i, name in enumerate(
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], start=1)}
WEEKDAYS = {name: i for i, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], start=1)}

#: How far ahead to look for the next fire before deciding there is none (leap days, year ranges).
SEARCH_YEARS = 30


class ScheduleError(ValueError):
    """An expression EventBridge Scheduler would reject (or a Unix cron, with its translation)."""


@dataclass(frozen=True)
class _Field:
    values: frozenset[int]


@dataclass(frozen=True)
class CronExpression:
    """A parsed EventBridge cron expression."""

    source: str
    minutes: frozenset[int]
    hours: frozenset[int]
    months: frozenset[int]
    years: frozenset[int] | None  # None: every year
    dom: str  # normalised day-of-month field ('?' when unused)
    dow: str  # normalised day-of-week field ('?' when unused)
    _dom_values: frozenset[int] | None
    _dow_values: frozenset[int] | None

    def matches_day(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        if self.years is not None and d.year not in self.years:
            return False
        if self.dom != "?":
            return _dom_matches(self.dom, self._dom_values, d)
        return _dow_matches(self.dow, self._dow_values, d)

    def times_of_day(self) -> list[tuple[int, int]]:
        return [(h, m) for h in sorted(self.hours) for m in sorted(self.minutes)]

    def ever_fires(self) -> bool:
        """Whether any day matches: False for February 31st, or the 5th Friday of February in
        a year with none (a property of the expression, not of today, so a compile's verdict
        does not change with the date). Without a year field, the 28 years 2000-2027 hold every
        arrangement of dates, weekdays and leap days the Gregorian calendar has from 1901 to
        2099; with one, each year it names is looked at."""
        years = sorted(self.years) if self.years is not None else range(2000, 2028)
        return any(self.matches_day(date(year, month, day)) for year in years for month in sorted(self.months)
                   for day in range(1, calendar.monthrange(year, month)[1] + 1))


@dataclass(frozen=True)
class RateExpression:
    source: str
    interval: timedelta


@dataclass(frozen=True)
class AtExpression:
    source: str
    when: datetime  # naive local time


Expression = CronExpression | RateExpression | AtExpression

_CRON_RE = re.compile(r"^cron\((.*)\)$")
_RATE_RE = re.compile(r"^rate\((.*)\)$")
_AT_RE = re.compile(r"^at\((.*)\)$")
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}


def parse(expression: str) -> Expression:
    """Parse an EventBridge Scheduler expression, raising ScheduleError with a helpful message."""
    if not isinstance(expression, str):
        raise ScheduleError(f"expected an expression string, got {type(expression).__name__}")
    text = expression.strip()
    if m := _CRON_RE.fullmatch(text):
        return _parse_cron(text, m.group(1))
    if m := _RATE_RE.fullmatch(text):
        return _parse_rate(text, m.group(1))
    if m := _AT_RE.fullmatch(text):
        try:
            when = datetime.strptime(m.group(1).strip(), "%Y-%m-%dT%H:%M:%S")
        except ValueError:
            raise ScheduleError(f"{quoted(text)}: at() takes yyyy-mm-ddThh:mm:ss, e.g. at(2026-12-31T23:00:00)") from None
        return AtExpression(text, when)
    fields = text.split()
    if len(fields) == 5 or text.startswith("@"):
        raise ScheduleError(unix_cron_message(text))
    raise ScheduleError(
        f"{quoted(text)} is not an EventBridge expression: use cron(min hour day-of-month month "
        "day-of-week year), rate(N minutes|hours|days) or at(yyyy-mm-ddThh:mm:ss)")


def validate_timezone(name: str) -> ZoneInfo:
    if not isinstance(name, str) or not name or name != name.strip():
        raise ScheduleError(f"{quoted(name)} is not an IANA timezone name")
    try:
        if len(name) > 64:  # IANA names are at most ~30 characters; longer ones are not names
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        import difflib

        close = difflib.get_close_matches(name[:64], sorted(available_timezones()), n=1)
        hint = f" (did you mean {quoted(close[0])}?)" if close else " (use an IANA name such as 'Asia/Tokyo')"
        raise ScheduleError(f"unknown timezone {quoted(name)}{hint}") from None


# ---------------------------------------------------------------------------------------------
# cron

def _parse_cron(text: str, body: str) -> CronExpression:
    fields = body.split()
    if len(fields) == 5:
        raise ScheduleError(
            f"{quoted(text)} has 5 fields; EventBridge cron has 6 (minutes hours day-of-month month "
            f"day-of-week year). {unix_cron_message(body, brief=True)}")
    if len(fields) != 6:
        raise ScheduleError(
            f"{quoted(text)} has {len(fields)} fields; EventBridge cron has 6: "
            "minutes hours day-of-month month day-of-week year")
    minute, hour, dom, month, dow, year = (f.upper() for f in fields)
    if (dom == "?") == (dow == "?"):
        raise ScheduleError(
            f"{quoted(text)}: exactly one of day-of-month ({quoted(dom)}) and day-of-week ({quoted(dow)}) must be '?'; "
            "e.g. cron(0 2 * * ? *) for every day, cron(0 2 ? * MON-FRI *) for weekdays")
    try:
        minutes = _parse_list(minute, 0, 59, {}, "minutes")
        hours = _parse_list(hour, 0, 23, {}, "hours")
        months = _parse_list(month, 1, 12, MONTHS, "month")
        years = None if year == "*" else _parse_list(year, 1970, 2199, {}, "year")
        dom_values = None if dom == "?" else _parse_dom(dom)
        dow_values = None if dow == "?" else _parse_dow(dow)
    except ScheduleError as e:
        raise ScheduleError(f"{quoted(text)}: {e}") from None
    return CronExpression(text, minutes, hours, months, years, dom, dow, dom_values, dow_values)


def _parse_value(token: str, lo: int, hi: int, names: dict[str, int], field: str) -> int:
    if token in names:
        return names[token]
    if not token.isdigit():
        raise ScheduleError(f"{field} field: {quoted(token)} is not a number" + (
            f" or one of {', '.join(names)}" if names else ""))
    value = int(token)
    if not lo <= value <= hi:
        raise ScheduleError(f"{field} field: {quoted(value)} is outside {lo}-{hi}")
    return value


def _parse_list(text: str, lo: int, hi: int, names: dict[str, int], field: str) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise ScheduleError(f"{field} field: empty list item in {quoted(text)}")
        step = 1
        stepped = "/" in part
        if stepped:
            part, _, step_text = part.partition("/")
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"{field} field: step {quoted(step_text)} must be a positive number")
            step = int(step_text)
        if part == "*":
            start, end = lo, hi
        elif "-" in part:
            a, _, b = part.partition("-")
            start = _parse_value(a, lo, hi, names, field)
            end = _parse_value(b, lo, hi, names, field)
            if start > end:
                raise ScheduleError(f"{field} field: range {quoted(part)} runs backwards")
        else:
            start = _parse_value(part, lo, hi, names, field)
            end = hi if stepped else start  # "5/15": from 5 to the end of the range
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _parse_dom(text: str) -> frozenset[int] | None:
    if text in ("L", "LW"):
        return None
    if re.fullmatch(r"\d+W", text):
        day = _parse_value(text[:-1], 1, 31, {}, "day-of-month")
        return frozenset({day})
    if "L" in text or "W" in text:
        raise ScheduleError(f"day-of-month field: {quoted(text)}: use L, LW or nW (e.g. 15W) on their own")
    return _parse_list(text, 1, 31, {}, "day-of-month")


#: EventBridge's cron reference, the source of the day-of-week rules below: that field's
#: wildcards are ``, - * ? L #`` (no ``/``, which day-of-month, hours and minutes have), and
#: "the L wildcard in the Day-of-month or Day-of-week fields specifies the last day of the
#: month or week" (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-cron-expressions.html;
#: EventBridge Scheduler's cron-based schedules use the same syntax:
#: https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#cron-based).
CRON_REFERENCE = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-cron-expressions.html"


def _parse_dow(text: str) -> frozenset[int] | None:
    if text == "L":
        # a bare L is the last day of the week, Saturday, every week (AWS above; Quartz, whose
        # syntax EventBridge follows, says the same: "L" alone in day-of-week is "7" or "SAT");
        # the last Saturday of the month is 7L (or SATL)
        return frozenset({7})
    if m := re.fullmatch(r"(\w+)L", text):
        return frozenset({_parse_value(m.group(1), 1, 7, WEEKDAYS, "day-of-week")})
    if m := re.fullmatch(r"(\w+)#(\d)", text):
        day = _parse_value(m.group(1), 1, 7, WEEKDAYS, "day-of-week")
        nth = int(m.group(2))
        if not 1 <= nth <= 5:
            raise ScheduleError(f"day-of-week field: {quoted(text)}: the week number after # must be 1-5")
        return frozenset({day})
    if "#" in text or "L" in text:
        raise ScheduleError(f"day-of-week field: {quoted(text)}: use n#k (e.g. MON#1) or nL (e.g. FRIL, 6L) on their own")
    if "/" in text:
        raise ScheduleError(f"day-of-week field: {quoted(text)}: EventBridge's day-of-week takes no '/' step (its "
                            f"wildcards are , - * ? L #: {CRON_REFERENCE}); list the days instead, e.g. MON,WED,FRI")
    return _parse_list(text, 1, 7, WEEKDAYS, "day-of-week")


def eb_weekday(d: date) -> int:
    """EventBridge day-of-week number of a date: 1 = Sunday ... 7 = Saturday."""
    return (d.weekday() + 1) % 7 + 1


def _last_day(d: date) -> int:
    return calendar.monthrange(d.year, d.month)[1]


def _nearest_weekday(year: int, month: int, day: int) -> int:
    """Quartz/EventBridge 'W': nearest Monday-Friday to ``day`` without leaving the month."""
    last = calendar.monthrange(year, month)[1]
    day = min(day, last)
    wd = date(year, month, day).weekday()
    if wd < 5:
        return day
    if wd == 5:  # Saturday: Friday before, unless that leaves the month
        return day - 1 if day > 1 else day + 2
    return day + 1 if day < last else day - 2  # Sunday


def _dom_matches(spec: str, values: frozenset[int] | None, d: date) -> bool:
    if spec == "L":
        return d.day == _last_day(d)
    if spec == "LW":
        return d.day == _nearest_weekday(d.year, d.month, _last_day(d))
    if spec.endswith("W"):
        (day,) = tuple(values or ())  # a W field names one day (the parser's rule)
        if day > _last_day(d):
            return False
        return d.day == _nearest_weekday(d.year, d.month, day)
    assert values is not None
    return d.day in values


def _dow_matches(spec: str, values: frozenset[int] | None, d: date) -> bool:
    assert values is not None
    if eb_weekday(d) not in values:
        return False
    if "#" in spec:
        nth = int(spec.rsplit("#", 1)[1])
        return (d.day - 1) // 7 + 1 == nth
    if spec.endswith("L") and spec != "L":  # nL: the month's last weekday n; a bare L is every Saturday
        return d.day + 7 > _last_day(d)
    return True


# ---------------------------------------------------------------------------------------------
# rate

def _parse_rate(text: str, body: str) -> RateExpression:
    parts = body.split()
    if len(parts) != 2 or not parts[0].isdigit():
        raise ScheduleError(f"{quoted(text)}: rate() takes a whole number and a unit, e.g. rate(15 minutes)")
    value, unit = int(parts[0]), parts[1].lower()
    if value < 1:
        raise ScheduleError(f"{quoted(text)}: the rate must be at least 1")
    singular = unit.rstrip("s")
    if singular not in _RATE_UNITS:
        raise ScheduleError(f"{quoted(text)}: the unit must be minute(s), hour(s) or day(s)")
    expected = singular if value == 1 else singular + "s"
    if unit != expected:
        raise ScheduleError(f"{quoted(text)}: EventBridge wants rate({value} {expected})")
    return RateExpression(text, timedelta(seconds=value * _RATE_UNITS[singular]))


# ---------------------------------------------------------------------------------------------
# fire times

def _localize(naive: datetime, tz: ZoneInfo) -> datetime | None:
    """The aware time for a wall-clock time, None if it does not exist (spring-forward gap).

    A repeated wall-clock time (fall back) resolves to its first occurrence (fold=0).
    """
    aware = naive.replace(tzinfo=tz, fold=0)
    back = aware.astimezone(timezone.utc).astimezone(tz)
    if back.replace(tzinfo=None) != naive:
        return None
    return aware


def iter_fire_times(expr: Expression, tz: ZoneInfo, after: datetime,
                    anchor: datetime | None = None) -> Iterator[datetime]:
    """Fire times strictly after ``after`` (aware), in ``tz``, in order.

    ``anchor`` is the start of a rate() schedule (EventBridge counts from the schedule's start);
    without one the first fire is one interval after ``after``.
    """
    if after.tzinfo is None:
        raise ValueError("after must be timezone-aware")
    if isinstance(expr, RateExpression):
        start = anchor or after
        if start > after:
            t = start
        else:
            n = (after - start) // expr.interval + 1
            t = start + n * expr.interval
        while True:
            yield t.astimezone(tz)
            t += expr.interval
    if isinstance(expr, AtExpression):
        when = _localize(expr.when, tz)
        if when is not None and when > after:
            yield when
        return
    local_after = after.astimezone(tz)
    day = local_after.date()
    end = day.replace(year=min(day.year + SEARCH_YEARS, 9999))
    times = expr.times_of_day()
    while day <= end:
        if expr.years is not None and day.year > max(expr.years):
            return
        if expr.matches_day(day):
            if _steady(day, tz):
                # no clock change this day: wall times are instants in the same order, so the
                # first day starts after `after` by its wall time (a minutely job's window no
                # longer localizes every minute since midnight: the fire ledger's pass, 1,000 jobs)
                first = bisect_right(times, (local_after.hour, local_after.minute)) if day == local_after.date() else 0
                for h, m in times[first:]:
                    yield datetime(day.year, day.month, day.day, h, m, tzinfo=tz)
            else:
                for h, m in times:
                    aware = _localize(datetime(day.year, day.month, day.day, h, m), tz)
                    if aware is not None and aware > after:
                        yield aware
        day += timedelta(days=1)


def _steady(day: date, tz: ZoneInfo) -> bool:
    """True when ``tz`` keeps one UTC offset through the whole of ``day`` (its midnight and the
    next both exist, with the same offset): no wall time of it is skipped or repeated."""
    try:
        start = _localize(datetime(day.year, day.month, day.day), tz)
        following = day + timedelta(days=1)
        end = _localize(datetime(following.year, following.month, following.day), tz)
    except OverflowError:
        return False
    return start is not None and end is not None and start.utcoffset() == end.utcoffset() \
        and start.astimezone(timezone.utc) + timedelta(days=1) == end.astimezone(timezone.utc)


def next_fire_times(expression: str | Expression, tz: str | ZoneInfo, after: datetime,
                    count: int = 5, anchor: datetime | None = None) -> list[datetime]:
    expr = parse(expression) if isinstance(expression, str) else expression
    zone = validate_timezone(tz) if isinstance(tz, str) else tz
    out: list[datetime] = []
    for t in iter_fire_times(expr, zone, after, anchor):
        out.append(t)
        if len(out) >= count:
            break
    return out


# ---------------------------------------------------------------------------------------------
# Unix cron: say what EventBridge wants instead

_SHORTCUTS = {
    "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
}
_UNIX_DOW_NAMES = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}


def _unix_dow_to_eb(field: str) -> str | None:
    """Renumber a Unix day-of-week field (0-7, 0 and 7 = Sunday) to EventBridge (1-7 = SUN-SAT)."""
    out = []
    for part in field.upper().split(","):
        base, slash, step = part.partition("/")
        if slash:  # EventBridge's day-of-week has no step (CRON_REFERENCE): the days it names, listed
            days = _unix_dow_stepped(base, step)
            if days is None:
                return None
            out.append(",".join(str(d + 1) for d in sorted({d % 7 for d in days})))
            continue
        pieces = base.split("-")
        conv = []
        for p in pieces:
            if p == "*":
                conv.append("*")
            elif p in _UNIX_DOW_NAMES:
                conv.append(p)
            elif p.isdigit() and 0 <= int(p) <= 7:
                conv.append(str(int(p) % 7 + 1))
            else:
                return None
        if len(pieces) == 2 and conv[0].isdigit() and conv[1].isdigit() and int(conv[0]) > int(conv[1]):
            # e.g. 5-7 (FRI-SUN) becomes 6-1: spell it as a list instead
            conv_list = [str(int(x) % 7 + 1) for x in range(int(pieces[0]), int(pieces[1]) + 1)]
            out.append(",".join(sorted(set(conv_list), key=int)))
            continue
        out.append("-".join(conv) + (slash + step if slash else ""))
    return ",".join(dict.fromkeys(out))  # 0,7 (both Sunday) is 1 once


def _unix_dow_stepped(base: str, step: str) -> list[int] | None:
    """The Unix day numbers (0-7) a stepped day-of-week item names: ``*/2``, ``1-5/2``, ``1/2``."""
    names = {n: i for i, n in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])}
    if not step.isdigit() or int(step) == 0:
        return None

    def number(p: str) -> int | None:
        if p in names:
            return names[p]
        return int(p) if p.isdigit() and 0 <= int(p) <= 7 else None

    if base == "*":
        lo, hi = 0, 6
    elif "-" in base:
        a, _, b = base.partition("-")
        lo_n, hi_n = number(a), number(b)
        if lo_n is None or hi_n is None or lo_n > hi_n:
            return None
        lo, hi = lo_n, hi_n
    else:
        start = number(base)
        if start is None:
            return None
        lo, hi = start, 6
    return list(range(lo, hi + 1, int(step)))


def translate_unix_cron(text: str) -> list[str] | None:
    """The EventBridge expression(s) equal to a 5-field Unix cron, or None if not expressible."""
    text = _SHORTCUTS.get(text.strip(), text.strip())
    fields = text.split()
    if len(fields) != 5:
        return None
    minute, hour, dom, month, dow = fields
    if dow == "*":
        return [f"cron({minute} {hour} {dom} {month} ? *)"]
    eb_dow = _unix_dow_to_eb(dow)
    if eb_dow is None:
        return None
    if dom == "*":
        return [f"cron({minute} {hour} ? {month} {eb_dow} *)"]
    # Unix cron ORs day-of-month and day-of-week: two EventBridge schedules say the same.
    return [f"cron({minute} {hour} {dom} {month} ? *)", f"cron({minute} {hour} ? {month} {eb_dow} *)"]


def unix_cron_message(text: str, brief: bool = False) -> str:
    translated = translate_unix_cron(text)
    lead = "" if brief else (
        f"{quoted(text)} looks like a Unix cron expression; EventBridge needs cron() with 6 fields "
        "and numbers day-of-week 1-7 = SUN-SAT. ")
    if translated is None:
        return lead + "Write it as cron(min hour day-of-month month day-of-week year)."
    if len(translated) == 1:
        return lead + f"The EventBridge equivalent is {translated[0]}"
    return lead + ("Unix cron runs when either day field matches; EventBridge needs two schedules: "
                   + " and ".join(translated))
