"""The local engine's time scale (the moto patch ``time_scale``, the tests' ``fast_waits``) changes
how long a compiled run sleeps and nothing else: the same compiled job, run in real time and at a
scale, goes through the same states and the same attempts, its waits asked for the same seconds
in the same order (only each sleep is divided). The tests that wait out retries at a scale rely
on this; tests/test_moto_fixes.py probes the patch itself against stock moto."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.platform.local import moto_patches
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.faults import Faults

HERE = Path(__file__).resolve().parent
BEHAVE = "sample_apps.functions:behave"
SCALE = 30.0


@pytest.fixture(scope="module")
def aws():  # type: ignore[no-untyped-def]
    with LocalAWS(env={"PYTHONPATH": str(HERE)}) as local:
        yield local


def deploy(aws: LocalAWS, step: dict[str, Any]) -> str:
    name = f"scaled-{uuid.uuid4().hex[:8]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC",
                               "steps": [{"name": "work", "python": BEHAVE} | step]})
    aws.deploy(name, asl.compile_job(job, aws.prefix))
    return name


def run_at(aws: LocalAWS, scale: float, job: str, params: dict[str, Any]) -> dict[str, Any]:
    """One run of ``job`` at ``scale``: its status, states entered, attempts as recorded, the
    seconds each Wait state was asked for (read from the history: the value at its SecondsPath),
    and the waits the patch divided meanwhile."""
    before = moto_patches.time_scale_of()
    moto_patches.set_time_scale(scale)
    noted = len(moto_patches.scaled_waits())
    try:
        arn = aws.start(job, execution_input.manual("scale-test", overrides=params))
        ex = aws.wait(arn, timeout=600)  # a bound that only catches a hang
        aws.wait_reconciled(arn, timeout=600)
    finally:
        moto_patches.set_time_scale(before)
    definition = json.loads(aws.client("stepfunctions").describe_state_machine(
        stateMachineArn=aws.state_machines[job])["definition"])["States"]
    events = aws.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]
    waits = []
    for e in events:
        if e["type"] == "WaitStateEntered":
            details = e["stateEnteredEventDetails"]
            value: Any = json.loads(details["input"])
            for key in definition[details["name"]]["SecondsPath"].removeprefix("$.").split("."):
                value = value[key]
            waits.append((details["name"], value))
    rec = aws.repository().execution(arn.rsplit(":", 1)[1])
    assert rec is not None
    return {"status": (ex.status, rec.status), "entered": ex.states_entered, "waits": waits,
            "attempts": [(a.step, a.attempt, a.outcome, a.error) for a in rec.timeline],
            "noted": moto_patches.scaled_waits()[noted:]}


def test_a_steps_retries_go_through_the_same_attempts_and_waits_at_a_scale(aws: LocalAWS) -> None:
    """Three attempts 2 s then 4 s apart (backoff 2): in real time and at scale 30 alike, three
    failed attempts, the same states, the Waits asked for 2 then 4 s; at the scale each slept 1/30."""
    job = deploy(aws, {"retry": {"attempts": 3, "interval": 2, "backoff": 2}})
    real = run_at(aws, 1, job, {"mode": "fail"})
    scaled = run_at(aws, SCALE, job, {"mode": "fail"})
    assert real["status"] == ("FAILED", "FAILED")
    assert real["attempts"] == [("work", n, "failed", "States.TaskFailed") for n in (1, 2, 3)]
    assert real["waits"] == [("work: wait", 2), ("work: wait", 4)]
    assert real["noted"] == []  # real time: moto's own code slept
    for key in ("status", "entered", "waits", "attempts"):
        assert scaled[key] == real[key], key
    assert scaled["noted"] == [("wait", 2, 2 / SCALE), ("wait", 4, 4 / SCALE)]


def test_a_throttled_runtask_is_retried_by_the_tasks_own_retrier_the_same_at_a_scale(aws: LocalAWS,
                                                                                      faults: Faults) -> None:
    """RunTask throttled twice: the compiled Task's ECS retrier (5 s, backoff 2, full jitter)
    tries a third time and the step runs, in real time and at scale 30 alike (the same tries, the
    same attempt rows); at the scale, the two intervals are drawn below 5 s then below 10 s, as
    the retrier computes them, and each is slept 1/30."""
    job = deploy(aws, {})
    retrier = next(r for r in json.loads(asl.compile_job(Job.from_definition(
        {"name": "x", "team": "billing", "timezone": "UTC", "steps": [{"name": "work", "python": BEHAVE}]}),
        aws.prefix))["States"]["work"]["Retry"] if "ECS.ThrottlingException" in r["ErrorEquals"])
    runs = []
    for scale in (1, SCALE):
        faults.script("ecs", "RunTask", "ThrottlingException", times=2,
                      match=lambda params: params.get("group") == f"jobplane:{job}")
        runs.append(run_at(aws, scale, job, {"mode": "ok"}))
    real, scaled = runs
    assert faults.count("ecs", "RunTask", "ThrottlingException") == 4
    assert real["status"] == ("SUCCEEDED", "SUCCEEDED")
    assert real["attempts"] == [("work", 1, "failed", "ECS.ThrottlingException")] * 2 + [("work", 1, "succeeded", None)]
    for key in ("status", "entered", "waits", "attempts"):
        assert scaled[key] == real[key], key
    caps = [min(retrier["IntervalSeconds"] * retrier["BackoffRate"] ** k, retrier["MaxDelaySeconds"]) for k in (0, 1)]
    assert caps == [5, 10]
    assert [what for what, _, _ in scaled["noted"]] == ["retry", "retry"]
    for (_, asked, waited), cap in zip(scaled["noted"], caps):
        assert 0 <= asked <= cap and waited == asked / SCALE
