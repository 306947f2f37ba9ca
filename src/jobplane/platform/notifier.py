"""The notifier: one message of the platform topic in, delivered to every notification channel
of the registry (contract/channels.py ``CHANNELS``; each channel's rendering and delivery in
platform/channels/<name>.py: Slack's Block Kit message, the signed webhook's JSON).

What it does before any channel sees the alert is the same for all and decided here, in both
homes (the notifier Lambda below, ``jobplane dev``'s relay in platform/local/alerts.py): held
while its job waits for failures in a row or is snoozed, else given the failed step's error line
and a map's failed items. Delivery never drops a message: each channel retries as its service
asks; a message still undeliverable is kept in a dead-letter store (locally the events
dead-letter queue or a directory of JSON files; in the Lambda the invocation fails, so Lambda's
asynchronous retries and then the function's DLQ keep it). A channel not configured writes the
alert to the log instead.

The Slack names tests and ``jobplane dev`` imported from here before the registry are re-exported.
"""

from __future__ import annotations

import logging

from jobplane.contract import environment
from jobplane.contract.environment import RuntimeEnvironment
from jobplane.contract.notifications import NotificationMessage, subscribed
from jobplane.contract.statuses import DEFAULT_EVENTS
from jobplane.platform.channels import ChannelNotifier, Notifiers, Settings
from jobplane.platform.channels.common import DeadLetterSink as DeadLetterSink
from jobplane.platform.channels.common import DeadLetterStore as DeadLetterStore
from jobplane.platform.channels.common import alert_link as alert_link
from jobplane.platform.channels.common import execution_link as execution_link
from jobplane.platform.channels.common import is_recovery
from jobplane.platform.channels.slack import SLACK_API_URL as SLACK_API_URL
from jobplane.platform.channels.slack import Routing as Routing
from jobplane.platform.channels.slack import SlackNotifier as SlackNotifier
from jobplane.platform.channels.slack import blocks as blocks
from jobplane.platform.channels.slack import console_text as console_text
from jobplane.platform.channels.slack import mrkdwn as mrkdwn
from jobplane.platform.channels.slack import webhooks_of as webhooks_of
from jobplane.platform.logs import StepLogs, error_excerpt
from jobplane.platform.timeline import history, timeline
from jobplane.contract.types import Client, JsonObject

log = logging.getLogger(__name__)


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


def deliver(notifier: ChannelNotifier | Notifiers, message: NotificationMessage, sfn: Client, logs: StepLogs,
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
    :meth:`Notifiers.notify`, which drops it as ever (held, it would name the summary)."""
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
    # a map's failed items (platform/map_alert.py), a job's failures in a row (platform/alert_streak.py)
    table = env.optional(environment.TABLE)
    ddb = boto3.client("dynamodb") if table else None
    buttons = None
    if env.optional(environment.SLACK_INTERACTIVE) == "1" and ddb is not None and table:  # Slack buttons: slack_actions/
        from jobplane.platform.slack_actions.store import AlertButtons

        buttons = AlertButtons(ddb, table)
    notifier = Notifiers.build(Settings(env, env.portal_url, env.team_channels, env.optional(environment.DEFAULT_CHANNEL),
                                        secret=lambda s: _secret(env.optional(s.arn_env)), alert_buttons=buttons))
    sfn, logs = boto3.client("stepfunctions"), StepLogs(boto3.client("logs"), env.required(environment.LOG_GROUP))
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
