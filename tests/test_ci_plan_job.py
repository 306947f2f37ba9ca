"""The pipeline's plan job, run as GitHub runs it (its own `run:` scripts, by bash, in steps'
working directories), on a base checkout and a hostile pull request (issue 40, item 1): the pull
request's definitions are planned, while its code, base module and Terraform files never are,
and the plan never takes the state lock (the plan role may not write the state bucket).
`terraform` is a recorder on PATH; `jobplane` is this environment's (the base branch's)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, minimal_job

WORKFLOW = ROOT / "deploy" / "github-actions" / "jobplane.yml"
GIT = ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", "-c", "init.defaultBranch=main"]


def steps() -> dict[str, dict]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    return {s["name"]: s for s in doc["jobs"]["plan"]["steps"] if "name" in s}


def checkout(path: Path) -> None:
    """A base commit: the definitions, the base module and the scripts the plan job runs."""
    path.mkdir()
    for rel in ("jobplane.toml", "jobs", "terraform/platform", "scripts", "requirements", "examples"):
        src = ROOT / rel
        (shutil.copytree(src, path / rel, ignore=shutil.ignore_patterns("__pycache__")) if src.is_dir()
         else shutil.copy(src, path / rel))
    subprocess.run([*GIT, "init", "-q", str(path)], check=True)
    subprocess.run([*GIT, "-C", str(path), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(path), "commit", "-qm", "base"], check=True)


def run_step(step: dict, workspace: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cwd = workspace / step.get("working-directory", ".")
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    checkout(tmp_path / "trusted")
    shutil.copytree(tmp_path / "trusted", tmp_path / "pr", symlinks=True)
    return tmp_path


def environment(workspace: Path) -> dict[str, str]:
    bin_dir = workspace / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "terraform").write_text(f'#!/bin/sh\necho "$PWD $*" >> {workspace / "terraform-calls"}\n')
    # the Lambda build is recorded, not run (it downloads wheels); any other python runs
    (bin_dir / "python").write_text(f'#!/bin/sh\nif [ "$1" = scripts/build_lambda.py ]; then\n'
                                    f'  echo "$PWD $*" >> {workspace / "python-calls"}; exit 0\nfi\n'
                                    f'exec {sys.executable} "$@"\n')
    # aws: the base root's published runner image (terraform/platform/published.tf), the one
    # parameter the plan step reads
    (bin_dir / "aws").write_text(
        f'#!/bin/sh\necho "aws $*" >> {workspace / "aws-calls"}\n'
        'case "$*" in "ssm get-parameter --name /jobplane/platform/runner_image "*) echo repo:c1-deployed; exit 0;; esac\n'
        'exit 254\n')
    for tool in ("terraform", "python", "aws"):
        (bin_dir / tool).chmod(0o755)
    return {"PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}", "HOME": str(workspace),
            "RUNNER_REPOSITORY": "repo", **workflow_env(workspace)}


def workflow_env(workspace: Path) -> dict[str, str]:
    """The workflow's own `env:` that the steps rely on, as GitHub sets it (the plugin cache
    under the workspace: issue 49, item 10)."""
    env = yaml.safe_load(WORKFLOW.read_text())["env"]
    assert env["TF_PLUGIN_CACHE_DIR"] == "${{ github.workspace }}/.terraform-plugin-cache"
    return {"TF_PLUGIN_CACHE_DIR": str(workspace / ".terraform-plugin-cache")}


def test_the_plan_runs_the_pull_requests_definitions_never_its_code(workspace: Path) -> None:
    pr = workspace / "pr"
    # the pull request: a new job (what it is for) ...
    (pr / "jobs/billing/invoice-reminders.jsonnet").write_text(minimal_job("invoice-reminders"))
    # ... and what it must not get planned with credentials: its own base module, a Terraform
    # file beside the compiled roots, its own compiler and scripts
    (pr / "terraform/platform/steal.tf").write_text('data "external" "x" { program = ["sh", "-c", "env"] }\n')
    (pr / "terraform/jobs/base").mkdir(parents=True)
    (pr / "terraform/jobs/base/steal.tf").write_text('output "x" { value = "stolen" }\n')
    (pr / "scripts/build_lambda.py").write_text("import os; os.system('touch pwned')\n")
    env = environment(workspace)
    s = steps()
    output = workspace / "github-output"
    output.write_text("")
    env["GITHUB_OUTPUT"] = str(output)
    for name in ("Stage the pull request's definitions into the base checkout", "Validate every definition",
                 "Plan in words", "The runner image deployed now", "Terraform plan of the roots this change touches"):
        if name == "Terraform plan of the roots this change touches":  # its env: the step before's output
            image = dict(line.split("=", 1) for line in output.read_text().splitlines())["image"]
            assert s[name]["env"] == {"TF_VAR_runner_image": "${{ steps.deployed.outputs.image }}",
                                      "JOBPLANE_RUNNER_IMAGE": "${{ steps.deployed.outputs.image }}"}
            env = {**env, "TF_VAR_runner_image": image, "JOBPLANE_RUNNER_IMAGE": image}
        done = run_step(s[name], workspace, env)
        assert done.returncode == 0, (name, done.stdout, done.stderr)
    words = (workspace / "jobplane-plan.txt").read_text()
    assert "+ invoice-reminders (new job of team billing" in words, words
    trusted = workspace / "trusted"
    assert not (trusted / "terraform/platform/steal.tf").exists()
    assert not (trusted / "terraform/jobs/base/steal.tf").exists()
    assert (trusted / "scripts/build_lambda.py").read_text() == (ROOT / "scripts/build_lambda.py").read_text()
    assert (workspace / "python-calls").read_text().split() == [str(trusted), "scripts/build_lambda.py"]
    calls = (workspace / "terraform-calls").read_text().splitlines()
    plans = [c for c in calls if " plan " in f" {c} "]
    assert plans and all("-lock=false" in c.split() for c in plans), calls
    planned = {c.split("-chdir=")[1].split()[0] for c in plans}
    assert planned == {"terraform/jobs/teams/billing"}, planned  # only the root the change touches
    assert all(c.split()[0] == str(trusted) for c in calls)
    # compiled with the image the deployment runs (issue 69 part 1: it is in every digest, so any
    # other would show every schedule of the root changing)
    assert '"runner_image":"repo:c1-deployed"' in (trusted / "terraform/jobs/teams/billing/catalog.json").read_text()
    # the roots hold what the compiler wrote (the team's shared roles among it), nothing of the pull request's
    for root in planned:
        assert sorted(p.name for p in (trusted / root).iterdir()) == sorted(
            ["main.tf.json", "catalog.json", "roles.tf.json"] + [p.name for p in (trusted / root).glob("*.job.tf.json")])


@pytest.mark.parametrize("change, says", [
    (lambda pr: (pr / "jobplane.toml").write_text((pr / "jobplane.toml").read_text().replace(
        'platform_module = "../platform"', 'platform_module = "../../jobs/evil"')),
     "platform_module changes from '../platform' to '../../jobs/evil'"),
    (lambda pr: (pr / "jobplane.toml").write_text((pr / "jobplane.toml").read_text().replace(
        'jobs_dir = "jobs"', 'jobs_dir = "terraform/platform"')), "jobs_dir changes"),
    (lambda pr: (pr / "jobplane.toml").write_text((pr / "jobplane.toml").read_text().replace(
        'output_dir = "terraform/jobs"', 'output_dir = "jobs/out"')), "output_dir changes"),
    (lambda pr: (pr / "jobs/billing/leak").symlink_to("/etc"), "jobs/billing/leak is a symbolic link leading out"),
])
def test_a_pull_request_that_moves_what_terraform_reads_is_refused(workspace: Path, change, says: str) -> None:  # type: ignore[no-untyped-def]
    before = (workspace / "trusted/jobplane.toml").read_text()
    change(workspace / "pr")
    done = run_step(steps()["Stage the pull request's definitions into the base checkout"], workspace,
                    environment(workspace))
    assert done.returncode == 1 and says in done.stderr, done.stderr
    assert (workspace / "trusted/jobplane.toml").read_text() == before  # nothing staged


def test_no_step_runs_the_pull_requests_checkout_and_credentials_come_after_install() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text())
    plan = doc["jobs"]["plan"]["steps"]
    names = [s.get("name") or s["uses"].split("@")[0] for s in plan]
    assert names.index("aws-actions/configure-aws-credentials") > names.index("Install jobplane from the base branch")
    for step in plan:
        run = step.get("run", "")
        assert "pr/" not in run.replace("trusted pr", "") and step.get("working-directory") != "pr", step
        if step.get("uses", "").startswith("actions/checkout"):
            assert step["with"]["persist-credentials"] is False
    install = next(s for s in plan if s.get("name") == "Install jobplane from the base branch")
    assert install["working-directory"] == "trusted" and "-e ." not in install["run"]
