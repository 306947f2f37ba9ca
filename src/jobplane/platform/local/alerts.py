"""Delivers the platform topic's messages to the notification channels locally, as the notifier Lambda's
SNS subscription does in production.

The topic fans out to an SQS queue (raw delivery) and one thread drains it: a message is deleted
only after the notifier has sent, logged or dead-lettered it, so a crash in between re-delivers
it rather than losing it.
"""

from __future__ import annotations

import json
import logging
import threading

from jobplane.contract.notifications import NotificationMessage
from jobplane.platform.logs import StepLogs
from jobplane.platform.channels import ChannelNotifier, Notifiers
from jobplane.platform.notifier import deliver
from jobplane.contract.types import Client

log = logging.getLogger(__name__)


class AlertFeed:
    def __init__(self, sns: Client, sqs: Client, topic_arn: str, queue_name: str, notifier: ChannelNotifier | Notifiers,
                 sfn: Client, logs: StepLogs, ddb: Client | None = None, table: str | None = None):
        self.sqs = sqs
        self.ddb, self.table = ddb, table  # a map's failed items, a job's failures in a row (notifier.deliver)
        self.sfn = sfn
        self.logs = logs
        self.notifier = notifier
        self.queue_url = sqs.create_queue(QueueName=queue_name, Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn,
                      Attributes={"RawMessageDelivery": "true"})
        self.delivered: list[tuple[str, list[str]]] = []  # (execution, results), for status and tests
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def drain(self, wait_seconds: int = 0) -> int:
        """Handle what is queued now; returns how many messages were handled."""
        out = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds)
        handled = 0
        for m in out.get("Messages", []):
            try:
                message = NotificationMessage.model_validate_json(_body(m["Body"]))
                results = deliver(self.notifier, message, self.sfn, self.logs, self.ddb, self.table)
            except Exception:
                log.exception("alert not delivered; it stays queued and is retried")
                continue
            self.delivered.append((message.execution, results))
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
            handled += 1
        return handled

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="alert-feed", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.drain(wait_seconds=1):
                    self._stop.wait(0.2)
            except Exception:
                log.exception("alert feed poll failed")
                self._stop.wait(1)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
        while self.drain():  # what was published before the stop still goes out
            pass


def _body(body: str) -> str:
    """Raw delivery gives the message itself; an SNS envelope (non-raw) wraps it."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body
    if isinstance(parsed, dict) and parsed.get("Type") == "Notification" and "Message" in parsed:
        return str(parsed["Message"])
    return body
