"""The notification channels at run time: one module per entry of contract/channels.py
``CHANNELS`` (platform/channels/<name>.py, found by the entry's name, so the registry stays one
tuple), each with a ``build(settings)`` that returns its notifier, and :class:`Notifiers`, which
hands every alert to each of them (the notifier Lambda and ``jobplane dev``: platform/notifier.py).

A channel's notifier renders and delivers the alert to the message's addresses that are its own
(``contract.channels.addresses``), retries as its service asks, and keeps what it still cannot
deliver in the one :class:`~jobplane.platform.channels.common.DeadLetterSink`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from jobplane.contract.channels import CHANNELS, Channel, ChannelSecret
from jobplane.contract.environment import RuntimeEnvironment
from jobplane.contract.notifications import NotificationMessage, subscribed
from jobplane.contract.statuses import DEFAULT_EVENTS
from jobplane.platform.channels.common import DeadLetterSink

if TYPE_CHECKING:
    from jobplane.platform.slack_actions.store import AlertButtons


class ChannelNotifier(Protocol):
    """One channel's delivery: what happened per address ('sent', 'logged', 'dead-lettered')."""

    timeout: int
    retries: int

    def notify(self, message: NotificationMessage) -> list[str]: ...


@dataclass(frozen=True)
class Settings:
    """What every channel's ``build`` is given: the process's environment, the portal's URL (for
    links), the Slack routing of jobplane.toml (a team's channel, the default), where refused
    alerts are kept (None: delivery failure raises, the Lambda's own retries and DLQ keep the
    event) and how a secret's value is read (its ``value_env`` locally, its ARN on AWS)."""

    env: RuntimeEnvironment
    portal_url: str = ""
    team_channels: dict[str, str] | None = None
    default_channel: str | None = None
    dead_letters: DeadLetterSink | None = None
    secret: Callable[[ChannelSecret], str | None] | None = None
    #: where a channel that supports actions records its buttons' ids (Slack's, when its
    #: interactivity is configured: platform/slack_actions/); None: no buttons
    alert_buttons: AlertButtons | None = None

    def value(self, secret: ChannelSecret) -> str | None:
        """The secret's value: the environment's own (``jobplane dev``, tests), else read by ARN."""
        direct = self.env.optional(secret.value_env)
        if direct is not None or self.secret is None:
            return direct
        return self.secret(secret)


class _Module(Protocol):
    def build(self, settings: Settings) -> ChannelNotifier: ...


def module_of(channel: Channel) -> _Module:
    """platform/channels/<name>.py, the channel's runtime half."""
    return cast(_Module, importlib.import_module(f"{__name__}.{channel.name}"))


class Notifiers:
    """Every channel's notifier, in registry order: an alert goes to each (a channel with none of
    the message's addresses and no default of its own does nothing)."""

    def __init__(self, members: list[ChannelNotifier]):
        self.members = members

    @classmethod
    def build(cls, settings: Settings) -> Notifiers:
        """One notifier per channel of the registry; raises ValueError for a setting that is
        not of its channel's shape (a token pasted as a URL)."""
        return cls([module_of(c).build(settings) for c in CHANNELS])

    def notify(self, message: NotificationMessage) -> list[str]:
        if not subscribed(message, tuple(e.value for e in DEFAULT_EVENTS)):
            return ["not subscribed"]
        return [result for member in self.members for result in member.notify(message)]

    # every channel's delivery timeout and retries at once (tests shorten them)
    @property
    def timeout(self) -> int:
        return max(m.timeout for m in self.members)

    @timeout.setter
    def timeout(self, value: int) -> None:
        for m in self.members:
            m.timeout = value

    @property
    def retries(self) -> int:
        return max(m.retries for m in self.members)

    @retries.setter
    def retries(self, value: int) -> None:
        for m in self.members:
            m.retries = value
