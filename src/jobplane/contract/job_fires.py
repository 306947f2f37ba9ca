"""The fires of any job: the one enumerator every reader of fires calls, whether or not the job
has a calendar: the fire ledger (platform/pass_fires.py, missed fires), backfills
(platform/backfill_model.plan_fires), deadlines, ``jobplane next``, ``jobplane plan`` and the
portal's next fires (platform/control/views.next_fires, portal/calendar_view.py).

A calendar job's fires come from :func:`jobplane.contract.business_fires.calendar_fires` (moved
fires say from where and why; the closed days skipped are told beside them); any other job's
from each schedule's kind (contract/schedule_kinds.py, EventBridge's semantics), merged in
order, two schedules at one instant making one fire (the claim counts them as one too).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import islice
from typing import Protocol

from jobplane.contract.business_fires import CalendarSchedule, Fire, FireWindow, calendar_fires, next_calendar_fires
from jobplane.contract.schedule import validate_timezone
from jobplane.contract.schedule_kinds import kind_of

Anchors = tuple[datetime | None, ...]


class Scheduled(Protocol):
    """What a job's fires depend on: a catalog entry (CatalogJob) is one, and so is
    :class:`JobSchedule` (a compiled definition, a single schedule of a job)."""

    @property
    def schedule(self) -> Sequence[str]: ...

    @property
    def timezone(self) -> str: ...

    @property
    def calendar_schedule(self) -> CalendarSchedule | None: ...


@dataclass(frozen=True)
class JobSchedule:
    """A job's schedules by themselves (its deployed expressions, zone and calendar)."""

    schedule: tuple[str, ...]
    timezone: str
    calendar_schedule: CalendarSchedule | None = None


def job_fires(entry: Scheduled, start: datetime, end: datetime, anchors: Anchors = (),
              limit: int | None = None) -> list[Fire]:
    """Every fire of ``entry`` from ``start`` to ``end`` (aware; both included), in order, UTC.
    ``anchors``: when each rate() schedule started (ControlPlane.schedule_anchors); without one
    a rate() counts from ``start``. ``limit``: ValueError when the window holds more fires."""
    if (cs := entry.calendar_schedule) is not None:
        fires = calendar_fires(cs, start, end, skipped=False).fires
        if limit is not None and len(fires) > limit:
            raise ValueError(f"the window holds more than {limit:,} fires; backfill it in parts")
        return fires
    out: list[Fire] = []
    for t in _plain_fires(entry, start - timedelta(microseconds=1), anchors):
        if t > end:
            break
        out.append(Fire(t))
        if limit is not None and len(out) > limit:
            raise ValueError(f"the window holds more than {limit:,} fires; backfill it in parts")
    return out


def next_job_fires(entry: Scheduled, after: datetime, count: int, anchors: Anchors = ()) -> FireWindow:
    """The next ``count`` fires strictly after ``after`` (UTC), and for a calendar job the closed
    days skipped before the last of them (a calendar job is looked at up to 5 years ahead; a
    cron up to contract/schedule.SEARCH_YEARS)."""
    if (cs := entry.calendar_schedule) is not None:
        return next_calendar_fires(cs, after, count)
    return FireWindow([Fire(t) for t in islice(_plain_fires(entry, after, anchors), count)])


def _plain_fires(entry: Scheduled, after: datetime, anchors: Anchors) -> Iterator[datetime]:
    """The fires of a job without a calendar strictly after ``after``, in order, once each, UTC:
    each schedule's kind's fires merged (by instant: a wall time repeated by a clock change
    compares by its wall time in its zone)."""
    tz = validate_timezone(entry.timezone)
    streams = [(t.astimezone(timezone.utc) for t in kind_of(expression).fires(
        expression, tz, after, anchors[i] if i < len(anchors) else None)) for i, expression in enumerate(entry.schedule)]
    last: datetime | None = None
    for t in heapq.merge(*streams):
        if t != last:
            yield t
            last = t


__all__ = ["JobSchedule", "Scheduled", "job_fires", "next_job_fires"]
