"""The runner image in a job's definition (issue 69 part 1): a compile told the image
(JOBPLANE_RUNNER_IMAGE; `jobplane dev`: its runner's identity) puts it in every job's definition
document, so a new image is a new definition, which the run page and `jobplane diff` show, on
the local engine with the real runner."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, Repo
from jobplane.contract import definition_digest
from jobplane.contract.bindings import asl_of
from jobplane.contract.catalog import Catalog
from jobplane.platform.local.engine import LocalAWS
from test_definition_versions import WORK, Deployed, run_page, run_to_end, write_job

IMAGE_A = "123456789012.dkr.ecr.us-east-1.amazonaws.com/app@sha256:" + "a" * 64
IMAGE_B = "123456789012.dkr.ecr.us-east-1.amazonaws.com/app@sha256:" + "b" * 64


def compiled(repo: Repo, monkeypatch: pytest.MonkeyPatch, image: str | None) -> Catalog:
    if image is None:
        monkeypatch.delenv("JOBPLANE_RUNNER_IMAGE", raising=False)
    else:
        monkeypatch.setenv("JOBPLANE_RUNNER_IMAGE", image)
    result = repo.cli("compile", "--out", str(repo.path / "out"))
    assert result.exit_code == 0, result.output
    return Catalog.load(repo.path / "out")


def test_the_image_the_compile_is_told_is_part_of_each_definition(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repo(tmp_path)
    write_job(repo, "ledger", steps=WORK)
    plain = compiled(repo, monkeypatch, None).job("ledger")
    a = compiled(repo, monkeypatch, IMAGE_A).job("ledger")
    b = compiled(repo, monkeypatch, IMAGE_B).job("ledger")
    assert plain is not None and a is not None and b is not None
    # not told: no image in the document, the digest is the JSON's alone (as before images)
    assert plain.runner_image is None and len({plain.definition, a.definition, b.definition}) == 3
    doc = json.loads((repo.path / "out" / b.asl).read_text())
    document = definition_digest.document(b, asl_of(json.dumps(doc)))
    assert document["image"] == IMAGE_B and definition_digest.digest(document) == b.definition
    assert "runner_image" not in document["job"]  # the image is the document's own key
    (schedule,) = doc["resource"]["aws_scheduler_schedule"].values()
    assert json.loads(schedule["target"]["input"])["definition"] == b.definition
    # the difference names it, and a new image is not a change of steps
    before, after = (definition_digest.document(e, "{}") for e in (a, b))
    assert [c.line() for c in definition_digest.diff(before, after)] == [f"image: {IMAGE_A} -> {IMAGE_B}"]
    assert not definition_digest.steps_differ(before, after)


def test_a_new_image_is_said_on_the_run_page_and_by_jobplane_diff(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from test_definition_versions import cli_on

    repo = Repo(tmp_path)
    write_job(repo, "ledger", steps=WORK)
    with LocalAWS(env={"PYTHONPATH": str(ROOT / "tests")}) as aws:
        deployed = Deployed(repo, aws, compiled(repo, monkeypatch, IMAGE_A))
        aws.deploy_output(repo.path / "out")
        first = run_to_end(deployed, "ledger")
        deployed.catalog = compiled(repo, monkeypatch, IMAGE_B)
        aws.deploy_output(repo.path / "out")
        second = run_to_end(deployed, "ledger")
        assert first.input.definition != second.input.definition
        page = run_page(deployed, second.execution)
        assert 'data-definition-change="changed"' in page and f"image: {IMAGE_A} -&gt; {IMAGE_B}" in page
        result = cli_on(deployed, "diff", first.execution, second.execution)
        assert result.exit_code == 0 and f"  image: {IMAGE_A} -> {IMAGE_B}" in result.output.splitlines()


def test_the_dev_runner_identity_changes_with_the_runner_code(tmp_path: Path) -> None:
    from jobplane.platform.local.runner_identity import identity, local_runner_image

    package = tmp_path / "jobplane"
    for part in ("runner", "contract"):
        shutil.copytree(ROOT / "src" / "jobplane" / part, package / part, ignore=shutil.ignore_patterns("__pycache__"))
    before = identity(package)
    assert before == local_runner_image() and before.startswith("jobplane-runner:local@")
    (package / "runner" / "steps.py").write_text((package / "runner" / "steps.py").read_text() + "\n# changed\n")
    assert identity(package) != before


def test_a_rerun_after_a_new_image_is_stamped_with_what_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Step Functions version pins the state machine, not the runner image (a step runs the
    deployed task definition or function). A re-run of a run made on image A, after image B was
    deployed with the same steps, runs B and is stamped with B's definition, not A's (which it
    was, with the version kept, while it ran B); with the steps changed as well, it is refused,
    naming the image and --current, and --current runs the deployed definition."""
    from jobplane.platform.control.errors import Conflict
    from jobplane.platform.definitions import DefinitionStore
    from test_definition_versions import CHECK, step_order

    repo = Repo(tmp_path)
    write_job(repo, "ledger", steps=WORK)
    with LocalAWS(env={"PYTHONPATH": str(ROOT / "tests")}) as aws:
        deployed = Deployed(repo, aws, compiled(repo, monkeypatch, IMAGE_A))
        aws.deploy_output(repo.path / "out")
        failed = run_to_end(deployed, "ledger", mode="fail")
        ran = failed.input.definition
        kept = DefinitionStore(aws.client("s3"), f"{aws.prefix}-catalog").get("ledger", ran)
        assert failed.status == "FAILED" and kept is not None and kept.version is not None  # A's version exists
        deployed.catalog = compiled(repo, monkeypatch, IMAGE_B)
        aws.deploy_output(repo.path / "out")
        control = deployed.control()
        name = control.runs.rerun(failed.execution, "alice", from_failed_step=False, params={"mode": "ok"})
        again = deployed.ended("ledger", name)
        assert again.status == "SUCCEEDED" and again.input.definition == deployed.definition("ledger") != ran
        # the steps changed as well: the old version would run them on B, stamped A: refused
        write_job(repo, "ledger", steps=f"{WORK}, {CHECK}")
        deployed.catalog = compiled(repo, monkeypatch, IMAGE_B)
        aws.deploy_output(repo.path / "out")
        control = deployed.control()
        with pytest.raises(Conflict) as refused:
            control.runs.rerun(failed.execution, "alice", from_failed_step=False, params={"mode": "ok"})
        message = refused.value.message
        assert f"image: {IMAGE_A} -> {IMAGE_B}" in message and "does not pin the runner image" in message
        assert "--current" in message
        name = control.runs.rerun(failed.execution, "alice", from_failed_step=False, params={"mode": "ok"},
                                  current=True)
        run = aws.wait(f"{aws.state_machines['ledger'].replace(':stateMachine:', ':execution:')}:{name}", timeout=300)
        assert run.status == "SUCCEEDED" and step_order(run.states_entered) == ["work", "check"]
        assert deployed.ended("ledger", name).input.definition == deployed.definition("ledger")
