"""A Lambda step on the local AWS: a state machine's ``lambda:invoke`` Task runs the runner's
Lambda handler through the local Lambda agent (real processes), its output lands in the
function's CloudWatch Logs group, and the timeline and the log readers find it again."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from jobplane.contract import lambda_step as ls
from jobplane.contract import runner as rc
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.logs import StepLogs, error_excerpt
from jobplane.platform.timeline import history, timeline

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAWS]:
    with LocalAWS(env={"PYTHONPATH": str(HERE)}, log_dir=tmp_path_factory.mktemp("logs")) as engine:
        yield engine


def lambda_task(aws: LocalAWS, job: str, target: str, kwargs: dict[str, Any], timeout: int = 60) -> dict[str, Any]:
    """The Task a Lambda step compiles to (contract/lambda_step.py), written by hand."""
    spec = {"kind": "python", "target": target, "kwargs": kwargs}
    environment = {
        rc.ENV_JOB: job, rc.ENV_TEAM: "billing", rc.ENV_STEP: "load", rc.ENV_ATTEMPT: "1",
        rc.ENV_STEP_TIMEOUT: str(timeout), rc.ENV_TARGET: json.dumps(spec, sort_keys=True, separators=(",", ":")),
        f"{rc.ENV_EXECUTION_ID}.$": "$$.Execution.Name", f"{rc.ENV_SCHEDULED_TIME}.$": "$.scheduled_time",
        f"{rc.ENV_TRIGGER}.$": "$.trigger", f"{rc.ENV_PARAMS}.$": "States.JsonToString($.params)",
        f"{rc.ENV_TRACEPARENT}.$": "States.Format('00-{}-00f067aa0ba902b7-01', States.Hash($$.Execution.Id, 'MD5'))",
    }
    return {"Type": "Task", "Resource": ls.INVOKE_RESOURCE, "TimeoutSeconds": timeout,
            "Parameters": {"FunctionName": ls.function_name(aws.prefix, job),
                           "Payload": {ls.PAYLOAD_ENVIRONMENT: environment}},
            "ResultSelector": {"Payload.$": "$.Payload"}, "ResultPath": "$.result", "End": True}


def run_step(aws: LocalAWS, target: str, kwargs: dict[str, Any], timeout: int = 60,
             function_env: dict[str, str] | None = None) -> tuple[Any, list[Any], str]:
    job = f"lambda-{uuid.uuid4().hex[:8]}"
    aws.deploy(job, json.dumps({"StartAt": "load", "States": {"load": lambda_task(aws, job, target, kwargs, timeout)}}))
    if function_env:
        client = aws.client("lambda")
        name = ls.function_name(aws.prefix, job)
        deployed = client.get_function_configuration(FunctionName=name)["Environment"]["Variables"]
        client.update_function_configuration(FunctionName=name, Environment={"Variables": deployed | function_env})
    execution = aws.run(job, {"scheduled_time": "2026-12-03T02:00:00Z", "trigger": "manual", "params": {}},
                        timeout=120)
    return execution, timeline(history(aws.client("stepfunctions"), execution.arn)), job


def test_a_step_that_succeeds_has_its_log_stream_on_its_attempt_row(aws: LocalAWS, tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    execution, rows, job = run_step(aws, "sample_apps.functions:write_greeting", {"out": str(out)})
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    assert json.loads(out.read_text()) == {"text": "hello, world"}
    (row,) = rows
    group = ls.log_group(ls.function_name(aws.prefix, job))
    assert (row.step, row.attempt, row.outcome, row.exit_code, row.log_group) == ("load", 1, "succeeded", 0, group)
    assert row.log_stream and re.fullmatch(r"\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}", row.log_stream)
    assert execution.output["result"]["Payload"] == {"exit_code": 0, "log_group": group, "log_stream": row.log_stream,
                                                     "request_id": row.task_id}
    # what `jobplane logs` and the portal read: the invocation's lines, the runner's JSON
    (stream,) = StepLogs(aws.client("logs"), aws.log_group).streams(rows)
    lines = [json.loads(line) for line in stream.read().splitlines()]
    assert ("jobplane.output", "hello, world") in [(l["logger"], l["message"]) for l in lines]
    assert lines[-1]["message"] == "step succeeded" and {l["execution_id"] for l in lines} == {execution.arn.rsplit(":", 1)[1]}
    # the stream itself is Lambda's: START before the handler's output, END and REPORT after
    events = aws.client("logs").get_log_events(logGroupName=group, logStreamName=row.log_stream,
                                               startFromHead=True)["events"]
    assert events[0]["message"].startswith(f"START RequestId: {row.task_id} ")
    assert events[-2]["message"] == f"END RequestId: {row.task_id}"
    assert events[-1]["message"].startswith(f"REPORT RequestId: {row.task_id}\tDuration: ")


def test_an_exception_fails_the_task_with_the_retryable_error(aws: LocalAWS) -> None:
    execution, rows, _ = run_step(aws, "sample_apps.functions:boom", {"reason": "partner API answered 503"})
    assert (execution.status, execution.error) == ("FAILED", ls.ERROR_RETRYABLE)
    cause = json.loads(execution.cause or "")
    assert set(cause) == {"errorMessage", "errorType", "requestId", "stackTrace"}  # what Lambda puts there
    assert cause["errorType"] == ls.ERROR_RETRYABLE and json.loads(cause["errorMessage"])["exit_code"] == 75
    (row,) = rows
    assert (row.outcome, row.error, row.exit_code, row.task_id) == ("failed", ls.ERROR_RETRYABLE, 75, cause["requestId"])
    streams = StepLogs(aws.client("logs"), aws.log_group).streams(rows)
    assert error_excerpt(streams) == "ConnectionError: partner API answered 503"


def test_a_target_that_cannot_run_fails_permanently(aws: LocalAWS) -> None:
    execution, rows, _ = run_step(aws, "sample_apps.functions:NOT_CALLABLE", {})
    assert (execution.status, execution.error) == ("FAILED", ls.ERROR_PERMANENT)
    (row,) = rows
    assert (row.outcome, row.error, row.exit_code) == ("failed", ls.ERROR_PERMANENT, 78) and row.log_stream


def test_secrets_in_the_functions_environment_never_reach_its_log(aws: LocalAWS) -> None:
    secret = "hunter2-" + uuid.uuid4().hex
    execution, rows, _ = run_step(aws, "sample_apps.functions:leaky", {},
                                  function_env={"DB_PASSWORD": secret, "JOBPLANE_SECRET_NAMES": "DB_PASSWORD"})
    assert execution.error == ls.ERROR_RETRYABLE
    (stream,) = StepLogs(aws.client("logs"), aws.log_group).streams(rows)
    text = stream.read()
    assert "login failed for password [redacted]" in text and secret not in text
    assert secret not in json.dumps(aws.client("logs").filter_log_events(logGroupName=stream.log_group)["events"])


def test_a_step_past_its_timeout_times_out_and_is_stopped_before_the_function_ends(aws: LocalAWS,
                                                                                   tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    execution, rows, job = run_step(aws, "sample_apps.functions:slow", {"ready": str(ready), "seconds": 120}, timeout=2)
    assert (execution.status, execution.error) == ("FAILED", "States.Timeout")
    (row,) = rows
    group = ls.log_group(ls.function_name(aws.prefix, job))
    assert (row.outcome, row.log_group, row.log_stream) == ("timed out", group, None)
    assert ready.exists()
    # as on Lambda, the invocation goes on after the Task gave up, until the handler stops the
    # step a margin before the function's own timeout (step timeout + FUNCTION_TIMEOUT_MARGIN)
    deadline = time.monotonic() + 60  # a hang guard, not a budget
    while aws.lambda_agent.running:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    messages = [e["message"] for e in aws.client("logs").filter_log_events(logGroupName=group)["events"]]
    assert any(m.startswith("END RequestId: ") for m in messages)
    # the Task never answered, so no stream is known: the readers find its lines by the run's identity
    logs = StepLogs(aws.client("logs"), aws.log_group)
    assert logs.streams(rows) == []  # a caller that does not name the execution: nothing to show
    (stream,) = logs.streams(rows, execution=execution.arn.rsplit(":", 1)[1])
    lines = [json.loads(line) for line in stream.read().splitlines()]
    assert {(l["step"], str(l["attempt"])) for l in lines} == {("load", "1")}
    assert lines[0]["message"] == "step started" and lines[-1]["message"] == "stopped by SIGTERM"
    assert any(l["logger"] == "jobplane.lambda" and l["message"].startswith("stopping the step") for l in lines)


def test_only_deployed_steps_run(aws: LocalAWS, tmp_path: Path) -> None:
    """Anyone with the local key can call Invoke: a target no state machine sends runs nothing."""
    marker = tmp_path / "called"
    _, _, job = run_step(aws, "sample_apps.functions:write_greeting", {"out": str(tmp_path / "g.json")})
    forged = {ls.PAYLOAD_ENVIRONMENT: {rc.ENV_JOB: job, rc.ENV_STEP: "load", rc.ENV_TARGET: json.dumps(
        {"kind": "python", "target": "sample_apps.functions:mark_called", "kwargs": {"out": str(marker)}})}}
    answer = aws.client("lambda").invoke(FunctionName=ls.function_name(aws.prefix, job), Payload=json.dumps(forged))
    assert answer["FunctionError"] == "Unhandled"
    assert json.loads(answer["Payload"].read())["errorType"] == "Local.Refused"
    assert not marker.exists()


def test_an_error_the_handler_did_not_raise_keeps_lambdas_message_as_the_reason() -> None:
    """Lambda's own errors (the function timed out, the image could not start) carry no answer."""
    from jobplane.contract.attempts import task_facts

    cause = json.dumps({"errorMessage": "RequestId: 1f2e Error: Task timed out after 65.00 seconds",
                        "errorType": "Sandbox.Timedout", "requestId": "1f2e", "stackTrace": []})
    assert task_facts(cause, with_reason=True) == {
        "task_id": "1f2e", "reason": "RequestId: 1f2e Error: Task timed out after 65.00 seconds"}
    answer = ls.Answer(78, "/aws/lambda/f", "2026/12/03/[$LATEST]ab", "1f2e")
    raised = json.dumps({"errorMessage": answer.to_json(), "errorType": ls.ERROR_PERMANENT, "requestId": "1f2e",
                         "stackTrace": ["  File ..."]})
    assert task_facts(raised, with_reason=True) == {"exit_code": 78, "log_group": "/aws/lambda/f",
                                                    "log_stream": "2026/12/03/[$LATEST]ab", "task_id": "1f2e"}
    # an ECS task's JSON is read as before
    task = {"TaskArn": "arn:aws:ecs:us-east-1:123456789012:task/c/abc", "StopCode": "EssentialContainerExited",
            "Containers": [{"ExitCode": 75}]}
    assert task_facts(json.dumps(task), with_reason=True) == {"exit_code": 75, "task_id": "abc",
                                                              "stop_code": "EssentialContainerExited"}


def test_a_stream_shared_by_invocations_gives_each_attempt_its_own_lines() -> None:
    lines = ["START RequestId: a Version: $LATEST", "one", "END RequestId: a", "REPORT RequestId: a\tDuration: 1 ms",
             "START RequestId: b Version: $LATEST", "two", "END RequestId: b", "REPORT RequestId: b\tDuration: 1 ms"]
    assert ls.invocation_lines(lines, "a") == ["one"] and ls.invocation_lines(lines, "b") == ["two"]
    assert ls.invocation_lines(["x"], "a") == ["x"]  # a stream without Lambda's marks: all of it


def test_the_portal_links_a_lambda_attempt_to_its_functions_stream() -> None:
    from jobplane.platform.control import Deployment
    from jobplane.platform.logs import LambdaLog, LogStream
    from jobplane.portal.pages import log_console_url

    on_aws = Deployment(table="t", topic_arn="arn", name_prefix="jobplane", region="ap-northeast-1")
    stream = LogStream("load", 1, "1f2e", StepLogs(None, on_aws.runner_log_group),
                       LambdaLog("/aws/lambda/jobplane-nightly-runner", "2026/12/03/[$LATEST]ab12"))
    assert log_console_url(on_aws, stream) == (
        "https://ap-northeast-1.console.aws.amazon.com/cloudwatch/home?region=ap-northeast-1#logsV2:log-groups/"
        "log-group/$252Faws$252Flambda$252Fjobplane-nightly-runner/log-events/2026$252F12$252F03$252F$255B$2524LATEST$255Dab12")
    timed_out = LogStream("load", 1, "load#1", stream.source, LambdaLog("/aws/lambda/jobplane-nightly-runner", "",
                                                                          "exec-1", "load", 1))
    assert log_console_url(on_aws, timed_out) is None
