"""The Slack notifier: a notification message in, a Block Kit message out, routed to the job's
channels, else its team's, else the platform's, and posted to each of them (slack_sdk):

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
import uuid
from typing import Protocol
from functools import cached_property
from urllib.parse import quote
from dataclasses import dataclass, field
from pathlib import Path

from slack_sdk.http_retry.builtin_handlers import (ConnectionErrorRetryHandler, RateLimitErrorRetryHandler,
                                                   ServerErrorRetryHandler)
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.models.blocks import (ActionsBlock, Block, ButtonElement, ContextBlock, HeaderBlock, MarkdownTextObject,
                                     SectionBlock)
from slack_sdk.errors import SlackApiError
from slack_sdk.web import WebClient
from slack_sdk.webhook import WebhookClient

from jobplane.contract import environment
from jobplane.contract.environment import RuntimeEnvironment
from jobplane.contract.notifications import NotificationMessage, Outcome, subscribed
from jobplane.contract.statuses import DEFAULT_EVENTS, Event
from jobplane.contract.clock import seconds_between
from jobplane.platform.logs import StepLogs, error_excerpt
from jobplane.platform.timeline import history, timeline
from jobplane.contract.types import Client, JsonObject

log = logging.getLogger(__name__)

EMOJI = {Event.FAILED.value: ":x:", Event.TIMED_OUT.value: ":hourglass:", Event.ABORTED.value: ":octagonal_sign:",
         Event.SKIPPED.value: ":fast_forward:", Event.RECOVERED.value: ":white_check_mark:", Event.SLOW.value: ":turtle:",
         Event.MISSED.value: ":ghost:", Event.DEADLINE.value: ":alarm_clock:",
         Event.STALLED.value: ":construction:"}


@dataclass(frozen=True)
class Routing:
    team_channels: dict[str, str] = field(default_factory=dict)
    default_channel: str | None = None

    def channels(self, message: NotificationMessage) -> list[str]:
        if message.channels:
            return list(message.channels)
        team = self.team_channels.get(message.team)
        if team:
            return [team]
        return [self.default_channel] if self.default_channel else []


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


def code_span(text: str) -> str:
    return "`" + mrkdwn(text).replace("`", "'") + "`"


def _duration(start: str | None, end: str | None) -> str:
    if not start or not end:
        return "—"
    seconds = int(seconds_between(start, end))
    hours, rest = divmod(max(seconds, 0), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s" if minutes else f"{secs} s"


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


class DeadLetterSink(Protocol):
    """Where an alert Slack refused is kept: the local queue of platform/dead_letters.py under
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
                 bot_token: str | None = None, api_url: str = SLACK_API_URL):
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

    def _post(self, channel: str | None, text: str, rendered: list[Block]) -> tuple[bool, str]:
        """One delivery: (delivered, why not)."""
        try:
            if self.bot_token:
                if not channel:
                    return False, "no channel to post to: set the job's notify channels or a team or default channel"
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
            ok, reason = self._post(channel, text, rendered)
            if ok:
                results.append("sent")
                continue
            if self.dead_letters is None:
                raise RuntimeError(f"Slack delivery failed for {message.execution}: {reason}")
            path = self.dead_letters.keep(message, channel, reason)
            log.error("Slack delivery failed (%s); kept in %s", reason, path)
            results.append("dead-lettered")
        return results


def with_error_excerpt(message: NotificationMessage, sfn: Client, logs: StepLogs) -> NotificationMessage:
    """The state machine cannot read logs: add the failed step's error line from them (the
    stream of its last attempt's task, found in the execution's history). A run whose history
    or log cannot be read is still announced, without the line."""
    if message.error or not message.outcome.step or not message.execution_arn:
        return message
    try:
        rows = timeline(history(sfn, message.execution_arn))
        excerpt = error_excerpt(logs.streams(rows, message.outcome.step, message.execution))
    except Exception:  # noqa: BLE001 - the alert matters more than its detail
        log.exception("no error excerpt for %s", message.execution)
        return message
    return message.model_copy(update={"error": excerpt}) if excerpt else message


def deliver(notifier: SlackNotifier, message: NotificationMessage, sfn: Client, logs: StepLogs,
            ddb: Client | None, table: str | None) -> list[str]:
    """One message of the platform topic, as both homes handle it (the Lambda below, the local
    relay in platform/local/alerts.py): held while its job waits for failures in a row
    (platform/alert_streak.py), else given its error line and failed map items, and delivered."""
    from jobplane.platform.alert_streak import hold_reason
    from jobplane.platform.map_alert import with_failed_items

    why = None
    if message.summary is None and ddb is not None and table:
        try:
            why = hold_reason(message, ddb, table) or _snoozed(message, ddb, table)
        except Exception:  # noqa: BLE001 - a record that cannot be read never costs an alert
            log.exception("could not tell whether %s's alert is held: delivering", message.job)
    if why:
        log.info("%s %s of %s held: %s", message.job, message.event, message.execution, why)
        return [f"held: {why}"]
    message = with_failed_items(with_error_excerpt(message, sfn, logs), ddb, table, logs)
    return notifier.notify(message)


def _snoozed(message: NotificationMessage, ddb: Client, table: str) -> str | None:
    """Keep the alert for its snooze's summary if the job is snoozed now (platform/snooze.py).
    Only an alert the job would be sent is held: one it does not subscribe to is left to
    :meth:`SlackNotifier.notify`, which drops it as ever (held, it would name the summary)."""
    from jobplane.contract.clock import now_iso
    from jobplane.platform.repository import Repository

    if not subscribed(message, tuple(e.value for e in DEFAULT_EVENTS)):
        return None
    kind = f"{message.event} recovered" if is_recovery(message) else str(message.event)
    until = Repository(ddb, table).hold_in_snooze(message.job, kind, message.execution, now_iso())
    return f"snoozed until {until}; kept for the summary at its end" if until else None


def handler(event: JsonObject, context: object = None) -> JsonObject:
    """AWS Lambda entry point for the platform topic's SNS records. A failed delivery raises, so
    Lambda's asynchronous retries and then the function's dead-letter queue keep the message."""
    import boto3

    env = RuntimeEnvironment.from_environment()
    url = env.optional(environment.SLACK_WEBHOOK_URL) or _secret(env.optional(environment.SLACK_WEBHOOK_SECRET_ARN))
    token = env.optional(environment.SLACK_BOT_TOKEN) or _secret(env.optional(environment.SLACK_BOT_TOKEN_SECRET_ARN))
    routing = Routing(env.team_channels, env.optional(environment.DEFAULT_CHANNEL))
    notifier = SlackNotifier(url, routing, env.portal_url, bot_token=token,
                             api_url=env.optional(environment.SLACK_API_URL) or SLACK_API_URL)
    sfn, logs = boto3.client("stepfunctions"), StepLogs(boto3.client("logs"), env.required(environment.LOG_GROUP))
    # a map's failed items (platform/map_alert.py), a job's failures in a row (platform/alert_streak.py)
    table = env.optional(environment.TABLE)
    ddb = boto3.client("dynamodb") if table else None
    results = []
    for record in event.get("Records", []):
        message = NotificationMessage.model_validate_json(record["Sns"]["Message"])
        results.append(deliver(notifier, message, sfn, logs, ddb, table))
    return {"results": results}


def _secret(arn: str | None) -> str | None:
    if not arn:
        return None
    import boto3

    value: str = boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    return value
