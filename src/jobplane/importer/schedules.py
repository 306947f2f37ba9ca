"""A source's schedule in EventBridge terms: the exact expression(s), or why there are none.

Unix cron and EventBridge cron differ in three ways that change fires (docs/import.md):
day-of-week numbering (Unix 0 or 7 = Sunday, EventBridge 1 = SUN); the day fields, which Unix
cron ORs when both are restricted (``0 9 1 * MON``: the 1st and every Monday) and ANDs when
either starts with ``*`` (``*/2`` included), while EventBridge restricts exactly one; and
EventBridge's ``?``. An OR becomes two EventBridge expressions (a job's ``schedule`` is a list;
a day that matches both fires once, the second start being recorded as a duplicate). An AND of
two restricted fields has no EventBridge form: refused, with the nearest exact alternative when
there is one (days 1-7 of a month on a Monday is ``MON#1``). Celery's crontab() always ANDs.
Whatever this module produces is then proved fire by fire (:mod:`jobplane.importer.verify`),
so a rule missed here shows as a difference, never as a silent change. Which translation a
source's schedule takes is its dialect's (:mod:`jobplane.importer.dialects`).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobplane.contract.schedule import ScheduleError, parse, translate_unix_cron
from jobplane.importer.entries import SourceSchedule

_FULL_DAY_NAMES = {"SUNDAY": "SUN", "MONDAY": "MON", "TUESDAY": "TUE", "WEDNESDAY": "WED", "THURSDAY": "THU",
                   "FRIDAY": "FRI", "SATURDAY": "SAT"}
_NTH_WEEK = {"1-7": 1, "8-14": 2, "15-21": 3, "22-28": 4}
_EB_DAY = {"0": "SUN", "7": "SUN", "1": "MON", "2": "TUE", "3": "WED", "4": "THU", "5": "FRI", "6": "SAT"}
#: EventBridge's smallest rate unit is a minute.
_RATE_UNITS = ((86400, "day"), (3600, "hour"), (60, "minute"))


@dataclass(frozen=True)
class Translation:
    expressions: tuple[str, ...] = ()
    refusal: str | None = None


def translate_eventbridge(schedule: SourceSchedule) -> Translation:
    try:
        parse(schedule.text)
    except ScheduleError as e:
        return Translation(refusal=f"{schedule.text!r} is not a valid EventBridge expression: {e}")
    return Translation((schedule.text,))


def translate_unix(schedule: SourceSchedule) -> Translation:
    """Unix cron (Vixie/Debian): the day fields OR, unless one starts with ``*``."""
    return _translate_cron(schedule, always_and=False)


def translate_celery(schedule: SourceSchedule) -> Translation:
    """Celery's crontab(): the day fields always AND."""
    return _translate_cron(schedule, always_and=True)


def _translate_cron(schedule: SourceSchedule, always_and: bool) -> Translation:
    text = unix_equivalent(schedule)
    fields = text.split()
    if len(fields) != 5:
        return Translation(refusal=f"{schedule.text!r} is not a 5-field cron schedule")
    minute, hour, dom, month, dow = fields
    ands = always_and or dom.startswith("*") or dow.startswith("*")
    if ands and _restricted(dom) and _restricted(dow):
        rule = ("Celery's crontab() runs only on days that match both day_of_month and day_of_week"
                if always_and else
                f"cron runs this only on days that match both day-of-month {dom!r} and day-of-week {dow!r} (a day "
                "field that starts with '*' makes cron require both)")
        return Translation(refusal=f"{rule}; an EventBridge expression restricts one of them, so no schedule says "
                                   f"the same. {_and_alternative(minute, hour, dom, month, dow)}")
    if ands and _restricted(dom):
        text = f"{minute} {hour} {dom} {month} *"
    elif ands:
        text = f"{minute} {hour} * {month} {dow}"
    expressions = translate_unix_cron(text)
    if expressions is None:
        return Translation(refusal=f"{schedule.text!r} has no EventBridge equivalent (a day-of-week EventBridge "
                                   "cannot number: write it with 1-7 = SUN-SAT, L or #)")
    problems = []
    for expression in expressions:
        try:
            parse(expression)
        except ScheduleError as err:
            problems.append(str(err))
    if problems:
        return Translation(refusal=f"{schedule.text!r} has no EventBridge equivalent: {'; '.join(problems)}")
    return Translation(tuple(expressions))


def unix_equivalent(schedule: SourceSchedule) -> str:
    """The 5-field Unix form of a cron-like source, as cronsim reads it (Celery's full day names
    shortened); the dialect decides what the day fields mean."""
    text = schedule.text.upper()
    for full, short in _FULL_DAY_NAMES.items():
        text = text.replace(full, short)
    return text


def _restricted(field: str) -> bool:
    return field not in ("*", "?", "*/1")


def _and_alternative(minute: str, hour: str, dom: str, month: str, dow: str) -> str:
    week = _NTH_WEEK.get(dom)
    day = _EB_DAY.get(dow, dow if dow in _EB_DAY.values() else None)
    if week and day:
        return (f"The nearest exact alternative: cron({minute} {hour} ? {month} {day}#{week} *) (the {week}. "
                f"{day} of the month); write the job with it.")
    return ("No EventBridge expression is exact: schedule it on the day-of-week alone and have the step return "
            "early on the other days, or on the day-of-month alone.")


def translate_interval(schedule: SourceSchedule) -> Translation:
    seconds = schedule.seconds
    if not seconds or seconds < 60 or seconds % 60:
        return Translation(refusal=f"{schedule.text}: EventBridge schedules at most once a minute, in whole "
                                   "minutes; nearest: rate(1 minute), or a step that loops within the minute")
    for unit_seconds, unit in _RATE_UNITS:
        if seconds % unit_seconds == 0:
            n = seconds // unit_seconds
            return Translation((f"rate({n} {unit}{'s' if n != 1 else ''})",))
    raise AssertionError("unreachable: a whole number of minutes")
