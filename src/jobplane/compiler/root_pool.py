"""Each team root's files made in forked workers when a compile has many jobs.

Profiled (issue 66 item 5, bench/dev_scale.py at 1,500 jobs, a compile from nothing): with
Jsonnet and the jobs' documents in two workers each (compiler/sandbox.py, job_build.py), the
roots' files (output.root_files: shared roles, catalog, stamping and rendering each job's file)
were ~17% of the CPU, in the parent alone with the other core idle. A root's files are a
function of its jobs' built documents and the configuration alone, so under the same condition
as job_build.py (many jobs, Linux, no other thread in the process: fork_workers.workers_for) the
roots are made in forked workers, which inherit what they read (never pickled), largest root
first so that two workers finish together, and the results are taken in the roots' order: the
output is the same bytes either way (tests/test_compile_speed.py, tests/test_dev_root_memo.py).

A root that fails in a worker is made again in this process, in order, so the compile raises
exactly what it raised before (DefinitionError's problems do not survive pickling, and the
first failing root in order is the one whose error is told).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import TypeVar, cast

from jobplane.compiler import fork_workers

T = TypeVar("T")

#: What the forked workers run, and where they leave each result (set only while a pool runs):
#: inherited, never pickled.
_tasks: Sequence[Callable[[], object]] | None = None
_handoff: fork_workers.Handoff | None = None


def run_roots(tasks: Sequence[Callable[[], T]], sizes: Sequence[int]) -> list[T]:
    """Each of ``tasks`` (one a root, ``sizes``: its jobs) called, results in order; in forked
    workers when the roots hold many jobs and there is more than one root."""
    workers = fork_workers.workers_for(sum(sizes)) if len(tasks) > 1 else 1
    if workers == 1:
        return [task() for task in tasks]
    global _tasks, _handoff
    _tasks, _handoff = tasks, fork_workers.Handoff()  # results through files: fork_workers.Handoff
    largest_first = sorted(range(len(tasks)), key=lambda i: -sizes[i])
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(tasks))) as pool:
            done = {i: (True, _handoff.take(name)) if name is not None else (False, None)
                    for i, name in pool.imap_unordered(_run_at, largest_first, chunksize=1)}
    finally:
        _tasks = None
        _handoff.close()
        _handoff = None
    # raises here, in order, as without workers
    return [cast(T, done[i][1]) if done[i][0] else task() for i, task in enumerate(tasks)]


def _run_at(i: int) -> tuple[int, str | None]:
    """Root ``i`` made, and the name its result is left under (None: it failed)."""
    assert _tasks is not None and _handoff is not None  # set before the pool forked
    try:
        return i, _handoff.put(_tasks[i]())
    except Exception:  # told by the parent, which makes this root again
        return i, None
