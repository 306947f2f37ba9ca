"""scripts/beside.sh: `make test` runs mypy beside pytest, .ci/run runs `make tfcheck` beside
`make test` (issue 66 item 7: each was a phase the CI waited for while the suite left part of the
two cores idle). Run for real: what matters is that neither check can be lost by running beside
the other (a failure of either fails the run), that the one beside runs at once, at a lower
priority, and that its output comes out whole."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from devkit import ROOT

SCRIPT = ROOT / "scripts" / "beside.sh"


def _beside(beside: str, *main: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), beside, *main], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_a_failure_beside_fails_the_run_and_the_main_commands_status_comes_first(tmp_path: Path) -> None:
    assert _beside("true", "true", cwd=tmp_path).returncode == 0
    side_failed = _beside("echo 'error: a type error'; exit 3", "true", cwd=tmp_path)
    assert side_failed.returncode == 3
    assert "exit status 3\nerror: a type error\n" in side_failed.stdout
    assert _beside("exit 3", "bash", "-c", "exit 5", cwd=tmp_path).returncode == 5
    assert _beside("true", "bash", "-c", "exit 5", cwd=tmp_path).returncode == 5


def test_it_runs_while_the_main_command_runs_and_its_output_comes_out_whole(tmp_path: Path) -> None:
    # the main command ends only once the one beside has written its file: they overlap
    main = "for _ in $(seq 1000); do [ -e written ] && exit 0; sleep 0.1; done; exit 9"
    done = _beside("echo first; touch written; echo second", "bash", "-c", main, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(run beside bash): exit status 0\nfirst\nsecond\n" in done.stdout


def test_it_runs_at_a_lower_priority(tmp_path: Path) -> None:
    done = _beside("nice", "true", cwd=tmp_path)
    niceness = int(done.stdout.strip().splitlines()[-1])
    assert niceness == min(os.nice(0) + 10, 19)


def test_make_test_and_the_ci_run_use_it() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ntest: $(STAMP)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert recipe[-1].strip() == "scripts/beside.sh '$(BIN)/mypy' $(BIN)/pytest -n 3 --dist worksteal"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "scripts/beside.sh 'make tfcheck' make test" in ci
    assert ci.index("make .venv/.installed   # once, before the two below (both need it)") < \
        ci.index("scripts/beside.sh 'make tfcheck' make test")
