"""How long the suite takes, and the order its workers take the tests in (issue 66 item 7).

Two hooks, imported by conftest.py:

* ``pytest_runtest_protocol``: with ``JOBPLANE_TEST_TIMES=<file>`` set, each test's wall time and
  CPU time (this process's threads, moto's included, plus the children it reaped: the runner's
  steps, `jobplane dev`, fresh interpreters) from its setup to its teardown are appended to the
  file as a JSON line. CPU time is the figure that holds on a shared machine; wall time alone
  says as much about the neighbours as about the test. scripts/test_durations.py runs pytest
  with it and prints the slowest tests and the totals.

* ``pytest_collection_modifyitems``: under pytest-xdist, the modules are reordered so that the
  longest ones start first on every worker. ``--dist worksteal`` gives each worker a contiguous
  share of the collection (the first ``N // workers`` tests to the first one, and so on) and a
  worker that runs dry takes the tail of another's queue; in the alphabetical order, a 100 s
  module late in a share started last and the run waited for it alone. Here the modules known
  to be long (tests/module_times.json, written by ``scripts/test_durations.py --save``) are
  dealt to the shares longest first, each to the share with the least work so far, every share
  starting with its long modules (the longest tests on average first) and filled up with the
  others to its count. Modules are never
  split by the reordering (a module's shared fixtures, its local AWS or platform, are set up
  once per worker as before); only the order of whole modules changes, the same in every
  worker (xdist checks that every worker collected the same list).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MODULE_TIMES = HERE / "module_times.json"


def _cpu() -> float:
    """CPU seconds of this process (every thread) and of the children it has waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


OWNER = "JOBPLANE_TEST_TIMES_OWNER"


def pytest_configure(config: pytest.Config) -> None:
    """The run that was given the file owns it (its pid, inherited by its xdist workers): a
    pytest that a test runs in a subprocess (tests/test_make_test.py does) records nothing there."""
    if os.environ.get("JOBPLANE_TEST_TIMES") and OWNER not in os.environ:
        os.environ[OWNER] = str(os.getpid())


def _records() -> bool:
    owner = os.environ.get(OWNER)
    if owner is None:  # pytest_configure not hooked in: every test is the run's own
        return True
    return str(os.getpid()) == owner or (str(os.getppid()) == owner and "PYTEST_XDIST_WORKER" in os.environ)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    out = os.environ.get("JOBPLANE_TEST_TIMES")
    if not out or not _records():
        yield
        return
    wall, cpu = time.monotonic(), _cpu()
    yield
    line = json.dumps({"test": item.nodeid, "wall": round(time.monotonic() - wall, 3),
                       "cpu": round(_cpu() - cpu, 3), "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")})
    with open(out, "a", encoding="utf-8") as f:  # one short append per test: workers' lines do not mix
        f.write(line + "\n")


def _module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def known_times() -> dict[str, float]:
    """Module file name -> seconds it took (wall, one worker), as last measured
    (``JOBPLANE_MODULE_TIMES`` names another file: tests/test_suite_timing.py's probe suite)."""
    path = Path(os.environ.get("JOBPLANE_MODULE_TIMES") or MODULE_TIMES)
    if not path.exists():
        return {}
    return {k: float(v) for k, v in json.loads(path.read_text())["modules"].items()}


def longest_first(modules: list[tuple[str, int]], times: dict[str, float], workers: int) -> list[str]:
    """The modules (name, number of tests, in collection order) in the order to run them: one
    share per worker of ``total // workers`` tests (the last takes the rest), as worksteal deals
    them; the long modules dealt longest first to the share with the least time so far (that
    has room), each share its long modules first (those of the longest tests on average first:
    one 100 s test cannot be shared out, a module of many short ones can be, by a worker that
    runs dry taking the tail of the other's queue), then the other modules in collection order
    to fill it."""
    if not any(m in times for m, _ in modules):
        return [m for m, _ in modules]
    total = sum(n for _, n in modules)
    quota = [total // workers] * (workers - 1) + [total - total // workers * (workers - 1)]
    count = dict(modules)
    shares: list[list[str]] = [[] for _ in range(workers)]
    load, filled = [0.0] * workers, [0] * workers
    for name in sorted((m for m, _ in modules if m in times), key=lambda m: (-times[m], m)):
        room = [w for w in range(workers) if filled[w] + count[name] <= quota[w]] or list(range(workers))
        w = min(room, key=lambda w: (load[w], w))
        shares[w].append(name)
        load[w] += times[name]
        filled[w] += count[name]
    for share in shares:  # in a share, the longest tests first: a module of many short tests
        share.sort(key=lambda m: (-times[m] / count[m], m))  # is what a worker that ran dry can take
    rest = [m for m, _ in modules if m not in times]
    for w in range(workers - 1):
        # whole modules that fit, so the next share's long modules stay at the front of its
        # worker's queue; a gap left is filled with the smallest module, split at the boundary
        for name in [m for m in rest if filled[w] + count[m] <= quota[w]]:
            if filled[w] + count[name] <= quota[w]:
                rest.remove(name)
                shares[w].append(name)
                filled[w] += count[name]
        if filled[w] < quota[w] and rest:
            name = min(rest, key=lambda m: count[m])
            rest.remove(name)
            shares[w].append(name)
            filled[w] += count[name]
    shares[-1].extend(rest)
    return [m for share in shares for m in share]


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers < 2 or os.environ.get("JOBPLANE_TEST_ORDER") == "collected":
        return
    by_module: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_module.setdefault(_module_of(item), []).append(item)
    order = longest_first([(m, len(tests)) for m, tests in by_module.items()], known_times(), workers)
    items[:] = [item for m in order for item in by_module[m]]
