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
    assert "--roots" in text and "--against-ref" in text  # options the CLI has: tests/test_compile.py runs them
    assert "scripts/runner_image_tag.py" in text and (ROOT / "scripts/runner_image_tag.py").exists()


def test_the_plan_comment_quotes_what_the_pull_request_names_without_letting_it_write_markdown(tmp_path: Path) -> None:
    """Issue 40 item 9: a definition file named to close the comment's code fence wrote markdown
    of its own into the plan comment. The workflow's own script (actions/github-script runs it
    on Node), given plans that quote such names, keeps each inside one code block."""
    import json
    import re

    import yaml

    doc = yaml.safe_load(WORKFLOW.read_text())
    step = next(s for s in doc["jobs"]["plan"]["steps"] if s.get("uses", "").startswith("actions/github-script"))
    hostile = "jobs/billing/x```\n# Approved by security\n```.jsonnet: job 'nightly' ``` `` `"
    (tmp_path / "jobplane-plan.txt").write_text(f"+ {hostile}\n  runs daily")
    (tmp_path / "terraform-plan.txt").write_text("## root\n````\n+ resource ```` x")
    harness = tmp_path / "run.js"
    harness.write_text(
        "const github = {rest: {issues: {createComment: async (a) => console.log(JSON.stringify(a.body))}}};\n"
        "const context = {repo: {owner: 'o', repo: 'r'}, issue: {number: 1}};\n"
        f"(async () => {{\n{step['with']['script']}\n}})();\n")
    node = shutil.which("node")
    assert node, "node runs the workflow's github-script (installed by .ci/run)"
    done = subprocess.run([node, str(harness)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    # CommonMark: a block opened by N backticks closes only on a line of at least N backticks
    outside, blocks, fence, current = [], [], "", []
    for line in body.split("\n"):
        if not fence and (m := re.match(r"(`{3,})", line)):
            fence, current = m.group(1), []
        elif fence and re.fullmatch(rf"`{{{len(fence)},}}\s*", line):
            blocks.append("\n".join(current))
            fence = ""
        elif fence:
            current.append(line)
        else:
            outside.append(line)
    assert not fence and blocks == [(tmp_path / "jobplane-plan.txt").read_text(), (tmp_path / "terraform-plan.txt").read_text()]
    assert [line for line in outside if line] == ["### jobplane plan", "<details><summary>terraform plan</summary>",
                                                 "</details>"]


def _run_build_step(tmp_path: Path, found: str, media: str = "application/vnd.docker.distribution.manifest.v2+json"
                    ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The apply job's build step, run by bash with `aws` and `docker` standing in as recorders
    on PATH: `aws ecr describe-images` exits ``found`` (0: the tag is pushed), `aws ecr
    batch-get-image` answers ``media`` as the pushed manifest's type."""
    import os

    import yaml

    doc = yaml.safe_load(WORKFLOW.read_text())
    step = next(s for s in doc["jobs"]["apply"]["steps"] if s.get("name") == "Build and push the runner image")
    calls = tmp_path / "calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "aws").write_text(
        f'#!/bin/sh\necho "aws $*" >> {calls}\n'
        'case "$*" in *batch-get-image*) echo "$MEDIA"; exit 0;; esac\n'
        'exit "${FOUND:-254}"\n')
    # docker: `buildx imagetools inspect` answers as its documented default output does, a
    # "Digest:" line (https://docs.docker.com/reference/cli/docker/buildx/imagetools/inspect/)
    (bin_dir / "docker").write_text(
        f'#!/bin/sh\necho "docker $*" >> {calls}\n'
        f'case "$*" in "buildx imagetools inspect "*) printf "Name:      %s\\nMediaType: x\\nDigest:    %s\\n" "$4" "{APP_DIGEST}";; esac\n'
        'exit 0\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    for tool in ("aws", "docker", "python"):
        (bin_dir / tool).chmod(0o755)
    output = tmp_path / "github-output"
    output.write_text("")
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "APP_IMAGE": "app:1", "GITHUB_OUTPUT": str(output),
           "RUNNER_REPOSITORY": "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/jobplane-runner",
           "FOUND": found, "MEDIA": media}
    calls.write_text("")
    done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    return done, calls.read_text().splitlines()


APP_DIGEST = "sha256:" + "ab" * 32


def _tag() -> str:
    """The tag the build step names its image with: scripts/runner_image_tag.py's, of this checkout."""
    done = subprocess.run([sys.executable, "scripts/runner_image_tag.py", "--app-image-digest", APP_DIGEST], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_rerun_of_the_apply_does_not_push_its_image_again(tmp_path: Path) -> None:
    """Issue 41 item 4: the runner repository's tags are IMMUTABLE, so re-running a failed apply
    failed at the push of the same tag. The workflow's own build step: the tag found, nothing is
    built or pushed; not found, it is built and pushed."""
    for found, built in (("0", False), ("254", True)):
        done, lines = _run_build_step(tmp_path, found)
        assert done.returncode == 0, done.stderr
        aws = [line for line in lines if line.startswith("aws ")]
        assert aws[0] == ("aws ecr describe-images --repository-name team/jobplane-runner "
                          f"--image-ids imageTag={_tag()}")
        docker = [line.split()[:2] for line in lines if line.startswith("docker ") and "imagetools" not in line]
        assert docker == ([["docker", "build"], ["docker", "push"]] if built else [])


def test_the_runner_image_is_tagged_by_its_inputs_and_built_from_the_app_images_digest(tmp_path: Path) -> None:
    """Issue 69 part 1: the image is in every job's definition digest, so its tag names what it is
    built from (scripts/runner_image_tag.py), not the commit; the application image is resolved
    to its digest, the build is FROM that digest, and the step hands the image to the steps
    after it (`steps.image.outputs.image`: the apply's compile, TF_VAR_runner_image and the
    recorded definitions)."""
    import yaml

    done, lines = _run_build_step(tmp_path, "254")
    assert done.returncode == 0, done.stderr
    assert "docker buildx imagetools inspect app:1" in lines
    build = next(line.split() for line in lines if line.startswith("docker build "))
    assert build[build.index("--build-arg") + 1] == f"APP_IMAGE=app:1@{APP_DIGEST}"
    image = f"123456789012.dkr.ecr.us-east-1.amazonaws.com/team/jobplane-runner:{_tag()}"
    assert build[build.index("-t") + 1] == image and f"docker push {image}" in lines
    assert (tmp_path / "github-output").read_text() == f"image={image}\n"
    apply = {s.get("name"): s for s in yaml.safe_load(WORKFLOW.read_text())["jobs"]["apply"]["steps"]}
    assert apply["Build and push the runner image"]["id"] == "image"
    for name, key in (("Compile and apply, base first", "TF_VAR_runner_image"),
                      ("Compile and apply, base first", "JOBPLANE_RUNNER_IMAGE"),
                      ("Keep each deployed definition", "IMAGE")):
        assert apply[name]["env"][key] == "${{ steps.image.outputs.image }}", (name, key)


def test_the_runner_image_is_built_for_one_platform_without_attestations(tmp_path: Path) -> None:
    """Issue 62 finding 4: the same image runs the Lambda steps, and Lambda refuses an image
    index ("Lambda doesn't support functions that use multi-architecture container images",
    https://docs.aws.amazon.com/lambda/latest/dg/images-create.html); BuildKit's default
    provenance attestation makes a plain `docker build` push one. Each flag that keeps the push a
    single image manifest is on the build's command line (removing any fails here)."""
    done, lines = _run_build_step(tmp_path, "254")
    assert done.returncode == 0, done.stderr
    build = next(line.split() for line in lines if line.startswith("docker build "))
    for flag in (["--platform", "linux/amd64"], ["--provenance=false"], ["--sbom=false"]):
        at = build.index(flag[0])
        assert build[at:at + len(flag)] == flag, (flag, build)


def test_the_pipeline_fails_when_the_pushed_image_is_an_index(tmp_path: Path) -> None:
    """Issue 62 finding 4: whatever built it (this run, or an earlier run of the same commit), the
    pushed tag's manifest type is checked after the push (ECR's imageManifestMediaType): an image
    index fails the job before any root applies; the two single-image manifest types pass."""
    for found in ("254", "0"):
        for media, ok in (("application/vnd.docker.distribution.manifest.v2+json", True),
                          ("application/vnd.oci.image.manifest.v1+json", True),
                          ("application/vnd.oci.image.index.v1+json", False),
                          ("application/vnd.docker.distribution.manifest.list.v2+json", False),
                          ("None", False)):
            done, lines = _run_build_step(tmp_path, found, media)
            assert (done.returncode == 0) is ok, (found, media, done.stdout, done.stderr)
            assert (f"aws ecr batch-get-image --repository-name team/jobplane-runner --image-ids imageTag={_tag()} "
                    "--query images[0].imageManifestMediaType --output text") in lines
            if not ok:
                assert "not one image manifest" in done.stdout and "--provenance=false" in done.stdout
