"""What the benches that run `jobplane dev` as a subprocess share (bench/dev_e2e.py,
bench/map_month_end.py): a one-team project of their jobs, and the platform started on ports it
binds itself.

Port 0 for both the local AWS and the portal: the platform binds free ports and writes them in
its data directory, where `jobplane run` and ``control_for(data)`` find them (as
tests/test_readme_main_command.py starts `make dev`). A port picked here in advance could be
taken by something else before the platform bound it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

TOML = """\
[platform]
name_prefix = "%(prefix)s"
default_timezone = "UTC"
[teams.billing]
members = ["dev@localhost"]
[dev]
dev_user = "dev@localhost"
[dev.env]
PYTHONPATH = "%(tests)s"
"""


def billing_project(repo: Path, prefix: str, jobs: dict[str, str]) -> Path:
    """A project at ``repo`` whose team ``billing`` has ``jobs`` (name -> Jsonnet); the dev
    services' and steps' code comes from tests/ (sample_apps)."""
    shutil.copytree(ROOT / "jobs" / "lib", repo / "jobs" / "lib")
    (repo / "jobs" / "billing").mkdir()
    for name, definition in jobs.items():
        (repo / "jobs" / "billing" / f"{name}.jsonnet").write_text(definition)
    (repo / "jobplane.toml").write_text(TOML % {"prefix": prefix, "tests": ROOT / "tests"})
    return repo


@contextmanager
def dev_running(repo: Path, data: Path, log: Path | None = None, stop_timeout: float = 300) -> Iterator[dict[str, str]]:
    """`jobplane dev` on ``repo`` until the block ends (then Ctrl-C's signal, and its exit
    awaited): the environment a `jobplane` command needs to reach it. Its output goes to ``log``
    (or nowhere); it prints how long it took to be ready."""
    env = dict(os.environ, JOBPLANE_ROOT=str(repo), JOBPLANE_DATA_DIR=str(data), JOBPLANE_AWS_PORT="0",
               JOBPLANE_PORTAL_PORT="0")
    started = time.perf_counter()
    dev = subprocess.Popen([str(BIN / "jobplane"), "dev"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True, text=True)
    assert dev.stdout is not None
    out = log.open("w") if log is not None else None
    try:
        for line in dev.stdout:
            if out is not None:
                out.write(line)
            if "jobplane dev is ready" in line:
                break
        else:
            raise SystemExit(f"jobplane dev did not start{f': {log}' if log else ''}")
        threading.Thread(target=_drain, args=(dev.stdout, out), daemon=True).start()
        print(f"jobplane dev ready in {time.perf_counter() - started:.1f} s")
        yield env
    finally:
        os.killpg(dev.pid, signal.SIGINT)
        dev.wait(timeout=stop_timeout)


def _drain(stream: object, out: object) -> None:
    """The rest of the platform's output, read so that it never blocks on a full pipe."""
    for line in stream:  # type: ignore[attr-defined]
        if out is not None:
            out.write(line)  # type: ignore[attr-defined]
            out.flush()  # type: ignore[attr-defined]
