"""STALLED alerts: a running step whose progress (``jobplane.progress``, docs/progress.md) has not
moved for its ``stall_after`` is announced once, while there is still time to look, instead of
being found hours later at its timeout.

Like SLOW (platform/slow.py), nothing inside a state machine can notice a step going quiet, so
the periodic check looks: for each job with a step that sets ``stall_after``, its running runs
(job state ``running``: one GetItem a job), and of each run its steps' progress records (one
Query of ``PROGRESS#<execution>``). A step that never reported progress is not judged (nothing
says how far it should be); a step that reported and then went quiet longer than its limit is.
"Moved" means reported: any ``jobplane.progress`` or ``metric`` call refreshes the record's
``updated_at`` (written at most every 10 s, contract/progress.py ``INTERVAL_SECONDS``).

Once per stall: the alert's sender marks the record with the ``updated_at`` it judged, by a
conditional write that also requires those values to be the newest and the step not ended
(repository.py ``mark_stalled``). Two checkers never both alert, and a step that moves again
and then stalls again is announced again. A publish that fails takes the mark back before the
error propagates, so the next pass announces it: never a stall marked and not told.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.clock import Clock, iso_millis, utc_now
from jobplane.contract.notifications import NotificationMessage, Outcome, event_of, publish
from jobplane.contract.statuses import Event, ExecutionStatus
from jobplane.contract.types import Client
from jobplane.platform.control.reads import Reads
from jobplane.platform.step_progress import StepProgress

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Stall:
    """One step found stalled (and announced by this check)."""

    job: str
    execution: str
    step: str
    quiet_seconds: int

    def words(self, progress: StepProgress, limit: int) -> str:
        return (f"step {self.step} has reported no progress for {_duration(self.quiet_seconds)} "
                f"(stall_after {_duration(limit)}); last: {progress.headline()}"
                + (f" at {progress.cursor}" if progress.cursor else "") + f", updated {progress.updated_iso}")


class StallWatch:
    """``reads``: the control plane's read service (runs, their progress)."""

    def __init__(self, reads: Reads, sns: Client, topic_arn: str, clock: Clock = utc_now):
        self.reads, self.context = reads, reads.context
        self.sns, self.topic_arn, self.clock = sns, topic_arn, clock

    def watched(self) -> list[CatalogJob]:
        return [e for e in self.context.entries.values() if e.stall_limits]

    def check(self) -> list[Stall]:
        """Announce every running step quiet past its ``stall_after`` (once per stall)."""
        found: list[Stall] = []
        now = self.clock()
        for entry in self.watched():
            limits = entry.stall_limits
            state = self.context.repo.job_state(entry.name)
            for execution in sorted(state.running if state else ()):
                for progress in self.reads.step_progress(entry.name, execution):
                    limit = limits.get(progress.step)
                    if limit is None or progress.ended or not progress.updated_at or progress.attempt == 0:
                        continue  # attempt 0: a re-run's checkpoint, not yet written by its step
                    quiet = int(now.timestamp() - progress.updated_at)
                    if quiet < limit or not self.context.repo.mark_stalled(entry.name, execution, progress.step,
                                                                           progress.updated_at):
                        continue  # not yet, or announced already (here or by another checker)
                    stall = Stall(entry.name, execution, progress.step, quiet)
                    try:
                        self._announce(entry, stall, progress, limit, now)
                    except Exception:
                        # not published: the mark goes, so the next pass (or Lambda's retry) alerts
                        self.context.repo.unmark_stalled(entry.name, execution, progress.step, progress.updated_at)
                        raise
                    found.append(stall)
        return found

    def _announce(self, entry: CatalogJob, stall: Stall, progress: StepProgress, limit: int, now: datetime) -> None:
        view = self.reads.execution(stall.execution, entry.name)  # once a stall: its trigger, start, ARN
        publish(self.sns, self.topic_arn, NotificationMessage(
            version=1, event=event_of(Event.STALLED.value), job=entry.name, team=entry.team,
            execution=stall.execution, execution_arn=view.execution_arn, trigger=view.input.trigger,
            scheduled_time=view.input.scheduled_time, requested_by=view.input.requested_by,
            started_at=view.started_at, finished_at=iso_millis(now),
            outcome=Outcome(status=ExecutionStatus.RUNNING.value, step=stall.step), channels=entry.notify.channels,
            events=[event_of(e.value) for e in entry.notify.events],
            runbook=entry.runbook.model_dump() if entry.runbook else None,
            error=stall.words(progress, limit)))
        log.warning("%s run %s: step %s stalled (%d s without progress, stall_after %d s)", entry.name,
                    stall.execution, stall.step, stall.quiet_seconds, limit)


def _duration(seconds: int) -> str:
    if seconds % 3600 == 0 and seconds >= 3600:
        return f"{seconds // 3600}h"
    if seconds >= 60:
        return f"{seconds // 60}m" + (f" {seconds % 60}s" if seconds % 60 and seconds < 600 else "")
    return f"{seconds}s"
