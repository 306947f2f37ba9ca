"""The worker's queue, drained: the Lambda's SQS event source on AWS (:func:`handler`), a
thread of ``jobplane dev`` over the local queue (:class:`QueueFeed`). A message is deleted once
handled; one whose handling raised stays queued and is tried again (the action itself is once
only: store.py's claim)."""

from __future__ import annotations

import json
import logging

from jobplane.contract.types import Client, JsonObject
from jobplane.platform.queue_poller import QueuePoller
from jobplane.platform.slack_actions.worker import Worker

log = logging.getLogger(__name__)


class QueueFeed(QueuePoller):
    name = "slack-actions"

    def __init__(self, sqs: Client, queue_url: str, worker: Worker):
        super().__init__(sqs, queue_url)
        self.worker = worker
        self.handled: list[str] = []  # what came of each, in order (tests, the console)

    def handle(self, body: str) -> None:
        result = self.worker.handle(json.loads(body))
        log.info("Slack interaction: %s", result)
        self.handled.append(result)


_WORKER: Worker | None = None


def handler(event: JsonObject, context: object = None) -> JsonObject:
    """AWS Lambda entry point of the worker, the queue's event source (batch size 1: a failure
    returns the message to the queue, and after maxReceiveCount to its dead-letter queue)."""
    global _WORKER
    if _WORKER is None:
        _WORKER = build_worker()
    results = []
    for record in event.get("Records", []):
        results.append(_WORKER.handle(json.loads(record["body"])))
    return {"results": results}


def build_worker() -> Worker:
    """The worker of the deployment this Lambda runs in (its environment: the base module's)."""
    import boto3
    from slack_sdk.web import WebClient

    from jobplane.contract import environment as E
    from jobplane.contract import slack_interactivity as S
    from jobplane.contract.environment import RuntimeEnvironment
    from jobplane.platform.channels.slack import SLACK_API_URL
    from jobplane.platform.control import ControlPlane, Deployment
    from jobplane.platform.control.access import Access
    from jobplane.platform.slack_actions.store import AlertButtons

    env = RuntimeEnvironment.from_environment()
    token = boto3.client("secretsmanager").get_secret_value(SecretId=env.required(E.SLACK_BOT_TOKEN_SECRET_ARN))["SecretString"]
    members = json.loads(env.optional(E.TEAM_MEMBERS) or "{}")
    access = Access(frozenset(env.names_list(E.ADMINS)), {t: frozenset(m) for t, m in members.items()})
    plane = ControlPlane(Deployment.from_environment(env), load=False)
    return Worker(plane, AlertButtons(plane.ddb, env.table),
                  WebClient(token=token, base_url=env.optional(E.SLACK_API_URL) or SLACK_API_URL),
                  S.SlackApp.from_env(dict(env.values)), access)
