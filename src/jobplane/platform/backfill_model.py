"""What a backfill is: its window, its fires and how far each got, and how the fires of a window
are found (the job's own schedules and timezone, with the evaluator `jobplane next` uses, so a
window over a daylight-saving change holds exactly the fires EventBridge Scheduler would have
sent).

A backfill is stored as one item (platform/backfill_store.py) so that whoever drives it next (the
CLI that created it, the portal's driver, a restarted ``jobplane dev``) finds all of it in one
read; 1,000 fires of progress are ~100 KB, well inside DynamoDB's 400 KB item limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum

from jobplane.contract.business_fires import CalendarSchedule
from jobplane.contract.job_fires import JobSchedule, job_fires
from jobplane.contract.schedule import validate_timezone
from jobplane.contract.clock import parse_iso
from jobplane.contract.types import JsonObject

#: The most fires one backfill may hold: a wider window is refused, not truncated.
MAX_FIRES = 1000
#: The most runs one backfill keeps going at once (a job that skips while running: always 1).
MAX_CONCURRENT = 20


class Mode(str, Enum):
    ONLY_MISSED = "only-missed"  # fires with no record: not run, not skipped, not in flight
    ALL = "all"  # every fire, whatever ran before


class Status(str, Enum):
    RUNNING = "RUNNING"  # fires are being started and followed
    COMPLETED = "COMPLETED"  # every fire ran (or was found taken); see each fire's outcome
    HALTED = "HALTED"  # a fire failed and the job's policy skips after a failure: resume when fixed
    CANCELLED = "CANCELLED"  # no further fire starts; runs already started finish on their own


class FireState(str, Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    TAKEN = "taken"  # another backfill, or a run in flight, has this fire: it is not run twice


@dataclass
class Fire:
    at: str  # the fire's UTC time (execution_input.iso): the run's scheduled_time
    state: FireState = FireState.PENDING
    execution: str | None = None
    status: str | None = None  # the run's final status (SUCCEEDED, FAILED, SKIPPED...)
    tries: int = 0  # starts so far: a run the policy skipped (a claim held) is tried again
    note: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"at": self.at, "state": self.state.value, "tries": self.tries}
        out |= {k: v for k, v in (("execution", self.execution), ("status", self.status), ("note", self.note)) if v}
        return out

    @classmethod
    def from_json(cls, data: JsonObject) -> Fire:
        return cls(data["at"], FireState(data["state"]), data.get("execution"), data.get("status"),
                   int(data.get("tries", 0)), data.get("note"))


@dataclass
class Backfill:
    id: str
    job: str
    team: str
    start: str  # the window, UTC ISO (both ends included)
    end: str
    mode: Mode
    max_concurrent: int
    params: JsonObject
    requested_by: str
    reason: str
    created_at: str
    status: Status = Status.RUNNING
    fires: list[Fire] = field(default_factory=list)
    version: int = 0  # bumped by every save: two drivers never overwrite each other's progress
    updated_at: str | None = None
    finished_at: str | None = None
    note: str | None = None  # why it halted, who cancelled it

    def counts(self) -> dict[str, int]:
        """Fires by state, and runs by final status: what progress lines and pages show."""
        out: dict[str, int] = {s.value: 0 for s in FireState}
        for f in self.fires:
            out[f.state.value] += 1
            if f.status:
                out[f.status] = out.get(f.status, 0) + 1
        return out

    def fire(self, at: str) -> Fire:
        return next(f for f in self.fires if f.at == at)

    @property
    def driven(self) -> bool:
        """Whether a driver has anything to do: start fires, or follow runs still going (a
        cancelled backfill's runs finish and are noted)."""
        return self.status == Status.RUNNING or any(f.state == FireState.RUNNING for f in self.fires)


def execution_name(backfill_id: str, fire: str, tries: int) -> str:
    """A fire's execution name: the same for every driver of this backfill (Step Functions starts
    a name once), new for each try of the fire."""
    stamp = parse_iso(fire).strftime("%Y%m%dT%H%M%SZ")
    return f"{backfill_id}-{stamp}-{tries}"


def window_time(text: str, zone: str) -> datetime:
    """A window end as an operator writes it: ISO 8601 with an offset or 'Z', or without one in
    the job's timezone (the times its schedule is written in)."""
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time (2026-03-08T00:00, with or without an offset)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=validate_timezone(zone))
    try:
        return t.astimezone(timezone.utc)
    except OverflowError:  # year 1 with a positive offset, year 9999 with a negative one
        raise ValueError(f"{text!r} is out of range") from None


def plan_fires(schedule: list[str], zone: str, start: datetime, end: datetime,
               anchors: tuple[datetime | None, ...] = (),
               calendar: CalendarSchedule | None = None) -> list[datetime]:
    """Every fire of the schedules from ``start`` to ``end`` (both included), in order, once
    each (two schedules firing at one time make one fire: the claim counts them as one too).
    ValueError above :data:`MAX_FIRES`. A calendar job's (``calendar``: its catalog entry's
    ``calendar_schedule``) come from its rules and calendar (contract/business_fires.py), so a
    closed day has no fire to run, count or miss. The fires are :func:`job_fires`' (the one
    enumerator of fires), capped at :data:`MAX_FIRES`."""
    job = JobSchedule(tuple(schedule), zone, calendar)
    return [f.at for f in job_fires(job, start, end, anchors, limit=MAX_FIRES)]


def fires_json(fires: list[Fire]) -> str:
    return json.dumps([f.to_json() for f in fires], separators=(",", ":"))
