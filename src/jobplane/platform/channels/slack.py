"""The Slack channel (contract/channels.py ``SLACK``): a notification message in, a Block Kit
message out, routed to the job's Slack channels, else its team's, else the platform's, and posted
to each of them (slack_sdk):

- with a bot token (``xoxb-``), by ``chat.postMessage`` to each routed channel: one Slack app
  reaches every channel it is invited to (https://docs.slack.dev/reference/methods/chat.postMessage);
- with incoming webhooks, one per channel (a JSON map of channel -> URL, ``"*"`` for any other):
  Slack documents that a webhook posts only to the channel it was made for and cannot be told
  another (https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks), so a
  single URL reaches one channel, and the routed channel is then named in the text.

Delivery never drops a message: slack_sdk retries 5xx answers, rate limits and connection errors
with backoff; a message still undeliverable is kept in a dead-letter store (locally a directory
of JSON files; in the Lambda the invocation fails, so SNS retries and then the function's DLQ
keeps it). Without a webhook URL the message is written to the log instead.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from slack_sdk.http_retry.builtin_handlers import (ConnectionErrorRetryHandler, RateLimitErrorRetryHandler,
                                                   ServerErrorRetryHandler)
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.models.blocks import (ActionsBlock, Block, ButtonElement, ContextBlock, HeaderBlock, MarkdownTextObject,
                                     SectionBlock)
from slack_sdk.errors import SlackApiError
from slack_sdk.web import WebClient
from slack_sdk.webhook import WebhookClient

from jobplane.contract import environment
from jobplane.contract.channels import SLACK, addresses
from jobplane.contract.notifications import NotificationMessage, subscribed
from jobplane.contract.statuses import DEFAULT_EVENTS, Event
from jobplane.platform.channels.common import (DeadLetterSink, _duration, alert_link, is_recovery,
                                               skip_detail)

if TYPE_CHECKING:
    from jobplane.platform.channels import Settings
    from jobplane.platform.slack_actions.store import AlertButtons

log = logging.getLogger("jobplane.platform.notifier")  # the name it logged under before the registry

EMOJI = {Event.FAILED.value: ":x:", Event.TIMED_OUT.value: ":hourglass:", Event.ABORTED.value: ":octagonal_sign:",
         Event.SKIPPED.value: ":fast_forward:", Event.RECOVERED.value: ":white_check_mark:", Event.SLOW.value: ":turtle:",
         Event.MISSED.value: ":ghost:", Event.DEADLINE.value: ":alarm_clock:",
         Event.STALLED.value: ":construction:", Event.EXPECTATION.value: ":mag:"}


@dataclass(frozen=True)
class Routing:
    team_channels: dict[str, str] = field(default_factory=dict)
    default_channel: str | None = None

    def channels(self, message: NotificationMessage) -> list[str]:
        mine = addresses(SLACK, message.channels)  # a webhook's address is not a Slack channel
        if mine:
            return mine
        team = self.team_channels.get(message.team)
        if team:
            return [team]
        return [self.default_channel] if self.default_channel else []


def headline_of(message: NotificationMessage) -> str:
    """The alert's title: the event, or for an episode's closing note what recovered (the breach's
    own title twice made a channel show two identical headers per episode)."""
    event = message.event.replace("_", " ").lower()
    if is_recovery(message):
        what = "missed fires" if message.event == Event.MISSED.value else "deadline"
        return f"{EMOJI[Event.RECOVERED.value]} {message.job}: {what} recovered"
    if message.summary:  # what a snooze held (platform/snooze.py)
        return f":zzz: {message.job}: alerts held while snoozed"
    if message.reminder:  # the same failure announced again (platform/renotify.py)
        return f"{EMOJI.get(message.event, '')} {message.job}: still {event}, {message.reminder}".strip()
    return f"{EMOJI.get(message.event, '')} {message.job}: {event}".strip()


def detail_label(message: NotificationMessage) -> str:
    """What the alert's text is: the failure's error, or what a recovery note says happened."""
    if message.summary:
        return "Held while snoozed"
    return "Recovered" if is_recovery(message) else "Error"


def mrkdwn(text: object) -> str:
    """Text for Slack's mrkdwn, shown as written: ``&``, ``<`` and ``>`` escaped as Slack asks
    (docs.slack.dev "Formatting text for app surfaces": escaping), so an error, a runbook or a
    run's params cannot make ``<!channel>`` or a disguised ``<https://…|link>``."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code_block(text: str) -> str:
    """A mrkdwn code block whose content cannot close it: every backtick run is broken with a
    zero-width space, so a ``` inside cannot end the block and start live formatting."""
    return "```" + mrkdwn(text).replace("`", "`\u200b") + "```"


def blocks(message: NotificationMessage, portal_url: str) -> list[Block]:
    """The Block Kit message: what failed, where, when, what to do, and the link to act.
    Everything that comes from a definition or a run goes through :func:`mrkdwn`."""
    o = message.outcome
    headline = headline_of(message)
    fields = [MarkdownTextObject(text=f"*Job*\n{mrkdwn(message.job)}"), MarkdownTextObject(text=f"*Team*\n{mrkdwn(message.team)}"),
              MarkdownTextObject(text=f"*Status*\n{mrkdwn(o.status)}"),
              MarkdownTextObject(text=f"*Failed step*\n{mrkdwn(o.step or '—')}"),
              MarkdownTextObject(text=f"*Scheduled time*\n{mrkdwn(message.scheduled_time or '—')}"),
              MarkdownTextObject(text=f"*Started*\n{mrkdwn(message.started_at or '—')}"),
              MarkdownTextObject(text=f"*Duration*\n{_duration(message.started_at, message.finished_at)}")]
    out: list[Block] = [HeaderBlock(text=headline[:150]), SectionBlock(fields=fields)]  # header: plain_text
    detail = message.summary or message.error or skip_detail(o)
    if detail:
        out.append(SectionBlock(text=MarkdownTextObject(text=f"*{detail_label(message)}*\n{code_block(detail[:2500])}")))
    if message.runbook:
        rb = message.runbook
        lines = [f"*Impact:* {mrkdwn(rb.get('impact', ''))}"]
        if rb.get("workaround"):
            lines.append(f"*Workaround:* {mrkdwn(rb['workaround'])}")
        lines.append(f"*Recovery:* {mrkdwn(rb.get('recovery', ''))}")
        out.append(SectionBlock(text=MarkdownTextObject(text="\n".join(lines)[:3000])))
    link = alert_link(portal_url, message)
    if link:
        out.append(ActionsBlock(elements=[ButtonElement(text=link[0], url=link[1], action_id="open_execution")]))
    out.append(ContextBlock(elements=[MarkdownTextObject(
        text=f"{mrkdwn(message.trigger or 'unknown')} run {code_span(message.execution)} · requested by "
             f"{mrkdwn(message.requested_by or '—')}")]))
    return out


def code_span(text: str) -> str:
    return "`" + mrkdwn(text).replace("`", "'") + "`"


def console_text(message: NotificationMessage, channel: str | None, portal_url: str) -> str:
    """The alert as a few readable lines, for a terminal without Slack."""
    o = message.outcome
    event = f"{message.event} recovered" if is_recovery(message) else message.event
    if message.reminder:
        event = f"still {event}, {message.reminder}"
    if message.summary:
        event = "alerts held while snoozed"
    lines = [f"[slack {channel or '(no channel)'}] {message.job} ({message.team}): {event}"
             + (f" at step {o.step}" if o.step else ""),
             f"  scheduled {message.scheduled_time or '—'}, took {_duration(message.started_at, message.finished_at)}"]
    detail = message.summary or message.error or skip_detail(o)
    if detail:
        lines.append(f"  {detail_label(message).lower()}: {detail[:500]}")
    if message.runbook and not is_recovery(message):
        lines.append(f"  recovery: {message.runbook.get('recovery', '')}")
    link = alert_link(portal_url, message)
    if link:
        lines.append(f"  {link[1]}")
    return "\n".join(lines)


class _RedactWebhookUrls(logging.Filter):
    """Blanks every webhook URL this process posts to out of the webhook client's log records."""

    urls: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if any(url in text for url in self.urls):
            for url in self.urls:
                text = text.replace(url, "[Slack webhook URL]")
            record.msg, record.args = text, ()
        return True


_WEBHOOK_LOG = logging.getLogger("jobplane.notifier.webhook")
_WEBHOOK_LOG.addFilter(_RedactWebhookUrls())


def _webhook_logger(url: str) -> logging.Logger:
    _RedactWebhookUrls.urls.add(url)
    return _WEBHOOK_LOG


SLACK_API_URL = "https://slack.com/api/"
ANY_CHANNEL = "*"


def webhooks_of(setting: str | None) -> dict[str, str]:
    """channel -> incoming-webhook URL, from one URL (the channel it was made for: ``*``) or a
    JSON object of channel -> URL; raises ValueError for anything else (a token pasted in the
    wrong place must not be sent somewhere as a URL)."""
    if not setting:
        return {}
    text = setting.strip()
    if text.startswith("{"):
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError:
            mapping = None
        if not (isinstance(mapping, dict) and mapping and all(
                isinstance(k, str) and isinstance(v, str) and v.startswith(("https://", "http://"))
                for k, v in mapping.items())):
            raise ValueError("the Slack webhook setting is a JSON object of channel -> webhook URL (https://...)")
        return mapping
    if not text.startswith(("https://", "http://")):
        raise ValueError("the Slack webhook setting is an https:// URL or a JSON object of channel -> URL")
    return {ANY_CHANNEL: text}


class SlackNotifier:
    def __init__(self, webhook_url: str | None, routing: Routing, portal_url: str = "",
                 dead_letters: DeadLetterSink | None = None, timeout: int = 5, retries: int = 3, *,
                 bot_token: str | None = None, api_url: str = SLACK_API_URL, buttons: AlertButtons | None = None):
        self.webhooks = webhooks_of(webhook_url)
        if bot_token is not None and not bot_token.startswith("xoxb-"):
            raise ValueError("the Slack bot token is a bot user token, xoxb-...")
        self.bot_token = bot_token
        self.api_url = api_url
        self.routing = routing
        self.portal_url = portal_url
        self.dead_letters = dead_letters
        self.timeout = timeout
        self.retries = retries
        #: the buttons' store (issue 68 part 2): set when Slack interactivity is configured, and
        #: used only with the bot token (chat.update needs the message the app itself posted)
        self.buttons = buttons

    @property
    def delivers(self) -> bool:
        return bool(self.bot_token or self.webhooks)

    def _retries(self) -> list[RetryHandler]:
        return [ServerErrorRetryHandler(max_retry_count=self.retries),
                ConnectionErrorRetryHandler(max_retry_count=self.retries),
                RateLimitErrorRetryHandler(max_retry_count=self.retries)]

    def client(self, url: str) -> WebhookClient:
        # slack_sdk logs the webhook URL (a credential: whoever has it can post) when it retries
        # or debugs: its own logger gets a filter that blanks the URL out.
        return WebhookClient(url, timeout=self.timeout, logger=_webhook_logger(url), retry_handlers=self._retries())

    @cached_property
    def web_client(self) -> WebClient:
        """One client for every post (slack_sdk's request log shows the token as "(redacted)")."""
        return WebClient(token=self.bot_token, base_url=self.api_url, timeout=self.timeout,
                         retry_handlers=self._retries())

    def _post(self, channel: str | None, text: str, rendered: list[Block],
              message: NotificationMessage | None = None) -> tuple[bool, str]:
        """One delivery: (delivered, why not). With ``message`` and the buttons' store, the
        alert's action buttons (platform/slack_actions/) are added to this post."""
        try:
            if self.bot_token:
                if not channel:
                    return False, "no channel to post to: set the job's notify channels or a team or default channel"
                if message is not None and self.buttons is not None:
                    return self._post_with_buttons(channel, text, rendered, message)
                self.web_client.chat_postMessage(channel=channel, text=text, blocks=rendered)
                return True, ""
            url = self.webhooks.get(channel or "") or self.webhooks.get(ANY_CHANNEL)
            if url is None:
                return False, f"no incoming webhook for {channel}: add it to the webhook setting's channels"
            # a webhook made for another channel posts there: say where the alert was routed
            body_text = f"{channel}: {text}" if channel and channel not in self.webhooks else text
            response = self.client(url).send(text=body_text, blocks=rendered)
            return response.status_code == 200, f"HTTP {response.status_code}: {response.body}"
        except SlackApiError as e:  # chat.postMessage answered ok=false (channel_not_found, not_in_channel, ...)
            return False, f"Slack API error: {e.response.get('error')}"
        except Exception as e:  # timeouts and connection errors after the retries
            return False, f"{type(e).__name__}: {e}"

    def _post_with_buttons(self, channel: str, text: str, rendered: list[Block],
                           message: NotificationMessage) -> tuple[bool, str]:
        """The post with its buttons: the alert's random id recorded first (what the buttons
        carry), then the post, then where it landed (what a click's action updates)."""
        from jobplane.platform.slack_actions.registry import offered, window_of
        from jobplane.platform.slack_actions.render import with_buttons

        assert self.buttons is not None
        actions = offered(message)
        base = [b.to_dict() for b in rendered]
        if not actions:
            self.web_client.chat_postMessage(channel=channel, text=text, blocks=rendered)
            return True, ""
        try:
            alert = self.buttons.mint(message.job, message.team, message.execution, str(message.event), actions,
                                      window_of(message), base)
        except Exception:  # noqa: BLE001 - the buttons' record cannot be written: the alert still goes, without them
            log.exception("no buttons on %s's alert of %s", message.job, message.execution)
            self.web_client.chat_postMessage(channel=channel, text=text, blocks=rendered)
            return True, ""
        answer = self.web_client.chat_postMessage(channel=channel, text=text, blocks=with_buttons(base, alert, actions))
        self.buttons.posted(alert, str(answer.get("channel") or channel), str(answer.get("ts") or ""))
        return True, ""

    def notify(self, message: NotificationMessage) -> list[str]:
        """Deliver to every routed channel; returns what happened per channel ('sent', 'logged',
        'dead-lettered'), or ['not subscribed'] when the job does not want this event.
        Raises only when delivery fails and there is no dead-letter store."""
        if not subscribed(message, tuple(e.value for e in DEFAULT_EVENTS)):
            return ["not subscribed"]
        rendered = blocks(message, self.portal_url)
        text = mrkdwn(f"{message.job} {'still ' if message.reminder else ''}{message.event}"
                      f"{' recovered' if is_recovery(message) else ''}: "
                      f"{message.outcome.step or ''}".strip())
        results = []
        routed: list[str | None] = list(self.routing.channels(message))
        for channel in routed or [None]:
            if not self.delivers:
                log.warning("%s", console_text(message, channel, self.portal_url))
                results.append("logged")
                continue
            ok, reason = self._post(channel, text, rendered, message)
            if ok:
                results.append("sent")
                continue
            if self.dead_letters is None:
                raise RuntimeError(f"Slack delivery failed for {message.execution}: {reason}")
            path = self.dead_letters.keep(message, channel, reason)
            log.error("Slack delivery failed (%s); kept in %s", reason, path)
            results.append("dead-lettered")
        return results


def build(settings: Settings) -> SlackNotifier:
    """The Slack notifier of contract/channels.py ``SLACK``'s settings: its incoming webhook(s)
    and bot token (a secret's value, or under ``jobplane dev`` the variable itself)."""
    webhook, token = SLACK.secrets
    return SlackNotifier(settings.value(webhook), Routing(dict(settings.team_channels or {}), settings.default_channel),
                         settings.portal_url, settings.dead_letters, bot_token=settings.value(token),
                         api_url=settings.env.optional(environment.SLACK_API_URL) or SLACK_API_URL,
                         buttons=settings.alert_buttons)
