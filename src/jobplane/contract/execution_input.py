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


def parse_params(items: list[str]) -> dict[str, Any]:
    """'key=value' items from a person (CLI flags, a portal form's lines): values that parse as
    JSON (numbers, booleans, lists) are taken as such, anything else as a string."""
    import json

    params: dict[str, Any] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{item!r} is not key=value")
        try:
            params[key.strip()] = json.loads(value.strip())
        except ValueError:
            params[key.strip()] = value.strip()
    return params
