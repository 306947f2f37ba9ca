"""`jobplane run`'s start-up stays lean (issue 54 item 5: it added 0.86 s to the platform's own
start-to-record, bench/dev_e2e.py): a structural check of what the command imports, so no test
asserts a wall-clock time. The catalog's pydantic models, boto3 (its resource layer and
s3transfer), the compiler and Jsonnet cost it ~0.3 s of CPU before its first call; it reads its
job's entry with contract/catalog_brief.py and makes its clients with platform/aws_clients.py.
The console script's own process also leaves what its start-up built to the OS instead of
collecting it (cli/process.py); a program that embeds the CLI keeps its collector as it was."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from devkit import FakeClock, make_repo

from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform

#: What `jobplane run` must not import (top-level packages, and jobplane modules by prefix).
HEAVY = ("pydantic", "boto3", "s3transfer", "_gojsonnet", "moto", "jsonschema")
HEAVY_JOBPLANE = ("jobplane.compiler", "jobplane.contract.catalog.", "jobplane.contract.calendars",
                  "jobplane.contract.business_fires", "jobplane.portal", "jobplane.platform.local")


def test_jobplane_run_imports_neither_pydantic_nor_boto3_nor_the_compiler_and_freezes_only_its_own_process(tmp_path: Path) -> None:
    root, data = tmp_path / "repo", tmp_path / "data"
    make_repo(root)
    platform = DevPlatform(load_config(root), data, 0, 0, clock=FakeClock(datetime(2027, 3, 1, 10, tzinfo=timezone.utc)),
                           run_scheduler=False, run_services=False, snapshot_interval=3600).start()
    try:
        args = ["--root", str(root), "run", "flaky-load", "-p", "mode=ok", "--data-dir", str(data)]
        # as the console script runs it (its own process), then as a program that embeds the CLI
        for way, call in (("console", f"sys.argv = ['jobplane', *{args!r}]; console()"),
                          ("embedded", f"r = CliRunner().invoke(main, {args!r}); print(r.output); sys.exit(r.exit_code)")):
            code = ("import atexit, gc, sys; from click.testing import CliRunner; from jobplane.cli import console, main; "
                    "atexit.register(lambda: print(sorted({m.split('.')[0] for m in sys.modules} & "
                    f"{set(HEAVY)!r}) + sorted(m for m in sys.modules if (m + '.').startswith({HEAVY_JOBPLANE!r})), "
                    f"gc.get_freeze_count() > 0)); {call}")
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, (way, done.stdout, done.stderr)
            assert "load (attempt 1): succeeded" in done.stdout and "SUCCEEDED" in done.stdout, (way, done.stdout)
            imported, frozen = done.stdout.strip().splitlines()[-1].rsplit(" ", 1)
            assert imported == "[]", way
            # only the console script's own process leaves its start-up to the OS (cli/process.py)
            assert frozen == ("True" if way == "console" else "False"), way
    finally:
        platform.stop()
