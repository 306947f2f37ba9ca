"""Blackout windows: maintenance windows and freezes declared once in jobplane.toml, named by jobs.

    [blackouts]
    years = [2026, 2028]              # the horizon compiled (default: [calendars] years)

    [blackouts.db-maint]              # a database's weekly maintenance: Sunday 02:00 for 3 hours
    cron = "cron(0 2 ? * SUN *)"
    duration = "3h"
    timezone = "Asia/Tokyo"           # default: [platform] default_timezone
    action = "skip"                   # or "defer": run once when the window ends

    [blackouts.year-end]              # the year-end close: whole days, a freeze
    dates = ["12-29..01-03"]          # 'MM-DD' / 'MM-DD..MM-DD' every year, or 'YYYY-MM-DD' once
    freeze = true                     # `jobplane plan` refuses changes to its jobs during it

    [blackouts.golden-week]           # a calendar's closed days (holidays, closures; not weekends)
    calendar = "jp-business"
    action = "defer"

A job names windows (``blackout: ['db-maint']``); ``[teams.<t>] blackout`` names windows every
job of the team is in besides its own.

Every window is resolved at compile time into its concrete occurrences over the horizon, as
UTC intervals ``[start, end)`` (:func:`occurrences`), written into the catalog entry of each
job that names it and into the job's state machine (compiler/asl.py: a Choice on the fire's
time), so the runtime, the fire ledger, deadlines, ``jobplane next`` and the portal all read
the same instants and nothing at run time needs a cron evaluator or a time zone database.
A fire is *inside* a window when ``start <= scheduled time < end``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Literal, Sequence
from zoneinfo import ZoneInfo

from jobplane.contract.calendar_config import CALENDAR_NAME_RE, MONTH_DAY_RE
from jobplane.contract.schedule import CronExpression, ScheduleError, iter_fire_times, parse, validate_timezone

Action = Literal["skip", "defer"]
ACTIONS: tuple[Action, ...] = ("skip", "defer")
KEYS = {"cron", "duration", "dates", "calendar", "timezone", "action", "freeze", "team"}
#: At most this many occurrences of all a job's windows are compiled into its state machine: each
#: is one Choice rule of ~250 bytes, and a definition is at most 1 MB
#: (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html). A weekly window
#: over 3 years is 157; an hourly one is refused.
MAX_OCCURRENCES = 600
_DURATION_RE = re.compile(r"(\d+)([mhd])")
_UNIT = {"m": 60, "h": 3600, "d": 86400}
_DATE_RE = re.compile(r"\d{4}-\d\d-\d\d")


@dataclass(frozen=True)
class WindowDef:
    """One ``[blackouts.NAME]`` table: *when* is exactly one of ``cron`` (+ ``duration``),
    ``dates`` (whole days, or ``duration`` from each day's midnight), ``calendar`` (its closed
    days, whole days)."""

    name: str
    cron: str | None = None
    duration: int | None = None  # seconds
    dates: tuple[str, ...] = ()  # as written: 'YYYY-MM-DD', 'MM-DD', or a range of either
    calendar: str | None = None
    timezone: str | None = None
    action: Action = "skip"
    freeze: bool = False
    team: str | None = None  # only this team's jobs may name it


@dataclass(frozen=True)
class BlackoutSettings:
    years: tuple[int, int] = (0, -1)  # empty: none declared (then [calendars] years)
    windows: dict[str, WindowDef] = field(default_factory=dict)


def parse_duration(text: object) -> int | None:
    """'90m', '3h', '2d' in seconds (None: not a duration)."""
    if not isinstance(text, str):
        return None
    m = _DURATION_RE.fullmatch(text.strip())
    return int(m.group(1)) * _UNIT[m.group(2)] if m and int(m.group(1)) > 0 else None


def _date_item(text: str) -> bool:
    parts = text.split("..")
    if len(parts) not in (1, 2):
        return False
    kinds = set()
    for p in parts:
        if _DATE_RE.fullmatch(p):
            try:
                date.fromisoformat(p)
            except ValueError:
                return False
            kinds.add("date")
        elif (m := MONTH_DAY_RE.fullmatch(p)):
            try:
                date(2024, int(m.group(1)), int(m.group(2)))
            except ValueError:
                return False
            kinds.add("md")
        else:
            return False
    return len(kinds) == 1 and not (kinds == {"date"} and len(parts) == 2 and parts[1] < parts[0])


def parse_blackouts(source: str, raw: object, teams: set[str], calendars: set[str]
                    ) -> tuple[BlackoutSettings, list[str]]:
    """The ``[blackouts]`` table and every problem in it, each naming the file and the field."""
    problems: list[str] = []

    def bad(where: str, message: str) -> None:
        problems.append(f"{source}: blackouts.{where}: {message}")

    if raw is None:
        return BlackoutSettings(), []
    if not isinstance(raw, dict):
        return BlackoutSettings(), [f"{source}: [blackouts] must be a table"]
    years = (0, -1)
    if "years" in raw:
        y = raw["years"]
        if (not isinstance(y, list) or len(y) != 2 or not all(type(v) is int for v in y)
                or not 2000 <= y[0] <= y[1] <= 2199 or y[1] - y[0] >= 10):
            bad("years", f"[first, last]: the years whose windows are compiled, at most 10 (e.g. [2026, 2028]); got {y!r}")
        else:
            years = (y[0], y[1])
    windows: dict[str, WindowDef] = {}
    for name, table in raw.items():
        if name == "years":
            continue
        if not isinstance(table, dict):
            bad(name, "must be a table ([blackouts.NAME])")
            continue
        if not CALENDAR_NAME_RE.fullmatch(name):
            bad(name, "a window's name is 1-40 lower-case letters, digits and '-', starting with a letter")
        for key in sorted(set(table) - KEYS):
            bad(f"{name}.{key}", f"unknown key; known: {', '.join(sorted(KEYS))}")
        whens = [k for k in ("cron", "dates", "calendar") if k in table]
        if len(whens) != 1:
            bad(name, "says when with exactly one of cron (+ duration), dates, calendar"
                      + (f"; it has {', '.join(whens)}" if whens else ""))
        cron = table.get("cron")
        if cron is not None:
            try:
                if not isinstance(cron, str) or not isinstance(parse(cron), CronExpression):
                    raise ScheduleError("a window's cron is a cron(...) expression")
            except ScheduleError as e:
                bad(f"{name}.cron", f"{cron!r}: {e}")
                cron = None
        duration = None
        if "duration" in table:
            duration = parse_duration(table["duration"])
            if duration is None or duration > 31 * 86400:
                bad(f"{name}.duration", f"a duration such as '90m', '3h' or '2d' (at most 31d); got {table['duration']!r}")
                duration = None
        elif cron is not None:
            bad(f"{name}.duration", "a cron window needs how long each occurrence lasts (e.g. duration = '3h')")
        if "calendar" in table and "duration" in table:
            bad(f"{name}.duration", "a calendar window is the calendar's closed days, whole days")
        dates = table.get("dates", [])
        if not isinstance(dates, list) or not all(isinstance(d, str) and _date_item(d) for d in dates):
            bad(f"{name}.dates", "a list of 'YYYY-MM-DD' (once), 'MM-DD' (every year) or a range of either "
                                 f"('12-29..01-03', '2026-05-01..2026-05-06'); got {dates!r}")
            dates = []
        cal = table.get("calendar")
        if cal is not None and cal not in calendars:
            bad(f"{name}.calendar", f"{cal!r} is no calendar of [calendars]")
        zone = table.get("timezone")
        if zone is not None:
            try:
                validate_timezone(zone)
            except (ValueError, TypeError):
                bad(f"{name}.timezone", f"{zone!r} is not an IANA time zone name such as 'Asia/Tokyo'")
                zone = None
        action = table.get("action", "skip")
        if action not in ACTIONS:
            bad(f"{name}.action", f"'skip' (the fires inside are not run) or 'defer' (run once when the window "
                                  f"ends); got {action!r}")
            action = "skip"
        freeze = table.get("freeze", False)
        if not isinstance(freeze, bool):
            bad(f"{name}.freeze", f"true or false; got {freeze!r}")
            freeze = False
        team = table.get("team")
        if team is not None and team not in teams:
            bad(f"{name}.team", f"{team!r} is no team of [teams]")
        windows[name] = WindowDef(name=name, cron=cron if isinstance(cron, str) else None, duration=duration,
                                  dates=tuple(dates), calendar=cal if isinstance(cal, str) else None,
                                  timezone=zone, action=action, freeze=freeze,
                                  team=team if isinstance(team, str) else None)
    return BlackoutSettings(years=years, windows=windows), problems


# -- occurrences -------------------------------------------------------------------------------

Interval = tuple[datetime, datetime]


def occurrences(window: WindowDef, zone: str, years: tuple[int, int],
                closed_days: Sequence[date] = ()) -> list[Interval]:
    """Every occurrence of ``window`` starting in ``years`` (both included), as aware UTC
    intervals ``[start, end)``, in order, overlapping ones merged. ``zone``: the window's own
    time zone or the platform's default; ``closed_days``: a calendar window's closed days."""
    first, last = years
    if first > last:
        return []
    tz = ZoneInfo(window.timezone or zone)
    out: list[Interval] = []
    if window.cron is not None and window.duration is not None:
        start = datetime(first, 1, 1, tzinfo=tz) - timedelta(microseconds=1)
        stop = datetime(last + 1, 1, 1, tzinfo=tz)
        for t in iter_fire_times(parse(window.cron), tz, start):
            if t >= stop:
                break
            out.append((t, t + timedelta(seconds=window.duration)))
    days: list[date] = []
    for text in window.dates:
        days.extend(_days_of(text, first, last))
    days.extend(d for d in closed_days if first <= d.year <= last)
    for d in sorted(set(days)):
        begin = datetime.combine(d, time(), tzinfo=tz)
        if window.duration is not None:
            out.append((begin, begin + timedelta(seconds=window.duration)))
        else:
            nxt = d + timedelta(days=1)
            out.append((begin, datetime.combine(nxt, time(), tzinfo=tz)))
    utc = sorted((s.astimezone(timezone.utc), e.astimezone(timezone.utc)) for s, e in out)
    merged: list[Interval] = []
    for s, e in utc:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def _days_of(text: str, first: int, last: int) -> list[date]:
    parts = text.split("..")
    if _DATE_RE.fullmatch(parts[0]):
        a, b = date.fromisoformat(parts[0]), date.fromisoformat(parts[-1])
        return [a + timedelta(days=i) for i in range((b - a).days + 1)]
    (m1, d1), (m2, d2) = [tuple(int(x) for x in p.split("-")) for p in (parts[0], parts[-1])]
    out: list[date] = []
    for year in range(first - 1, last + 1):  # a range that wraps the year starts the year before
        try:
            a = date(year, m1, d1)
        except ValueError:  # 02-29 of a year without one
            continue
        wraps = (m2, d2) < (m1, d1)
        try:
            b = date(year + 1 if wraps else year, m2, d2)
        except ValueError:
            b = date(year + 1 if wraps else year, m2, d2 - 1)
        out.extend(a + timedelta(days=i) for i in range((b - a).days + 1))
    return [d for d in out if first <= d.year <= last]


# -- what a job carries ------------------------------------------------------------------------


@dataclass(frozen=True)
class JobWindow:
    """A window as one job sees it (the catalog's ``blackouts``, the state machine's Choice)."""

    name: str
    action: Action
    freeze: bool
    intervals: tuple[Interval, ...]

    def containing(self, t: datetime) -> Interval | None:
        """The occurrence ``t`` is inside (``start <= t < end``), if any."""
        from bisect import bisect_right
        i = bisect_right(self.intervals, (t, datetime.max.replace(tzinfo=timezone.utc))) - 1
        if i >= 0 and self.intervals[i][0] <= t < self.intervals[i][1]:
            return self.intervals[i]
        return None

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "action": self.action, "freeze": self.freeze,
                "intervals": [[iso(s), iso(e)] for s, e in self.intervals]}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> JobWindow:
        raw = data.get("intervals")
        intervals = tuple((parse_utc(str(s)), parse_utc(str(e))) for s, e in (raw if isinstance(raw, list) else []))
        action = data.get("action")
        return cls(name=str(data["name"]), action="defer" if action == "defer" else "skip",
                   freeze=bool(data.get("freeze")), intervals=intervals)


@dataclass(frozen=True)
class Blackout:
    """A fire inside a window: which window, its occurrence, what happens to the fire."""

    window: str
    action: Action
    start: datetime
    end: datetime


#: Windows read from catalog entries, by the list they came from (kept alive with it): the fire
#: ledger asks each job's windows about its fires every pass.
_READ: dict[int, tuple[object, list[JobWindow]]] = {}


def windows_of(raw: list[dict[str, object]]) -> list[JobWindow]:
    """A catalog entry's ``blackouts`` as windows, read once per entry object."""
    if not raw:
        return []
    found = _READ.get(id(raw))
    if found is None or found[0] is not raw:
        found = (raw, [JobWindow.from_json(w) for w in raw])
        _READ[id(raw)] = found
    return found[1]


def outside(windows: Sequence[JobWindow], fires: list[datetime]) -> list[datetime]:
    """``fires`` without those inside a window: never MISSED, no deadline (docs/operate.md)."""
    return [t for t in fires if blackout_of(windows, t) is None] if windows else fires


def blackout_of(windows: Sequence[JobWindow], t: datetime) -> Blackout | None:
    """The window ``t`` (a fire's time, aware) falls inside; a skip window wins over a defer one
    (the state machine's Choice tests them in that order, then by the job's order)."""
    found = [(w, iv) for w in windows if (iv := w.containing(t)) is not None]
    found.sort(key=lambda pair: pair[0].action != "skip")
    if not found:
        return None
    w, (s, e) = found[0]
    return Blackout(w.name, w.action, s, e)


def ordered(windows: Sequence[JobWindow]) -> list[JobWindow]:
    """Skip windows first, then defer ones (as :func:`blackout_of` decides)."""
    return sorted(windows, key=lambda w: w.action != "skip")


def deferred_requester(window: str) -> str:
    """``requested_by`` of the run a defer window starts when it ends (platform/blackouts.py):
    the state machine's ``Blackout`` Choice lets a scheduled fire of this requester through."""
    return f"blackout {window} (deferred)"


#: The StringMatches pattern of :func:`deferred_requester` ('*' its only wildcard:
#: https://docs.aws.amazon.com/step-functions/latest/dg/state-choice.html).
DEFERRED_PATTERN = "blackout * (deferred)"


def iso(t: datetime) -> str:
    """An instant as the state machine compares it: RFC 3339, UTC, whole seconds, 'Z'."""
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


__all__ = ["ACTIONS", "Blackout", "BlackoutSettings", "JobWindow", "WindowDef", "blackout_of", "iso", "occurrences",
           "ordered", "parse_blackouts", "parse_duration", "parse_utc"]
