"""The job page's blackout windows (contract/blackouts.py): each window the job is in, what it
does, its next occurrence; and a next fire inside one marked with the window, as `jobplane
next` marks it."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from jobplane.contract.blackouts import JobWindow, blackout_of
from jobplane.contract.catalog import CatalogJob


def fire_mark(t: datetime, entry: CatalogJob) -> str:
    """'' for a fire outside the job's windows; else what happens to it, naming the window."""
    found = blackout_of(entry.windows, t)
    if found is None:
        return ""
    return f"blacked out by {found.window}: " + ("skipped" if found.action == "skip" else "deferred to its end")


def window_line(window: JobWindow, zone: str, now: datetime | None = None) -> str:
    """One window in words: its action, a freeze, its current or next occurrence in the job's zone."""
    now = now or datetime.now(timezone.utc)
    tz = ZoneInfo(zone)
    upcoming = next(((s, e) for s, e in window.intervals if e > now), None)
    what = "fires inside are skipped" if window.action == "skip" else "fires inside run once when it ends"
    when = ("no occurrence left in the compiled years" if upcoming is None else
            ("now, until " if upcoming[0] <= now else "next ") +
            (f"{upcoming[1].astimezone(tz):%Y-%m-%d %H:%M %Z}" if upcoming[0] <= now else
             f"{upcoming[0].astimezone(tz):%Y-%m-%d %H:%M} to {upcoming[1].astimezone(tz):%Y-%m-%d %H:%M %Z}"))
    return f"{window.name}: {what}" + ("; a freeze (plan refuses changes during it)" if window.freeze else "") + f"; {when}"
