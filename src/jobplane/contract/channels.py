"""Notification channels: where an alert can go, as one registry (issue 68 part 1).

A channel is one class here (what the compiler and the platform both need to know of it) and one
module in ``platform/channels/<name>.py`` (how it renders and delivers). Everything else derives
from :data:`CHANNELS`:

- the DSL: each channel's ``jp.<helper>`` (jobs/lib/jobplane.libsonnet) writes addresses into a
  job's ``notify.channels``; the model checks each address with its channel's
  :meth:`Channel.address_problem` (compiler/model.py);
- the deployment: each :class:`ChannelSecret` is a ``[deploy]`` key of jobplane.toml
  (contract/deploy_settings.py), a variable of the compiled base root (compiler/terraform.py)
  and of the base module (terraform/platform/variables.tf, its IAM statement and the notifier's
  environment in functions.tf: tests/test_channels.py holds those to this table), and an
  environment variable of the notifier Lambda (contract/environment.py spells the names, as it
  does every variable's, and its ``FUNCTIONS`` gives the notifier each: tests/test_channels.py);
- the runtime: ``platform/channels`` builds one notifier per entry, by its name.

An address names its channel by a prefix (``webhook:oncall``); an address without a registered
prefix is Slack's (``#billing-alerts``): every definition written before the registry keeps its
meaning and its compiled output.

``supports_actions``: whether the channel can carry buttons that act (issue 68 part 2: re-run,
acknowledge, pause from the alert; part 3: approval prompts). Slack can (interactivity); a signed
webhook is one-way.

Standard library only: the notifier Lambda reads this on its cold path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jobplane.contract.environment import (SLACK_BOT_TOKEN, SLACK_BOT_TOKEN_SECRET_ARN, SLACK_WEBHOOK_SECRET_ARN,
                                           SLACK_WEBHOOK_URL, WEBHOOK_SECRET_ARN, WEBHOOKS)


@dataclass(frozen=True)
class ChannelSecret:
    """One credential a channel delivers with, kept in Secrets Manager and never in a job file.

    ``key``: the ``[deploy]`` key of jobplane.toml and the Terraform variable (base root and base
    module) holding the secret's ARN; ``arn_env``: the notifier's environment variable the base
    module sets to that ARN; ``value_env``: the variable holding the value itself, for
    ``jobplane dev`` and tests (never set on AWS); ``holding``: what the secret holds, in words;
    ``sid``: the notifier role's IAM statement that may read it; ``always_declared``: the base
    root declares the variable even when jobplane.toml does not set it (Slack's, declared before
    the registry existed: a deployment passing ``-var`` keeps working); a newer channel's is
    declared only when set, so the compiled output of a deployment not using it is unchanged."""

    key: str
    arn_env: str
    value_env: str
    holding: str
    description: str
    sid: str
    always_declared: bool = False


class Channel:
    """A notification channel as the compiler and the platform both see it."""

    #: the registry name, and its runtime module platform/channels/<name>.py
    name: str = ""
    #: the DSL helper: ``jp.<helper>(...)``
    helper: str = ""
    #: the channel's name in words ("Slack delivery to #x failed")
    label: str = ""
    #: an address of this channel starts with this (``webhook:``); "" for the default channel
    prefix: str = ""
    #: what an address is, for error messages
    address_words: str = ""
    secrets: tuple[ChannelSecret, ...] = ()
    #: whether the channel can carry buttons that act (issue 68 parts 2-3)
    supports_actions: bool = False

    def owns(self, address: str) -> bool:
        return bool(self.prefix) and address.startswith(self.prefix)

    def valid(self, address: str) -> bool:
        """Whether ``address`` (one this channel :meth:`owns`) is well formed: its address check."""
        raise NotImplementedError


#: A Slack channel as a job's notify names it (Slack's rule: lower-case letters, digits, '-', '_',
#: '.'; at most 80 characters).
SLACK_CHANNEL_RE = re.compile(r"^#[a-z0-9][a-z0-9._-]{0,79}$")



class Slack(Channel):
    """Slack: Block Kit messages by a bot token's chat.postMessage or by incoming webhooks
    (platform/channels/slack.py). The default channel: an address without a prefix is Slack's,
    and a job naming no Slack channel alerts its team's (or the platform's default) channel."""

    name = "slack"
    helper = "slack"
    label = "Slack"
    prefix = "#"
    address_words = "a Slack channel name such as '#billing-alerts'"
    secrets = (
        ChannelSecret("slack_webhook_secret_arn", SLACK_WEBHOOK_SECRET_ARN, SLACK_WEBHOOK_URL,
                      "the Slack webhook URL(s)",
                      "Secrets Manager ARN of the Slack incoming webhook URL, or of a JSON object of channel -> "
                      "webhook URL.", "SlackWebhook", always_declared=True),
        ChannelSecret("slack_bot_token_secret_arn", SLACK_BOT_TOKEN_SECRET_ARN, SLACK_BOT_TOKEN,
                      "the Slack app's bot token",
                      "Secrets Manager ARN of a Slack app's bot token (xoxb-): chat.postMessage to each routed "
                      "channel.", "SlackBotToken", always_declared=True),
    )
    supports_actions = True

    def owns(self, address: str) -> bool:
        """Slack's are the addresses no other channel claims (the team's channel may be an id)."""
        return not any(c.owns(address) for c in CHANNELS if c is not self)

    def valid(self, address: str) -> bool:
        return bool(SLACK_CHANNEL_RE.fullmatch(address))


#: A webhook target's name: a key of the webhook secret's JSON object.
WEBHOOK_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class Webhook(Channel):
    """A signed generic webhook (platform/channels/webhook.py): the notification as versioned
    JSON, POSTed with an HMAC-SHA256 signature, to a target named in the deployment's webhook
    secret (its URL and signing secret are never in a job file). ``jp.webhook('oncall')`` is
    the address ``webhook:oncall``."""

    name = "webhook"
    helper = "webhook"
    label = "Webhook"
    prefix = "webhook:"
    address_words = ("a webhook target such as 'webhook:oncall' (jp.webhook('oncall'): a name of the deployment's "
                     "webhook secret, lower-case letters, digits, '.', '_', '-')")
    secrets = (
        ChannelSecret("webhook_secret_arn", WEBHOOK_SECRET_ARN, WEBHOOKS,
                      "the webhook targets (a JSON object of name -> {url, signing_secret})",
                      "Secrets Manager ARN of the webhook targets: a JSON object of name -> {\"url\": \"https://...\", "
                      "\"signing_secret\": \"...\"} (docs/notifications.md).", "WebhookTargets"),
    )
    supports_actions = False

    def valid(self, address: str) -> bool:
        return self.owns(address) and bool(WEBHOOK_NAME_RE.fullmatch(address[len(self.prefix):]))


SLACK = Slack()
WEBHOOK = Webhook()

#: THE registry: every notification channel, in the order alerts are delivered and settings listed.
CHANNELS: tuple[Channel, ...] = (SLACK, WEBHOOK)


def channel_of(address: str) -> Channel:
    """The channel an address belongs to (Slack's when no other claims it)."""
    return next(c for c in CHANNELS if c.owns(address))


def address_problem(address: str) -> str | None:
    """What a job's notify address should be when its channel's check refuses it, or None."""
    channel = channel_of(address)
    return None if channel.valid(address) else channel.address_words


def addresses(channel: Channel, all_addresses: list[str] | tuple[str, ...]) -> list[str]:
    """The addresses of one channel among a message's."""
    return [a for a in all_addresses if channel.owns(a)]


def secrets() -> tuple[ChannelSecret, ...]:
    """Every channel's secrets, in registry order."""
    return tuple(s for c in CHANNELS for s in c.secrets)
