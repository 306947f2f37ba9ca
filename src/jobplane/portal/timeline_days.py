"""The days the timeline page read, kept in memory, read again only where they changed.

Why: a busy day (5,000 jobs each running once) is 192 items, ~0.9 MB, read by two BatchGetItem
requests and parsed on every view: 150 ms p95 for the page on the local engine at 5,000 jobs /
100,000 runs, where every other page was within 100 ms (bench/portal.py). A day's items only
change when a run of that day ends (or is noted again: a missed fire, a second delivery): each
append to a day's item is followed by adding one to that item's counter in the day's counters
item (contract/run_days.py ``VERSIONS_SK``; platform/run_history.py ``note_day``). So a view
reads the counters (one strongly consistent GetItem of a ~2 KB item) and reads again (strongly
consistent) only the items whose counter moved since they were kept: none for a closed day that
did not change, the hour or two of today's items that runs ended into.

Freshness: what a view draws is every line whose counter it read, as reading every item would
(the line is written before its counter moves, and the items are read after the counters); a
line whose counter has not moved yet (its note is between its two writes) is drawn by the first
view after it moves, as a whole read a moment earlier would have missed it. A day without a
counters item (its runs noted before the counters were written: a deployment older than them)
is read whole each view and not kept. Items that expire (TTL, the day's runs' retention) are
deleted by DynamoDB "within a few days" of their expiry and are read until then anyway
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html); a kept
day is read again after :data:`MAX_AGE` whatever its counters say, so a deletion no counter
sees is not drawn for longer than that.

Memory: at most :data:`DAYS` days and :data:`RUNS` runs in all (the least recently viewed day
goes first; a day of more runs than that is not kept); a run without pooled steps is ~640 bytes
(contract/run_days.py ``DayRun``, measured with tracemalloc): ~26 MB per portal process at most,
and what views worked out of each kept day (:data:`MEMO` of them: lists of the same runs).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar, cast

from jobplane.contract import run_days
from jobplane.contract.run_days import DayRun
from jobplane.platform.run_history import RunHistory

T = TypeVar("T")

#: days kept at most (the least recently viewed goes first)
DAYS = 8
#: runs kept at most, over every kept day
RUNS = 40_000
#: what views worked out of one state of a day, kept at most (filters x pages)
MEMO = 64
#: seconds a kept day is used before it is read whole again (a TTL deletion moves no counter)
MAX_AGE = 3600.0


@dataclass
class KeptDay:
    """A day as read (the state of its items at one view)."""

    versions: dict[str, int]  # each item's counter when its runs below were read
    items: dict[str, tuple[DayRun, ...]]  # each item's runs (sort key -> runs by start)
    runs: list[DayRun]  # every item's runs, by start (shared: never changed)
    read_at: float  # when it was read whole
    memo: dict[Hashable, object] = field(default_factory=dict)  # what views worked out from ``runs``
    lock: threading.Lock = field(default_factory=threading.Lock)

    def derived(self, key: Hashable, work: Callable[[list[DayRun]], T]) -> T:
        """``work(runs)``, worked out once for this state of the day (a filter's runs, a page of
        them: ``key`` names which; what it answers is shared, never changed)."""
        with self.lock:
            if key in self.memo:
                return cast(T, self.memo[key])
        value = work(self.runs)
        with self.lock:
            if len(self.memo) >= MEMO:  # filters by team x status x page: bounded too
                self.memo.clear()
            self.memo[key] = value
        return value


class DayCache:
    """Each kept day's items and their runs, by day (YYYY-MM-DD)."""

    def __init__(self, days: int = DAYS, runs: int = RUNS, max_age: float = MAX_AGE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.days, self.max_runs, self.max_age, self.clock = days, runs, max_age, clock
        self._kept: OrderedDict[tuple[str, str, str], KeptDay] = OrderedDict()  # (endpoint, table, day)
        self._lock = threading.Lock()

    def day(self, history: RunHistory, when: str) -> KeptDay:
        """``when``'s runs (YYYY-MM-DD) as :meth:`RunHistory.day` reads them: the day's counters
        (one GetItem), then only the items whose counter moved since they were kept."""
        day = (str(history.ddb.meta.endpoint_url), history.table, when)
        versions = history.day_versions(when)
        if versions is None:  # noted before the counters were written (or nothing noted): not kept
            with self._lock:
                self._kept.pop(day, None)
            return KeptDay({}, {}, history.day(when), self.clock())
        with self._lock:
            kept = self._kept.get(day)
        now = self.clock()
        if kept is not None and now - kept.read_at <= self.max_age:
            changed = [sk for sk in run_days.day_sks() if versions.get(sk, 0) != kept.versions.get(sk, 0)]
            if not changed:
                with self._lock:
                    if day in self._kept:
                        self._kept.move_to_end(day)
                return kept
            items = dict(kept.items) | history.day_items(when, changed)
            read_at = kept.read_at
        else:
            items = history.day_items(when, run_days.day_sks())
            read_at = now
        runs = sorted((r for item in items.values() for r in item), key=lambda r: (r.started_at, r.execution))
        fresh = KeptDay(versions, items, runs, read_at)
        self._keep(day, fresh)
        return fresh

    def _keep(self, day: tuple[str, str, str], fresh: KeptDay) -> None:
        with self._lock:
            self._kept.pop(day, None)
            if len(fresh.runs) > self.max_runs:
                return
            self._kept[day] = fresh
            while len(self._kept) > self.days or sum(len(d.runs) for d in self._kept.values()) > self.max_runs:
                self._kept.popitem(last=False)

    def kept(self) -> dict[str, int]:
        """Each kept day's runs (what the bound counts), by day."""
        with self._lock:
            return {day[2]: len(d.runs) for day, d in self._kept.items()}

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


#: The portal process's days (one per process: the portal serves one deployment's table).
DAYS_KEPT = DayCache()
