"""A run's metric lines (issue 67 part 2): the reconciler writes, at each run's end, CloudWatch
EMF lines that hold to AWS's specification (tests/emf_spec.py), with team, job and step as the
only dimensions, the run's outcome, duration, start delay and retries, each step's duration and
attempts, and the step's own jobplane.metric values."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import Repo, served
from emf_spec import check
from jobplane.contract import emf, execution_input
from jobplane.platform.control import ControlPlane
from jobplane.platform.local.engine import LocalAWS

COUNTED = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'counted-close',
  team: 'billing',
  steps: [
    jp.python('close', 'sample_apps.progress_steps:close_tenants'),
    // fails its first attempt, succeeds its retry
    jp.python('flaky', 'sample_apps.progress_steps:resumable', kwargs={ out: '%s' },
              opts={ retry: { attempts: 2, interval: 1 } }),
  ],
}
"""


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane, Path]]:
    tmp = tmp_path_factory.mktemp("metrics")
    (tmp / "repo").mkdir()
    repo = Repo(tmp / "repo")
    repo.write("jobs/billing/counted-close.jsonnet", COUNTED % (tmp / "flaky.jsonl"))
    with served(repo) as (aws, control):
        aws.metrics_file = tmp / "metrics.jsonl"
        yield aws, control, tmp / "metrics.jsonl"


def _lines(path: Path, execution_job: str) -> list[dict[str, Any]]:
    return [check(line) for line in path.read_text().splitlines() if json.loads(line).get("job") == execution_job]


def test_a_runs_end_writes_emf_lines_of_the_run_and_each_step(counted: tuple[LocalAWS, ControlPlane, Path]) -> None:
    aws, _, path = counted
    fire = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=30)
    arn = aws.start("counted-close", execution_input.scheduled(fire))
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"  # a hang guard
    aws.wait_reconciled(arn, timeout=600)
    run, close, flaky = _lines(path, "counted-close")  # every line holds to the specification
    for doc in (run, close, flaky):
        [directive] = doc["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "Jobplane" and directive["Dimensions"] in ([["team", "job"]],
                                                                                   [["team", "job", "step"]])
    assert (run["team"], run["RunSucceeded"], run["RunFailed"], run["Retries"]) == ("billing", 1, 0, 1)
    assert run["RunDuration"] > 0 and 30 <= run["StartDelay"] < 600  # the fire was 30 s before the start
    assert (close["step"], close["StepAttempts"], close["step.invoices_sent"]) == ("close", 1, 21)
    assert (flaky["step"], flaky["StepAttempts"]) == ("flaky", 2) and flaky["StepDuration"] > 0
    assert {m["Name"]: m.get("Unit") for m in close["_aws"]["CloudWatchMetrics"][0]["Metrics"]} == {
        "StepAttempts": "Count", "StepDuration": "Seconds", "step.invoices_sent": "None"}


def test_a_line_refuses_what_the_specification_or_the_cardinality_rule_refuses() -> None:
    ok = emf.line({"team": "billing", "job": "j"}, [emf.Metric("RunSucceeded", 1, "Count")], 1_700_000_000_000)
    assert check(ok)["RunSucceeded"] == 1
    for dimensions, metrics, says in (
            ({"team": "b", "tenant": "t-1"}, [emf.Metric("x", 1)], "dimension tenant is not one of team, job, step"),
            ({"job": ""}, [emf.Metric("x", 1)], "dimension job must be a string"),
            ({"job": "j"}, [emf.Metric("x", float("nan"))], "not a finite number"),
            ({"job": "j"}, [emf.Metric("x", 1, "Tenants")], "not a CloudWatch unit"),
            ({"job": "j"}, [emf.Metric("job", 1)], "used twice"),
            ({"job": "j"}, [emf.Metric(f"m{i}", i) for i in range(101)], "1 to 100 metrics"),
            ({"job": "j"}, [], "1 to 100 metrics")):
        with pytest.raises(emf.Refused, match=says):
            emf.line(dimensions, metrics, 0)


def test_lines_written_from_many_threads_stay_whole_lines(tmp_path: Path) -> None:
    """The periodic check's fire ledger writes RunMissed lines from its worker threads: each
    must reach the log as one line of its own (a joined pair is no EMF, and both are lost)."""
    import subprocess
    import sys

    script = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from jobplane.platform.reconciler import log_line\n"
        "from jobplane.platform.run_metrics import missed_line\n"
        "line = missed_line('billing', 'j' * 200, '2026-11-30T00:00:00.000Z')\n"
        "with ThreadPoolExecutor(8) as pool:\n"
        "    list(pool.map(lambda _: log_line(line), range(20000)))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == 20000 and len(set(lines)) == 1
    assert check(lines[0])["RunMissed"] == 1
