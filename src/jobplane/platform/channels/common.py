"""What every notification channel says about an alert, and where an undeliverable one is kept.

Each channel (platform/channels/<name>.py, one per entry of contract/channels.py ``CHANNELS``)
renders the same facts its own way: the link to act on, whether a note is a recovery, why a fire
was skipped, how long the run took. A delivery that fails after the channel's retries is kept by
the same :class:`DeadLetterSink` whichever channel refused it (``jobplane dead-letters`` lists
and redrives them all, platform/dead_letters.py).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Protocol
from urllib.parse import quote

from jobplane.contract.clock import seconds_between
from jobplane.contract.notifications import NotificationMessage, Outcome
from jobplane.contract.statuses import Event
from jobplane.contract.types import JsonObject


def execution_link(portal_url: str, execution: str) -> str | None:
    return f"{portal_url.rstrip('/')}/executions/{quote(execution, safe='')}" if portal_url else None


def is_recovery(message: NotificationMessage) -> bool:
    """A MISSED or DEADLINE episode's closing note (its outcome RECOVERED), not a breach."""
    return message.outcome.status == "RECOVERED" and message.event in (Event.MISSED.value, Event.DEADLINE.value)


def alert_link(portal_url: str, message: NotificationMessage) -> tuple[str, str] | None:
    """(button text, URL) of what the alert is about. A missed fires episode's recovery note
    links the episode: the job's fires from its first missed one to the one that resumed, on the
    backfill page (what covers each, what is still missing); its execution, a fire that ran, has
    no page of its own (the link was a 404, issue 65 item 4)."""
    if not portal_url:
        return None
    since, until = getattr(message.outcome, "since", None), getattr(message.outcome, "until", None)
    if message.event == Event.MISSED.value and is_recovery(message) and isinstance(since, str) and isinstance(until, str):
        return "Open missed fires", (f"{portal_url.rstrip('/')}/jobs/{quote(message.job, safe='')}/backfill"
                                     f"?from={quote(since, safe='')}&to={quote(until, safe='')}")
    link = execution_link(portal_url, message.execution)
    return ("Open execution", link) if link else None


def skip_detail(outcome: Outcome) -> str | None:
    """Why a fire was skipped, naming the failed run that blocks a LAST_FAILED skip."""
    reason = getattr(outcome, "reason", None)
    if not reason:
        return None
    blocker = getattr(outcome, "blocked_by", None)
    if reason == "LAST_FAILED" and blocker:
        return (f"skip reason: LAST_FAILED: run {blocker} failed; scheduled runs are skipped until a run succeeds "
                "or someone acknowledges the failure")
    return f"skip reason: {reason}"


def _duration(start: str | None, end: str | None) -> str:
    if not start or not end:
        return "—"
    seconds = int(seconds_between(start, end))
    hours, rest = divmod(max(seconds, 0), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s" if minutes else f"{secs} s"


class DeadLetterSink(Protocol):
    """Where an alert a channel refused is kept: the local queue of platform/dead_letters.py under
    ``jobplane dev`` (on AWS the notifier raises and Lambda keeps the event), or files."""

    def keep(self, message: NotificationMessage, channel: str | None, reason: str) -> object: ...


class DeadLetterStore:
    """Undeliverable messages, one JSON file each, so none is lost and each can be replayed."""

    def __init__(self, directory: Path | str):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def keep(self, message: NotificationMessage, channel: str | None, reason: str) -> Path:
        path = self.directory / f"{message.execution}-{uuid.uuid4().hex[:8]}.json"
        path.write_text(json.dumps({"channel": channel, "reason": reason,
                                    "message": json.loads(message.model_dump_json())}, indent=2))
        return path

    def entries(self) -> list[JsonObject]:
        return [json.loads(p.read_text()) for p in sorted(self.directory.glob("*.json"))]
