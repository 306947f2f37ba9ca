"""The fires of each distinct schedule, computed once per pass of the fire ledger.

The ledger's steady state counts, for every job, the fires its schedule made since the job's
watermark (platform/missed.py, ``_counted``). Jobs share schedules (the same cron, the same
calendar rule): at 5,000 minutely jobs the pass spent ~2.5 s computing one schedule's fires
5,000 times, and a calendar job that moves fires off closed days looks at ~80 days around each
window (contract/business_fires.py's margin) for every job. Here each distinct schedule is
computed once over a span that covers every job's window (then once more, wider, if a window
falls outside it), and each job's fires are a slice of that sorted list.

A slice is exactly what :func:`plan_fires` gives for the window, because a schedule's fires do
not depend on the window they are looked for in: a cron's or an at()'s times are its own, a
calendar's fires are filtered by their instants (business_fires.calendar_fires looks at whole
days either side), and a rate()'s fires count from its anchor (a rate() without one counts from
the window's start, so it is computed for its window alone, as before). tests/test_pass_fires.py
holds the slices equal to plan_fires over many windows of every kind of schedule.

One object per pass, shared by the pass's worker threads (on AWS 8): a schedule two threads
compute at once is computed twice, with the same result (dict writes are atomic), so no lock.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from datetime import datetime, timedelta
from typing import Hashable

from jobplane.contract.calendars import CatalogCalendar
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.schedule_kinds import kind_of
from jobplane.platform.backfill_model import MAX_FIRES, plan_fires

Anchors = tuple[datetime | None, ...]


class PassFires:
    def __init__(self, now: datetime, span: timedelta):
        """``now``: the pass's clock; ``span``: the longest window a job asks for (a schedule's
        first computation covers ``end - span`` to ``now`` once a second job shares it)."""
        self.now, self.span = now, span
        self._known: dict[Hashable, tuple[datetime, datetime, list[datetime]]] = {}
        self._calendars: dict[int, tuple[CatalogCalendar, Hashable]] = {}
        self.computed = 0  # schedules computed this pass (bench and tests: the work it saved)

    def fires(self, entry: CatalogJob, start: datetime, end: datetime, anchors: Anchors = ()) -> list[datetime]:
        """``plan_fires(entry.schedule, entry.timezone, start, end, anchors, entry.calendar_schedule)``:
        every fire from ``start`` to ``end`` (both included), in order; ValueError above MAX_FIRES."""
        key = self._key(entry, anchors)
        if key is None:  # a rate() without its anchor counts from the window's start
            return self._plan(entry, start, end, anchors)
        known = self._known.get(key)
        if known is None or start < known[0] or end > known[1]:
            # the first job of a schedule gets its own window (a schedule no other job shares
            # costs what it did); the next one a span that covers every window of the pass
            lo, hi = (start, end) if known is None else (min(start, end - self.span, known[0]),
                                                         max(end, self.now, known[1]))
            try:
                known = (lo, hi, self._plan(entry, lo, hi, anchors))
            except ValueError:  # more than MAX_FIRES in the wide span: this window alone
                return self._plan(entry, start, end, anchors)
            self._known[key] = known
        times = known[2]
        out = times[bisect_left(times, start):bisect_right(times, end)]
        if len(out) > MAX_FIRES:
            raise ValueError(f"the window holds more than {MAX_FIRES:,} fires; backfill it in parts")
        return out

    def _plan(self, entry: CatalogJob, start: datetime, end: datetime, anchors: Anchors) -> list[datetime]:
        self.computed += 1
        return plan_fires(entry.schedule, entry.timezone, start, end, anchors, entry.calendar_schedule)

    def _key(self, entry: CatalogJob, anchors: Anchors) -> Hashable | None:
        """What a schedule's fires depend on (None: its window too)."""
        cs = entry.calendar_schedule
        if cs is not None:
            return "calendar", cs.schedule, cs.on_closed_day, cs.timezone, self._calendar_key(cs.calendar)
        if any(kind_of(e).counts_from_deployment and (i >= len(anchors) or anchors[i] is None)
               for i, e in enumerate(entry.schedule)):
            return None
        return "schedule", tuple(entry.schedule), entry.timezone, anchors

    def _calendar_key(self, calendar: CatalogCalendar) -> Hashable:
        """A calendar by its content (each job holds its own copy of it, from the catalog);
        made once per copy (kept with it, so its id is not reused during the pass)."""
        found = self._calendars.get(id(calendar))
        if found is None or found[0] is not calendar:
            found = (calendar, (calendar.name, calendar.first_year, calendar.last_year, tuple(calendar.weekend),
                                tuple(sorted(calendar.closed.items())), tuple(sorted(calendar.open))))
            self._calendars[id(calendar)] = found
        return found[1]
