"""Each job's compiled Terraform document (its ASL inside), built in worker processes when a compile
has many jobs.

Profiled (issue 54 item 4, bench/compile.py): with the collector paused, building, rendering
and wrapping each job's ASL was still most of the compiler's own time at 1,000 jobs, one CPU
busy and the other idle. Each job's file depends on that job and the configuration only, so
under compiler/fork_workers.py's condition (many jobs, Linux, no other thread in the process: a fork copies only the forking
thread: a lock another thread held would stay held in the child, so `jobplane dev`, whose
compile runs beside its services' threads, builds in process), forked workers build them, one
per available CPU, and the files come back in the jobs' order: the output
is the same bytes either way (tests/test_compile_speed.py).
"""

from __future__ import annotations

import multiprocessing
from typing import Protocol, cast

from jobplane.compiler import asl, fork_workers, terraform
from jobplane.compiler.blackouts import job_windows
from jobplane.compiler.validate import LoadedJob
from jobplane.contract.config import PlatformConfig
from jobplane.contract.types import JsonObject


#: What the forked workers read, and where they leave what they built (set only while a pool
#: runs): inherited, never pickled.
_shared: tuple[list[LoadedJob], PlatformConfig, fork_workers.Handoff] | None = None


def count_states(definition: JsonObject) -> int:
    total = 0
    for state in definition["States"].values():
        total += 1
        for branch in state.get("Branches", []):
            total += count_states(branch)
    return total


def job_output(lj: LoadedJob, config: PlatformConfig) -> tuple[int, JsonObject]:
    """The job's state count (for the catalog) and its Terraform document (rendered after its
    team's roles are shared: compiler/shared_roles.py)."""
    definition = asl.build_definition(lj.job, config.name_prefix, config.pools, job_windows(lj.job, config))
    return count_states(definition), terraform.job_module(lj.job, asl.render(definition), config)


class BuiltJobs(Protocol):
    """A memory of built jobs (compiler/validate_cache.py keeps one beside each file's result,
    under the file's key: what it answers is what building again would give)."""

    def built(self, lj: LoadedJob) -> tuple[int, JsonObject] | None: ...

    def keep_built(self, lj: LoadedJob, value: tuple[int, JsonObject]) -> None: ...


def job_outputs(jobs: list[LoadedJob], config: PlatformConfig,
                kept: BuiltJobs | None = None) -> list[tuple[int, JsonObject]]:
    """:func:`job_output` of each of ``jobs``, in order; those ``kept`` knows are not built again."""
    if kept is None:
        return _build(jobs, config)
    found = {i: value for i, lj in enumerate(jobs) if (value := kept.built(lj)) is not None}
    missing = [i for i in range(len(jobs)) if i not in found]
    for i, value in zip(missing, _build([jobs[i] for i in missing], config)):
        kept.keep_built(jobs[i], value)
        found[i] = value
    return [found[i] for i in range(len(jobs))]


def _build(jobs: list[LoadedJob], config: PlatformConfig) -> list[tuple[int, JsonObject]]:
    workers = fork_workers.workers_for(len(jobs))
    if workers == 1:
        return [job_output(lj, config) for lj in jobs]
    global _shared
    handoff = fork_workers.Handoff()  # each chunk's documents through a file (fork_workers.Handoff)
    _shared = (jobs, config, handoff)
    size = max(1, len(jobs) // (workers * 8))
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            built: list[tuple[int, JsonObject]] = []
            for name in pool.imap(_job_outputs_of, [(i, i + size) for i in range(0, len(jobs), size)]):
                built += cast(list[tuple[int, JsonObject]], handoff.take(name))
            return built
    finally:
        _shared = None
        handoff.close()


def _job_outputs_of(chunk: tuple[int, int]) -> str:
    """What :func:`job_output` gives for the jobs ``chunk`` spans (start, end), left in the
    handoff under the name returned."""
    assert _shared is not None  # set before the pool forked
    jobs, config, handoff = _shared
    start, end = chunk
    return handoff.put([job_output(lj, config) for lj in jobs[start:end]])
