"""What `jobplane run`, the portal's API and the alert say about a run that was stopped or timed
out (issue 65 items 3 and 5), on `jobplane dev`'s platform started in the test, with the real
runner as a subprocess:

- stopped while a map's items run: the stopped step is the map (the one running), not its items
  step, which had succeeded;
- stopped during attempt 2 after a kill -9 of attempt 1: the line shows no exit code (attempt
  2's own: none), not attempt 1's 137;
- a step that times out is never retried (its catcher goes to the timed-out record), so the
  attempt line promises no retry.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from devkit import signed_in
from jobplane.cli import main
from slack_receiver import Receiver
from test_dev_platform import finished, receiver, repo_root, start_platform, wait_for  # noqa: F401 (fixtures)

FANOUT = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'month-end-fanout',
  team: 'billing',
  schedule: jp.manual,
  params: { count: 4, hold: null, hold_dir: null },
  steps: [
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.fanout:close_month'),
           opts={ max_concurrency: 4 }),
  ],
}
"""
RETRIED = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'retried-wait',
  team: 'billing',
  schedule: jp.manual,
  params: { mode: 'wait', release: null, seconds: 300, marker: null },
  steps: [jp.python('wait', 'sample_apps.functions:behave', opts={ retry: jp.retry(2, '1s') })],
}
"""
TIMES_OUT = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'times-out',
  team: 'billing',
  schedule: jp.manual,
  params: { mode: 'sleep', seconds: 300 },
  steps: [jp.python('slow', 'sample_apps.functions:behave', opts={ timeout: '2s', retry: jp.retry(2, '5s') })],
}
"""


def _cli(root: Path, data: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--root", str(root), *args, "--data-dir", str(data)])


def _stop_from_another_process(root: Path, data: Path, name: str, reason: str) -> subprocess.CompletedProcess[str]:
    """`jobplane stop` as an operator's second terminal runs it. Not a second CliRunner beside the
    background run's: CliRunner swaps the process's sys.stdout while it runs, so a line the run
    printed during the stop went into the stop's output (attempt 1's line, lost once in CI)."""
    return subprocess.run([str(Path(sys.executable).with_name("jobplane")), "--root", str(root), "stop", name,
                           "--reason", reason, "--data-dir", str(data)], capture_output=True, text=True, timeout=300)


def _run_in_background(root: Path, data: Path, *args: str) -> tuple[threading.Thread, list[Result]]:
    out: list[Result] = []
    thread = threading.Thread(target=lambda: out.append(_cli(root, data, "run", *args)), daemon=True)
    thread.start()
    return thread, out


def _running(platform: Any, job: str) -> str:
    state = wait_for(lambda: (s := platform.control.repo.job_state(job)) and s.running and s, what=f"{job} running")
    return str(next(iter(state.running)))


def _api(platform: Any, path: str) -> Any:
    with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/api{path}", timeout=60) as r:
        return json.loads(r.read())


def test_a_stop_while_a_maps_items_run_is_blamed_on_the_map(repo_root: Path, tmp_path: Path,
                                                              receiver: Receiver) -> None:
    (repo_root / "jobs" / "billing" / "month-end-fanout.jsonnet").write_text(FANOUT)
    data = tmp_path / "data"
    platform = start_platform(repo_root, data, webhook=receiver.url)
    try:
        hold = tmp_path / "hold"
        hold.mkdir()
        thread, out = _run_in_background(repo_root, data, "month-end-fanout", "-p", "hold=t-0002",
                                         "-p", f"hold_dir={hold}")
        wait_for(lambda: (hold / "t-0002.pid").exists(), timeout=300, what="the held item to start")
        name = _running(platform, "month-end-fanout")
        stopped = _stop_from_another_process(repo_root, data, name, "testing the blame")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        thread.join(timeout=600)
        [r] = out
        assert r.exit_code == 1
        last = [line for line in r.output.splitlines() if line.startswith("ABORTED")]
        assert last and last[0].startswith("ABORTED at close-all"), r.output  # not "at tenants"
        view = finished(platform, name, "month-end-fanout")
        assert (view.status, view.failed_step) == ("ABORTED", "close-all")
        api = _api(platform, f"/executions/{name}")
        assert (api["status"], api["failed_step"]) == ("ABORTED", "close-all")
        failures = _api(platform, "/failures")
        assert [x["failed_step"] for x in failures["items"] if x["execution"] == name] == ["close-all"]
        post = wait_for(lambda: [p for p in receiver.posts if name in str(p)], what="the ABORTED alert")[0]
        text = str(post)
        assert "close-all" in text and "tenants" not in text.replace(f"{name}", "")
    finally:
        platform.stop()


def test_a_stop_during_attempt_2_shows_no_exit_code_of_attempt_1(repo_root: Path, tmp_path: Path) -> None:
    (repo_root / "jobs" / "billing" / "retried-wait.jsonnet").write_text(RETRIED)
    data = tmp_path / "data"
    platform = start_platform(repo_root, data)
    try:
        marker = tmp_path / "pids"
        thread, out = _run_in_background(repo_root, data, "retried-wait", "-p", f"marker={marker}",
                                         "-p", f"release={tmp_path / 'never'}")
        wait_for(lambda: marker.exists() and marker.read_text().count("\n") >= 1, timeout=300, what="attempt 1")
        os.kill(int(marker.read_text().split()[0]), signal.SIGKILL)
        wait_for(lambda: marker.read_text().count("\n") >= 2, timeout=300, what="attempt 2")
        name = _running(platform, "retried-wait")
        stopped = _stop_from_another_process(repo_root, data, name, "testing the code")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        thread.join(timeout=600)
        [r] = out
        assert "wait (attempt 1): failed (exit code 137)" in r.output, r.output
        line = next(line for line in r.output.splitlines() if line.startswith("ABORTED"))
        assert line.startswith("ABORTED at wait") and "137" not in line and "exit code" not in line, r.output
        api = _api(platform, f"/executions/{name}")
        assert (api["status"], api["failed_step"]) == ("ABORTED", "wait")
    finally:
        platform.stop()


def test_a_step_timeout_is_not_promised_a_retry(repo_root: Path, tmp_path: Path) -> None:
    (repo_root / "jobs" / "billing" / "times-out.jsonnet").write_text(TIMES_OUT)
    data = tmp_path / "data"
    platform = start_platform(repo_root, data)
    try:
        r = _cli(repo_root, data, "run", "times-out")
        assert r.exit_code == 1, r.output
        attempts = [line.strip() for line in r.output.splitlines() if re.match(r"\s+slow \(attempt", line)]
        # what the state machine did: one attempt, timed out, recorded TIMED_OUT (no attempt 2)
        assert attempts == ["slow (attempt 1): timed out; not retried (a step that times out ends the run)"], r.output
        assert "retrying" not in r.output
        assert any(line.startswith("TIMED_OUT at slow") for line in r.output.splitlines()), r.output
    finally:
        platform.stop()
