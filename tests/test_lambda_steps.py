"""Compiled Lambda steps end to end (issue 51.5): a job mixing `jp.lambda` and ECS steps,
compiled by the compiler, runs on the local AWS with the real runner on both executors; its
Lambda step's retries follow the step's `retry`; the runner function the Terraform creates is
the one the engine deploys (the same step digests, so the handler runs exactly these steps)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.compiler.terraform import job_module
from jobplane.contract import execution_input
from jobplane.contract import lambda_step as ls
from jobplane.contract.config import PlatformConfig
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.faults import Faults
from jobplane.platform.logs import StepLogs
from jobplane.platform.timeline import history, timeline

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAWS]:
    with LocalAWS(env={"PYTHONPATH": str(HERE)}, log_dir=tmp_path_factory.mktemp("logs")) as engine:
        yield engine


def _job(name: str, marker: Path) -> Job:
    return Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "steps": [
        {"name": "quick", "lambda": "sample_apps.functions:behave", "kwargs": {"marker": str(marker)},
         "retry": {"attempts": 3, "interval": 1}, "timeout": 120},
        {"name": "publish", "python": "sample_apps.functions:write_greeting", "kwargs": {"out": str(marker) + ".out"}},
    ]})


def test_a_function_that_cannot_run_now_goes_to_the_infrastructure_retry_not_to_failed() -> None:
    """Issue 62 finding 2: Invoke's not-ready, conflict, EC2/ENI/subnet and throttle errors are the
    infrastructure's. The Task tries them a few times, then they reach the check (also for a step
    with one attempt, which had no check), whose rule sends them to the bounded infrastructure
    retry; past that budget a step with attempts left uses one, else it fails."""
    for attempts in (1, 3):
        job = Job.from_definition({"name": "idle", "team": "billing", "timezone": "UTC", "steps": [
            {"name": "quick", "lambda": "a.b:c", "retry": {"attempts": attempts}}]})
        states = asl.build_definition(job, "jp")["States"]
        task = states["quick"]
        infra = next(r for r in task["Retry"] if "Lambda.ResourceNotReadyException" in r["ErrorEquals"])
        assert infra["ErrorEquals"] == list(ls.INFRA_ERRORS) and infra["MaxAttempts"] == 3
        assert "Lambda.TooManyRequestsException" not in next(
            r for r in task["Retry"] if "Lambda.ServiceException" in r["ErrorEquals"])["ErrorEquals"]
        to_check = next(c for c in task["Catch"] if c["Next"] == "quick: check")
        assert set(ls.INFRA_ERRORS) <= set(to_check["ErrorEquals"])
        check = states["quick: check"]
        rule = check["Choices"][0]
        assert rule["Next"] == "quick: infra retry" and {"Variable": "$.run.infra.n", "NumericLessThan": 3} in rule["And"]
        assert {c["StringEquals"] for c in rule["And"][0]["And"][1]["Or"]} == set(ls.INFRA_ERRORS)
        assert states["quick: infra wait"] == {"Type": "Wait", "SecondsPath": "$.run.infra.wait", "Next": "quick"}
        assert check["Default"] == "quick: failed"


def test_a_compiled_job_runs_its_lambda_and_ecs_steps(aws: LocalAWS, tmp_path: Path) -> None:
    name = f"mixed-{uuid.uuid4().hex[:6]}"
    marker = tmp_path / "calls"
    aws.deploy(name, asl.compile_job(_job(name, marker), aws.prefix))
    arn = aws.start(name, execution_input.manual("ops"))
    execution = aws.wait(arn, timeout=300)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    rows = timeline(history(aws.client("stepfunctions"), arn))
    assert [(r.step, r.outcome) for r in rows] == [("quick", "succeeded"), ("publish", "succeeded")]
    quick = rows[0]
    assert quick.log_group == ls.log_group(ls.function_name(aws.prefix, name)) and quick.log_stream
    assert json.loads((tmp_path / "calls.out").read_text()) == {"text": "hello, world"}
    # the Lambda attempt's own output, read back as `jobplane logs` reads it
    stream = StepLogs(aws.client("logs"), aws.log_group).streams(rows, "quick")[0]
    assert "step succeeded" in stream.read()


def test_a_failing_lambda_step_is_retried_as_its_retry_says_then_fails(aws: LocalAWS, tmp_path: Path) -> None:
    name = f"flaky-{uuid.uuid4().hex[:6]}"
    marker = tmp_path / "calls"
    aws.deploy(name, asl.compile_job(_job(name, marker), aws.prefix))
    arn = aws.start(name, execution_input.manual("ops", overrides={"mode": "fail"}))
    execution = aws.wait(arn, timeout=300)
    assert execution.status == "FAILED"
    rows = timeline(history(aws.client("stepfunctions"), arn))
    assert [(r.step, r.attempt, r.exit_code) for r in rows] == [("quick", 1, 75), ("quick", 2, 75), ("quick", 3, 75)]
    assert len(marker.read_text().split()) == 3  # three real runs of the function, no more
    assert not (tmp_path / "calls.out").exists()  # the ECS step after it never ran


def test_the_terraform_function_is_the_one_the_engine_deploys(aws: LocalAWS, tmp_path: Path) -> None:
    """The compiled runner function's step digests are those the local engine derives from the
    same ASL, so on AWS the handler accepts exactly the payloads this job's Task sends."""
    name = f"digest-{uuid.uuid4().hex[:6]}"
    job = _job(name, tmp_path / "m")
    text = asl.compile_job(job, aws.prefix)
    doc = job_module(job, text, PlatformConfig(root=tmp_path, name_prefix=aws.prefix))
    (function,) = doc["resource"]["aws_lambda_function"].values()
    aws.deploy(name, text)
    deployed = aws.client("lambda").get_function_configuration(FunctionName=function["function_name"])
    assert (deployed["Environment"]["Variables"][ls.ENV_STEP_DIGESTS]
            == function["environment"]["variables"][ls.ENV_STEP_DIGESTS])
    assert function["timeout"] == 120 + ls.FUNCTION_TIMEOUT_MARGIN == deployed["Timeout"]


def _idle_job(name: str, marker: Path) -> Job:
    """One Lambda step with no retry of its own: any failure it meets is the run's."""
    return Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "steps": [
        {"name": "monthly", "lambda": "sample_apps.functions:behave", "kwargs": {"marker": str(marker)},
         "timeout": 120}]})


def _its_function(name: str, aws: LocalAWS) -> Callable[[Mapping[str, Any]], bool]:
    function = ls.function_name(aws.prefix, name)
    return lambda params: str(params.get("FunctionName", "")).rsplit(":function:", 1)[-1].split(":")[0] == function


def test_an_idle_functions_not_ready_invoke_is_retried_and_shown_on_the_attempt(aws: LocalAWS, tmp_path: Path,
                                                                                faults: Faults, fast_waits: float) -> None:
    """Issue 62 finding 2 (certain): a VPC function idle for weeks is Inactive and its next invoke
    fails Lambda.ResourceNotReadyException. The Task tries again (it is not the step's failure)
    and the run SUCCEEDS; the attempt's timeline (what the portal, the API and the record show)
    holds the failed try with its error, then the try that ran, both attempt 1. Before: FAILED."""
    name = f"idle-{uuid.uuid4().hex[:6]}"
    marker = tmp_path / "calls"
    aws.deploy(name, asl.compile_job(_idle_job(name, marker), aws.prefix))
    faults.script("lambda", "Invoke", "ResourceNotReadyException", match=_its_function(name, aws))
    arn = aws.start(name, execution_input.manual("ops"))
    execution = aws.wait(arn, timeout=300)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    assert faults.count("lambda", "Invoke", "ResourceNotReadyException") == 1
    aws.wait_reconciled(arn, timeout=300)
    record = aws.repository().execution(arn.rsplit(":", 1)[1])
    assert record is not None and record.status == "SUCCEEDED"
    rows = [(r.step, r.attempt, r.outcome, r.error) for r in record.timeline]
    assert rows == [("monthly", 1, "failed", "Lambda.ResourceNotReadyException"), ("monthly", 1, "succeeded", None)]
    assert record.timeline[0].reason and "Inactive" in record.timeline[0].reason
    assert len(marker.read_text().split()) == 1  # the step itself ran once


def test_a_function_not_ready_past_the_tasks_own_tries_gets_the_infrastructure_retry(aws: LocalAWS, tmp_path: Path,
                                                                                     faults: Faults, fast_waits: float) -> None:
    """The function stays Pending longer than the Task's own three quick tries (Lambda re-creates
    its network interfaces): the check sends it to the bounded infrastructure retry, which runs
    the same attempt again after its wait, and the run SUCCEEDS with every try on the attempt."""
    name = f"idle-{uuid.uuid4().hex[:6]}"
    marker = tmp_path / "calls"
    aws.deploy(name, asl.compile_job(_idle_job(name, marker), aws.prefix))
    faults.script("lambda", "Invoke", "ResourceNotReadyException", times=4, match=_its_function(name, aws))
    arn = aws.start(name, execution_input.manual("ops"))
    execution = aws.wait(arn, timeout=600)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    assert [s for s in execution.states_entered if "infra" in s] == ["monthly: infra retry", "monthly: infra wait"]
    rows = timeline(history(aws.client("stepfunctions"), arn))
    assert [(r.attempt, r.outcome, r.error) for r in rows] == (
        [(1, "failed", "Lambda.ResourceNotReadyException")] * 4 + [(1, "succeeded", None)])
    assert len(marker.read_text().split()) == 1


def _two_secret_steps(name: str, out: Path) -> Job:
    """A job whose two Lambda steps each read a secret of their own (issue 62 finding 6)."""
    return Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "steps": [
        {"name": "first", "lambda": "sample_apps.functions:record_env", "kwargs": {"out": str(out) + ".first"},
         "secrets": {"FIRST_TOKEN": "secretsmanager:billing/first-token"}},
        {"name": "second", "lambda": "sample_apps.functions:record_env", "kwargs": {"out": str(out) + ".second"},
         "secrets": {"SECOND_TOKEN": "ssm:/billing/second-token"}},
    ]})


def test_each_lambda_step_reads_only_its_own_secrets(tmp_path: Path) -> None:
    """The compiled function reads the secrets of all its steps; each compiled Task's payload
    names its own step's, and the real handler and runner give a step those alone."""
    from jobplane.platform.local.lambda_agent import lambda_tasks
    from jobplane.runner import lambda_handler as lh

    job = _two_secret_steps("two-secrets", tmp_path / "env")
    text = asl.compile_job(job, "jobplane")
    doc = job_module(job, text, PlatformConfig(root=tmp_path, name_prefix="jobplane"))
    (function,) = doc["resource"]["aws_lambda_function"].values()
    # the function's environment as Terraform sets it: a secret's ARN from its plan-time lookup
    arns = {f"${{data.aws_secretsmanager_secret.{lookup}.arn}}":
            f"arn:aws:secretsmanager:us-east-1:123456789012:secret:{data['name']}-AbCdEf"
            for lookup, data in doc["data"]["aws_secretsmanager_secret"].items()}
    variables = dict(function["environment"]["variables"])
    for ref, arn in arns.items():
        variables[ls.ENV_SECRET_SOURCES] = variables[ls.ENV_SECRET_SOURCES].replace(ref, arn)
    variables[ls.ENV_SECRET_SOURCES] = variables[ls.ENV_SECRET_SOURCES].replace(
        "${data.aws_partition.current.partition}", "aws").replace("${data.aws_region.current.region}", "us-east-1") \
        .replace("${data.aws_caller_identity.current.account_id}", "123456789012")
    store = {arn: f"value-of-{arn.rsplit(':', 1)[1]}" for arn in json.loads(variables[ls.ENV_SECRET_SOURCES]).values()}
    assert len(store) == 2
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")} | {"PYTHONPATH": str(HERE)}
    for task in lambda_tasks(json.loads(text)):
        env = {k.removesuffix(".$"): ("1" if k == "JOBPLANE_ATTEMPT.$" else "{}" if k == "JOBPLANE_PARAMS.$" else "x")
               if k.endswith(".$") else v for k, v in task["Parameters"]["Payload"][ls.PAYLOAD_ENVIRONMENT].items()}
        with open(tmp_path / "output", "wb") as f:
            answer = lh.invoke({ls.PAYLOAD_ENVIRONMENT: env}, Context(), base | variables, read_secret=store.__getitem__,
                               output=f.fileno())
        assert answer["exit_code"] == 0
    first = json.loads((tmp_path / "env.first").read_text())
    second = json.loads((tmp_path / "env.second").read_text())
    assert first["FIRST_TOKEN"] == "value-of-billing/first-token-AbCdEf" and "SECOND_TOKEN" not in first
    assert second["SECOND_TOKEN"] == "value-of-parameter/billing/second-token" and "FIRST_TOKEN" not in second
    assert first[ls.ENV_STEP_SECRETS] == "FIRST_TOKEN" and second[ls.ENV_STEP_SECRETS] == "SECOND_TOKEN"


def test_on_the_local_aws_a_lambda_step_is_told_only_its_own_secrets(aws: LocalAWS, tmp_path: Path) -> None:
    """Run by the engine, as deployed: each step's runner is told (and redacts) its own
    secrets' names only; their values are unset locally, as an ECS step's (docs/dev.md)."""
    name = f"scoped-{uuid.uuid4().hex[:6]}"
    aws.deploy(name, asl.compile_job(_two_secret_steps(name, tmp_path / "env"), aws.prefix))
    execution = aws.wait(aws.start(name, execution_input.manual("ops")), timeout=300)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    first = json.loads((tmp_path / "env.first").read_text())
    second = json.loads((tmp_path / "env.second").read_text())
    assert first[ls.ENV_STEP_SECRETS] == "FIRST_TOKEN" and second[ls.ENV_STEP_SECRETS] == "SECOND_TOKEN"
    assert not {"FIRST_TOKEN", "SECOND_TOKEN"} & (set(first) | set(second))


class Context:
    """Lambda's context object: what the handler reads of it."""

    aws_request_id = "5f0e6a1c-0000-4000-8000-00000000abcd"
    log_group_name = "/aws/lambda/jobplane-two-secrets-runner"
    log_stream_name = "2026/12/06/[$LATEST]0123456789abcdef0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000
