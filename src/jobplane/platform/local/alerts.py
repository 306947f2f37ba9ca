"""Delivers the platform topic's messages to the notification channels locally, as the notifier Lambda's
SNS subscription does in production.

The topic fans out to an SQS queue (raw delivery) and one thread drains it (platform/queue_poller.py):
a message is deleted only after the notifier has sent, logged or dead-lettered it, so a crash in
between re-delivers it rather than losing it.
"""

from __future__ import annotations

import json
import logging

from jobplane.contract.notifications import NotificationMessage
from jobplane.platform.logs import StepLogs
from jobplane.platform.channels import ChannelNotifier, Notifiers
from jobplane.platform.notifier import deliver
from jobplane.platform.queue_poller import QueuePoller
from jobplane.contract.types import Client

log = logging.getLogger(__name__)


class AlertFeed(QueuePoller):
    name = "alert-feed"

    def __init__(self, sns: Client, sqs: Client, topic_arn: str, queue_name: str, notifier: ChannelNotifier | Notifiers,
                 sfn: Client, logs: StepLogs, ddb: Client | None = None, table: str | None = None):
        self.ddb, self.table = ddb, table  # a map's failed items, a job's failures in a row (notifier.deliver)
        self.sfn = sfn
        self.logs = logs
        self.notifier = notifier
        queue_url = sqs.create_queue(QueueName=queue_name, Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
        super().__init__(sqs, queue_url)
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn,
                      Attributes={"RawMessageDelivery": "true"})
        self.delivered: list[tuple[str, list[str]]] = []  # (execution, results), for status and tests

    def handle(self, body: str) -> None:
        message = NotificationMessage.model_validate_json(_body(body))
        results = deliver(self.notifier, message, self.sfn, self.logs, self.ddb, self.table)
        self.delivered.append((message.execution, results))

    def stop(self) -> None:
        super().stop()
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
