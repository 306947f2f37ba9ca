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
from datetime import datetime, timedelta, timezone
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
PRECEDENCE = (Event.FAILED, Event.TIMED_OUT, Event.DEADLINE, Event.MISSED, Event.ABORTED, Event.STALLED,
              Event.EXPECTATION, Event.SLOW, Event.SKIPPED, Event.RECOVERED)
#: A claimed summary not finished within this long is taken over (its checker died before sending).
CLAIM_STALE = timedelta(minutes=5)
_SNOOZED = StateFilter("attribute_exists(#f_snoozed_until)", (dm.ATTR_SNOOZED_UNTIL,), {})


def _now() -> datetime:
    return datetime.now(timezone.utc)


def summary_text(state: JobState) -> str:
    """The held alerts in words: how many of each kind, who snoozed and why, then the first by name."""
    total = state.snooze_held_count
    head = (f"{total} alert{'s' if total != 1 else ''} held while snoozed until {state.snoozed_until} "
            f"(by {state.snoozed_by}: {state.snooze_reason}): "
            + ", ".join(f"{n} {kind}" for kind, n in sorted(state.snooze_counts.items(), key=lambda kv: (-kv[1], kv[0]))))
    named = list(state.snooze_held)
    more = total - len(named)
    return "\n".join([head] + named + ([f"... and {more} more (the job's runs list each)"] if more > 0 else []))


class SnoozeEnds:
    """``reads``: the control plane's read service (the catalog entries, the job states)."""

    def __init__(self, reads: Reads, sns: Client, topic_arn: str, clock: Callable[[], datetime] = _now):
        self.reads, self.context = reads, reads.context
        self.sns, self.topic_arn, self.clock = sns, topic_arn, clock

    def check(self) -> list[str]:
        """Summarise and remove every snooze that has ended; returns the jobs whose snooze was
        finished. The summary is claimed first, sent, then the snooze removed: a send that fails
        leaves the claim, which goes stale and is taken over by a later pass (at least once,
        never lost); a snooze that held nothing is removed without a message."""
        now = self.clock()
        now_text, stale = iso_millis(now), iso_millis(now - CLAIM_STALE)
        finished, failed = [], []
        attributes = ("job", dm.ATTR_SNOOZED_UNTIL)
        for state in self.context.repo.job_states(attributes, where=_SNOOZED):
            if state.snoozed_until is None or state.snoozed(now_text):
                continue
            claimed = self.context.repo.claim_snooze_summary(state.job, state.snoozed_until, now_text, stale)
            if claimed is None:  # another checker has it, or it was snoozed again meanwhile
                continue
            try:
                if claimed.snooze_held_count:
                    self._summarise(claimed)
            except Exception as e:  # noqa: BLE001 - the others still end; this one is taken over later
                log.exception("the summary of %s's snooze was not sent; a later pass sends it", state.job)
                failed.append(e)
                continue
            if self.context.repo.finish_snooze(state.job, claimed.snooze_finishing or now_text):
                finished.append(state.job)
        if failed:
            raise failed[0]
        return finished

    def _summarise(self, state: JobState) -> None:
        entry = self.context.entries.get(state.job)
        kinds = {k.split(" ", 1)[0] for k in state.snooze_counts}
        event = next((e for e in PRECEDENCE if e.value in kinds), Event.FAILED)
        last = sorted(state.snooze_held)[-1].split(" ", 1) if state.snooze_held else []
        publish(self.sns, self.topic_arn, NotificationMessage(
            version=1, event=event_of(event.value), job=state.job, team=entry.team if entry else state.team,
            execution=last[1] if len(last) > 1 else "", execution_arn="", finished_at=iso_millis(self.clock()),
            outcome=Outcome(status=event.value, step=None),
            channels=entry.notify.channels if entry else [],
            events=[event_of(e.value) for e in entry.notify.events] if entry else None,
            summary=summary_text(state)))
        log.warning("%s: snooze ended; %d held alerts summarised", state.job, state.snooze_held_count)
