"""Snoozed alerts: a job's alerts held until a time, then one summary of what was held.

During a known outage (a partner's maintenance, a migration), every fire of a job alerts about
what everybody already knows, and the channel learns to ignore the job. An operator snoozes its
alerts until a time (portal, CLI, API; audited: platform/control/jobs.py ``snooze``). Nothing
is lost: the runs are recorded and shown as always, every alert the notifier holds meanwhile is
kept on the job's state (``snooze_held``, appended by one conditional write: the alert either
lands in the snooze, or is delivered), and when the snooze ends (its time passes, or someone
ends it early) this check sends one summary of them: "4 alerts held while snoozed: 3 FAILED,
1 MISSED", so a MISSED fire or a DEADLINE breach during the snooze is still told, once.

Each snooze is summarised once: the check removes it with a condition on the end it read
(repository ``finish_snooze``), so two checkers never both send. It runs beside the other
periodic checks: every few seconds under ``jobplane dev``, in the periodic Lambda on AWS. A
snooze longer than 7 days is refused: a job silenced for longer wants a pause, or a fix.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timezone
from typing import Callable

from jobplane.contract import datamodel as dm
from jobplane.contract.clock import iso_millis
from jobplane.contract.notifications import NotificationMessage, Outcome, event_of, publish
from jobplane.contract.records import JobState
from jobplane.contract.statuses import Event
from jobplane.contract.types import Client
from jobplane.platform.control.reads import Reads
from jobplane.platform.repository import StateFilter

log = logging.getLogger(__name__)

#: Which held event names the summary, most pressing first (the channels subscribed to it get it).
PRECEDENCE = (Event.FAILED, Event.TIMED_OUT, Event.DEADLINE, Event.MISSED, Event.ABORTED, Event.SLOW,
              Event.SKIPPED, Event.RECOVERED)
_SNOOZED = StateFilter("attribute_exists(#f_snoozed_until)", (dm.ATTR_SNOOZED_UNTIL,), {})


def _now() -> datetime:
    return datetime.now(timezone.utc)


def summary_text(state: JobState) -> str:
    """The held alerts in words: how many of each event, who snoozed and why, then each one."""
    held = [h.split(" ", 1) for h in state.snooze_held]
    counts = Counter(event for event, *_ in held)
    head = (f"{len(held)} alert{'s' if len(held) != 1 else ''} held while snoozed until {state.snoozed_until} "
            f"(by {state.snoozed_by}: {state.snooze_reason}): "
            + ", ".join(f"{n} {event}" for event, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))
    return "\n".join([head] + [f"{event} {rest[0] if rest else ''}".strip() for event, *rest in held[:20]]
                     + ([f"... and {len(held) - 20} more"] if len(held) > 20 else []))


class SnoozeEnds:
    """``reads``: the control plane's read service (the catalog entries, the job states)."""

    def __init__(self, reads: Reads, sns: Client, topic_arn: str, clock: Callable[[], datetime] = _now):
        self.reads, self.context = reads, reads.context
        self.sns, self.topic_arn, self.clock = sns, topic_arn, clock

    def check(self) -> list[str]:
        """Finish every snooze that has ended, sending its summary when it held anything; returns
        the jobs whose snooze was finished."""
        now = iso_millis(self.clock())
        finished = []
        attributes = ("job", dm.ATTR_SNOOZED_UNTIL)
        for state in self.context.repo.job_states(attributes, where=_SNOOZED):
            if state.snoozed_until is None or state.snoozed(now):
                continue
            ended = self.context.repo.finish_snooze(state.job, state.snoozed_until)
            if ended is None:  # another checker finished it, or it was snoozed again meanwhile
                continue
            finished.append(state.job)
            if ended.snooze_held:
                self._summarise(ended)
        return finished

    def _summarise(self, state: JobState) -> None:
        entry = self.context.entries.get(state.job)
        events = {h.split(" ", 1)[0] for h in state.snooze_held}
        event = next((e for e in PRECEDENCE if e.value in events), Event.FAILED)
        last = state.snooze_held[-1].split(" ", 1)
        execution = last[1] if len(last) > 1 else ""
        publish(self.sns, self.topic_arn, NotificationMessage(
            version=1, event=event_of(event.value), job=state.job, team=entry.team if entry else state.team,
            execution=execution, execution_arn="", finished_at=iso_millis(self.clock()),
            outcome=Outcome(status=event.value, step=None),
            channels=entry.notify.channels if entry else [],
            events=[event_of(e.value) for e in entry.notify.events] if entry else None,
            summary=summary_text(state)))
        log.warning("%s: snooze ended; %d held alerts summarised", state.job, len(state.snooze_held))
