"""A step reports its progress and counts (issue 67 part 1, docs/progress.md): the API a step's
code calls, the runner's checks and its writes to the step's own record, on the local AWS with
the runner as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Repo, served
from iam_calls import runner_env
from operator_cli import operator_cli
from jobplane.contract import execution_input
from jobplane.contract import progress as cp
from jobplane.platform.control import ControlPlane
from jobplane.platform.local.engine import LocalAWS

JOB = "month-end-close"
DEFINITION = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'month-end-close',
  team: 'billing',
  params: { tenants: 3 },
  steps: [
    jp.python('close', 'sample_apps.progress_steps:close_tenants'),
    jp.shell('export', ['sh', '-c', %s]),
  ],
}
"""
# a shell step reports by printing the line itself, and by the same API from a Python child
SHELL = ("echo '{\"jobplane\": {\"progress\": {\"done\": 2, \"total\": 5, \"unit\": \"files\"}}}'; "
         "echo '{\"jobplane\": {\"metric\": {\"name\": \"files_written\", \"value\": 4}}}'; "
         "python -c 'import jobplane; jobplane.progress(4, 5, cursor=\"f-4\")'; "
         "echo '{\"jobplane\": {\"progress\": {\"done\": \"many\"}}}'")


HELD = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'slow-read',
  team: 'billing',
  params: { release: '' },
  steps: [jp.python('read', 'sample_apps.progress_steps:read_until', opts={ stall_after: '1m' })],
}
"""


RESUMABLE = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'resumable-close',
  team: 'billing',
  params: { out: '' },
  steps: [jp.python('close', 'sample_apps.progress_steps:resumable', opts={ retry: { attempts: 2, interval: 1 } })],
}
"""


@pytest.fixture(scope="module")
def closing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane]]:
    repo = Repo(tmp_path_factory.mktemp("repo"))
    repo.write("jobs/billing/month-end-close.jsonnet", DEFINITION % json.dumps(SHELL).replace('"', "'", 0))
    repo.write("jobs/billing/slow-read.jsonnet", HELD)
    repo.write("jobs/billing/resumable-close.jsonnet", RESUMABLE)
    # the same step as a Lambda step: its runner writes with the function's role (the same calls)
    repo.write("jobs/billing/resumable-fn.jsonnet", RESUMABLE.replace("resumable-close", "resumable-fn")
               .replace("jp.python(", "jp.lambda("))
    repo.write("jobs/billing/close-or-resume.jsonnet", RESUMABLE.replace("resumable-close", "close-or-resume")
               .replace("progress_steps:resumable', opts={ retry: { attempts: 2, interval: 1 } }",
                        "progress_steps:fails_unless_resumed'"))
    with served(repo) as (aws, control):
        yield aws, control


def _run(aws: LocalAWS) -> tuple[str, Any]:
    arn = aws.start(JOB, execution_input.manual("test"))
    ex = aws.wait(arn, timeout=600)  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    return arn.rsplit(":", 1)[1], ex


def _record(aws: LocalAWS, execution: str, step: str, job: str = JOB) -> dict[str, Any]:
    item = aws.client("dynamodb").get_item(TableName=aws.resources["table_name"],
                                           Key={"pk": {"S": cp.pk(job, execution)}, "sk": {"S": step}}, ConsistentRead=True)
    return dict(item.get("Item") or {})


@pytest.fixture(scope="module")
def run(closing: tuple[LocalAWS, ControlPlane]) -> tuple[str, Any]:
    return _run(closing[0])


def test_a_python_steps_record_holds_its_last_progress_and_metrics(closing: tuple[LocalAWS, ControlPlane],
                                                                   run: tuple[str, Any]) -> None:
    aws, _ = closing
    name, ex = run
    assert ex.status == "SUCCEEDED", ex
    item = _record(aws, name, "close")
    assert item["done"] == {"N": "3"} and item["total"] == {"N": "3"}  # the last of 1, 2, 3 (and not the 1 after)
    assert item["unit"] == {"S": "tenants"} and item["cursor"] == {"S": "t-0003"}
    assert item["metrics"] == {"M": {"invoices_sent": {"N": "21"}}}
    assert item["attempt"] == {"N": "1"} and item["ended"] == {"BOOL": True}
    assert float(item["updated_at"]["N"]) >= float(item["started_at"]["N"])


def test_a_value_that_is_not_a_finite_number_is_refused_in_the_steps_log(closing: tuple[LocalAWS, ControlPlane],
                                                                         run: tuple[str, Any]) -> None:
    _, control = closing
    name, _ = run
    text = control.log_streams(name, "close")[0].read()
    assert "progress refused: progress done must be a finite number, not nan" in text
    assert "metric refused: metric rows must be a finite number, not inf" in text
    assert "metric refused: metric name 'not an identifier' must be a short identifier" in text
    assert "progress refused: done went back from 3 to 1 (progress only moves forward)" in text
    assert "done closing" in text and '"message": "step succeeded"' in text


def test_outside_a_run_the_api_does_nothing() -> None:
    code = ("import jobplane; jobplane.progress(1, 2, 'rows', 'c'); jobplane.progress(float('nan'));"
            "jobplane.metric('rows', 3); jobplane.metric('bad name', 'x'); print('fine')")
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert (out.stdout, out.stderr) == ("fine\n", "")



def test_a_shell_step_reports_by_a_line_on_its_stdout(closing: tuple[LocalAWS, ControlPlane],
                                                      run: tuple[str, Any]) -> None:
    aws, control = closing
    name, _ = run
    item = _record(aws, name, "export")
    # its own printed lines, then jobplane.progress from a Python child (which prints the same line)
    assert (item["done"], item["total"], item["unit"], item["cursor"]) == (
        {"N": "4"}, {"N": "5"}, {"S": "files"}, {"S": "f-4"})
    assert item["metrics"] == {"M": {"files_written": {"N": "4"}}}
    text = control.log_streams(name, "export")[0].read()
    assert "progress refused: progress done must be a number, not str 'many'" in text


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def warning(self, msg: str, *args: object) -> None:
        self.lines.append(msg % args)


def test_the_runner_writes_at_most_once_an_interval_and_the_last_values_at_the_end(
        closing: tuple[LocalAWS, ControlPlane]) -> None:
    from jobplane.runner.context import RunContext, TraceContext
    from jobplane.runner.progress import Reporter

    aws, _ = closing
    env = runner_env(aws)
    now = [100.0]
    ctx = RunContext(job=JOB, team="billing", step="throttled", execution_id="run-throttle", scheduled_time="",
                     trigger="manual", attempt=2, params={}, target={}, trace=TraceContext.continue_from(None))
    log = _Log()
    reporter = Reporter(ctx, log, aws.resources["table_name"], env, clock=lambda: now[0])  # type: ignore[arg-type]
    for at, done in ((100.0, 1), (101.0, 2), (109.9, 3), (110.0, 4), (115.0, 5)):
        now[0] = at
        reporter.progress(done, 10)
    assert reporter.writes == 2  # at 100 (the first) and 110 (10 s later); 2, 3 and 5 held
    assert _record(aws, "run-throttle", "throttled")["done"] == {"N": "4"}
    reporter.finish()
    assert reporter.writes == 3 and log.lines == []
    item = _record(aws, "run-throttle", "throttled")
    assert (item["done"], item["ended"], item["attempt"]) == ({"N": "5"}, {"BOOL": True}, {"N": "2"})
    # a late write of an earlier attempt does not overwrite the later one's record
    old = Reporter(RunContext(**{**{n: getattr(ctx, n) for n in ctx._COMPARED}, "attempt": 1}), log,  # type: ignore[arg-type]
                   aws.resources["table_name"], env)
    old.progress(9, 10)
    assert _record(aws, "run-throttle", "throttled")["done"] == {"N": "5"} and log.lines == []


def _cli(aws: LocalAWS, control: ControlPlane, tmp_path: Path, *args: str) -> Any:
    """`jobplane ARGS` as an operator's shell on AWS runs it (tests/operator_cli.py)."""
    return operator_cli(aws, control, tmp_path, Path(str(control.deployment.catalog_path)).parent, *args)


def _portal(control: ControlPlane) -> Any:
    from operator_cli import operator_portal

    return operator_portal(control)


def test_a_running_steps_progress_is_shown_by_status_the_api_and_the_execution_page(
        closing: tuple[LocalAWS, ControlPlane], tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from portal_kit import READER, as_user

    aws, control = closing
    release = tmp_path / "release"
    arn = aws.start("slow-read", execution_input.manual("test", overrides={"release": str(release)}))
    name = arn.rsplit(":", 1)[1]
    try:
        deadline = time.monotonic() + 300  # a hang guard
        while not [p for p in control.step_progress("slow-read", name) if p.done == 2]:
            assert time.monotonic() < deadline, "the step never reported its progress"
            time.sleep(0.1)
        status = _cli(aws, control, tmp_path, "status").output
        line = next(x for x in status.splitlines() if x.startswith(f"  slow-read: {name} read: "))
        assert line.startswith(f"  slow-read: {name} read: 2 of 5 rows (40%), "), status
        assert ", at r-2, updated " in line  # the metric that followed waits for the next write (10 s) or the end
        [run] = [r for j in json.loads(_cli(aws, control, tmp_path, "status", "--json").output)
                 if j["job"] == "slow-read" for r in j["progress"]]
        [step] = run["steps"]
        assert run["execution"] == name and (step["step"], step["done"], step["total"], step["fraction"],
                                             step["ended"]) == ("read", 2, 5, 0.4, False)
        with TestClient(_portal(control)) as client:
            out = client.get(f"/api/executions/{name}", headers=as_user(READER)).json()
            [api] = out["progress"]
            assert (api["step"], api["done"], api["total"], api["unit"], api["cursor"], api["ended"]) == (
                "read", 2, 5, "rows", "r-2", False)
            page = client.get(f"/executions/{name}", headers=as_user(READER)).text
            assert '<tr data-progress-step="read" data-ended="false">' in page
            assert '<progress value="0.4000" max="1" aria-label="read progress">40%</progress>' in page
            assert '<span data-progress-text>2 of 5 rows (40%)</span>' in page and "at r-2" in page
            # the jobs page's row of the running job says it in a few words, read in the page's own load
            jobs = client.get("/?team=billing", headers=as_user(READER)).text
            row = jobs[jobs.index('<tr data-job="slow-read">'):]
            row = row[:row.index("</tr>")]
            assert '<div class="muted" data-progress>read: 2 of 5 rows (40%)' in row, row
    finally:
        release.write_text("go")  # the held step ends whatever was asserted
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    [final] = control.step_progress("slow-read", name)
    assert (final.done, final.ended, final.eta_seconds, final.metrics) == (5, True, None, {"rows_read": 2})


def test_jobplane_run_ends_with_each_steps_last_progress(closing: tuple[LocalAWS, ControlPlane],
                                                        tmp_path: Path) -> None:
    aws, control = closing
    result = _cli(aws, control, tmp_path, "run", JOB)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "  close: 3 of 3 tenants (100%), at t-0003, invoices_sent=21 (final)" in lines, result.output
    assert "  export: 4 of 5 files (80%), at f-4, files_written=4 (final)" in lines


def _iam_call(request: dict[str, Any], target: str) -> Any:
    """A runner's DynamoDB request as IAM authorizes it: the action, the table and the condition
    keys of a fine-grained policy, the partition key values and every attribute named
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html)."""
    import base_module as bm
    from iam_policy import Call

    names = set(request["Key"]) | set(request.get("ExpressionAttributeNames", {}).values())
    context: dict[str, Any] = {"dynamodb:LeadingKeys": [request["Key"]["pk"]["S"]], "dynamodb:Attributes": sorted(names)}
    for param in ("ReturnValues", "Select"):  # single-valued keys, present when the request sets them
        if param in request:
            context[f"dynamodb:{param}"] = request[param]
    return Call(f"dynamodb:{target.rsplit('.', 1)[1]}",
                f"arn:aws:dynamodb:{bm.REGION}:{bm.ACCOUNT}:table/{request['TableName']}", context,
                "the runner's progress write")


def _runner_calls(aws: LocalAWS, monkeypatch: pytest.MonkeyPatch, job: str = JOB) -> list[Any]:
    """The requests a step attempt's reporter really sends (a retry's checkpoint read, a write,
    the last write), as IAM authorizes them."""
    import base_module as bm
    from jobplane.runner.context import RunContext, TraceContext
    from jobplane.runner.progress import Reporter

    from iam_calls import runner_requests

    sent = runner_requests(monkeypatch)
    env = runner_env(aws)
    ctx = RunContext(job=job, team="billing", step="scoped", execution_id="run-scoped", scheduled_time="",
                     trigger="manual", attempt=2, params={}, target={}, trace=TraceContext.continue_from(None))
    log = _Log()
    reporter = Reporter(ctx, log, bm.PREFIX, env)  # type: ignore[arg-type]
    assert reporter.resume_from() is None  # a retry reads its checkpoint: none here
    reporter.metric("rows", 1)  # the first write: a metric alone
    reporter.progress(1, 4, "files", "f-1")
    reporter.finish()  # the last: every attribute
    assert log.lines == [] and len(sent) == 3 and _record(aws, "run-scoped", "scoped", job)["done"] == {"N": "1"}
    calls = [_iam_call(request, target) for target, request in sent]
    assert [c.action for c in calls] == ["dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:UpdateItem"]
    return calls


def _holds_progress_to(statements: list[dict[str, Any]], calls: list[Any]) -> None:
    """Every call allowed, every statement needed by one, each naming exactly the attributes the
    runner uses, and nothing else: not a run's record, not another attribute, no other action."""
    from iam_policy import Call, allowed, statement_allows

    assert [str(c) for c in calls if not allowed(statements, c)] == []
    assert all(any(statement_allows(s, c) for c in calls) for s in statements)
    by_sid = {s["sid"]: [c["values"] for c in s["condition"] if c["variable"] == "dynamodb:Attributes"][0]
              for s in statements}
    assert sorted(by_sid["WriteStepProgress"]) == sorted(cp.ATTRIBUTES) == calls[-1].context["dynamodb:Attributes"]
    assert sorted(by_sid["ReadStepCheckpoint"]) == sorted(cp.READ_ATTRIBUTES) == calls[0].context["dynamodb:Attributes"]
    table = calls[0].resource
    for call in (Call("dynamodb:UpdateItem", table, {"dynamodb:LeadingKeys": ["EXEC#run-scoped"],
                                                     "dynamodb:Attributes": ["pk", "sk", "done"]}),
                 Call("dynamodb:UpdateItem", table, {"dynamodb:LeadingKeys": ["JOB#month-end-close"],
                                                     "dynamodb:Attributes": ["pk", "sk", "attempt"]}),
                 Call("dynamodb:UpdateItem", table, {"dynamodb:LeadingKeys": ["PROGRESS#run-scoped"],
                                                     "dynamodb:Attributes": ["pk", "sk", "status"]}),
                 Call("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": ["PROGRESS#run-scoped"],
                                                  "dynamodb:Attributes": ["pk", "sk", "metrics"]}),
                 Call("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": ["EXEC#run-scoped"],
                                                  "dynamodb:Attributes": ["pk", "sk", "cursor"]}),
                 # an answer that would carry attributes the grant leaves out (AWS's companions)
                 Call("dynamodb:UpdateItem", table, calls[-1].context | {"dynamodb:ReturnValues": "ALL_NEW"}),
                 Call("dynamodb:UpdateItem", table, calls[-1].context | {"dynamodb:ReturnValues": "ALL_OLD"}),
                 Call("dynamodb:GetItem", table, calls[0].context | {"dynamodb:Select": "ALL_ATTRIBUTES"}),
                 Call("dynamodb:PutItem", table, calls[1].context),
                 Call("dynamodb:Query", table, calls[0].context),
                 Call("dynamodb:DeleteItem", table, calls[1].context)):
        assert not allowed(statements, call), call


def test_the_runner_task_role_may_write_its_steps_progress_records_and_nothing_else(
        closing: tuple[LocalAWS, ControlPlane], monkeypatch: pytest.MonkeyPatch) -> None:
    import base_module as bm

    aws, _ = closing
    _holds_progress_to(bm.policy_statements("runner_progress", {}), _runner_calls(aws, monkeypatch))


def test_a_jobs_team_task_role_may_write_its_steps_progress_records_and_nothing_else(
        closing: tuple[LocalAWS, ControlPlane], monkeypatch: pytest.MonkeyPatch) -> None:
    """The role an ECS step of the job runs with now (its team's task role, RunTask's override:
    compiler/task_roles.py) holds the runner's real requests as the base role did, held to the
    progress records of its own team's jobs (tests/test_progress_scope.py: which ones)."""
    from test_progress_scope import _ecs_role

    aws, _ = closing
    rid, statements = _ecs_role(JOB)
    assert rid != "runner_task"
    progress = [s for s in statements if s["sid"] in ("WriteStepProgress", "ReadStepCheckpoint")]
    assert len(progress) == 2
    _holds_progress_to(progress, _runner_calls(aws, monkeypatch))


def test_a_jobs_lambda_runner_role_may_write_its_steps_progress_records_and_nothing_else(
        closing: tuple[LocalAWS, ControlPlane], monkeypatch: pytest.MonkeyPatch) -> None:
    """A Lambda step's runner writes with its function's role: the compiled role of the job's
    runner function holds it to the same calls as the ECS runner's, and the function's
    environment names the table as the task definition's does."""
    import base_module as bm
    from jobplane.compiler import asl
    from jobplane.compiler.model import Job
    from jobplane.compiler.terraform import job_module
    from jobplane.contract.config import PlatformConfig

    aws, _ = closing
    job = Job.from_definition({"name": "fn-close", "team": "billing", "timezone": "UTC", "steps": [
        {"name": "close", "lambda": "sample_apps.progress_steps:close_tenants"}]})

    doc = job_module(job, asl.compile_job(job, bm.PREFIX), PlatformConfig(root=Path("."), name_prefix=bm.PREFIX))
    (role, function), = doc["resource"]["aws_lambda_function"].items()
    assert function["environment"]["variables"][cp.ENV_TABLE] == "${local.platform.table_name}"
    # the job roots read the table's ARN from the base module's output (table_arn = its table's)
    table_arn = bm.resolve("${aws_dynamodb_table.jobplane.arn}", {})
    progress = [bm.resolve(s, {"local.platform.table_arn": table_arn})
                for s in doc["data"]["aws_iam_policy_document"][role]["statement"]
                if s["sid"] in ("WriteStepProgress", "ReadStepCheckpoint")]
    assert len(progress) == 2
    _holds_progress_to(progress, _runner_calls(aws, monkeypatch, "fn-close"))  # its own job's records


def test_every_runner_task_definition_names_the_table() -> None:
    """On AWS the runner finds the table where the local engine's task definition gives it: the
    base module's, and the own task definition of a job whose ECS steps have secrets."""
    import base_module as bm
    from jobplane.compiler.output import compile_all
    from jobplane.contract.config import load_config

    text = (bm.MODULE / "runner.tf").read_text()
    assert f'environment = [{{ name = "{cp.ENV_TABLE}", value = aws_dynamodb_table.jobplane.name }}]' in text
    root = Path(__file__).resolve().parents[1]
    compiled = json.loads(compile_all(load_config(root)).files["teams/billing/month-end-close.job.tf.json"])
    [container] = json.loads(compiled["resource"]["aws_ecs_task_definition"]["month_end_close"]["container_definitions"])
    assert {"name": cp.ENV_TABLE, "value": "${local.platform.table_name}"} in container["environment"]


def test_a_write_that_fails_is_one_warning_and_the_end_tries_once_more(tmp_path: Path) -> None:
    """Nothing answers at the endpoint (a closed port): the step is told once, never raised
    to, and not held again before its end."""
    import socket

    from jobplane.runner.context import RunContext, TraceContext
    from jobplane.runner.progress import Reporter

    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{s.getsockname()[1]}", "AWS_ACCESS_KEY_ID": "k",
               "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"}
        ctx = RunContext(job=JOB, team="billing", step="offline", execution_id="run-offline", scheduled_time="",
                         trigger="manual", attempt=1, params={}, target={}, trace=TraceContext.continue_from(None))
        log = _Log()
        now = [0.0]
        reporter = Reporter(ctx, log, "jobplane", env, clock=lambda: now[0])  # type: ignore[arg-type]
        tries: list[float] = []
        from jobplane.runner import aws_requests

        real = aws_requests._send

        def counted(*args: Any) -> Any:
            tries.append(now[0])
            return real(*args)

        aws_requests._send = counted  # type: ignore[assignment]
        try:
            for t in (0.0, 20.0, 40.0):
                now[0] = t
                reporter.progress(t, 100)
            reporter.finish()
        finally:
            aws_requests._send = real  # type: ignore[assignment]
    assert [line.split(":")[0] for line in log.lines] == ["progress not recorded (kept for the next write)"]
    assert sorted(set(tries)) == [0.0, 40.0] and reporter.writes == 0  # the first report's, then the end's


@pytest.mark.parametrize("job", ["resumable-close", "resumable-fn"])
def test_a_retry_resumes_from_the_cursor_its_earlier_attempt_reported(closing: tuple[LocalAWS, ControlPlane],
                                                                      tmp_path: Path, job: str) -> None:
    """On ECS and on Lambda: the runner writes the step's record and reads it back on the retry."""
    aws, control = closing
    out = tmp_path / "attempts.jsonl"
    arn = aws.start(job, execution_input.manual("test", overrides={"out": str(out)}))
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"  # a hang guard
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"attempt": 1, "resumed": None}, {"attempt": 2, "resumed": "t-0002"}]
    [p] = control.step_progress(job, arn.rsplit(":", 1)[1])
    assert (p.attempt, p.done, p.cursor, p.ended) == (2, 5, "t-0005", True)


def _held_run(aws: LocalAWS, control: ControlPlane, release: Path) -> tuple[str, str]:
    """A slow-read run whose step reported 2 of 5 rows and waits for ``release``."""
    arn = aws.start("slow-read", execution_input.manual("test", overrides={"release": str(release)}))
    name = arn.rsplit(":", 1)[1]
    deadline = time.monotonic() + 300  # a hang guard
    while not [p for p in control.step_progress("slow-read", name) if p.done == 2]:
        assert time.monotonic() < deadline, "the step never reported its progress"
        time.sleep(0.1)
    return arn, name


def test_a_step_quiet_past_its_stall_after_is_announced_once_a_stall(closing: tuple[LocalAWS, ControlPlane],
                                                                     tmp_path: Path) -> None:
    """slow-read's step reports 2 of 5 rows, then waits: the periodic check (a clock it is given)
    finds nothing within its minute, one STALLED after it (published to the topic, routed where
    failures go, saying the step and its last progress), nothing more for the same stall, and
    nothing once the step ended. The check's calls are the periodic role's."""
    from datetime import datetime, timedelta, timezone

    import base_module as bm
    from iam_calls import calls_into, iam_calls
    from iam_policy import Call, denied_calls
    from jobplane.contract.notifications import NotificationMessage, subscribed
    from jobplane.contract.statuses import DEFAULT_EVENTS
    from jobplane.platform.stalls import StallWatch

    aws, control = closing
    sqs = aws.client("sqs")
    queue = sqs.create_queue(QueueName="stalls")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    aws.client("sns").subscribe(TopicArn=control.deployment.topic_arn, Protocol="sqs", Endpoint=queue_arn,
                                Attributes={"RawMessageDelivery": "true"})
    release = tmp_path / "release"
    arn, name = _held_run(aws, control, release)
    try:
        [p] = control.step_progress("slow-read", name)
        at = datetime.fromtimestamp(p.updated_at, timezone.utc)
        clock = [at + timedelta(seconds=30)]
        watch = StallWatch(control.reads, aws.client("sns"), control.deployment.topic_arn, clock=lambda: clock[0])
        assert watch.check() == []  # within its minute
        clock[0] = at + timedelta(minutes=2)
        recorded: list[dict[str, Any]] = []
        with calls_into(recorded):
            [stall] = watch.check()
        assert (stall.job, stall.execution, stall.step, stall.quiet_seconds) == ("slow-read", name, "read", 120)
        assert watch.check() == []  # once a stall
        body = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5)["Messages"][0]["Body"]
        message = NotificationMessage.model_validate_json(body)
        assert (message.event, message.execution, message.outcome.status, message.outcome.step) == (
            "STALLED", name, "RUNNING", "read")
        assert message.error is not None and "no progress for 2m" in message.error and "2 of 5 rows (40%) at r-2" in message.error
        assert subscribed(message, tuple(e.value for e in DEFAULT_EVENTS))  # where failures go
        # the periodic role (terraform/platform/slow.tf) allows each call the check made, as AWS
        # authorizes it: the base module's names for the local prefix, a table Query by its leading key
        table, local = bm.ARNS["aws_dynamodb_table"](bm.PREFIX), control.deployment.name_prefix
        calls = []
        for r in recorded:
            service, op, params = r["service"], r["operation"], r["params"]
            if service == "dynamodb":
                index = f"/index/{params['IndexName']}" if params.get("IndexName") else ""
                keys = ({"dynamodb:LeadingKeys": [params["ExpressionAttributeValues"][":pk"]["S"]]}
                        if op == "Query" and not index else {})
                calls.append(Call(f"dynamodb:{op}", table + index, keys, op))
            elif service == "sns":
                calls.append(Call("sns:Publish", bm.ARNS["aws_sns_topic"](f"{bm.PREFIX}-events"), {}, op))
            else:
                assert service == "stepfunctions", service
                parts = params["executionArn"].split(":")
                calls.append(Call(f"states:{op}", ":".join(parts[:6] + [parts[6].replace(local, bm.PREFIX, 1)]
                                                           + parts[7:]), {}, op))
        assert any(c.action == "dynamodb:Query" and c.context for c in calls)
        assert denied_calls(bm.policy_statements("slow", {}), calls) == []
    finally:
        release.write_text("go")
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    clock[0] = at + timedelta(hours=1)
    assert watch.check() == []  # it ended


def test_a_stall_is_marked_once_for_the_same_values_and_again_after_the_step_moved(
        closing: tuple[LocalAWS, ControlPlane]) -> None:
    from jobplane.runner.context import RunContext, TraceContext
    from jobplane.runner.progress import Reporter

    aws, control = closing
    env = runner_env(aws)
    ctx = RunContext(job=JOB, team="billing", step="marked", execution_id="run-marked", scheduled_time="",
                     trigger="manual", attempt=1, params={}, target={}, trace=TraceContext.continue_from(None))
    ticks = [0.0]
    reporter = Reporter(ctx, _Log(), aws.resources["table_name"], env, clock=lambda: ticks[0])  # type: ignore[arg-type]
    repo = control.context.repo
    reporter.progress(1, 10)
    [first] = control.step_progress(JOB, "run-marked")
    assert repo.mark_stalled(JOB, "run-marked", "marked", first.updated_at)
    assert not repo.mark_stalled(JOB, "run-marked", "marked", first.updated_at)  # the same stall
    time.sleep(0.01)  # a later report's updated_at differs (milliseconds)
    ticks[0] = 60.0  # past the write interval: written at once
    reporter.progress(2, 10)
    [moved] = control.step_progress(JOB, "run-marked")
    assert moved.updated_at != first.updated_at
    assert not repo.mark_stalled(JOB, "run-marked", "marked", first.updated_at)  # not the newest values
    assert repo.mark_stalled(JOB, "run-marked", "marked", moved.updated_at)  # stalled again
    reporter.finish()
    [ended] = control.step_progress(JOB, "run-marked")
    assert ended.ended and not repo.mark_stalled(JOB, "run-marked", "marked", ended.updated_at)  # an ended step never


def test_a_retrys_first_write_is_no_longer_marked_ended(closing: tuple[LocalAWS, ControlPlane]) -> None:
    """The earlier attempt's last write marked the record ended; the retry's first one clears it,
    so the pages show a running retry's ETA and the stall check watches it."""
    from jobplane.runner.context import RunContext, TraceContext
    from jobplane.runner.progress import Reporter

    aws, control = closing
    env = runner_env(aws)
    for attempt in (1, 2):
        ctx = RunContext(job=JOB, team="billing", step="retried", execution_id="run-retried", scheduled_time="",
                         trigger="manual", attempt=attempt, params={}, target={},
                         trace=TraceContext.continue_from(None))
        reporter = Reporter(ctx, _Log(), aws.resources["table_name"], env)  # type: ignore[arg-type]
        reporter.progress(attempt, 5)
        [p] = control.step_progress(JOB, "run-retried")
        assert (p.attempt, p.ended) == (attempt, False)
        reporter.finish()
        [p] = control.step_progress(JOB, "run-retried")
        assert (p.attempt, p.ended) == (attempt, True)


@pytest.mark.parametrize(("opts", "says"), [
    ({"stall_after": "30s"}, "stall_after (30s) must be at least 1m and shorter than the step's timeout (3600s)"),
    ({"stall_after": "1h"}, "stall_after (3600s) must be at least 1m and shorter than the step's timeout (3600s)"),
    ({"stall_after": "5m", "timeout": "5m"}, "stall_after (300s) must be at least 1m"),
])
def test_stall_after_is_refused_where_no_check_could_tell_a_stall(opts: dict[str, Any], says: str) -> None:
    from jobplane.compiler.fields import Invalid
    from jobplane.compiler.model import Job, Step

    with pytest.raises(Invalid) as raised:
        Step.from_definition({"name": "s", "python": "m:f", **opts})
    assert says in str(raised.value)
    with pytest.raises(Invalid) as raised:
        Job.from_definition({"name": "j", "team": "billing", "steps": [
            {"name": "g", "stall_after": "5m", "parallel": [{"name": "a", "python": "m:f"},
                                                            {"name": "b", "python": "m:f"}]}]})
    assert "stall_after applies to a step that runs, not a parallel group" in str(raised.value)
    ok = Job.from_definition({"name": "j", "team": "billing", "steps": [
        {"name": "g", "parallel": [{"name": "a", "python": "m:f", "stall_after": "10m"}, {"name": "b", "python": "m:f"}]}]})
    assert ok.all_steps()[1].stall_after == 600


def test_a_rerun_from_the_failed_step_resumes_at_its_checkpoint_or_from_scratch(
        closing: tuple[LocalAWS, ControlPlane], tmp_path: Path) -> None:
    """The checkpoint reaches a re-run (a new execution): the run failed at tenant 3 after
    reporting t-0002; its re-run from the step resumes there (and succeeds), the page's re-run
    form says so and offers a start from scratch, which starts over (and fails again)."""
    from fastapi.testclient import TestClient

    from portal_kit import as_user

    aws, control = closing
    out = tmp_path / "runs.jsonl"
    arn = aws.start("close-or-resume", execution_input.manual("test", overrides={"out": str(out)}))
    assert aws.wait(arn, timeout=600).status == "FAILED"  # a hang guard
    aws.wait_reconciled(arn, timeout=600)
    failed = arn.rsplit(":", 1)[1]
    with TestClient(_portal(control)) as client:
        page = client.get(f"/executions/{failed}", headers=as_user("dev@localhost")).text
    assert '<p class="rerun-checkpoint" data-checkpoint="t-0002">' in page and 'id="rerun-from-scratch"' in page
    resumed = control.rerun(failed, "dev@localhost", from_failed_step=True)
    assert aws.wait(control.deployment.execution_arn("close-or-resume", resumed), timeout=600).status == "SUCCEEDED"
    [p] = control.step_progress("close-or-resume", resumed)
    assert (p.attempt, p.done, p.cursor, p.ended) == (1, 5, "t-0005", True)
    over = control.rerun(failed, "dev@localhost", from_failed_step=True, from_scratch=True)
    assert aws.wait(control.deployment.execution_arn("close-or-resume", over), timeout=600).status == "FAILED"
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"resumed": None}, {"resumed": "t-0002"}, {"resumed": None}]


class _RefusingSns:
    """An SNS client whose Publish fails (a throttle, a KMS error): what the stall check must
    survive without losing the alert."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def publish(self, **_: Any) -> Any:
        raise RuntimeError("Throttling: Rate exceeded")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def test_a_stall_whose_alert_was_not_published_is_announced_by_the_next_pass(
        closing: tuple[LocalAWS, ControlPlane], tmp_path: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from jobplane.platform.stalls import StallWatch

    aws, control = closing
    release = tmp_path / "release"
    arn, name = _held_run(aws, control, release)
    try:
        [p] = control.step_progress("slow-read", name)
        later = datetime.fromtimestamp(p.updated_at, timezone.utc) + timedelta(minutes=2)
        sns = aws.client("sns")
        refused = StallWatch(control.reads, _RefusingSns(sns), control.deployment.topic_arn, clock=lambda: later)
        with pytest.raises(RuntimeError, match="Throttling"):
            refused.check()  # the periodic pass fails (Lambda retries it)
        again = StallWatch(control.reads, sns, control.deployment.topic_arn, clock=lambda: later)
        assert [(s.execution, s.step) for s in again.check()] == [(name, "read")]  # told now, once
        assert again.check() == []
    finally:
        release.write_text("go")
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"


def test_the_jobs_page_reads_at_most_shown_running_runs_and_shows_the_step_still_going(
        closing: tuple[LocalAWS, ControlPlane], monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of many running jobs reads the steps of SHOWN runs (the catalog names them) in one
    BatchGetItem, the same runs on every load; a run's line is its step still going that
    reported last, never a step that ended; a read that fails leaves the page its rows."""
    from jobplane.contract.catalog import CatalogJob, CatalogStep
    from jobplane.contract.records import JobState
    from jobplane.platform.control import JobSummary
    from jobplane.portal import running_progress

    aws, _ = closing
    ddb, table = aws.client("dynamodb"), aws.resources["table_name"]

    def record(execution: str, step: str, started: float, updated: float, done: int, total: int | None = None,
               unit: str | None = None, ended: bool = False) -> None:  # as the runner writes one
        item = {"pk": {"S": cp.pk(f"j{execution.rsplit('-', 1)[1].zfill(3)}", execution)}, "sk": {"S": step},
                cp.ATTR_ATTEMPT: {"N": "1"},
                cp.ATTR_STARTED_AT: {"N": str(started)}, cp.ATTR_UPDATED_AT: {"N": str(updated)},
                cp.ATTR_DONE: {"N": str(done)}}
        if total is not None:
            item[cp.ATTR_TOTAL] = {"N": str(total)}
        if unit:
            item[cp.ATTR_UNIT] = {"S": unit}
        if ended:
            item[cp.ATTR_ENDED] = {"BOOL": True}
        ddb.put_item(TableName=table, Item=item)

    steps = [CatalogStep(name=n, kind="python") for n in ("extract", "load", "prepare")]

    def entry(name: str) -> CatalogJob:
        return CatalogJob(name=name, team="billing", policy="SKIP_IF_RUNNING", timeout=3600, steps=steps,
                          state_machine=f"jp-{name}", asl="", states=0)

    jobs = [JobSummary(entry(f"j{i:03}"), JobState(f"j{i:03}", running=frozenset({f"pg-b-{i}", f"pg-a-{i}"})))
            for i in range(running_progress.SHOWN + 10)] + [JobSummary(entry("idle"), JobState("idle"))]
    for i in range(running_progress.SHOWN + 10):
        record(f"pg-a-{i}", "extract", 0.0, 50.0, 10, 10, ended=True)
        record(f"pg-a-{i}", "load", 100.0, 200.0, 25, 100, "tenants")
        record(f"pg-a-{i}", "prepare", 0.0, 150.0, 3)
        record(f"pg-b-{i}", "load", 100.0, 200.0, 99, 100, "tenants")  # the other run: not the one shown
    asked: list[dict[str, Any]] = []
    real = ddb.batch_get_item

    def recorded(**kw: Any) -> Any:
        asked.append(kw)
        return real(**kw)

    monkeypatch.setattr(ddb, "batch_get_item", recorded)
    shown = running_progress.page_progress(ddb, table, jobs)
    assert len(asked) == 1  # one request: SHOWN runs x 3 steps = 72 keys
    keys = [(k["pk"]["S"], k["sk"]["S"]) for k in asked[0]["RequestItems"][table]["Keys"]]
    assert sorted(keys) == sorted((cp.pk(f"j{i:03}", f"pg-a-{i}"), s.name) for i in range(running_progress.SHOWN)
                                  for s in steps)
    assert set(shown) == {f"j{i:03}" for i in range(running_progress.SHOWN)}
    # 25 in 100 s: 75 more take 300 s after the report at 200 s (epoch 500 = 00:08:20 UTC)
    assert shown["j000"] == "load: 25 of 100 tenants (25%), ETA 00:08 UTC"
    monkeypatch.setattr(ddb, "batch_get_item", lambda **kw: (_ for _ in ()).throw(RuntimeError("throttled")))
    assert running_progress.page_progress(ddb, table, jobs) == {}  # the rows stay, without a line
