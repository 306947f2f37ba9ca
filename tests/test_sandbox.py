"""The definitions' evaluation shared among children that run at once (compiler/sandbox.py,
issue 54 item 4): each file's outcome is what one child evaluating every file gives, in the
files' order, whichever share a file falls in."""

from __future__ import annotations

import pytest

from conftest import Repo, minimal_job
from jobplane.compiler import sandbox
from jobplane.compiler.problems import DefinitionError
from jobplane.compiler.validate import definition_files, load_jobs
from jobplane.contract.config import load_config


def test_a_few_files_take_one_child_and_many_at_most_the_cap() -> None:
    assert sandbox.children_for(0) == sandbox.children_for(sandbox.MIN_SHARE * 2 - 1) == 1
    assert 1 <= sandbox.children_for(100_000) <= sandbox.MAX_CHILDREN


def test_shares_keep_each_files_outcome_and_order(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"job-{i}" for i in range(6)]
    for name in names:
        repo.write(f"jobs/billing/{name}.jsonnet", minimal_job(name))
    repo.write("jobs/billing/job-4.jsonnet", "{ name: 'broken', }}\n")  # in the second share
    repo.write("jobs/billing/job-1.jsonnet", "import '/etc/hostname'\n")  # refused, in the first
    config = load_config(repo.path)
    files = definition_files(config)
    alone = sandbox.evaluate_all(files, config)  # six files: one child
    shares: list[int] = []
    run_share = sandbox._evaluate_share
    monkeypatch.setattr(sandbox, "children_for", lambda count: 2)
    monkeypatch.setattr(sandbox, "_evaluate_share",
                        lambda paths, config, *run: shares.append(len(paths)) or run_share(paths, config, *run))
    shared = sandbox.evaluate_all(files, config)
    assert shares == [3, 3]
    assert shared == alone
    assert [e.value["name"] if isinstance(e.value, dict) else None for e in shared] == \
        ["job-0", None, "job-2", "job-3", None, "job-5"]
    assert shared[1].refusals and "absolute paths are not allowed" in shared[1].refusals[0]
    assert shared[4].error is not None and "job-4.jsonnet" in shared[4].error


def test_load_jobs_over_shares_names_each_problem_once(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(4):
        repo.write(f"jobs/billing/job-{i}.jsonnet", minimal_job(f"job-{i}"))
    repo.write("jobs/billing/job-3.jsonnet", "{ name: 'broken', }}\n")
    monkeypatch.setattr(sandbox, "children_for", lambda count: 2)
    with pytest.raises(DefinitionError) as raised:
        load_jobs(load_config(repo.path))
    assert [p.file for p in raised.value.problems] == ["jobs/billing/job-3.jsonnet"]
