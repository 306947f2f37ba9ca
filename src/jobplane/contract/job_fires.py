"""The fires of any job between two instants, each with its calendar note: the one function a
reader of fires calls (the deadline check, the plan), whether or not the job has a calendar.

A calendar job's come from :func:`jobplane.contract.business_fires.calendar_fires` (moved fires
say from where and why); any other job's from its schedules with EventBridge's semantics
(:func:`jobplane.contract.schedule.iter_fire_times`), two schedules at one time making one fire.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from jobplane.contract.business_fires import Fire, calendar_fires
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.schedule import iter_fire_times, parse, validate_timezone


def job_fires(entry: CatalogJob, start: datetime, end: datetime,
              anchors: tuple[datetime | None, ...] = ()) -> list[Fire]:
    """Every fire of ``entry`` from ``start`` to ``end`` (aware; both included), in order, UTC.
    ``anchors``: when each rate() schedule started (ControlPlane.schedule_anchors); without one
    a rate() counts from ``start``."""
    if (cs := entry.calendar_schedule) is not None:
        return calendar_fires(cs, start, end, skipped=False).fires
    tz = validate_timezone(entry.timezone)
    times: set[datetime] = set()
    for i, expression in enumerate(entry.schedule):
        anchor = anchors[i] if i < len(anchors) else None
        for t in iter_fire_times(parse(expression), tz, start - timedelta(microseconds=1), anchor):
            if t > end:
                break
            times.add(t.astimezone(timezone.utc))
    return [Fire(t) for t in sorted(times)]
