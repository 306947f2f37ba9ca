"""A step reports its progress and counts (issue 67 part 1, docs/progress.md): the API a step's
code calls, the runner's checks and its writes to the step's own record, on the local AWS with
the runner as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import Repo, served
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


@pytest.fixture(scope="module")
def closing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane]]:
    repo = Repo(tmp_path_factory.mktemp("repo"))
    repo.write("jobs/billing/month-end-close.jsonnet", DEFINITION % json.dumps(SHELL).replace('"', "'", 0))
    with served(repo) as (aws, control):
        yield aws, control


def _run(aws: LocalAWS) -> tuple[str, Any]:
    arn = aws.start(JOB, execution_input.manual("test"))
    ex = aws.wait(arn, timeout=600)  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    return arn.rsplit(":", 1)[1], ex


def _record(aws: LocalAWS, execution: str, step: str) -> dict[str, Any]:
    item = aws.client("dynamodb").get_item(TableName=aws.resources["table_name"],
                                           Key={"pk": {"S": cp.pk(execution)}, "sk": {"S": step}}, ConsistentRead=True)
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
    env = {"AWS_ENDPOINT_URL": str(aws.endpoint_url), "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id,
           "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key, "AWS_REGION": aws.region}
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
