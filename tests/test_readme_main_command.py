"""The README's main command, as a newcomer runs it: `make dev` in a subprocess comes up, says
it is ready, serves the portal's health URL, runs a job, and stops cleanly on Ctrl-C (SIGINT to
the whole process group, as a terminal sends it) leaving no process behind."""

from __future__ import annotations

import json
import os
import re
import queue
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from devkit import ROOT


def processes_with(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name}: {cmdline}")
        except OSError:
            continue
    return found


def test_make_dev_comes_up_serves_the_portal_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"^make dev$", readme, re.M), "README's main command is `make dev`"
    # port 0: the platform binds free ports itself and says which in its banner (no race with
    # other tests for a port picked in advance)
    env = dict(os.environ, JOBPLANE_DATA_DIR=str(tmp_path / "data"), JOBPLANE_AWS_PORT="0",
               JOBPLANE_PORTAL_PORT="0", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(["make", "dev"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    output = []
    try:
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(raw.decode(errors="replace")) for raw in process.stdout],
                         daemon=True).start()
        deadline = time.monotonic() + float(os.environ.get("JOBPLANE_TEST_DEV_STARTUP", "600"))  # a fresh checkout builds .venv first
        ready = False
        while not ready and time.monotonic() < deadline and process.poll() is None:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            output.append(line)
            ready = "jobplane dev is ready" in line
        assert ready, "".join(output)
        while not any("  health " in line for line in output):
            output.append(lines.get(timeout=60))
        health_url = re.search(r"  health\s+(http://127\.0\.0\.1:\d+/healthz)", "".join(output)).group(1)
        with urllib.request.urlopen(health_url, timeout=60) as r:
            health = json.loads(r.read())
        assert health["status"] == "ok" and health["jobs"] == 10  # the example jobs
        run = subprocess.run([str(ROOT / ".venv" / "bin" / "jobplane"), "run", "daily-sales-report"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "SUCCEEDED" in run.stdout, run.stdout + run.stderr
        # a failing run (the backfill needs params): the console gets no interpreter internals
        failed = subprocess.run([str(ROOT / ".venv" / "bin" / "jobplane"), "run", "backfill-search-index"], cwd=ROOT,
                                env=env, capture_output=True, text=True, timeout=120)
        assert failed.returncode == 1 and "FAILED" in failed.stdout, failed.stdout + failed.stderr
        assert any("partner_api" in p for p in processes_with(str(tmp_path / "data"))), "the dev service runs"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=90)
        time.sleep(0.2)
        while not lines.empty():
            output.append(lines.get())
    text = "".join(output)
    assert "jobplane dev stopped." in text, text
    assert "FailureEventException" not in text and "StateFail|" not in text  # issue 17: one line per event
    assert "FailureEventException" in (tmp_path / "data" / "engine.log").read_text()  # the details, kept
    time.sleep(0.5)
    # Runner subprocesses and dev services run in sessions of their own, so look for anything
    # whose environment names this run's data directory, not just make's process group.
    assert processes_with(str(tmp_path / "data")) == [], "processes left behind"
    try:
        os.killpg(process.pid, 0)
        raise AssertionError("make's process group is still alive")
    except ProcessLookupError:
        pass
    assert not (tmp_path / "data" / "dev.json").exists()
    assert (tmp_path / "data" / "state.json").exists()
