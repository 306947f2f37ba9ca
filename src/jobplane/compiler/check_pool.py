"""Each definition file's own checks (validate._check_file) made in forked workers when a check
has many files.

Measured (issue 66 item 5, /work/coord/phases.py at 5,000 jobs on 2 cores): after Jsonnet, which
runs in two children (compiler/sandbox.py), each file's checks (the typed model, the raw checks,
the ECS override budget, ...) took ~2.6 s in the parent alone, the other core idle. A file's
result is a function of its path, its Jsonnet value and the configuration alone, so under the
same condition as job_build.py (many files, Linux, no other thread in the process:
fork_workers.workers_for) the files are checked in forked workers, which inherit what they read
(never pickled), each a run of consecutive files; the results come back pickled, in the files'
order, step kinds by name as the validate cache pickles them (compiler/kind_pickle.py): a
result read back is equal to the one made here (tests/test_check_pool.py), and reading it back
costs a small part of making it.

A file whose checks fail in a worker is checked again in this process, in order, so the check
raises exactly what it raised before (nothing a failing worker made is used).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: From this many files on, the checks may run in workers (fewer are not worth the fork).
MIN_FILES = 500
#: Runs of files per worker: several, so that a worker given slow files does not finish last alone.
SHARES_PER_WORKER = 4

#: What the forked workers run (set only while a pool runs): inherited, never pickled.
_check: Callable[[int], object] | None = None


def workers(count: int) -> int:
    """How many processes check ``count`` files (1: this one, no fork)."""
    if count < MIN_FILES:
        return 1
    from jobplane.compiler import fork_workers

    return fork_workers.workers_for(count)


def check_each(check: Callable[[int], T], count: int) -> list[T]:
    """``check(i)`` for each i below ``count``, results in order; in forked workers when
    :func:`workers` says so."""
    n = workers(count)
    if n == 1:
        return [check(i) for i in range(count)]
    # only for many files: multiprocessing and pickle are ~80 ms of imports, 4x `python -c pass`,
    # that `jobplane validate` of a few files does not pay
    import multiprocessing
    import pickle

    global _check
    size = max(1, -(-count // (n * SHARES_PER_WORKER)))
    shares = [(start, min(count, start + size)) for start in range(0, count, size)]
    _check = check
    results: list[T] = []
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            # each share read back as it comes, in order, while the workers check the next ones
            for (start, stop), blob in zip(shares, pool.imap(_share, shares)):
                if blob is None:  # its results did not pickle: the whole share is checked here
                    results.extend(check(i) for i in range(start, stop))
                    continue
                for i, (ok, value) in enumerate(pickle.loads(blob), start):
                    results.append(value if ok else check(i))  # raises here, in order, as without workers
    finally:
        _check = None
    return results


def _share(bounds: tuple[int, int]) -> bytes | None:
    assert _check is not None  # set before the pool forked
    out: list[tuple[bool, object]] = []
    for i in range(*bounds):
        try:
            out.append((True, _check(i)))
        except Exception:  # noqa: BLE001 - told by the parent, which checks this file again
            out.append((False, None))
    try:
        from jobplane.compiler.kind_pickle import dumps

        return dumps(out)
    except Exception:  # noqa: BLE001 - a result that does not pickle: the parent checks the share again
        return None
