"""One SQS queue drained on a thread: what `jobplane dev` runs where AWS runs a Lambda's event
source (the alerts' notifier, the Slack actions' worker).

A message is deleted only once :meth:`QueuePoller.handle` returned, so a crash in between leaves
it queued to be received again (at least once, as the event source on AWS); one whose handling
raised stays queued and is tried again after its visibility timeout. A poller can be started
again after a stop (a dev platform's restart of its feeds).
"""

from __future__ import annotations

import logging
import threading

from jobplane.contract.types import Client

log = logging.getLogger(__name__)


class QueuePoller:
    #: The thread's name, and what the log calls a message.
    name = "queue"

    def __init__(self, sqs: Client, queue_url: str):
        self.sqs, self.queue_url = sqs, queue_url
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def handle(self, body: str) -> None:
        """Act on one message's body; raising keeps the message queued."""
        raise NotImplementedError

    def drain(self, wait_seconds: int = 0) -> int:
        """Handle what is queued now; returns how many messages were handled."""
        out = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds)
        handled = 0
        for m in out.get("Messages", []):
            try:
                self.handle(m["Body"])
            except Exception:
                log.exception("%s message not handled; it stays queued and is retried", self.name)
                continue
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
            handled += 1
        return handled

    def start(self) -> None:
        self._stop.clear()  # started again after a stop
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.drain(wait_seconds=1):
                    self._stop.wait(0.2)
            except Exception:
                log.exception("%s poll failed", self.name)
                self._stop.wait(1)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)
