"""LocalAWS.wait is woken by the end of the execution it waits for, not by asking every 20 ms
(issue 66 item 7): a DescribeExecution costs ~3 ms of CPU in-process, so polling took 15% of a
core for every run a test waited on, under the GIL the run itself needs. The calls are counted
at botocore's own event hook on the engine's client: the engine and moto run as always."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from jobplane.platform.local import engine
from jobplane.platform.local.engine import Execution, LocalAWS

WAIT = {"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 2, "End": True}}}


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAWS]:
    with LocalAWS() as local:
        yield local


@pytest.fixture
def describes(aws: LocalAWS) -> Iterator[list[str]]:
    """The DescribeExecution calls made through the engine's Step Functions client in the test."""
    seen: list[str] = []
    events = aws.client("stepfunctions").meta.events
    event = "before-parameter-build.sfn.DescribeExecution"
    events.register(event, lambda params, **_: seen.append(params["executionArn"]), unique_id="test_engine_wait")
    yield seen
    events.unregister(event, unique_id="test_engine_wait")


def _start(aws: LocalAWS) -> str:
    sfn = aws.client("stepfunctions")
    machine = sfn.create_state_machine(name=f"wait-{uuid.uuid4().hex[:8]}", roleArn=aws.resources["role_arn"],
                                       definition=json.dumps(WAIT))["stateMachineArn"]
    return str(sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"])


def test_the_end_of_the_run_wakes_the_wait(aws: LocalAWS, describes: list[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # no poll to fall back on within the test's life: only the announced end can wake the wait
    monkeypatch.setattr(engine, "WAIT_POLL", 3600.0, raising=False)
    arn = _start(aws)
    done: list[Execution] = []
    waiter = threading.Thread(target=lambda: done.append(aws.wait(arn, timeout=7200)), daemon=True)
    waiter.start()
    waiter.join(timeout=600)  # a hang guard (the run's Wait state is 2 s): woken, it ends long before
    assert done, "the wait was not woken by the end of the run"
    assert done[0].status == "SUCCEEDED" and done[0].states_entered == ["w"]
    assert describes == [arn, arn]  # RUNNING, then the end it was woken for


def test_without_an_announced_end_it_still_asks_but_once_per_poll(aws: LocalAWS, describes: list[str]) -> None:
    from jobplane.platform.local import moto_patches

    listeners = list(moto_patches.STATUS_LISTENERS)
    moto_patches.STATUS_LISTENERS.clear()  # nothing announces this run's end
    try:
        arn = _start(aws)
        began = time.monotonic()
        done = aws.wait(arn, timeout=600)
        waited = time.monotonic() - began
    finally:
        moto_patches.STATUS_LISTENERS[:] = listeners
    assert done.status == "SUCCEEDED"
    # once per WAIT_POLL (0.25 s) at most, however long the 2 s Wait state took here; every 20 ms
    # was ~100 calls
    assert 2 <= len(describes) <= waited / engine.WAIT_POLL + 2, (len(describes), waited)
