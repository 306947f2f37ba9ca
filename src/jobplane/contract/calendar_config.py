"""Business-day calendars as jobplane.toml declares them (``[calendars]``), checked for shape.

Only the declaration lives here: the country's holidays are read from the ``holidays`` package
by the compiler (compiler/calendars.py), which writes each job's calendar into the catalog as
explicit dates, so nothing at run time needs a holiday library (docs/dsl.md#calendars).

    [calendars]
    years = [2026, 2028]            # the horizon compiled into the schedules

    [calendars.jp-business]
    holidays = "JP"                 # the country's public holidays
    closed = ["12-29..01-03"]       # closed every year (a range may wrap the year)
    closed_dates = ["2027-04-30"]   # closed once
    open_dates = ["2026-12-29"]     # open once, whatever else says
    include = ["other-calendar"]    # its closed days too
    weekend = ["SAT", "SUN"]        # the default
    team = "billing"                # only this team's jobs may name it (default: any)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from jobplane.contract.types import JsonObject

CALENDAR_NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,39}")
COUNTRY_RE = re.compile(r"[A-Z]{2}")
MONTH_DAY_RE = re.compile(r"(\d\d)-(\d\d)")
#: Python's weekday numbers (Monday 0) by the names EventBridge cron uses.
WEEKDAY_NAMES = {"MON": 0, "TUE": 1, "WED": 2, "THU": 3, "FRI": 4, "SAT": 5, "SUN": 6}
#: At most this many years are compiled: each is ~12 schedules for a job that runs on every business day.
MAX_YEARS = 10
KEYS = {"holidays", "closed", "closed_dates", "open_dates", "include", "weekend", "team"}


@dataclass(frozen=True)
class Closure:
    """Closed every year from ``start`` to ``end`` (month, day), both included; wraps the year
    when ``end`` is before ``start`` (12-29..01-03)."""
    start: tuple[int, int]
    end: tuple[int, int]
    text: str

    def covers(self, d: date) -> bool:
        md = (d.month, d.day)
        if self.start <= self.end:
            return self.start <= md <= self.end
        return md >= self.start or md <= self.end


@dataclass(frozen=True)
class CalendarDef:
    name: str
    holidays: str | None = None
    closed: tuple[Closure, ...] = ()
    closed_dates: tuple[date, ...] = ()
    open_dates: tuple[date, ...] = ()
    include: tuple[str, ...] = ()
    weekend: tuple[int, ...] = (5, 6)
    team: str | None = None


@dataclass(frozen=True)
class CalendarSettings:
    years: tuple[int, int] = (0, -1)  # empty: no calendar declared
    calendars: dict[str, CalendarDef] = field(default_factory=dict)


def _month_day(text: str) -> tuple[int, int] | None:
    m = MONTH_DAY_RE.fullmatch(text.strip())
    if not m:
        return None
    month, day = int(m.group(1)), int(m.group(2))
    try:
        date(2024, month, day)  # a leap year: 02-29 is a day of some years
    except ValueError:
        return None
    return month, day


def _dates(where: str, value: object, problems: list[str]) -> tuple[date, ...]:
    if not isinstance(value, list):
        problems.append(f"{where}: a list of dates 'YYYY-MM-DD'")
        return ()
    out = []
    for i, item in enumerate(value):
        try:
            if not isinstance(item, str) or not re.fullmatch(r"\d{4}-\d\d-\d\d", item):
                raise ValueError
            out.append(date.fromisoformat(item))
        except ValueError:
            problems.append(f"{where}[{i}]: {item!r} is not a date 'YYYY-MM-DD'")
    return tuple(out)


def parse_calendars(source: str, raw: object, teams: set[str]) -> tuple[CalendarSettings, list[str]]:
    """The ``[calendars]`` table, and every problem in it (each naming the file and the field)."""
    problems: list[str] = []

    def bad(where: str, message: str) -> None:
        problems.append(f"{source}: calendars.{where}: {message}")

    if raw is None:
        return CalendarSettings(), []
    if not isinstance(raw, dict):
        return CalendarSettings(), [f"{source}: [calendars] must be a table"]
    years_raw = raw.get("years")
    years = (0, -1)
    if (not isinstance(years_raw, list) or len(years_raw) != 2 or not all(type(y) is int for y in years_raw)
            or not 2000 <= years_raw[0] <= years_raw[1] <= 2199 or years_raw[1] - years_raw[0] >= MAX_YEARS):
        bad("years", f"[first, last]: the years whose fires are compiled into the schedules, at most {MAX_YEARS} "
                     f"(e.g. [2026, 2028]); got {years_raw!r}")
    else:
        years = (years_raw[0], years_raw[1])
    calendars: dict[str, CalendarDef] = {}
    for name, table in raw.items():
        if name == "years":
            continue
        if not isinstance(table, dict):
            bad(name, "must be a table ([calendars.NAME])")
            continue
        if not CALENDAR_NAME_RE.fullmatch(name):
            bad(name, "a calendar's name is 1-40 lower-case letters, digits and '-', starting with a letter")
        for key in sorted(set(table) - KEYS):
            bad(f"{name}.{key}", f"unknown key; known: {', '.join(sorted(KEYS))}")
        country = table.get("holidays")
        if country is not None and (not isinstance(country, str) or not COUNTRY_RE.fullmatch(country)):
            bad(f"{name}.holidays", f"a country's ISO 3166 code such as 'JP'; got {country!r}")
        closures = []
        closed = table.get("closed", [])
        if not isinstance(closed, list):
            bad(f"{name}.closed", "a list of 'MM-DD' or 'MM-DD..MM-DD' (closed every year)")
            closed = []
        for i, text in enumerate(closed):
            parts = text.split("..") if isinstance(text, str) else []
            ends = [_month_day(p) for p in parts]
            if len(ends) not in (1, 2) or any(e is None for e in ends):
                bad(f"{name}.closed[{i}]", f"{text!r} is not 'MM-DD' or 'MM-DD..MM-DD' (e.g. '12-29..01-03')")
                continue
            first, last = ends[0], ends[-1]
            assert first is not None and last is not None
            closures.append(Closure(first, last, text))
        weekend_raw = table.get("weekend", ["SAT", "SUN"])
        weekend: list[int] = []
        if not isinstance(weekend_raw, list) or not all(isinstance(w, str) and w in WEEKDAY_NAMES for w in weekend_raw):
            bad(f"{name}.weekend", f"a list of days among {', '.join(WEEKDAY_NAMES)}; got {weekend_raw!r}")
        else:
            weekend = sorted({WEEKDAY_NAMES[w] for w in weekend_raw})
        include = table.get("include", [])
        if not isinstance(include, list) or not all(isinstance(x, str) for x in include):
            bad(f"{name}.include", "a list of calendar names")
            include = []
        team = table.get("team")
        if team is not None and team not in teams:
            bad(f"{name}.team", f"{team!r} is no team of [teams]")
        calendars[name] = CalendarDef(
            name=name, holidays=country if isinstance(country, str) else None, closed=tuple(closures),
            closed_dates=_dates(f"{source}: calendars.{name}.closed_dates", table.get("closed_dates", []), problems),
            open_dates=_dates(f"{source}: calendars.{name}.open_dates", table.get("open_dates", []), problems),
            include=tuple(include), weekend=tuple(weekend), team=team if isinstance(team, str) else None)
    for cal in calendars.values():
        for i, other in enumerate(cal.include):
            if other not in calendars:
                bad(f"{cal.name}.include[{i}]", f"{other!r} is no calendar of [calendars]")
            elif calendars[other].team is not None and calendars[other].team != cal.team:
                bad(f"{cal.name}.include[{i}]", f"{other!r} belongs to team {calendars[other].team!r}")
        if _cycle(cal.name, calendars, ()):
            bad(f"{cal.name}.include", "includes itself (through " + " -> ".join(_cycle(cal.name, calendars, ())) + ")")
    return CalendarSettings(years=years, calendars=calendars), problems


def _cycle(name: str, calendars: dict[str, CalendarDef], path: tuple[str, ...]) -> tuple[str, ...]:
    if name in path:
        return path + (name,)
    for other in calendars[name].include if name in calendars else ():
        if found := _cycle(other, calendars, path + (name,)):
            return found
    return ()
