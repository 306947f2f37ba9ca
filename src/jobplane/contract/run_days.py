"""The fleet's runs by day, for the timeline page (issue 70, part 3): every run of a day, across
jobs, with the pool slots its pooled steps waited for and held.

No index reads the executions by time across jobs (gsi1 is per job; gsi2 holds failures, skips
and missed fires, not successes), and reading each job's executions of a day is a Query per job
(5,000 a page). So each run's end also appends a compact line (~150 bytes) to one of its day's
items: pk ``RUNS#<day>`` (UTC, of its start), sk ``<hour>#<bucket>`` (its start's hour, and its
job's bucket of :data:`BUCKETS`), and a day is read by its 192 keys (two BatchGetItem requests;
a few MB at 20,000 runs a day). The append is one UpdateItem (``ADD`` to a string set: no read, no conflict
between two runs ending at once, and a second delivery of the same end adds nothing). A string
set, not a list of strings: the same bytes, but one attribute value to parse, not one per run
(moto's serializer took ~0.5 ms per list element: 3 s for a day of 5,000 runs). An item stays small (a day's runs spread over 24 x 8 items) because a write is
billed by the item's whole size ("the larger of the item before or after the write",
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass

#: A day's items per hour: a job's runs go to one of these by its name.
BUCKETS = 8
DAY_PREFIX = "RUNS#"
ATTR_LINES = "lines"  # a string set of JSON texts, one per run (DayRun.to_json)


def day_pk(day: str) -> str:
    """A day's partition (``day``: YYYY-MM-DD, UTC)."""
    return f"{DAY_PREFIX}{day}"


def day_keys(day: str) -> list[dict[str, dict[str, str]]]:
    """Every item key a day can have (24 hours x BUCKETS), as boto3 sends them."""
    return [{"pk": {"S": day_pk(day)}, "sk": {"S": f"{h:02d}#{b:02d}"}} for h in range(24) for b in range(BUCKETS)]


def day_sk(job: str, started_at: str) -> str:
    """The item of the day a run of ``job`` started at ``started_at`` goes to."""
    return f"{started_at[11:13] or '00'}#{zlib.crc32(job.encode()) % BUCKETS:02d}"


@dataclass(frozen=True)
class PoolUse:
    """One pooled attempt: from ``waiting_since`` (None: it got its slots at once) it waited
    for ``weight`` slots of ``pool``, held them from ``started_at`` to ``finished_at``."""

    pool: str
    weight: int
    step: str
    waiting_since: str | None
    started_at: str | None
    finished_at: str | None


@dataclass(frozen=True)
class DayRun:
    """A run as the timeline draws it."""

    execution: str
    job: str
    team: str
    status: str
    started_at: str
    finished_at: str | None
    scheduled_time: str | None = None
    pooled: tuple[PoolUse, ...] = ()

    @property
    def day(self) -> str:
        return self.started_at[:10]

    def to_json(self) -> str:
        return json.dumps([self.execution, self.job, self.team, self.status, self.started_at, self.finished_at,
                           self.scheduled_time, [[p.pool, p.weight, p.step, p.waiting_since, p.started_at,
                                                  p.finished_at] for p in self.pooled]], separators=(",", ":"))

    @classmethod
    def from_json(cls, text: object) -> DayRun | None:
        """None for anything malformed: one bad line must not take the page down."""
        try:
            v = json.loads(text) if isinstance(text, str) else None
            execution, job, team, status, started, finished, scheduled, pooled = v  # type: ignore[misc]
            uses = tuple(PoolUse(str(p[0]), int(p[1]), str(p[2]), p[3], p[4], p[5]) for p in pooled)
        except (ValueError, TypeError, IndexError):
            return None
        if not all(isinstance(x, str) and x for x in (execution, job, status, started)):
            return None
        return cls(execution, job, str(team or ""), status, started, finished if isinstance(finished, str) else None,
                   scheduled if isinstance(scheduled, str) else None, uses)


#: A day's counters item (pk ``RUNS#<day>``): one number per item of the day, added to after each
#: line is appended to it (platform/run_history.py ``note_day``), so a reader that kept a day's
#: items knows, from this one small item, which of them changed since (portal/timeline_days.py).
VERSIONS_SK = "VERSIONS"


def versions_key(day: str) -> dict[str, dict[str, str]]:
    """The key of ``day``'s counters item, as boto3 sends it."""
    return {"pk": {"S": day_pk(day)}, "sk": {"S": VERSIONS_SK}}


def version_attribute(sk: str) -> str:
    """The counters item's attribute that counts the appends to the day's item ``sk`` (``03#05``:
    ``v0305``; a name DynamoDB takes without a placeholder)."""
    return "v" + sk.replace("#", "")


def day_sks() -> list[str]:
    """Every item sort key a day can have, in order (as :func:`day_keys`)."""
    return [f"{h:02d}#{b:02d}" for h in range(24) for b in range(BUCKETS)]
