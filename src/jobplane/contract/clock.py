"""Timestamps as Step Functions writes them (ISO 8601, UTC, milliseconds, 'Z'), so records
written by the state machines and by Python sort and compare alike."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

#: What a checker asks for the time (tests give a fixed one).
Clock = Callable[[], datetime]


def iso_millis(t: datetime) -> str:
    t = t.astimezone(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def now_iso() -> str:
    return iso_millis(datetime.now(timezone.utc))


def parse_iso(value: str) -> datetime:
    """A timestamp written in that form (or any ISO 8601 with an offset) as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def seconds_between(start: str, end: str) -> float:
    return (parse_iso(end) - parse_iso(start)).total_seconds()


def as_iso(value: object) -> str:
    """A boto3 timestamp (datetime) or an already formatted one, as Step Functions writes it."""
    return iso_millis(value) if isinstance(value, datetime) else str(value)
