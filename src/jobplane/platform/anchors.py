"""When each rate() schedule started: EventBridge Scheduler counts a rate() schedule's fires
from its StartDate, else from its CreationDate, so the "next fires" a page shows need it.

An anchor changes only when its schedule is created again, so each is read once (GetSchedule,
the same call locally and on AWS) and afterwards refreshed in the background once it is a
minute old: a page shows the anchor it knows and never waits for the refresh. Refreshing in the
request made the jobs page pause every minute for one GetSchedule per rate() job (~1.2 s at
1,000 jobs, bench/portal.py's p95).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from jobplane.contract.types import Client

log = logging.getLogger(__name__)


class ScheduleAnchors:
    def __init__(self, scheduler: Client, group: str, max_age: float = 60.0):
        self.scheduler, self.group, self.max_age = scheduler, group, max_age
        self._known: dict[str, tuple[float, datetime | None]] = {}  # name -> (fresh until, anchor)
        self._refreshing: set[str] = set()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def get(self, name: str) -> datetime | None:
        """The schedule's anchor (None when it does not exist); read at once only the first time."""
        known = self._known.get(name)
        if known is None:
            return self._read(name)
        if known[0] < time.monotonic():
            self._refresh_later(name)
        return known[1]

    def settle(self) -> None:
        """Wait until the refreshes under way have ended."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _read(self, name: str) -> datetime | None:
        try:
            found = self.scheduler.get_schedule(Name=name, GroupName=self.group)
            anchor: datetime | None = found.get("StartDate") or found.get("CreationDate")
        except self.scheduler.exceptions.ResourceNotFoundException:
            anchor = None
        self._known[name] = (time.monotonic() + self.max_age, anchor)
        return anchor

    def _refresh_later(self, name: str) -> None:
        with self._lock:
            if name in self._refreshing:
                return
            self._refreshing.add(name)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jobplane-anchors")
            self._pool.submit(self._refresh, name)

    def _refresh(self, name: str) -> None:
        try:
            self._read(name)
        except Exception as e:  # the known anchor stays; the next read after it tries again
            log.warning("could not refresh the anchor of schedule %s: %s", name, e)
        finally:
            with self._lock:
                self._refreshing.discard(name)
