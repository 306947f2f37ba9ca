"""``notify.renotify_after``: a failure still standing is announced once more, never more.

An alert at 02:10 scrolls away under the morning's messages; a failure still standing at 09:00
is the one that matters. A job that sets ``renotify_after: '4h'`` has its failure announced
again when, that long after the failed run ended, the job still has the failure block the run
set (contract/items.py ``release_job``): no run has succeeded since, a later failure has not
taken its place (it is announced on its own), and, under a policy that blocks on failure
(the only ones whose failures can be acknowledged), nobody acknowledged it. Each failed run is
re-announced at most once: the job's state records it (``reminded``, written with a condition
by repository ``mark_reminded``), so two watchers, or a watcher after a restart, never both post.

The reminder is the failure's own message (its event, step and error as recorded), with
``reminder`` saying how long it has stood, so the notifier routes it to the same channels and
its ``after_failures`` hold applies as to the first: a failure that was never announced is not
re-announced either. Nothing inside a state machine can notice time passing, so this runs beside
the slow-run watch: every few seconds under ``jobplane dev``, in the periodic Lambda on AWS.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Callable

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.clock import parse_iso
from jobplane.contract.notifications import NotificationMessage, Outcome, event_of, publish
from jobplane.contract.types import Client
from jobplane.platform.control.reads import Reads

log = logging.getLogger(__name__)

FAILED = ("FAILED", "TIMED_OUT")


def _now() -> datetime:
    return datetime.now(timezone.utc)


def stood(seconds: float) -> str:
    """How long a failure has stood, in the words of a duration setting ('4h', '1d 2h', '45m')."""
    minutes = int(seconds // 60)
    days, hours, mins = minutes // 1440, minutes % 1440 // 60, minutes % 60
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{mins}m" if mins and not days else ""]
    return " ".join(p for p in parts if p) or "1m"


class Renotify:
    """``reads``: the control plane's read service (the catalog entries, the records)."""

    def __init__(self, reads: Reads, sns: Client, topic_arn: str, clock: Callable[[], datetime] = _now):
        self.reads, self.context = reads, reads.context
        self.sns, self.topic_arn, self.clock = sns, topic_arn, clock

    def watched(self) -> list[CatalogJob]:
        return [e for e in self.context.entries.values() if e.notify.renotify_after]

    def check(self) -> list[str]:
        """Announce again each unacknowledged failure past its job's ``renotify_after`` (once);
        returns the failed runs announced."""
        announced = []
        now = self.clock()
        repo = self.context.repo
        for entry in self.watched():
            state = repo.job_state(entry.name)
            if state is None or not state.blocked_by or state.acknowledged_by:
                continue
            record = repo.execution(state.blocked_by)
            if record is None or record.status not in FAILED or not record.finished_at:
                continue
            age = (now - parse_iso(record.finished_at)).total_seconds()
            if age < (entry.notify.renotify_after or 0):
                continue
            if not repo.mark_reminded(entry.name, record.execution):
                continue
            publish(self.sns, self.topic_arn, NotificationMessage(
                version=1, event=event_of(record.status), job=entry.name, team=entry.team,
                execution=record.execution, execution_arn=record.execution_arn or "", trigger=record.trigger,
                scheduled_time=record.scheduled_time, requested_by=record.requested_by,
                started_at=record.started_at, finished_at=record.finished_at,
                outcome=Outcome(status=record.status, step=record.failed_step), channels=entry.notify.channels,
                events=[event_of(e.value) for e in entry.notify.events],
                runbook=entry.runbook.model_dump() if entry.runbook else None, error=record.error,
                after_failures=entry.notify.after_failures if entry.notify.after_failures > 1 else None,
                reminder=f"unacknowledged for {stood(age)}"))
            log.warning("%s: failure of %s unacknowledged for %s; announced again", entry.name, record.execution,
                        stood(age))
            announced.append(record.execution)
        return announced
