"""The compile's fast paths give the same bytes as the plain ones (issue 54 item 4): jobs'
files built in forked workers (compiler/job_build.py), the cyclic collector paused
(compiler/gc_pause.py)."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest

from conftest import ROOT
from jobplane.compiler import fork_workers, job_build
from jobplane.compiler.gc_pause import gc_paused
from jobplane.compiler.output import compile_all
from jobplane.compiler.validate import load_jobs
from jobplane.compiler.checked import FileChecked
from jobplane.contract.config import PlatformConfig, load_config


def test_jobs_built_in_workers_are_the_same_files_in_the_same_order(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(ROOT)
    jobs = load_jobs(config)
    assert len(jobs) > 2  # the examples: more jobs than workers
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 1)
    plain = compile_all(config, jobs)
    monkeypatch.setattr(fork_workers, "workers_for", lambda count: 2)
    forked = compile_all(config, jobs)
    assert list(forked.files) == list(plain.files)
    assert forked.files == plain.files


def test_workers_only_for_many_jobs_and_never_beside_another_thread() -> None:
    assert fork_workers.workers_for(fork_workers.MIN_JOBS - 1) == 1
    assert 1 <= fork_workers.workers_for(100_000) <= fork_workers.MAX_WORKERS or threading.active_count() > 1
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert fork_workers.workers_for(100_000) == 1  # a fork would copy a lock that thread may hold
    finally:
        release.set()
        other.join()


def test_the_collector_is_paused_inside_and_as_it_was_after_also_on_an_error() -> None:
    seen: list[bool] = []

    @gc_paused
    def inside(fail: bool) -> None:
        seen.append(gc.isenabled())
        if fail:
            raise ValueError("x")

    assert gc.isenabled()
    inside(False)
    with pytest.raises(ValueError):
        inside(True)
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        inside(False)
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()


def test_the_dev_compiles_passes_each_run_with_the_collector_paused(tmp_path: Path) -> None:
    """`jobplane dev` (devserver/dev_platform.py) calls the compiler's passes one by one rather
    than compile_all, so each pauses the collector itself: at 5,000 jobs the collections were
    ~45% of a one-job edit's CPU time and ~35% of a first compile's (issue 66 item 5)."""
    from jobplane.compiler import checked as checked_pass, inputs, validate
    from jobplane.compiler.root_memo import RootMemo, compile_roots
    from jobplane.compiler.validate_cache import ValidateCache

    config = load_config(ROOT)
    seen: dict[str, bool] = {}

    def check_files(paths: list[Path], config: PlatformConfig) -> dict[Path, FileChecked]:
        seen["check_definitions"] = gc.isenabled()
        return validate.check_files(paths, config)

    class Keys(ValidateCache):  # the real cache, telling whether it is asked with the collector on
        def source_key(self, source: str) -> str | None:
            seen["compile_roots"] = gc.isenabled()
            return super().source_key(source)

    assert gc.isenabled()
    inputs.digest(config, table=tmp_path)
    cache = Keys(config, tmp_path)
    result = checked_pass.check_definitions(config, check_files, cache=cache)
    compile_roots(config, result, cache, RootMemo(tmp_path / "roots.json"), {}, None)
    assert seen == {"check_definitions": False, "compile_roots": False} and gc.isenabled()
