"""The provider lock file (issue 49, item 6): a repository that commits
terraform/providers.lock.hcl (the pipeline's `lock-providers` job proposes it) gets it copied
into every compiled root as .terraform.lock.hcl, which the pipeline's `terraform init
-lockfile=readonly` then holds to; the lock's constraints are the compiled roots'
required_providers, or `terraform init` refuses it. No registry is reachable here, so the lock
checked is a fixture in the format `terraform providers lock` writes (its checksums made up),
and the repository's own, once it commits one
(https://developer.hashicorp.com/terraform/language/files/dependency-lock)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import hcl2
import pytest

from base_module import MODULE, _clean
from conftest import ROOT, Repo

from jobplane.compiler.output import PROVIDER_LOCK, ROOT_LOCK, compile_all, write_output
from jobplane.contract.config import load_config

FIXTURE = Path(__file__).parent / "fixtures" / "provider-lock" / "providers.lock.hcl"
LOCKS = [FIXTURE] + ([ROOT / PROVIDER_LOCK] if (ROOT / PROVIDER_LOCK).exists() else [])


def locked_providers(text: str) -> dict[str, dict[str, str]]:
    """source address (hashicorp/aws) -> {version, constraints} of each provider block."""
    doc = _clean(hcl2.loads(text))
    return {address.removeprefix("registry.terraform.io/"): {"version": body["version"], "constraints": body["constraints"]}
            for block in doc["provider"] for address, body in block.items()}


@pytest.mark.parametrize("lock", LOCKS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_lock_files_constraints_are_the_compiled_roots_required_providers(lock: Path) -> None:
    locked = locked_providers(lock.read_text())
    compiled = compile_all(load_config(ROOT))
    required = {}
    for rel, text in compiled.files.items():
        if rel.endswith("/main.tf.json"):
            for name, spec in json.loads(text)["terraform"]["required_providers"].items():
                required[(rel, spec["source"])] = spec["version"]
    module = _clean(hcl2.loads((MODULE / "versions.tf").read_text()))["terraform"][0]["required_providers"][0]
    required |= {("terraform/platform/versions.tf", spec["source"]): spec["version"] for name, spec in module.items()
                 if not name.startswith("__")}
    assert len({rel for rel, _ in required}) == len(compiled.roots) + 1
    assert {where: version for where, version in required.items() if locked.get(where[1], {}).get("constraints") != version} == {}
    assert set(locked) == {source for _, source in required}  # no provider the roots do not use


def test_compile_copies_the_committed_lock_into_every_root(repo: Repo, tmp_path: Path) -> None:
    repo.copy_examples()
    out = tmp_path / "out"
    # no committed lock: a root's own lock (a local init) is left as it is
    own = out / "teams" / "billing" / ROOT_LOCK
    write_output(compile_all(load_config(repo.path)), out)
    own.write_text("# a local init's lock\n")
    write_output(compile_all(load_config(repo.path)), out)
    assert own.read_text() == "# a local init's lock\n" and not (out / "base" / ROOT_LOCK).exists()
    # committed: every root gets it, replacing what was there; an unchanged copy is not rewritten
    (repo.path / PROVIDER_LOCK).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURE, repo.path / PROVIDER_LOCK)
    compiled = compile_all(load_config(repo.path))
    changed = write_output(compiled, out)
    assert sorted(compiled.roots) == ["base", "teams/billing", "teams/growth", "teams/platform"]
    assert {f"{root}/{ROOT_LOCK}" for root in compiled.roots} <= set(changed)
    for root in compiled.roots:
        assert (out / root / ROOT_LOCK).read_text() == FIXTURE.read_text()
    assert not [p for p in write_output(compiled, out) if p.endswith(ROOT_LOCK)]
    # the lock is no compiled file: it changes no root's plan
    assert not [rel for rel in compiled.files if rel.endswith(ROOT_LOCK)]


def test_tfchecks_stand_in_provider_never_meets_a_lock() -> None:
    """tfcheck's stand-in provider cannot match a real lock's checksums: plan.py drops the lock
    from its scratch copy, validate.py does not (and is shared, read-only), so `make tfcheck`
    removes the roots' copies before it runs (the next compile writes them again)."""
    recipe = (ROOT / "Makefile").read_text().split("\ntfcheck:", 1)[1].split("\n\n", 1)[0]
    drop = recipe.index(f"find $(JOBS_OUT) -name {ROOT_LOCK} -delete")
    assert drop < recipe.index("$(TFCHECK)/validate.py")


def test_the_lock_providers_job_locks_four_platforms_and_opens_a_pull_request(tmp_path: Path) -> None:
    """The shipped pipeline's `lock-providers` job (workflow_dispatch, action lock-providers),
    its own steps run by bash: `terraform providers lock` for the four platforms over the base
    module's required_providers, the result as terraform/providers.lock.hcl on a new branch,
    pushed and proposed by `gh pr create`. `terraform`, `gh` and `git push` are recorders."""
    import os
    import subprocess

    import yaml

    doc = yaml.safe_load((ROOT / "deploy/github-actions/jobplane.yml").read_text())  # YAML 1.1: `on` reads as True
    assert "lock-providers" in doc[True]["workflow_dispatch"]["inputs"]["action"]["options"]
    job = doc["jobs"]["lock-providers"]
    assert "inputs.action == 'lock-providers'" in job["if"] and "inputs.action == 'apply'" in doc["jobs"]["apply"]["if"]
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    steps = {s["name"]: s for s in job["steps"] if "name" in s}
    repo, bin_dir, calls = tmp_path / "repo", tmp_path / "bin", tmp_path / "calls"
    (repo / "terraform/platform").mkdir(parents=True)
    shutil.copy(MODULE / "versions.tf", repo / "terraform/platform/versions.tf")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "base"], check=True)
    bin_dir.mkdir()
    real_git = shutil.which("git")
    tools = {
        # terraform providers lock writes the lock into its working directory
        "terraform": f'#!/bin/sh\necho "terraform $*" >> {calls}\n'
                     f'dir=$(echo "$1" | sed "s/^-chdir=//")\ncp {FIXTURE} "$dir/.terraform.lock.hcl"\n',
        "gh": f'#!/bin/sh\necho "gh $*" >> {calls}\n',
        "git": f'#!/bin/sh\nif [ "$1" = push ]; then echo "git $*" >> {calls}; exit 0; fi\nexec {real_git} "$@"\n',
    }
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path), "GH_TOKEN": "t0ken",
           "GITHUB_RUN_ID": "42", "GITHUB_REPOSITORY": "acme/jobs", "GITHUB_REF_NAME": "main"}
    for name in ("Lock the AWS provider for every platform", "Open a pull request with the lock file"):
        done = subprocess.run(["bash", "-e", "-c", steps[name]["run"]], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, (name, done.stdout, done.stderr)
    lines = calls.read_text().splitlines()
    lock = [line for line in lines if line.startswith("terraform ")]
    assert len(lock) == 1 and lock[0].split()[2:] == ["providers", "lock", "-platform=linux_amd64", "-platform=linux_arm64",
                                                      "-platform=darwin_amd64", "-platform=darwin_arm64"]
    assert (repo / PROVIDER_LOCK).read_text() == FIXTURE.read_text()
    shown = subprocess.run([*git, "-C", str(repo), "show", "--name-only", "--format=%s", "HEAD"], capture_output=True,
                           text=True, check=True).stdout.split()
    assert PROVIDER_LOCK in shown
    assert any(line.startswith("git push https://x-access-token:t0ken@github.com/acme/jobs.git jobplane/providers-lock-42")
               for line in lines)
    assert any(line.startswith("gh pr create --base main --head jobplane/providers-lock-42") for line in lines)
