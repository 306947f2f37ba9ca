"""The compile's fast paths give the same bytes as the plain ones (issue 54 item 4): jobs'
files built in forked workers (compiler/job_build.py), the cyclic collector paused
(compiler/gc_pause.py)."""

from __future__ import annotations

import gc
import threading

import pytest

from conftest import ROOT
from jobplane.compiler import job_build
from jobplane.compiler.gc_pause import gc_paused
from jobplane.compiler.output import compile_all
from jobplane.compiler.validate import load_jobs
from jobplane.contract.config import load_config


def test_jobs_built_in_workers_are_the_same_files_in_the_same_order(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(ROOT)
    jobs = load_jobs(config)
    assert len(jobs) > 2  # the examples: more jobs than workers
    monkeypatch.setattr(job_build, "workers_for", lambda count: 1)
    plain = compile_all(config, jobs)
    monkeypatch.setattr(job_build, "workers_for", lambda count: 2)
    forked = compile_all(config, jobs)
    assert list(forked.files) == list(plain.files)
    assert forked.files == plain.files


def test_workers_only_for_many_jobs_and_never_beside_another_thread() -> None:
    assert job_build.workers_for(job_build.MIN_JOBS - 1) == 1
    assert 1 <= job_build.workers_for(100_000) <= job_build.MAX_WORKERS or threading.active_count() > 1
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert job_build.workers_for(100_000) == 1  # a fork would copy a lock that thread may hold
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
