"""A job's last runs, kept on one small item beside its state (pk ``JOB#<job>``, sk ``RECENT``),
so a page of the jobs list reads every job's recent runs in one BatchGetItem (issue 70).

Why an item of its own, written when a run ends, and not a read of each job's executions:

* the jobs page shows 100 jobs a page; their last runs by the executions index (gsi1
  ``JOB#<job>``) is one Query per job, 100 requests a page (~0.5-1 s on AWS sequentially, 100x
  the read requests), where one BatchGetItem of 100 keys answers the same;
* not on the state item itself: every claim and release is billed by the whole item's size
  ("the larger of the item before or after the write",
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html), and
  the queries of every state (the duration sort, a status filter's prefilter) read whole items
  against their 1 MB pages: ~1 KB of runs on each of 5,000 states doubled both;
* the list is written by whoever sees the run's end (the reconciler, for every terminal status;
  the fire ledger, for a missed fire), read-merged-written under a version number, so two ends
  at once both land and a second delivery of one end changes nothing.

The runs are newest first, at most :data:`KEPT`; ``breached`` are the scheduled fires whose
deadline was breached (contract/deadlines.py), so a run of such a fire is marked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from jobplane.contract import datamodel as dm
from jobplane.contract.records import ExecutionRecord
from jobplane.contract.types import JsonObject

#: How many runs a job's item keeps (and the jobs page shows): ~100 bytes each.
KEPT = 10
RECENT_SK = "RECENT"
ATTR_RUNS = "runs"  # JSON text: a list of RecentRun.to_json()
ATTR_BREACHED = "breached"  # JSON text: the scheduled fires whose deadline was breached, newest first
ATTR_VERSION = "version"  # a number, one more at each write (the write's condition)


def recent_key(job: str) -> JsonObject:
    """The item's key, as boto3 sends it."""
    return {"pk": {"S": dm.job_partition(job)}, "sk": {"S": RECENT_SK}}


@dataclass(frozen=True)
class RecentRun:
    """One run as its mark shows it: how it ended (or MISSED, SKIPPED), when, and its fire."""

    execution: str
    status: str
    started_at: str | None = None
    finished_at: str | None = None
    scheduled_time: str | None = None
    failed_step: str | None = None

    @classmethod
    def of(cls, record: ExecutionRecord) -> RecentRun:
        return cls(record.execution, record.status, record.started_at, record.finished_at,
                   record.scheduled_time or record.input.scheduled_time, record.failed_step)

    @property
    def order(self) -> str:
        """What the runs are ordered by: its start (a missed fire's is its fire's time)."""
        return self.started_at or self.scheduled_time or self.finished_at or ""

    def to_json(self) -> list[str | None]:
        return [self.execution, self.status, self.started_at, self.finished_at, self.scheduled_time,
                self.failed_step]

    @classmethod
    def from_json(cls, value: object) -> RecentRun | None:
        """None for anything malformed: one bad entry must not take the jobs page down."""
        if not isinstance(value, list) or len(value) < 2 or not all(v is None or isinstance(v, str) for v in value):
            return None
        execution, status, *rest = value
        if not execution or not status:
            return None
        rest += [None] * (4 - len(rest))
        return cls(execution, status, rest[0], rest[1], rest[2], rest[3])


def merged(runs: tuple[RecentRun, ...], new: RecentRun, kept: int = KEPT) -> tuple[RecentRun, ...]:
    """``runs`` with ``new`` in its place (a run noted again replaces its older note), newest
    first, the ``kept`` newest."""
    others = [r for r in runs if r.execution != new.execution]
    return tuple(sorted([*others, new], key=lambda r: (r.order, r.execution), reverse=True)[:kept])


def encode(runs: tuple[RecentRun, ...]) -> str:
    return json.dumps([r.to_json() for r in runs], separators=(",", ":"))


def decode(text: object) -> tuple[RecentRun, ...]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return ()
    if not isinstance(value, list):
        return ()
    return tuple(r for v in value if (r := RecentRun.from_json(v)) is not None)


def decode_fires(text: object) -> tuple[str, ...]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return ()
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
