"""The operator's reads and action on the events dead-letter queue (platform/dead_letters.py):
list what was not delivered, and re-send the alerts once the cause is fixed.

A re-send publishes the alert to the platform's topic again, as its producer did (with the same
filter attributes), so the notifier delivers it as any other; each re-send is an audited action
on the alert's job (who may act on that job may re-send its alerts), the audit entry written
before the publish and removed if the publish fails; the message leaves the queue only after the
publish. A status event is never re-sent (the periodic check has done what it would have), and
an alert of a job no longer deployed, or one the actor may not act on, stays in the queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jobplane.platform.control.access import Actor
from jobplane.platform.control.errors import ControlError, check_reason
from jobplane.platform.context import PlatformContext
from jobplane.platform.control.runs import Runs

if TYPE_CHECKING:  # imported where used: `jobplane run` builds this plane without pydantic (test_run_lean)
    from jobplane.contract.notifications import NotificationMessage
    from jobplane.platform.dead_letters import DeadLetter, EventsDeadLetters


@dataclass
class Resent:
    """What a re-send did: the alerts published again, and what stayed in the queue and why."""

    resent: list[DeadLetter] = field(default_factory=list)
    left: list[tuple[DeadLetter, str]] = field(default_factory=list)


class DeadLetterActions:
    """The events dead-letter queue: read it, re-send its alerts (audited by ``runs``)."""

    def __init__(self, context: PlatformContext, runs: Runs):
        self.context, self.runs = context, runs
        self.deployment = context.deployment

    def events_dead_letters(self) -> EventsDeadLetters:
        from jobplane.platform.dead_letters import EventsDeadLetters

        return EventsDeadLetters(self.deployment.client("sqs"), self.deployment.name_prefix)

    def dead_letters(self, limit: int = 100) -> list[DeadLetter]:
        """What the queue holds (up to ``limit``, oldest first), left as it was."""
        return self.events_dead_letters().peek(limit)

    def resend_alerts(self, actor: Actor | str, reason: str, execution: str | None = None,
                      limit: int = 100) -> Resent:
        """Publish the dead-lettered alerts again (only ``execution``'s, if given)."""
        from jobplane.contract.notifications import publish

        check_reason(reason)
        queue = self.events_dead_letters()
        sns = self.deployment.client("sns")
        done = Resent()
        keep: list[DeadLetter] = []
        for letter in queue.take(limit):
            alert = letter.alert
            if alert is None:
                keep.append(letter)
                done.left.append((letter, "not an alert: the periodic check records what a lost status event "
                                          "would have" if letter.kind == "status event" else "not an alert"))
                continue
            if execution is not None and alert.execution != execution:
                keep.append(letter)
                continue
            from jobplane.contract import audit  # every kind (not on a run start's path: audit_event.py)
            event = audit.ResendAlert(alert.job, alert.execution, alert.event, letter.error[:200])

            def send(message: NotificationMessage = alert) -> str:
                return publish(sns, self.deployment.topic_arn, message)

            try:
                self.runs.audited(actor, event, reason, send)
            except ControlError as e:
                keep.append(letter)
                done.left.append((letter, e.message))
                continue
            queue.delete(letter)
            done.resent.append(letter)
        queue.release(keep)
        return done
