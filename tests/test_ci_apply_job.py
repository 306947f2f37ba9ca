"""The pipeline's apply job, run as GitHub runs it (its own `run:` script, by bash, in a clone
with the pushes' history), over a series of pushes (issue 49, item 4): GitHub cancels a pending
run when a newer one queues in the same concurrency group, so with pushes A (running), B
(pending, cancelled) and C, C's run must apply what only B changed. The roots to apply are those
changed since the last commit applied in full, which the apply records in an SSM parameter once
every root applied; a failed apply records nothing, and the next run applies its roots again.
`terraform` and `aws` are recorders on PATH (the parameter kept in a file); `jobplane` is this
environment's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import ROOT

WORKFLOW = ROOT / "deploy" / "github-actions" / "jobplane.yml"
GIT = ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", "-c", "init.defaultBranch=main"]
PARAMETER = "/jobplane-ci/acme/jobs/applied-commit"
LOCK_FIXTURE = Path(__file__).parent / "fixtures" / "provider-lock" / "providers.lock.hcl"

#: the base root's published runner image (terraform/platform/published.tf), for name_prefix "jobplane"
PUBLISHED_IMAGE = "/jobplane/platform/runner_image"

#: `aws ssm get-parameter` / `put-parameter` against a file, as the AWS CLI answers them: the
#: applied commit, and the runner image the base root published (read only: the fake terraform
#: below publishes it when the base root applies)
AWS = """#!{python}
import sys
from pathlib import Path
args = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write("aws " + " ".join(args) + "\\n")
name = args[args.index("--name") + 1]
assert name in ({parameter!r}, {published!r}), name
store = Path({store!r} if name == {parameter!r} else {published_store!r})
if args[:2] == ["ssm", "get-parameter"]:
    if not store.exists():
        sys.stderr.write("An error occurred (ParameterNotFound) when calling the GetParameter operation: \\n")
        sys.exit(254)
    print(store.read_text())
elif args[:2] == ["ssm", "put-parameter"]:
    assert "--overwrite" in args
    store.write_text(args[args.index("--value") + 1])
else:
    sys.exit(f"unexpected aws call: {{args}}")
"""


def apply_step() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    return next(s for s in doc["jobs"]["apply"]["steps"] if s.get("name") == "Compile and apply, base first")


class Pipeline:
    def __init__(self, tmp: Path, locked: bool = True) -> None:
        self.repo, self.bin, self.calls = tmp / "repo", tmp / "bin", tmp / "calls"
        self.store, self.cache = tmp / "parameter", tmp / "workspace" / ".terraform-plugin-cache"
        self.published = tmp / "published-runner-image"
        self.repo.mkdir()
        for rel in ("jobplane.toml", "jobs", "terraform/platform", "scripts", "requirements", "examples"):
            src = ROOT / rel
            (shutil.copytree(src, self.repo / rel, ignore=shutil.ignore_patterns("__pycache__")) if src.is_dir()
             else shutil.copy(src, self.repo / rel))
        if locked:  # the repository commits its provider lock (the apply refuses to run without one)
            shutil.copy(LOCK_FIXTURE, self.repo / "terraform" / "providers.lock.hcl")
        subprocess.run([*GIT, "init", "-q", str(self.repo)], check=True)
        self.bin.mkdir()
        (self.bin / "aws").write_text(AWS.format(python=sys.executable, store=str(self.store), calls=str(self.calls),
                                                 parameter=PARAMETER, published=PUBLISHED_IMAGE,
                                                 published_store=str(self.published)))
        # terraform: records each call with the plugin cache it saw; an apply of $FAIL_ROOT fails;
        # the base root's apply publishes its runner image, as terraform/platform/published.tf does
        (self.bin / "terraform").write_text(
            f'#!/bin/sh\necho "terraform $* cache=$TF_PLUGIN_CACHE_DIR" >> {self.calls}\n'
            'case "$*" in *"-chdir=$FAIL_ROOT apply"*) [ -n "$FAIL_ROOT" ] && exit 1;; esac\n'
            f'case "$*" in *"-chdir=terraform/jobs/base apply"*) printf %s "$TF_VAR_runner_image" > {self.published};; esac\n'
            'exit 0\n')
        # the Lambda build is recorded, not run (it downloads wheels); any other python runs
        (self.bin / "python").write_text(f'#!/bin/sh\nif [ "$1" = scripts/build_lambda.py ]; then exit 0; fi\n'
                                         f'exec {sys.executable} "$@"\n')
        for tool in ("aws", "terraform", "python"):
            (self.bin / tool).chmod(0o755)

    def push(self, message: str, edit: str | None = None) -> str:
        """A commit on main; ``edit`` names a definition whose description changes."""
        if edit:
            path = self.repo / edit
            path.write_text(path.read_text().replace("description: '", f"description: '{message}: ", 1))
        subprocess.run([*GIT, "-C", str(self.repo), "add", "-A"], check=True)
        subprocess.run([*GIT, "-C", str(self.repo), "commit", "-qm", message], check=True)
        return subprocess.run([*GIT, "-C", str(self.repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                              text=True).stdout.strip()

    def run(self, sha: str, fail_root: str = "", image: str = "repo:c1-first") -> tuple[int, list[str]]:
        """The apply job's step for the push of ``sha`` with the runner image the build step named
        (its tag names the image's inputs: scripts/runner_image_tag.py): its exit status and the
        roots it applied."""
        self.calls.write_text("")
        env = {"PATH": f"{self.bin}:{Path(sys.executable).parent}:{os.environ['PATH']}", "HOME": str(self.repo.parent),
               "GITHUB_SHA": sha, "TF_PLUGIN_CACHE_DIR": str(self.cache), "FAIL_ROOT": fail_root,
               **{k: v for k, v in apply_step()["env"].items() if "${{" not in v},
               "EVENT": "push", "APPLIED_PARAMETER": PARAMETER, "TF_VAR_runner_image": image,
               "JOBPLANE_RUNNER_IMAGE": image,
               # what `github.event.before` is for this push (its parent: one commit per push)
               "BEFORE": subprocess.run([*GIT, "-C", str(self.repo), "rev-parse", f"{sha}^"], capture_output=True,
                                        text=True).stdout.strip() or "0" * 40}
        done = subprocess.run(["bash", "-e", "-c", apply_step()["run"]], cwd=self.repo, env=env, capture_output=True,
                              text=True, timeout=300)
        self.output = done.stdout + done.stderr
        calls = self.calls.read_text().splitlines()
        # every root's init holds to the committed lock (compile copied it into the root)
        for call in calls:
            if call.startswith("terraform ") and " init " in call:
                root = call.split("-chdir=")[1].split()[0]
                assert "-lockfile=readonly" in call.split() and (self.repo / root / ".terraform.lock.hcl").is_file(), call
        applied = [c.split("-chdir=")[1].split()[0] for c in calls if c.startswith("terraform ") and " apply " in c]
        assert all(c.endswith(f"cache={self.cache}") for c in calls if c.startswith("terraform "))  # item 10
        assert self.cache.is_dir() or not applied
        return done.returncode, applied

    def recorded(self) -> str | None:
        return self.store.read_text() if self.store.exists() else None


def test_a_cancelled_pending_runs_roots_are_applied_by_the_next_run(tmp_path: Path) -> None:
    pipeline = Pipeline(tmp_path)
    base = pipeline.push("base")
    status, applied = pipeline.run(base)  # the first apply: no commit recorded, every root
    assert status == 0 and applied == ["terraform/jobs/base", "terraform/jobs/teams/billing",
                                       "terraform/jobs/teams/growth", "terraform/jobs/teams/platform"]
    assert pipeline.recorded() == base
    # the same runner image (its inputs unchanged): a root is applied when its jobs change
    a = pipeline.push("A", "jobs/growth/partner-api-sync.jsonnet")
    status, applied = pipeline.run(a)  # A: its roots
    assert status == 0 and "terraform/jobs/teams/growth" in applied and "terraform/jobs/teams/platform" not in applied
    assert pipeline.recorded() == a
    pipeline.push("B", "jobs/platform/nightly-maintenance.jsonnet")  # pending while A ran: cancelled by C
    c = pipeline.push("C", "jobs/growth/partner-api-sync.jsonnet")
    status, applied = pipeline.run(c)  # C's `before` is B: B's platform change must still be applied
    assert status == 0 and {"terraform/jobs/teams/growth", "terraform/jobs/teams/platform"} <= set(applied), applied
    assert pipeline.recorded() == c


def test_a_failed_apply_records_nothing_and_the_next_run_applies_its_roots_again(tmp_path: Path) -> None:
    pipeline = Pipeline(tmp_path)
    base = pipeline.push("base")
    assert pipeline.run(base)[0] == 0
    d = pipeline.push("D", "jobs/growth/partner-api-sync.jsonnet")
    status, applied = pipeline.run(d, fail_root="terraform/jobs/teams/growth")
    assert status != 0 and "terraform/jobs/teams/growth" in applied
    assert pipeline.recorded() == base  # not D: growth was not applied
    e = pipeline.push("E", "jobs/platform/nightly-maintenance.jsonnet")
    status, applied = pipeline.run(e)
    assert status == 0 and "terraform/jobs/teams/growth" in applied and pipeline.recorded() == e
    # a recorded commit the history lacks (a rewritten main): every root, as by hand
    pipeline.store.write_text("0" * 40)
    status, applied = pipeline.run(e)
    assert status == 0 and len(applied) == 4


def test_after_the_apply_the_pipeline_keeps_paused_jobs_paused() -> None:
    """Issue 49, item 3: the step after the apply runs `jobplane repair-pauses` against the base
    root's outputs (tests/test_cli_aws.py runs that command against a deployment)."""
    doc = yaml.safe_load(WORKFLOW.read_text())
    names = [s.get("name") for s in doc["jobs"]["apply"]["steps"]]
    step = doc["jobs"]["apply"]["steps"][names.index("Keep paused jobs paused")]
    assert names.index("Keep paused jobs paused") == names.index("Compile and apply, base first") + 1
    assert 'output -json > "$RUNNER_TEMP/jobplane-deployment.json"' in step["run"]
    assert 'jobplane repair-pauses --deployment "$RUNNER_TEMP/jobplane-deployment.json"' in step["run"]


def test_after_the_apply_the_pipeline_keeps_each_deployed_definition() -> None:
    """Issue 69 part 1: after the pauses are repaired, `jobplane record-definitions` keeps each
    compiled definition by digest with the applied commit and the image the apply built
    (tests/test_definition_versions.py runs the command's recording against a deployment)."""
    doc = yaml.safe_load(WORKFLOW.read_text())
    names = [s.get("name") for s in doc["jobs"]["apply"]["steps"]]
    step = doc["jobs"]["apply"]["steps"][names.index("Keep each deployed definition")]
    assert names.index("Keep each deployed definition") == names.index("Keep paused jobs paused") + 1
    assert 'jobplane record-definitions --deployment "$RUNNER_TEMP/jobplane-deployment.json"' in step["run"]
    assert '--commit "$GITHUB_SHA" --image "$IMAGE"' in step["run"]
    assert step["env"]["IMAGE"] == "${{ steps.image.outputs.image }}"


def test_without_a_committed_provider_lock_the_apply_refuses_to_run_and_says_how_to_make_one(tmp_path: Path) -> None:
    """Issue 62 finding 10: without terraform/providers.lock.hcl the apply fell back to an
    unlocked `terraform init` (any provider version the constraints allow, no recorded hash). It
    now fails before compiling or applying anything, records no applied commit, and names both
    ways to make the lock; with the lock committed, the same push applies every root."""
    pipeline = Pipeline(tmp_path, locked=False)
    base = pipeline.push("base")
    status, applied = pipeline.run(base)
    assert status != 0 and applied == [] and pipeline.recorded() is None
    assert not any(c.startswith("terraform ") for c in pipeline.calls.read_text().splitlines())
    assert "terraform/providers.lock.hcl is not committed" in pipeline.output
    assert "lock-providers" in pipeline.output
    assert ("terraform providers lock -platform=linux_amd64 -platform=linux_arm64 -platform=darwin_amd64 "
            "-platform=darwin_arm64") in pipeline.output
    shutil.copy(LOCK_FIXTURE, pipeline.repo / "terraform" / "providers.lock.hcl")
    locked = pipeline.push("lock")
    status, applied = pipeline.run(locked)
    assert status == 0 and len(applied) == 4 and pipeline.recorded() == locked


def test_a_merge_that_keeps_the_runner_image_applies_only_the_roots_it_changes(tmp_path: Path) -> None:
    """Issue 69 part 1: the runner image is in every job's definition digest, which the compile
    takes from JOBPLANE_RUNNER_IMAGE (the build step's tag, named for the image's inputs). A
    merge that edits one growth job and keeps the image applies growth (and what its jobs'
    catalog touches), not billing, whose task definitions carry the image: with the commit as
    the tag, every merge changed the image and so every root."""
    pipeline = Pipeline(tmp_path)
    base = pipeline.push("base")
    assert pipeline.run(base, image="repo:c1-same")[0] == 0
    assert pipeline.published.read_text() == "repo:c1-same"
    catalog = (pipeline.repo / "terraform/jobs/teams/billing/catalog.json").read_text()
    assert '"runner_image":"repo:c1-same"' in catalog.replace(" ", "")  # the compile saw the image
    a = pipeline.push("A", "jobs/growth/partner-api-sync.jsonnet")
    status, applied = pipeline.run(a, image="repo:c1-same")
    assert status == 0 and "terraform/jobs/teams/growth" in applied, applied
    assert "terraform/jobs/teams/billing" not in applied and "terraform/jobs/teams/platform" not in applied, applied


def test_a_new_runner_image_applies_every_root(tmp_path: Path) -> None:
    """Issue 69 part 1: a new image changes every job's digest, and with it every schedule's
    input, so every root is applied, though the merge changed no definition; the image the
    deployment ran is read from the base root's published parameter before the base applies.
    A deployment upgraded from commit tags (its published image is `repo:<sha>`) takes the same
    path once."""
    pipeline = Pipeline(tmp_path)
    base = pipeline.push("base")
    assert pipeline.run(base, image="repo:0123abc")[0] == 0  # as deployed before: the commit's tag
    b = pipeline.push("B", "jobs/growth/partner-api-sync.jsonnet")
    status, applied = pipeline.run(b, image="repo:c1-new")
    assert status == 0 and applied == ["terraform/jobs/base", "terraform/jobs/teams/billing",
                                       "terraform/jobs/teams/growth", "terraform/jobs/teams/platform"], applied
    assert "runner image: repo:0123abc -> repo:c1-new (every root)" in pipeline.output
    assert pipeline.published.read_text() == "repo:c1-new" and pipeline.recorded() == b
    c = pipeline.push("C", "jobs/platform/nightly-maintenance.jsonnet")
    status, applied = pipeline.run(c, image="repo:c1-new")  # the image kept: C's roots only
    assert status == 0 and "terraform/jobs/teams/platform" in applied and "terraform/jobs/teams/billing" not in applied
