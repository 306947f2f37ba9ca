"""The worker's queue, drained: the Lambda's SQS event source on AWS (:func:`handler`), a
thread of ``jobplane dev`` over the local queue (:class:`QueueFeed`). A message is deleted once
handled; one whose handling raised stays queued and is tried again (the action itself is once
only: store.py's claim)."""

from __future__ import annotations

import json
import logging
import threading

from jobplane.contract.types import Client, JsonObject
from jobplane.platform.slack_actions.worker import Worker

log = logging.getLogger(__name__)


class QueueFeed:
    def __init__(self, sqs: Client, queue_url: str, worker: Worker):
        self.sqs, self.queue_url, self.worker = sqs, queue_url, worker
        self.handled: list[str] = []  # what came of each, in order (tests, the console)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def drain(self, wait_seconds: int = 0) -> int:
        out = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds)
        count = 0
        for m in out.get("Messages", []):
            try:
                result = self.worker.handle(json.loads(m["Body"]))
            except Exception:
                log.exception("Slack interaction not handled; it stays queued and is retried")
                continue
            log.info("Slack interaction: %s", result)
            self.handled.append(result)
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
            count += 1
        return count

    def start(self) -> None:
        self._stop.clear()  # started again after a stop
        self._thread = threading.Thread(target=self._run, name="slack-actions", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.drain(wait_seconds=1):
                    self._stop.wait(0.2)
            except Exception:
                log.exception("Slack actions poll failed")
                self._stop.wait(1)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)


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
