"""The team roots' files made in forked workers (compiler/root_pool.py) are the same bytes, the
same memory and the same errors as made one after the other in the compiling process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import ROOT
from jobplane.compiler import checked as checked_pass, fork_workers, inputs, validate
from jobplane.compiler.problems import DefinitionError, Problem
from jobplane.compiler.root_memo import RootMemo, compile_roots
from jobplane.compiler.root_pool import run_roots
from jobplane.compiler.validate_cache import ValidateCache
from jobplane.contract.config import load_config


def dev_compile(tmp_path: Path, memo: RootMemo, on_disk: dict[str, str]) -> tuple[object, object]:
    config = load_config(ROOT)
    inputs.digest(config, table=tmp_path)
    cache = ValidateCache(config, tmp_path)
    result = checked_pass.check_definitions(config, validate.check_files, cache=cache)
    return compile_roots(config, result, cache, memo, on_disk, "runner:1")


def test_the_dev_compiles_roots_made_in_workers_are_the_same_files_and_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 1)
    plain, plain_memory = dev_compile(tmp_path / "plain", RootMemo(tmp_path / "plain" / "roots.json"), {})
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    memo = RootMemo(tmp_path / "forked" / "roots.json")
    forked, forked_memory = dev_compile(tmp_path / "forked", memo, {})
    assert len(forked.compiled_roots) > 2  # the examples: more roots than workers
    assert list(forked.compiled.files) == list(plain.compiled.files)
    assert forked.compiled.files == plain.compiled.files
    assert forked.digests == plain.digests and forked_memory == plain_memory
    # the roots' kept catalog entries, written by the workers, are read back by the next compile
    memo.save(*forked_memory)
    again, _ = dev_compile(tmp_path / "forked", RootMemo(tmp_path / "forked" / "roots.json"), {})
    assert again.compiled.files == plain.compiled.files and again.digests == plain.digests
    assert os.listdir(tmp_path / "forked" / "entries")


class Recorded(fork_workers.Handoff):
    """The pool's handoff, its directory remembered: gone once the pool ended."""

    made: list[str] = []

    def __init__(self) -> None:
        super().__init__()
        Recorded.made.append(self.directory)


@pytest.fixture
def handoffs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    Recorded.made = []
    monkeypatch.setattr(fork_workers, "Handoff", Recorded)
    return Recorded.made


def test_roots_run_in_workers_in_their_order(monkeypatch: pytest.MonkeyPatch, handoffs: list[str]) -> None:
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    results = run_roots([lambda i=i: (i, os.getpid(), "x" * 100_000 * i) for i in range(5)], [1, 5, 2, 4, 3])
    assert [(i, text) for i, _, text in results] == [(i, "x" * 100_000 * i) for i in range(5)]
    assert {pid for _, pid, _ in results} - {os.getpid()}  # made in forked workers
    assert len(handoffs) == 1 and not os.path.exists(handoffs[0])  # the results' files removed


def test_a_handoff_is_owner_only_and_each_result_is_taken_once(tmp_path: Path) -> None:
    handoff = fork_workers.Handoff()
    try:
        assert os.stat(handoff.directory).st_mode & 0o777 == 0o700
        name = handoff.put({"texts": ["é" * 10, "b"], "n": 3})
        assert os.stat(os.path.join(handoff.directory, name)).st_mode & 0o777 == 0o600
        assert handoff.take(name) == {"texts": ["é" * 10, "b"], "n": 3}
        assert os.listdir(handoff.directory) == []
        with pytest.raises(FileNotFoundError):
            handoff.take(name)
    finally:
        handoff.close()
    assert not os.path.exists(handoff.directory)


def test_a_root_failing_in_a_worker_raises_its_own_error_the_first_in_order(
        monkeypatch: pytest.MonkeyPatch, handoffs: list[str]) -> None:
    """DefinitionError's problems do not survive pickling: the parent makes that root again."""
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    made: list[int] = []

    def root(i: int) -> int:
        made.append(i)
        if i in (2, 3):
            raise DefinitionError([Problem(f"jobs/t/job-{i}.jsonnet", f"job-{i}", "name", "too long")])
        return i

    with pytest.raises(DefinitionError) as raised:
        run_roots([lambda i=i: root(i) for i in range(4)], [1, 1, 3, 9])
    assert raised.value.problems == [Problem("jobs/t/job-2.jsonnet", "job-2", "name", "too long")]
    assert made == [2]  # the workers' calls are theirs; this process made only the failing root
    assert len(handoffs) == 1 and not os.path.exists(handoffs[0])
