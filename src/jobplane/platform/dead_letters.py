"""What the platform could not deliver, kept in the base module's ``<prefix>-events-dlq`` queue,
and how an operator sees and re-sends it (``jobplane dead-letters``, ``jobplane status``).

An alert Slack refused (a revoked token, a channel the app left, Slack down for longer than the
retries) is never dropped: on AWS the notifier Lambda raises, Lambda retries the invocation twice
and then puts the event, unchanged, in the function's dead-letter queue with the attributes
``RequestID``, ``ErrorCode`` and ``ErrorMessage`` (the first 1 KB of the error;
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html#invocation-dlq);
an SNS delivery to the function that fails lands there as the SNS message itself (the
subscription's redrive policy); a status event the reconciler never took, as the EventBridge
event with ``ERROR_CODE``/``ERROR_MESSAGE``
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html). Under ``jobplane
dev`` the local notifier puts an undeliverable alert in the local queue of that name, in the
Lambda event's shape, so both homes are read and re-sent by the same calls.

Nothing drains the queue on its own: a message stays (14 days, terraform/platform/
notifications.tf) until an operator has fixed the cause and re-sends it (``jobplane dead-letters
--resend``), because re-sending into a cause that persists would only move the alert in a
circle. A status event needs no re-send: the periodic check records a run that ended holding
its claim and starts its ``after`` runs, as the reconciler would have (docs/operate.md).

Every body here is untrusted (any principal the queue policy admits could have sent it): it is
parsed, never evaluated, and shown through :func:`inert`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal

from pydantic import ValidationError

from jobplane.contract.channels import channel_of
from jobplane.contract.arns import ExecutionArn
from jobplane.contract.notifications import NotificationMessage
from jobplane.contract.types import Client, JsonObject

log = logging.getLogger(__name__)

QUEUE_SUFFIX = "events-dlq"
#: What one ReceiveMessage returns at most (SQS's limit).
BATCH = 10
#: How long a listed message stays hidden from the next receive of the same listing.
PEEK_SECONDS = 30
#: How long a message being re-sent stays hidden (a publish and a delete take far less).
RESEND_SECONDS = 120

Kind = Literal["alert", "status event", "unknown"]


def queue_name(prefix: str) -> str:
    return f"{prefix}-{QUEUE_SUFFIX}"


def inert(text: object, limit: int = 300) -> str:
    """A value from a message, printable anywhere: one line, ASCII escapes, bounded."""
    return ascii(str(text))[1:-1][:limit]


@dataclass(frozen=True)
class DeadLetter:
    """One message of the queue, read."""

    message_id: str
    receipt: str
    kind: Kind
    sent_at: datetime | None
    error: str  # why it was dead-lettered, as the service that put it there said
    alert: NotificationMessage | None = None  # an alert's message, to re-send
    execution: str | None = None  # the run it concerns, where it names one
    summary: str = ""

    def line(self) -> str:
        when = self.sent_at.strftime("%Y-%m-%d %H:%M UTC") if self.sent_at else "?"
        return f"{when}  {self.kind:<12} {self.summary}" + (f"  ({self.error})" if self.error else "")


def _alert(text: object) -> NotificationMessage | None:
    if not isinstance(text, str):
        return None
    try:
        return NotificationMessage.model_validate_json(text)
    except ValidationError:
        return None


def read(message: JsonObject) -> DeadLetter:
    """A received SQS message as a :class:`DeadLetter`, whichever service put it there."""
    attributes = message.get("MessageAttributes") or {}
    assert isinstance(attributes, dict)

    def attribute(*names: str) -> str:
        for name in names:
            value = attributes.get(name)
            if isinstance(value, dict) and value.get("StringValue"):
                return str(value["StringValue"])
        return ""

    code, why = attribute("ErrorCode", "ERROR_CODE"), attribute("ErrorMessage", "ERROR_MESSAGE")
    error = inert(" ".join(p for p in (code, why) if p), 200)
    sent = (message.get("Attributes") or {}).get("SentTimestamp")
    sent_at = datetime.fromtimestamp(int(sent) / 1000, timezone.utc) if isinstance(sent, str) and sent.isdigit() else None
    base = dict(message_id=str(message.get("MessageId", "")), receipt=str(message.get("ReceiptHandle", "")),
                sent_at=sent_at, error=error)
    try:
        body = json.loads(str(message.get("Body", "")))
    except ValueError:
        body = None
    text: object = None
    if isinstance(body, dict) and isinstance(body.get("Records"), list) and body["Records"]:
        first = body["Records"][0]  # the notifier's event: SNS invokes it with one record
        sns = first.get("Sns") if isinstance(first, dict) else None
        text = sns.get("Message") if isinstance(sns, dict) else None
    elif isinstance(body, dict) and body.get("Type") == "Notification":
        text = body.get("Message")  # an SNS delivery that failed, as SNS keeps it
    alert = _alert(text)
    if alert is not None:
        return DeadLetter(**base, kind="alert", alert=alert, execution=alert.execution,  # type: ignore[arg-type]
                          summary=f"{alert.event} alert of {inert(alert.job, 80)} ({inert(alert.execution, 80)})")
    if isinstance(body, dict) and body.get("detail-type") == "Step Functions Execution Status Change":
        detail = body.get("detail") if isinstance(body.get("detail"), dict) else {}
        try:
            execution: str | None = ExecutionArn.parse(str(detail.get("executionArn", ""))).name  # type: ignore[union-attr]
        except ValueError:
            execution = None
        return DeadLetter(**base, kind="status event", execution=execution,  # type: ignore[arg-type]
                          summary=f"{inert(detail.get('status'), 20)} of {inert(execution, 80)} "  # type: ignore[union-attr]
                                  "(the periodic check records it)")
    return DeadLetter(**base, kind="unknown", summary=inert(message.get("Body", ""), 120))  # type: ignore[arg-type]


class EventsDeadLetters:
    """The ``<prefix>-events-dlq`` queue, over the same SQS calls on AWS and locally."""

    def __init__(self, sqs: Client, prefix: str):
        self.sqs = sqs
        self.name = queue_name(prefix)
        self._url: str | None = None

    def url(self) -> str | None:
        """The queue's URL; None where there is none (a platform deployed before it existed)."""
        if self._url is None:
            try:
                self._url = str(self.sqs.get_queue_url(QueueName=self.name)["QueueUrl"])
            except self.sqs.exceptions.QueueDoesNotExist:
                return None
        return self._url

    def count(self) -> int | None:
        """About how many messages it holds (SQS's approximate counts, visible and in flight)."""
        url = self.url()
        if url is None:
            return None
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        return int(attrs.get("ApproximateNumberOfMessages", 0)) + int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0))

    def _receive(self, hide: int) -> list[JsonObject]:
        url = self.url()
        if url is None:
            return []
        out = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=BATCH, VisibilityTimeout=hide,
                                       AttributeNames=["SentTimestamp"], MessageAttributeNames=["All"])
        return list(out.get("Messages", []))

    def _show_again(self, letters: list[DeadLetter]) -> None:
        url = self.url()
        for i in range(0, len(letters), BATCH):  # ChangeMessageVisibilityBatch takes 10 a call
            entries = [{"Id": str(n), "ReceiptHandle": d.receipt, "VisibilityTimeout": 0}
                       for n, d in enumerate(letters[i:i + BATCH])]
            if entries and url:
                self.sqs.change_message_visibility_batch(QueueUrl=url, Entries=entries)

    def _collect(self, hide: int, limit: int) -> list[tuple[DeadLetter, JsonObject]]:
        """Up to ``limit`` messages received and hidden for ``hide`` seconds, each once."""
        seen: dict[str, tuple[DeadLetter, JsonObject]] = {}
        while len(seen) < limit:
            batch = [(read(m), m) for m in self._receive(hide)]
            new = [(d, m) for d, m in batch if d.message_id not in seen]
            seen.update((d.message_id, (d, m)) for d, m in new)
            if not new:
                break
        return list(seen.values())

    def peek(self, limit: int = 100) -> list[DeadLetter]:
        """Up to ``limit`` messages, oldest first, left in the queue as they were (each is hidden
        while the listing goes on, so one is not listed twice, then shown again)."""
        letters = [d for d, _ in self._collect(PEEK_SECONDS, limit)]
        self._show_again(letters)
        return sorted(letters, key=lambda d: d.sent_at or datetime.min.replace(tzinfo=timezone.utc))[:limit]

    def export(self, limit: int = 10_000) -> list[JsonObject]:
        """Every message as it can be sent again (body and message attributes), left in the
        queue: what ``jobplane dev`` saves with its state, since moto's queues live in memory."""
        collected = self._collect(PEEK_SECONDS, limit)
        self._show_again([d for d, _ in collected])
        return [{"Body": m.get("Body", ""), "MessageAttributes": m.get("MessageAttributes") or {}}
                for _, m in collected]

    def restore(self, messages: list[JsonObject]) -> int:
        """Put saved messages (:meth:`export`) into the queue again, after a restart."""
        url = self.url() or str(self.sqs.create_queue(QueueName=self.name)["QueueUrl"])
        self._url = url
        for m in messages:
            attributes = {k: {"DataType": v.get("DataType", "String"), "StringValue": v["StringValue"]}
                          for k, v in (m.get("MessageAttributes") or {}).items()
                          if isinstance(v, dict) and "StringValue" in v}
            self.sqs.send_message(QueueUrl=url, MessageBody=str(m.get("Body", "")), MessageAttributes=attributes)
        return len(messages)

    def take(self, limit: int) -> list[DeadLetter]:
        """Up to ``limit`` messages hidden for a re-send (:data:`RESEND_SECONDS`); the caller
        deletes each it re-sent and :meth:`release` s the rest."""
        return [d for d, _ in self._collect(RESEND_SECONDS, limit)]

    def delete(self, letter: DeadLetter) -> None:
        url = self.url()
        if url:
            self.sqs.delete_message(QueueUrl=url, ReceiptHandle=letter.receipt)

    def release(self, letters: list[DeadLetter]) -> None:
        self._show_again(letters)

    # -- the local notifier's sink (notifier.DeadLetterSink) ------------------------------------
    def keep(self, message: NotificationMessage, channel: str | None, reason: str) -> str:
        """An alert a channel (Slack, a webhook) refused under ``jobplane dev``, kept as the notifier Lambda's failed
        event is on AWS: the SNS record it was invoked with, and why."""
        url = self.url()
        if url is None:
            url = self._url = str(self.sqs.create_queue(QueueName=self.name)["QueueUrl"])
        event = {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0",
                              "Sns": {"Type": "Notification", "Message": message.model_dump_json()}}]}
        label = channel_of(channel).label if channel else "Slack"  # each channel's, contract/channels.py
        why = f"{label} delivery to {channel or 'the default channel'} failed: {reason}"[:1024]
        self.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(event), MessageAttributes={
            "ErrorMessage": {"DataType": "String", "StringValue": why}})
        return self.name
