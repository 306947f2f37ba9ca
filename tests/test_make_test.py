"""`make test` on a fresh machine (issue 47, item 5): the programs the suite runs besides Python
are installed when it may, else it stops at once with the exact install command; the browser
tests are never skipped unless asked. Run for real: the set-up script with a PATH that lacks
them (and lacks apt-get, as a machine where it may not install), pytest on the browser tests
with no chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from devkit import ROOT

SCRIPT = ROOT / "scripts" / "test_prereqs.sh"


def _path_with(tmp_path: Path, programs: list[str]) -> str:
    """A PATH holding only ``programs`` (and what the script itself uses)."""
    bin_dir = tmp_path / f"bin-{len(list(tmp_path.glob('bin-*')))}"
    bin_dir.mkdir()
    for name in ["bash", "id", "cat", *programs]:
        found = shutil.which(name)
        assert found, name
        (bin_dir / name).symlink_to(found)
    return str(bin_dir)


def _run(path: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("JOBPLANE_SKIP_BROWSER_TESTS", "JOBPLANE_CHROMIUM")}
    return subprocess.run([shutil.which("bash") or "/bin/bash", str(SCRIPT)], capture_output=True, text=True,
                          timeout=60, env=clean | {"PATH": path} | env)


def test_missing_programs_stop_make_test_at_once_with_the_install_command(tmp_path: Path) -> None:
    done = _run(_path_with(tmp_path, []))
    assert done.returncode == 1
    assert "sudo apt-get install -y jsonnet nodejs chromium" in done.stderr
    assert "make test JOBPLANE_SKIP_BROWSER_TESTS=1" in done.stderr
    asked = _run(_path_with(tmp_path, []), JOBPLANE_SKIP_BROWSER_TESTS="1")  # chromium not needed then
    assert asked.returncode == 1 and "sudo apt-get install -y jsonnet nodejs\n" in asked.stderr


def test_with_every_program_there_it_goes_on(tmp_path: Path) -> None:
    needed = [p for p in ("jsonnetfmt", "node", "chromium") if shutil.which(p)]
    assert len(needed) == 3, "this machine has them (.ci/run installs them)"
    done = _run(_path_with(tmp_path, needed))
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_make_test_runs_the_set_up_first_and_states_how_long_it_takes() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ntest: $(STAMP)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert recipe[0].strip() == "scripts/test_prereqs.sh"
    assert recipe[-1].strip() == "scripts/beside.sh '$(BIN)/mypy' $(BIN)/pytest -n 3 --dist worksteal"  # tests/test_beside.py
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"2-core machine.*?about [\d.]+ minutes", readme, re.S)


def test_browser_tests_fail_without_chromium_unless_asked_to_skip(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JOBPLANE_SKIP_BROWSER_TESTS"}
    args = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
            str(ROOT / "tests" / "test_portal_browser.py"), "-k", "run_a_job_now"]
    missing = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT,
                             env=env | {"JOBPLANE_CHROMIUM": str(tmp_path / "no-chromium")})
    assert missing.returncode != 0 and "sudo apt-get install -y chromium" in missing.stdout, missing.stdout[-2000:]
    asked = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT,
                           env=env | {"JOBPLANE_CHROMIUM": str(tmp_path / "no-chromium"),
                                      "JOBPLANE_SKIP_BROWSER_TESTS": "1"})
    assert asked.returncode == 0 and "1 skipped" in asked.stdout, asked.stdout[-2000:]
