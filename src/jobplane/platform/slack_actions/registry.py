"""The actions a Slack button can ask for: one :class:`ButtonAction` each in :data:`ACTIONS`
(its name, the button's words, when an alert offers it, its handler and, where it is not the
one rule on the alert's job, who may ask for it), so adding one is one entry and one function:
the approval steps' Approve and Reject are two (platform/approvals.py decides).

Every handler is an action the portal already has, called on the control plane as the person
who clicked (:class:`SlackPerson`): the one authorization rule decides, the audit entry is the
action's own and says ``via Slack`` in its authority. A handler returns the line the alert shows
once done ("re-run from step load by ...: run ...").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from jobplane.contract.notifications import NotificationMessage
from jobplane.contract.statuses import Event, ExecutionStatus
from jobplane.platform.channels.common import is_recovery
from jobplane.platform.control.access import Actor
from jobplane.platform.slack_actions.store import AlertRecord

if TYPE_CHECKING:
    from jobplane.platform.control import ControlPlane


@dataclass(frozen=True)
class SlackPerson(Actor):
    """A person acting from Slack: judged by the same rule as in the portal (their teams, the
    admins), their audit entries' authority saying so (``team billing via Slack``)."""

    def authority(self, team: str) -> str:
        return f"{super().authority(team)} via Slack"


@dataclass(frozen=True)
class Act:
    """One submitted action: on what, by whom, why; ``key`` is its once-only key (the claim's)."""

    plane: ControlPlane
    alert: AlertRecord
    actor: Actor
    reason: str
    key: str


@dataclass(frozen=True)
class ButtonAction:
    name: str
    #: the button's text (plain text, at most 75 characters)
    label: str
    #: the modal's title (at most 24 characters)
    title: str
    #: whether an alert offers it
    offered: Callable[[NotificationMessage], bool]
    perform: Callable[[Act], str]
    #: Slack's button style: "primary", "danger" or None
    style: str | None = None
    #: who may ask for it (Forbidden if not), before the form opens and again when it is sent;
    #: None: the one rule on the alert's job (platform/control/access.py)
    authorize: Callable[[ControlPlane, AlertRecord, Actor], None] | None = None


FAILURES = (Event.FAILED.value, Event.TIMED_OUT.value)
#: platform/map_alert.py's line for a map's failed items, which the notifier adds before delivery
MAP_FAILED = re.compile(r"\b\d+ items? failed in map ")


def _failure(message: NotificationMessage) -> bool:
    return (message.event in FAILURES and message.outcome.status in (ExecutionStatus.FAILED.value, ExecutionStatus.TIMED_OUT.value)
            and not message.summary and bool(message.execution))


def _rerun_failed_step(act: Act) -> str:
    name = act.plane.rerun(act.alert.execution, act.actor, True, None, act.reason, idempotency_key=act.key)
    return f"re-run from its failed step: run {name}"


def _rerun_whole(act: Act) -> str:
    name = act.plane.rerun(act.alert.execution, act.actor, False, None, act.reason, idempotency_key=act.key)
    return f"re-run whole: run {name}"


def _acknowledge(act: Act) -> str:
    act.plane.acknowledge(act.alert.job, act.actor, act.reason)
    return "failure acknowledged: the schedule's fires go ahead"


SNOOZE = timedelta(days=1)


def _snooze(act: Act) -> str:
    until = datetime.now(timezone.utc) + SNOOZE
    act.plane.snooze(act.alert.job, act.actor, until, act.reason)
    return f"alerts snoozed until {until.strftime('%Y-%m-%d %H:%M')} UTC"


def _rerun_items(act: Act) -> str:
    name = act.plane.map_items.rerun_failed_items(act.alert.execution, act.actor, None, act.reason,
                                                  idempotency_key=act.key)
    return f"failed items re-run: run {name}"


def _backfill(act: Act) -> str:
    from jobplane.platform.backfill import Backfills

    if act.alert.window is None:
        from jobplane.platform.control.errors import Invalid

        raise Invalid("this alert names no window of missed fires", {"alert": act.alert.id})
    bf = Backfills(act.plane.runs).create(act.alert.job, act.actor, act.alert.window[0], act.alert.window[1],
                                          reason=act.reason)
    return f"backfill {bf.id} of {len(bf.fires)} missed fire{'s' if len(bf.fires) != 1 else ''}"


def _missed(message: NotificationMessage) -> bool:
    return (message.event == Event.MISSED.value and not is_recovery(message) and not message.summary
            and bool(message.scheduled_time) and bool(message.finished_at))


def _approval(message: NotificationMessage) -> bool:
    """An approval step's request or reminder (jp.approval): someone must decide."""
    return message.event == Event.APPROVAL.value and not message.summary and bool(message.execution)


def _may_decide(plane: ControlPlane, alert: AlertRecord, actor: Actor) -> None:
    """An approval's own rule: its named approvers (people or teams, any team's), else the one
    rule on its job; never the person who started the run under four eyes (platform/approvals.py)."""
    from jobplane.platform.approvals import Approvals

    Approvals(plane).authorized(alert.execution, actor)


def _decide(decision: str) -> Callable[[Act], str]:
    def perform(act: Act) -> str:
        from jobplane.platform.approvals import Approvals

        approval = Approvals(act.plane).decide(act.alert.execution, act.actor, decision, act.reason, via="slack")
        return f"{approval.step} {'approved: the run goes on' if decision == 'approve' else 'rejected: the run ends REJECTED'}"

    return perform


ACTIONS: dict[str, ButtonAction] = {a.name: a for a in (
    ButtonAction("rerun_from_failed_step", "Re-run from failed step", "Re-run from failed step",
                 lambda m: _failure(m) and bool(m.outcome.step), _rerun_failed_step, "primary"),
    ButtonAction("rerun", "Re-run whole", "Re-run whole run", _failure, _rerun_whole),
    ButtonAction("rerun_failed_items", "Re-run failed items", "Re-run failed items",
                 lambda m: _failure(m) and bool(MAP_FAILED.search(m.error or "")), _rerun_items),
    ButtonAction("acknowledge", "Acknowledge", "Acknowledge failure", _failure, _acknowledge),
    ButtonAction("snooze_1d", "Snooze 1 day", "Snooze alerts 1 day", _failure, _snooze),
    ButtonAction("backfill", "Backfill missed fires", "Backfill missed fires", _missed, _backfill, "primary"),
    ButtonAction("approve", "Approve", "Approve", _approval, _decide("approve"), "primary", _may_decide),
    ButtonAction("reject", "Reject", "Reject", _approval, _decide("reject"), "danger", _may_decide),
)}


def offered(message: NotificationMessage) -> tuple[str, ...]:
    """The actions an alert's buttons offer, in :data:`ACTIONS`' order."""
    return tuple(name for name, action in ACTIONS.items() if action.offered(message))


def window_of(message: NotificationMessage) -> tuple[str, str] | None:
    """A MISSED alert's window: its first missed fire to when it was sent."""
    if message.event == Event.MISSED.value and message.scheduled_time and message.finished_at:
        return message.scheduled_time, message.finished_at
    return None
