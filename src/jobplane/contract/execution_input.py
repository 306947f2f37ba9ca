"""The input every starter gives a compiled state machine (SPEC "The compiled state machine").

EventBridge Scheduler sends the schedule's form (written into Terraform by the compiler); the
CLI, the portal and the local scheduler build theirs here, so all of them agree on the contract.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from jobplane.contract.statuses import Trigger

#: Replaced by EventBridge Scheduler with the fire's scheduled time (ISO 8601, UTC, 'Z').
SCHEDULER_TIME = "<aws.scheduler.scheduled-time>"

#: Every field the state machine reads; a starter that sends them all is a jobplane starter.
FIELDS = ("trigger", "scheduled_time", "requested_by", "params", "resume_from", "rerun_of")

#: ``requested_by`` of a run started with an incomplete input (the Step Functions console, ``aws
#: stepfunctions start-execution``). A running execution cannot learn who started it (its context
#: object has no caller:
#: https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html); CloudTrail's
#: StartExecution event for the execution names the caller (``userIdentity``).
UNATTRIBUTED = "console (unknown caller)"


def defaults(started_at: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a run whose input lacks fields gets for them: a manual run of the job's default
    params, scheduled at the execution's start. The compiled ``Start: defaults`` state builds the
    same object in ASL (``started_at`` is ``$$.Execution.StartTime`` there)."""
    return {"trigger": Trigger.MANUAL.value, "scheduled_time": started_at, "requested_by": UNATTRIBUTED,
            "params": dict(params or {}), "resume_from": None, "rerun_of": None}


def complete(given: dict[str, Any], started_at: str | None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The input the state machine ran with: ``given`` as sent, or, when a field is missing,
    merged over :func:`defaults` the way ``States.JsonMerge`` does it (shallow: a given
    ``params`` replaces the defaults' whole object). Readers show this, not the raw input."""
    if all(f in given for f in FIELDS):
        return given
    return defaults(started_at or "", params) | given


def iso(t: datetime) -> str:
    """UTC, second precision, 'Z' — the format of EventBridge Scheduler's scheduled-time."""
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def scheduled(scheduled_time: datetime | str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a schedule sends; the compiler writes it with ``SCHEDULER_TIME`` as the time."""
    when = scheduled_time if isinstance(scheduled_time, str) else iso(scheduled_time)
    return {"trigger": Trigger.SCHEDULE.value, "scheduled_time": when, "requested_by": "scheduler",
            "params": dict(params or {}), "resume_from": None, "rerun_of": None}


def manual(requested_by: str, defaults: dict[str, Any] | None = None, overrides: dict[str, Any] | None = None,
           now: datetime | None = None) -> dict[str, Any]:
    """A run started by a person. Its scheduled_time is the request time with microseconds, so
    a double-submitted request (same instant) is recognised as a duplicate, two requests are not."""
    now = now or datetime.now(timezone.utc)
    return {"trigger": Trigger.MANUAL.value,
            "scheduled_time": now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "requested_by": requested_by, "params": {**(defaults or {}), **(overrides or {})},
            "resume_from": None, "rerun_of": None}


def rerun(requested_by: str, of_execution: str, params: dict[str, Any], resume_from: str | None,
          now: datetime | None = None) -> dict[str, Any]:
    base = manual(requested_by, params, None, now)
    return base | {"trigger": Trigger.RERUN.value, "resume_from": resume_from, "rerun_of": of_execution}


def backfill(requested_by: str, fire: datetime, params: dict[str, Any], backfill_id: str) -> dict[str, Any]:
    """A past fire started by a backfill: its scheduled_time is the fire's (what the job's code
    reads as the time it runs for); ``backfill`` names the backfill (lineage; the state machine
    does not read it)."""
    return {"trigger": Trigger.BACKFILL.value, "scheduled_time": iso(fire), "requested_by": requested_by,
            "params": dict(params), "resume_from": None, "rerun_of": None, "backfill": backfill_id}


def parse_params(items: list[str]) -> dict[str, Any]:
    """'key=value' items from a person (CLI flags, a portal form's lines): values that parse as
    JSON (numbers, booleans, lists) are taken as such, anything else as a string."""
    import json

    from jobplane.contract.quoting import quoted

    params: dict[str, Any] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{quoted(item)} is not key=value")
        try:
            params[key.strip()] = json.loads(value.strip())
        except RecursionError:  # a RuntimeError, not a ValueError: it was a 500 from the portal's form
            raise ValueError(f"{quoted(key.strip())}: the value nests too deep") from None
        except ValueError:
            params[key.strip()] = value.strip()
    return params
