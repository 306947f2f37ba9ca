"""Defects an independent QA pass found in the landed platform (issue 17), each reproduced on
a running local platform (the embedded AWS over HTTP, real runner subprocesses, the portal)."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any, Iterator

import pytest

from jobplane.platform.local.dev import DevPlatform
from portal_kit import start_platform


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    p = start_platform(tmp_path_factory.mktemp("correctness"))
    yield p
    p.stop()


def wait_record(platform: DevPlatform, name: str, timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = platform.control.repo.execution(name)
        if record is not None and record.transitions is not None:
            return record
        time.sleep(0.1)
    raise AssertionError(f"{name} has no final record")


def get(platform: DevPlatform, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"{platform.portal_url}{path}", timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_an_execution_started_without_a_name_runs_and_breaks_nothing(platform: DevPlatform) -> None:
    sfn = platform.aws.client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=platform.deployment.state_machine_arn("flaky-load"),
                              input=json.dumps({"trigger": "manual", "scheduled_time": "2027-01-01T00:00:00.000001Z",
                                                "requested_by": "console", "params": {"mode": "ok"},
                                                "resume_from": None, "rerun_of": None}))["executionArn"]
    name = arn.rsplit(":", 1)[1]
    assert name != "None"
    assert wait_record(platform, name).status == "SUCCEEDED"
    assert platform.control.job("flaky-load").running == []
    for path in ("/", "/api/jobs/flaky-load", f"/api/executions/{name}"):
        assert get(platform, path)[0] == 200, path


def test_a_malformed_running_set_reads_as_no_claim() -> None:
    """What the unnamed execution used to leave behind (null in the running set, written by the
    claim before the moto fix) is read as no claim rather than failing every page that lists
    jobs. (moto no longer stores it, so this reads the item shape directly.)"""
    from jobplane.platform.repository import JobState

    state = JobState.from_item({"pk": {"S": "JOB#long-wait"}, "sk": {"S": "STATE"}, "job": {"S": "long-wait"},
                                "running": {"SS": [None, "abc"]}})
    assert state.running == frozenset({"abc"})


def test_a_stopped_attempt_is_shown_as_stopped(platform: DevPlatform, tmp_path) -> None:  # type: ignore[no-untyped-def]
    name = platform.control.run_now("long-wait", "dev@localhost", {"release": str(tmp_path / "never")})
    deadline = time.monotonic() + 300
    while not any(r["outcome"] == "running" for r in platform.control.execution(name, "long-wait").timeline):
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.1)
    platform.control.stop(name, "dev@localhost", "wrong day")
    record = wait_record(platform, name)
    assert record.status == "ABORTED"
    assert [(r["step"], r["outcome"]) for r in record.timeline] == [("wait", "stopped")]
    status, body = get(platform, f"/api/executions/{name}")
    steps = json.loads(body)["steps"]
    assert status == 200 and [(s["step"], s["outcome"]) for s in steps] == [("wait", "stopped")]
