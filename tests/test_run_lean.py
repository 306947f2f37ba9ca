"""`jobplane run`'s start-up stays lean (issue 54 item 5: it added 0.86 s to the platform's own
start-to-record, bench/dev_e2e.py): a structural check of what the command imports, so no test
asserts a wall-clock time. The catalog's pydantic models, boto3 (its resource layer and
s3transfer), the compiler and Jsonnet cost it ~0.3 s of CPU before its first call; it reads its
job's entry with contract/catalog_brief.py and makes its clients with platform/aws_clients.py."""

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


def test_jobplane_run_imports_neither_pydantic_nor_boto3_nor_the_compiler(tmp_path: Path) -> None:
    root, data = tmp_path / "repo", tmp_path / "data"
    make_repo(root)
    platform = DevPlatform(load_config(root), data, 0, 0, clock=FakeClock(datetime(2027, 3, 1, 10, tzinfo=timezone.utc)),
                           run_scheduler=False, run_services=False, snapshot_interval=3600).start()
    try:
        code = ("import sys; from click.testing import CliRunner; from jobplane.cli import main; "
                f"r = CliRunner().invoke(main, ['--root', {str(root)!r}, 'run', 'flaky-load', '-p', 'mode=ok', "
                f"'--data-dir', {str(data)!r}]); print(repr(r.output)); "
                f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}) + "
                f"sorted(m for m in sys.modules if (m + '.').startswith({HEAVY_JOBPLANE!r})))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        output, imported = done.stdout.strip().splitlines()
        assert "load (attempt 1): succeeded" in output and "SUCCEEDED" in output, output
        assert imported == "[]"
    finally:
        platform.stop()
