"""The execution page's log view: runner lines parsed into columns, filtered by level and text,
and the CloudWatch console link of a platform on AWS."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from jobplane.contract import runner as rc
from jobplane.platform.control import Deployment
from jobplane.portal import logview
from jobplane.portal.pages import log_console_url

HERE = Path(__file__).resolve().parent


def runner_output(mode: str) -> str:
    """What the real runner prints for a python step that succeeds or raises."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(HERE), rc.ENV_JOB: "j", rc.ENV_STEP: "s",
           rc.ENV_TARGET: json.dumps({"kind": "python", "target": "sample_apps.functions:behave"}),
           rc.ENV_PARAMS: json.dumps({"mode": mode})}
    runner = str(Path(sys.executable).parent / "jobplane-runner")
    return subprocess.run([runner, "run", "python"], env=env, capture_output=True, text=True, timeout=120).stdout


def test_runner_lines_become_columns_with_the_error_expanded() -> None:
    text = "a line printed before the runner started\n" + runner_output("fail")
    lines = logview.parse(text)
    assert lines[0].level == "" and lines[0].message == "a line printed before the runner started"
    started, failed = lines[1], lines[-1]
    assert (started.level, started.message, started.logger) == ("info", "step started", "jobplane.runner")
    assert started.fields["kind"] == "python" and "job" not in started.fields  # the page names the run once
    assert failed.is_error and failed.error_type == "ConnectionError"
    assert failed.traceback.endswith("ConnectionError: partner API answered 503")
    assert failed.fields["retryable"] is True


def test_a_line_too_deep_to_parse_is_shown_as_printed() -> None:
    """A step prints what it likes: a line of ~1,000 brackets made json.loads raise
    RecursionError, and the execution page answered 500 for that run."""
    deep = "[" * 5000 + "]" * 5000
    lines = logview.parse("before\n" + deep + "\nafter")
    assert [(line.level, line.message) for line in lines] == [("", "before"), ("", deep), ("", "after")]


def test_filters_keep_a_level_and_above_and_lines_without_one() -> None:
    lines = logview.parse("plain text\n" + runner_output("fail"))
    errors = logview.select(lines, "error")
    assert [line.message for line in errors] == ["plain text", "step failed"]
    assert [line.message for line in logview.select(lines, None, "PARTNER api")] == ["step failed"]  # the traceback
    assert logview.select(lines, "info", "no such words") == []
    assert logview.checked_level("<script>") is None and logview.select(lines, "<script>") == lines


def test_the_cloudwatch_link_is_for_a_platform_on_aws_only() -> None:
    stream = type("S", (), {"task_id": "5f0c"})()
    on_aws = Deployment(table="t", topic_arn="arn", name_prefix="jobplane", region="ap-northeast-1")
    url = log_console_url(on_aws, stream)
    # the console's fragment escapes each path segment twice, with '$' for '%'
    assert url == ("https://ap-northeast-1.console.aws.amazon.com/cloudwatch/home?region=ap-northeast-1"
                   "#logsV2:log-groups/log-group/$252Fjobplane$252Frunner/log-events/runner$252Frunner$252F5f0c")
    assert rc.log_stream("5f0c") == "runner/runner/5f0c" and on_aws.runner_log_group == "/jobplane/runner"
    local = Deployment(table="t", topic_arn="arn", endpoint_url="http://127.0.0.1:4566")
    assert log_console_url(local, stream) is None
