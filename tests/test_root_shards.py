"""A team's jobs split into several Terraform roots (``[teams.<team>] roots = N``,
contract/root_shards.py): each job in one root by its name alone, so other jobs' changes never
move it and a one-job change plans one root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import Repo, minimal_job

from jobplane.compiler.output import changed_roots, compile_all, write_output
from jobplane.contract import layout, root_shards
from jobplane.contract.catalog import Catalog
from jobplane.contract.config import ConfigError, load_config


def split(repo: Repo, roots: int) -> None:
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace("[teams.billing]\n", f"[teams.billing]\nroots = {roots}\n"))


def job(name: str, hour: int = 2) -> str:
    return minimal_job(name).replace("daily('02:00')", f"daily('{hour:02d}:00')")


@pytest.fixture
def sharded(repo: Repo) -> Repo:
    split(repo, 3)
    for i in range(12):
        repo.write(f"jobs/billing/job-{i:02d}.jsonnet", job(f"job-{i:02d}"))
    repo.write("jobs/growth/weekly.jsonnet", minimal_job("weekly").replace("'billing'", "'growth'"))
    return repo


def roots_of(files: dict[str, str]) -> dict[str, str]:
    """job -> the root its Terraform file is in."""
    return {rel.rsplit("/", 1)[1].removesuffix(layout.JOB_SUFFIX): rel.rsplit("/", 1)[0]
            for rel in files if rel.endswith(layout.JOB_SUFFIX)}


def test_a_team_split_into_roots_has_each_with_its_own_state_and_catalog(sharded: Repo) -> None:
    config = load_config(sharded.path)
    compiled = compile_all(config)
    assert compiled.roots == ["base", "teams/billing.0", "teams/billing.1", "teams/billing.2", "teams/growth",
                              "teams/platform"]
    placed = roots_of(compiled.files)
    assert {placed[f"job-{i:02d}"] for i in range(12)} == {"teams/billing.0", "teams/billing.1", "teams/billing.2"}
    for name, root in placed.items():
        if root.startswith("teams/billing"):
            assert root == layout.team_root(root_shards.job_root_name("billing", name, 3))
    keys = set()
    for root in compiled.roots[1:]:
        main = json.loads(compiled.files[f"{root}/{layout.ROOT_FILE}"])
        keys.add(main["terraform"]["backend"]["s3"]["key"])
        keys.add(main["resource"]["aws_s3_object"]["catalog"]["key"])
        part = Catalog.model_validate_json(compiled.files[f"{root}/catalog.json"])
        assert {j.name for j in part.jobs} == {n for n, r in placed.items() if r == root}
        assert all(j.asl == f"{root}/{j.name}{layout.JOB_SUFFIX}" for j in part.jobs)  # the local engine reads it
        assert [t.name for t in part.teams] == [root.removeprefix("teams/").split(".")[0]]
    assert len(keys) == 2 * (len(compiled.roots) - 1)  # a state and a catalog object of its own, each
    assert "jobplane/teams/billing.1.tfstate" in keys and "catalog/billing.1.json" in keys
    # what the readers see is the whole team, in one catalog
    out = sharded.path / "out"
    write_output(compiled, out)
    merged = Catalog.load(out)
    assert len(merged.jobs) == 13 and all((out / j.asl).is_file() for j in merged.jobs)


def test_other_jobs_changing_never_move_a_job(sharded: Repo) -> None:
    before = compile_all(load_config(sharded.path)).files
    (sharded.path / "jobs" / "billing" / "job-03.jsonnet").unlink()
    for i in range(12, 30):
        sharded.write(f"jobs/billing/job-{i:02d}.jsonnet", job(f"job-{i:02d}"))
    sharded.write("jobs/billing/job-05.jsonnet", job("job-05", hour=5))
    after = compile_all(load_config(sharded.path)).files
    kept = {n: r for n, r in roots_of(before).items() if n != "job-03"}
    assert {n: roots_of(after)[n] for n in kept} == kept


def test_a_one_job_change_plans_one_root(sharded: Repo) -> None:
    before = compile_all(load_config(sharded.path)).files
    sharded.write("jobs/billing/job-07.jsonnet", job("job-07", hour=7))
    after = compile_all(load_config(sharded.path)).files
    assert changed_roots(before, after) == [roots_of(before)["job-07"]]


def test_one_root_is_the_team_root_as_before(repo: Repo) -> None:
    repo.write("jobs/billing/nightly.jsonnet", minimal_job())
    one = compile_all(load_config(repo.path)).files
    split(repo, 1)
    assert compile_all(load_config(repo.path)).files == one
    assert roots_of(one) == {"nightly": "teams/billing"}


@pytest.mark.parametrize("value", ["0", "65", "'3'", "2.5", "true"])
def test_roots_is_a_whole_number_in_range(repo: Repo, value: str) -> None:
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace("[teams.billing]\n", f"[teams.billing]\nroots = {value}\n"))
    with pytest.raises(ConfigError, match="teams.billing.roots"):
        load_config(repo.path)


def test_a_shard_is_a_function_of_the_name_alone() -> None:
    """The digest is fixed: the same job lands in the same shard on every machine and Python."""
    assert root_shards.shard_of("nightly", 4) == int.from_bytes(
        __import__("hashlib").sha256(b"nightly").digest()[:8], "big") % 4
    assert root_shards.root_names("billing", 1) == ["billing"]
    assert root_shards.root_names("billing", 2) == ["billing.0", "billing.1"]


def test_the_example_repository_keeps_its_roots(tmp_path: Path) -> None:
    from conftest import ROOT

    assert compile_all(load_config(ROOT)).roots == ["base", "teams/billing", "teams/growth", "teams/platform"]
