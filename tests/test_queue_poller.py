"""The local queue pollers (platform/queue_poller.py: the alert feed, the Slack actions' worker
feed) on a real SQS API (moto's, in process): a message is deleted only once handled, one whose
handling raised stays queued, and a poller stopped and started again drains again (the alert
feed's thread once ended at once when started after a stop)."""

from __future__ import annotations

import threading

import boto3
from moto import mock_aws

from jobplane.platform.queue_poller import QueuePoller


class Recorder(QueuePoller):
    name = "test-queue"

    def __init__(self, sqs: object, queue_url: str) -> None:
        super().__init__(sqs, queue_url)
        self.bodies: list[str] = []
        self.arrived = threading.Event()

    def handle(self, body: str) -> None:
        if body == "refuse":
            raise ValueError("not now")
        self.bodies.append(body)
        self.arrived.set()


@mock_aws
def test_a_poller_started_again_after_a_stop_drains_again() -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
    poller = Recorder(sqs, url)
    for round_ in ("first", "second"):
        poller.arrived.clear()
        poller.start()
        sqs.send_message(QueueUrl=url, MessageBody=round_)
        assert poller.arrived.wait(120), f"{round_}: not handled after a {'re' if round_ == 'second' else ''}start"
        poller.stop()
    assert poller.bodies == ["first", "second"]
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)  # each deleted once handled


@mock_aws
def test_a_message_whose_handling_raised_stays_queued() -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    poller = Recorder(sqs, url)
    sqs.send_message(QueueUrl=url, MessageBody="refuse")
    sqs.send_message(QueueUrl=url, MessageBody="ok")
    handled = 0
    for _ in range(5):
        handled += poller.drain()
    assert handled == 1 and poller.bodies == ["ok"]
    left = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)["Messages"]
    assert [m["Body"] for m in left] == ["refuse"]
