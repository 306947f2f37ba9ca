"""The GitHub Actions pipeline shipped for a teams' repository (deploy/github-actions/) is valid
for GitHub (actionlint: syntax, expressions, action inputs, deprecated runtimes), authenticates
with OIDC only, and calls what this repository really provides."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

WORKFLOW = ROOT / "deploy" / "github-actions" / "jobplane.yml"


def test_actionlint_finds_nothing() -> None:
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert actionlint, "actionlint is a test dependency (pyproject.toml)"
    done = subprocess.run([actionlint, "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_it_uses_oidc_and_no_stored_keys() -> None:
    text = WORKFLOW.read_text()
    assert "id-token: write" in text and "role-to-assume:" in text
    assert "aws-access-key-id" not in text and "secrets.AWS" not in text


def test_what_it_runs_exists_here() -> None:
    text = WORKFLOW.read_text()
    for path in ("scripts/build_lambda.py", "src/jobplane/runner/Dockerfile"):
        assert path in text and (ROOT / path).exists()
    assert "jobplane validate" in text and "jobplane plan --against-ref" in text and "jobplane compile" in text
    assert 'terraform -chdir="$root" apply' in text and "jobplane plan --against-ref" in text
    assert "--roots --image-changed" in text  # options the CLI has: tests/test_compile.py runs them
