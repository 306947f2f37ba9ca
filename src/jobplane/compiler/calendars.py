"""jobplane.toml's calendars resolved into explicit dates for the catalog (compile time only).

The country's public holidays come from the ``holidays`` package (python-holidays, which keeps
each country's holiday law as code and is released every few weeks); the closures, one-off
days and included calendars are applied here, over ``[calendars] years``. The result is
written into each calendar job's catalog entry and compiled into its schedules, so a change of
law reaches the runtime as a recompile after ``holidays`` is upgraded (docs/dsl.md#calendars).
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from jobplane.compiler.model import Job
from jobplane.compiler.problems import Problem
from jobplane.contract.business_fires import CalendarSchedule, expand
from jobplane.contract.calendar_config import CalendarDef, CalendarSettings
from jobplane.contract.config import PlatformConfig
from jobplane.contract.quoting import did_you_mean, quoted
from jobplane.contract.schedule_kinds import kind_of

if TYPE_CHECKING:  # a pydantic model: imported where a calendar is resolved, so `jobplane validate`
    # of jobs without one stays without pydantic (tests/test_cli.py)
    from jobplane.contract.calendars import CatalogCalendar


@lru_cache(maxsize=64)
def country_holidays(country: str, first: int, last: int) -> tuple[tuple[date, str], ...]:
    """(date, English name) of ``country``'s public holidays in the years ``first``..``last``."""
    import holidays

    try:
        found = holidays.country_holidays(country, years=range(first, last + 1), language="en_US")
    except NotImplementedError:
        raise ValueError(f"the holidays package knows no country {country!r}") from None
    return tuple(sorted(found.items()))


@lru_cache(maxsize=1)
def _supported_countries() -> frozenset[str]:
    from holidays.utils import list_supported_countries

    return frozenset(list_supported_countries())


def unknown_countries(settings: CalendarSettings) -> dict[str, str]:
    """The calendars whose ``holidays`` country the holidays package does not know, with it. The
    package is read only when a calendar names a country (jobplane.toml's shape check cannot:
    contract/ is below the package)."""
    declared = {name: cal.holidays for name, cal in settings.calendars.items() if cal.holidays}
    if not declared:
        return {}
    known = _supported_countries()
    return {name: country for name, country in declared.items() if country not in known}


def config_problems(config: PlatformConfig) -> list[Problem]:
    """What jobplane.toml's [calendars] declare that only the holidays package can refuse: each
    named once, against jobplane.toml, whether a job uses the calendar or not (issue 65 item 7:
    ``holidays = "XX"`` was told once per job naming the calendar, never when none did)."""
    from jobplane.contract.config import CONFIG_FILE

    return [Problem(CONFIG_FILE, None, f"calendars.{name}.holidays",
                    f"the holidays package ({holidays_source()}) knows no country {country!r}: an ISO 3166 code "
                    "it lists (holidays.utils.list_supported_countries())")
            for name, country in sorted(unknown_countries(config.calendars).items())]


def names_unknown_country(settings: CalendarSettings, name: str, seen: tuple[str, ...] = ()) -> bool:
    """``name`` or a calendar it includes names a country the holidays package does not know."""
    cal = settings.calendars.get(name)
    if cal is None or name in seen:
        return False
    return name in unknown_countries(settings) or any(names_unknown_country(settings, o, seen + (name,))
                                                      for o in cal.include)


def holidays_source() -> str:
    from importlib.metadata import version

    return f"holidays {version('holidays')}"


def _closed_days(cal: CalendarDef, settings: CalendarSettings, first: int, last: int,
                 seen: tuple[str, ...] = ()) -> tuple[dict[date, str], set[int], set[date]]:
    closed: dict[date, str] = {}
    weekend = set(cal.weekend)
    opened: set[date] = set()
    for other in cal.include:
        if other in seen or other not in settings.calendars:
            continue
        c, w, o = _closed_days(settings.calendars[other], settings, first, last, seen + (cal.name,))
        for d, why in c.items():
            closed.setdefault(d, why)
        weekend |= w
        opened |= o
    if cal.holidays:
        for d, name in country_holidays(cal.holidays, first, last):
            closed.setdefault(d, name)
    d = date(first, 1, 1)
    while d.year <= last:
        for closure in cal.closed:
            if closure.covers(d):
                closed.setdefault(d, f"closed {closure.text} ({cal.name})")
        d += timedelta(days=1)
    for d in cal.closed_dates:
        closed[d] = f"closed ({cal.name})"
    opened |= set(cal.open_dates)
    return closed, weekend, opened


def resolve(settings: CalendarSettings, name: str) -> CatalogCalendar:
    """The calendar ``name`` as explicit dates over ``settings.years`` (one-off open days win)."""
    from jobplane.contract.calendars import CatalogCalendar

    first, last = settings.years
    cal = settings.calendars[name]
    closed, weekend, opened = _closed_days(cal, settings, first, last)
    in_years = [d for d in opened if first <= d.year <= last]
    return CatalogCalendar(
        name=name, first_year=first, last_year=last, weekend=sorted(weekend),
        closed={d.isoformat(): why for d, why in sorted(closed.items()) if first <= d.year <= last and d not in opened},
        open=sorted(d.isoformat() for d in in_years), source=holidays_source() if _uses_holidays(settings, name) else "")


def _uses_holidays(settings: CalendarSettings, name: str, seen: tuple[str, ...] = ()) -> bool:
    cal = settings.calendars[name]
    return bool(cal.holidays) or any(_uses_holidays(settings, o, seen + (name,)) for o in cal.include
                                     if o not in seen and o in settings.calendars)


def calendar_schedule(job: Job, config: PlatformConfig) -> CalendarSchedule | None:
    """What computes the fires of ``job`` when it names a calendar (validated), else None."""
    if job.calendar is None or job.calendar not in config.calendars.calendars:
        return None
    return CalendarSchedule(tuple(job.schedule), _resolved(config.calendars, job.calendar), job.on_closed_day,
                            job.timezone or config.default_timezone)


#: Resolved calendars and expansions of this process, by the settings object they came from
#: (kept alive with them): a compile resolves each calendar once, not once per job.
_CACHE: dict[tuple[int, str], tuple[CalendarSettings, object]] = {}


def _resolved(settings: CalendarSettings, name: str) -> CatalogCalendar:
    key = (id(settings), name)
    if key not in _CACHE or _CACHE[key][0] is not settings:
        _CACHE[key] = (settings, resolve(settings, name))
    from jobplane.contract.calendars import CatalogCalendar

    value = _CACHE[key][1]
    assert isinstance(value, CatalogCalendar)
    return value


def deployed_schedule(job: Job, config: PlatformConfig) -> list[str]:
    """The expressions deployed for ``job``: its own, or with a calendar, its fires over the
    calendar's years as explicit crons (contract/business_fires.py ``expand``)."""
    cs = calendar_schedule(job, config)
    if cs is None:
        return job.schedule
    key = (id(config.calendars), repr((cs.calendar.name, cs.schedule, cs.on_closed_day, cs.timezone)))
    if key not in _CACHE or _CACHE[key][0] is not config.calendars:
        _CACHE[key] = (config.calendars, expand(cs))
    value = _CACHE[key][1]
    assert isinstance(value, list)
    return value


#: The longest schedule expression EventBridge Scheduler takes (CreateSchedule ScheduleExpression:
#: https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html).
MAX_EXPRESSION = 256


def calendar_problems(source: str, job: Job, config: PlatformConfig) -> list[Problem]:
    """A calendar job names a calendar of jobplane.toml its team may use; business-day rules
    need one; a calendar filters cron() and at(), not rate() (which counts from its start)."""
    problems = []
    settings = config.calendars
    if job.calendar is not None:
        cal = settings.calendars.get(job.calendar)
        if cal is None:
            problems.append(Problem(source, job.name, "calendar", f"no calendar {quoted(job.calendar)} in jobplane.toml's "
                                    "[calendars]" + did_you_mean(job.calendar, sorted(settings.calendars))))
        elif cal.team is not None and cal.team != job.team:
            problems.append(Problem(source, job.name, "calendar", f"calendar {quoted(job.calendar)} belongs to team "
                                    f"{quoted(cal.team)}"))
    for i, expression in enumerate(job.schedule):
        kind = kind_of(expression)
        if kind.needs_calendar and job.calendar is None:
            problems.append(Problem(source, job.name, f"schedule[{i}]", f"{quoted(expression)} counts business days: "
                                    "the job needs a calendar (calendar: 'NAME' of jobplane.toml's [calendars])"))
        elif job.calendar is not None and not kind.calendar_filters:
            problems.append(Problem(source, job.name, f"schedule[{i}]", f"{quoted(expression)}: a calendar filters "
                                    "cron() and at() fires by their day; rate() counts from its start: use jp.cron "
                                    "or jp.everyMinutes"))
    if job.calendar is not None and not problems and job.schedule \
            and not names_unknown_country(settings, job.calendar):  # told once, against jobplane.toml
        try:
            deployed = deployed_schedule(job, config)
            if long := [e for e in deployed if len(e) > MAX_EXPRESSION]:
                problems.append(Problem(source, job.name, "schedule", f"compiles to a cron of {len(long[0])} characters "
                                        f"(EventBridge takes {MAX_EXPRESSION}): {long[0][:80]}..."))
            if not deployed:
                problems.append(Problem(source, job.name, "schedule", f"no fire in the calendar's years "
                                        f"{settings.years[0]}-{settings.years[1]}: nothing would be deployed"))
        except ValueError as e:
            problems.append(Problem(source, job.name, "calendar", str(e)))
    return problems
