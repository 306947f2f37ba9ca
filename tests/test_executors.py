"""The executor seam (issue 63 item 5): each place a step runs is one compile-time class
(compiler/executors/), one runtime class (contract/executor_runtime.py) and one local agent
(platform/local/agents.py), and everything else asks them: the timeline's attempt facts, where
an attempt's log is, what stopping a run stops, which agents the local engine starts. So an
executor added to the three registries (here a test's own) is picked up without touching the
modules that ask."""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from jobplane.compiler import asl, kinds
from jobplane.compiler.executors import registry
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract import executor_runtime as er
from jobplane.contract.attempts import Attempt
from jobplane.contract.step_kinds import Executor
from jobplane.contract.types import JsonObject
from jobplane.platform.local import agents as local_agents

HERE = Path(__file__).resolve().parent
PLACES = [e.value for e in Executor if e is not Executor.GROUP]


def test_every_executor_has_its_compile_time_class_its_runtime_class_and_its_local_agent() -> None:
    assert sorted(registry()) == sorted(er.RUNTIMES) == sorted(local_agents.LOCAL_AGENTS) == sorted(PLACES)
    # a kind's compiler class runs on the executor its one declaration (contract/step_kinds.py) names
    for kind in kinds.REGISTRY:
        if kind.info.executor is not Executor.GROUP:
            assert kind.executor is registry()[kind.info.executor.value] and kind.executor.name == kind.info.executor.value
    assert list(er.RUNTIMES)[-1] == "ecs"  # the default, asked last


@pytest.mark.parametrize("name", PLACES)
def test_every_runtime_answers_every_question(name: str) -> None:
    runtime = er.RUNTIMES[name]
    assert runtime.name == name and isinstance(runtime.stops_with_execution, bool)
    for result in ({}, {"Payload": {"exit_code": 0}}, {"TaskArn": "arn:aws:ecs:us-east-1:1:task/c/t1", "Containers": []}):
        assert isinstance(runtime.ran(result), bool)
        if runtime.ran(result):
            assert isinstance(runtime.attempt_facts(result, with_reason=True), dict)
    assert runtime.scheduled_log_group({}) is None
    assert isinstance(runtime.submitted_facts({}), dict)
    row = Attempt("load", 1, None, None, "failed", task_id="t1", log_group="/aws/lambda/f", log_stream="s")
    if runtime.wrote(row):
        place = runtime.log_place(row, "ex-1")
        assert place is not None and place.key


#: An executor's decision taken outside the executor's own classes: a name compared (``executor.name
#: == "lambda"``, ``== "ecs"``), an Executor member tested, an output's shape sniffed
#: (``"Payload" in task``) or a Task's resource type compared.
_EXECUTOR_TEST = re.compile(r"""executor(\.name|\.value)?\s*[!=]=\s*["']|(?<!service )[!=]=\s*["'](ecs|lambda)["']"""
                            r"""|["'](ecs|lambda)["']\s*[!=]=|Executor\.(ECS|LAMBDA)\b|executor\s+is\s+(not\s+)?(ECS|LAMBDA)\b"""
                            r"""|["']Payload["']\s+(not\s+)?in\b"""
                            r"""|resourceType["']\)?\s*[!=]=\s*["']""")
#: Where an executor may be told by its name: its own classes and the registries.
_OWN = ("compiler/executors/", "contract/executor_runtime.py", "contract/step_kinds.py", "platform/local/agents.py",
        "contract/lambda_step.py",  # the Lambda executor's contract with the runner's handler
        "platform/local/ecs_agent.py", "platform/local/lambda_agent.py",
        # moto's own services (a fault on "ecs" RunTask, a "lambda" Invoke), not executors
        "platform/local/moto_patches/", "platform/local/fault_profiles.py", "platform/local/faults.py")


def test_no_executor_is_told_by_its_name_outside_the_registry() -> None:
    src = ROOT / "src" / "jobplane"
    found = [f"{p.relative_to(src)}:{n}: {line.strip()}"
             for p in sorted(src.rglob("*.py")) if not str(p.relative_to(src)).startswith(_OWN)
             for n, line in enumerate(p.read_text().splitlines(), 1) if _EXECUTOR_TEST.search(line)]
    assert found == []


# -- a test's own executor, registered in the three registries --------------------------------
@dataclass
class FakeRuntime:
    """Claims the attempts of one job (the ECS agent runs them: this executor has no service of
    its own), and reads them its own way."""

    job: str
    name: str = "fake"
    stops_with_execution: bool = True

    def ran(self, result: JsonObject) -> bool:
        return result.get("Group") == f"jobplane:{self.job}"

    def attempt_facts(self, result: JsonObject, with_reason: bool) -> JsonObject:
        return {"task_id": f"fake-{er.task_id(result['TaskArn'])}", "reason": "read by the fake executor"}

    def scheduled_log_group(self, details: JsonObject) -> str | None:
        return None

    def submitted_facts(self, output: JsonObject) -> JsonObject:
        return {}

    def wrote(self, row: Attempt) -> bool:
        return bool(row.task_id and row.task_id.startswith("fake-"))

    def log_place(self, row: Attempt, execution: str | None) -> er.LogPlace | None:
        return er.LogPlace(str(row.task_id), er.SharedLog("/fake/group", f"fake/{row.task_id}"))


@dataclass
class FakeAgent:
    declared_secrets: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)

    def activate(self) -> FakeAgent:
        self.asked.append(("activate", ""))
        return self

    def deactivate(self) -> None:
        self.asked.append(("deactivate", ""))

    def deploy(self, definition: str, deployment: local_agents.Deployment) -> list[str]:
        self.asked.append(("deploy", definition))
        return []

    def stop_execution(self, execution_id: str) -> list[str]:
        self.asked.append(("stop", execution_id))
        return [f"fake-{execution_id}"]


@pytest.fixture
def fake_executor(monkeypatch: pytest.MonkeyPatch):
    job = f"fake-{uuid.uuid4().hex[:8]}"
    runtime, agent = FakeRuntime(job), FakeAgent()
    er.register(runtime)
    monkeypatch.setitem(local_agents.LOCAL_AGENTS, runtime.name, lambda setup: agent)
    try:
        yield job, runtime, agent
    finally:
        er.unregister(runtime.name)


def test_an_executor_added_to_the_registries_is_asked_by_the_engine_the_timeline_and_the_logs(
        fake_executor: tuple[str, FakeRuntime, FakeAgent], tmp_path: Path) -> None:
    from jobplane.platform.local.engine import LocalAWS
    from jobplane.platform.logs import StepLogs
    from jobplane.platform.timeline import history, timeline

    job_name, runtime, agent = fake_executor
    assert list(er.RUNTIMES) == ["lambda", "fake", "ecs"]  # asked before the default
    with LocalAWS(env={"PYTHONPATH": str(HERE), "JOBPLANE_STOP_GRACE_SECONDS": "3"}) as aws:
        assert aws.agents["fake"] is agent and agent.asked == [("activate", "")]  # started with the others
        job = Job.from_definition({"name": job_name, "team": "billing", "timezone": "UTC", "policy": "ALWAYS_RUN",
                                   "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]})
        aws.deploy(job_name, asl.compile_job(job, aws.prefix))
        assert [kind for kind, _ in agent.asked] == ["activate", "deploy"]  # asked what the definition needs
        # an attempt that ran to its end: its facts as the executor reads them, its log where it says
        done = aws.start(job_name, execution_input.manual("ops@example.com", overrides={"mode": "ok"}))
        assert aws.wait(done, timeout=600).status == "SUCCEEDED"  # a bound that only catches a hang
        rows = timeline(history(aws.client("stepfunctions"), done))
        assert [(r.step, r.outcome, r.reason) for r in rows] == [("work", "succeeded", "read by the fake executor")]
        assert str(rows[0].task_id).startswith("fake-")
        streams = StepLogs(aws.client("logs"), aws.log_group).streams(rows)
        assert [(s.task_id, s.log_group, s.log_stream) for s in streams] == [
            (rows[0].task_id, "/fake/group", f"fake/{rows[0].task_id}")]
        # a run stopped while its attempt runs: the agent of an executor whose attempts stop with
        # their execution is asked to stop them
        marker = tmp_path / "started"
        arn = aws.start(job_name, execution_input.manual("ops@example.com", overrides={
            "mode": "sleep", "seconds": 300, "marker": str(marker)}))
        deadline = time.monotonic() + 300  # a bound that only catches a hang
        while not (marker.exists() and marker.read_text().strip()):
            assert time.monotonic() < deadline, "the step never started"
            time.sleep(0.02)
        aws.client("stepfunctions").stop_execution(executionArn=arn)
        aws.wait(arn, timeout=600)
        aws.wait_reconciled(arn, timeout=600)
        assert ("stop", arn.rsplit(":", 1)[1]) in agent.asked
        runtime.stops_with_execution = False  # one whose attempts run on is not asked
        assert local_agents.stop_execution({"fake": agent}, "another") == []
    assert agent.asked[-1] == ("deactivate", "")


def test_an_executor_without_a_local_agent_is_refused_when_the_engine_starts(tmp_path: Path) -> None:
    """Not at its first step, deep in a run: the engine names the executor and the table."""
    runtime = FakeRuntime("none", name="agentless")
    er.register(runtime)
    try:
        with pytest.raises(LookupError, match=r"executors without a local agent .*LOCAL_AGENTS.*'agentless'"):
            local_agents.start_agents(local_agents.AgentSetup(tmp_path, "jobplane"))
    finally:
        er.unregister(runtime.name)
    assert "agentless" not in er.RUNTIMES
