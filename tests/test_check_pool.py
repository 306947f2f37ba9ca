"""Each definition file's own checks made in forked workers (compiler/check_pool.py) are the same
results, in the same order, with the registry's own step kinds, and the same errors as made one
after the other in the checking process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import Repo
from jobplane.compiler import check_pool, fork_workers, kinds, validate
from jobplane.compiler.checked import FileChecked, definition_files
from jobplane.contract.config import load_config

BAD = {
    "jobs/billing/unknown-field.jsonnet": """
        local jp = import 'jobplane.libsonnet';
        { name: 'unknown-field', team: 'billing', schedule: jp.daily('02:00'), colour: 'red',
          steps: [{ name: 'a', shell: ['true'], cpu: 3 }] }
    """,
    "jobs/billing/refused.jsonnet": """
        local jp = import 'jobplane.libsonnet';
        [{ name: 'refused-%d' % i, team: 'billing', schedule: jp.daily('25:00'),
           steps: [{ name: 'a', shell: ['echo <<jobplane:table>>'] }] } for i in std.range(1, 3)]
    """,
    "jobs/growth/wrong-team.jsonnet": """
        { name: 'wrong-team', team: 'billing', steps: [{ name: 'a', python: 'm:f', env: { DB: 'postgres://u:pw@h/db' } }] }
    """,
    "jobs/billing/broken.jsonnet": "{ name: ",
    "jobs/billing/not-a-job.jsonnet": "[1, 'two', { name: 'third', team: 'billing' }]",
    "jobs/billing/odd name.jsonnet": "{}",
}


def check(repo: Repo) -> dict[Path, FileChecked]:
    config = load_config(repo.path)
    return validate.check_files(definition_files(config), config)


def test_files_checked_in_workers_are_the_same_results(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.copy_examples()
    for path, text in BAD.items():
        repo.write(path, text)
    monkeypatch.setattr(check_pool, "MIN_FILES", 1)
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 1)
    plain = check(repo)
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    forked = check(repo)
    assert list(forked) == list(plain)
    assert forked == plain  # problems, jobs, derived names, warnings: each file's, in its order
    assert any(f.problems for f in plain.values()) and any(f.loaded for f in plain.values())
    assert any(f.warnings for f in plain.values())
    steps = [s for f in forked.values() for lj in f.loaded for s in lj.job.steps]
    assert steps and all(s.kind_ is kinds.BY_NAME[s.kind_.name] for s in steps)  # compared by identity


def test_files_are_checked_in_workers_in_their_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_pool, "MIN_FILES", 1)
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    results = check_pool.check_each(lambda i: (i, os.getpid()), 21)
    assert [i for i, _ in results] == list(range(21))
    assert {pid for _, pid in results} - {os.getpid()}  # made in forked workers


def test_a_file_failing_in_a_worker_is_checked_again_here_and_the_first_in_order_raises(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_pool, "MIN_FILES", 1)
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    made: list[int] = []

    def one(i: int) -> int:
        made.append(i)
        if i in (5, 6):
            raise ValueError(f"file {i}")
        return i

    with pytest.raises(ValueError, match="file 5"):
        check_pool.check_each(one, 12)
    assert made == [5]  # the workers' calls are theirs; this process made only the failing file


def test_results_that_do_not_pickle_are_made_again_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_pool, "MIN_FILES", 1)
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    results = check_pool.check_each(lambda i: (lambda: i) if i == 3 else i, 8)
    assert results[:3] == [0, 1, 2] and results[3]() == 3 and results[4:] == [4, 5, 6, 7]


def test_few_files_are_checked_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    results = check_pool.check_each(lambda i: os.getpid(), check_pool.MIN_FILES - 1)
    assert set(results) == {os.getpid()}
