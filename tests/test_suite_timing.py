"""The suite's timing hook and its order under xdist (tests/suite_timing.py, issue 66 item 7):
the long modules start first on every worker, no module is split by the order, and each test's
wall and CPU time is on record for scripts/test_durations.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from suite_timing import longest_first

TESTS = Path(__file__).resolve().parent

#: (module, tests) in collection order: a few long modules among many short ones
MODULES = [("test_a.py", 10), ("test_b.py", 5), ("test_engine.py", 31), ("test_c.py", 20), ("test_d.py", 3),
           ("test_e.py", 7), ("test_storm.py", 1), ("test_f.py", 4), ("test_g.py", 2), ("test_h.py", 6),
           ("test_episodes.py", 1), ("test_i.py", 8), ("test_j.py", 1), ("test_k.py", 1)]
TIMES = {"test_storm.py": 100.0, "test_engine.py": 90.0, "test_episodes.py": 33.0}


def shares(order: list[str], workers: int) -> list[list[str]]:
    """The modules of each worker's queue as worksteal deals a collection in this order: the first
    ``total // workers`` tests to the first worker, and so on (a module split at a boundary is in both)."""
    items = [m for m in order for _ in range(dict(MODULES)[m])]
    quota = len(items) // workers
    bounds = [w * quota for w in range(workers)] + [len(items)]
    return [list(dict.fromkeys(items[bounds[w]:bounds[w + 1]])) for w in range(workers)]


def test_every_worker_starts_with_its_long_modules_dealt_longest_first() -> None:
    order = longest_first(MODULES, TIMES, 2)
    assert sorted(order) == sorted(m for m, _ in MODULES)  # every module once: none split, none lost
    first, second = shares(order, 2)
    # storm (100 s) to one worker, engine (90 s) and episodes (33 s) to the other, the single 33 s
    # test before the module of 31 tests averaging 3 s (a worker that runs dry can take those)
    assert first[0] == "test_storm.py" and second[:2] == ["test_episodes.py", "test_engine.py"]
    # the long modules before any other in each queue
    for queue in (first, second):
        known = [m in TIMES for m in queue]
        assert known == sorted(known, reverse=True), queue
    # three workers: one long module each (a short module split at a share's boundary may come
    # before the third; the first two start their queues)
    three = shares(longest_first(MODULES, TIMES, 3), 3)
    assert [[m for m in q if m in TIMES] for q in three] == [["test_storm.py"], ["test_engine.py"], ["test_episodes.py"]]
    assert [q[0] for q in three[:2]] == ["test_storm.py", "test_engine.py"], three


def test_without_known_times_the_collection_order_is_kept() -> None:
    assert longest_first(MODULES, {}, 2) == [m for m, _ in MODULES]


def test_a_run_records_each_tests_time_and_its_worker_starts_with_the_long_module(tmp_path: Path) -> None:
    """A real ``pytest -n 2 --dist worksteal`` over a probe suite whose long module is last in
    collection order: it is the first test of a worker, and its CPU time (a child it waited for
    spinning 0.3 s of CPU) is on record."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
                                       "from suite_timing import pytest_collection_modifyitems, pytest_configure, "
                                       "pytest_runtest_protocol\n")
    for i in range(6):
        (suite / f"test_m{i}.py").write_text("".join(f"def test_{j}():\n    assert {j} == {j}\n\n" for j in range(3)))
    (suite / "test_z_long.py").write_text(textwrap.dedent("""\
        import subprocess, sys

        def test_spins():
            spin = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.3: pass"
            assert subprocess.run([sys.executable, "-c", spin]).returncode == 0
    """))
    module_times = tmp_path / "module_times.json"
    module_times.write_text(json.dumps({"modules": {"test_z_long.py": 50}}))
    times = tmp_path / "times.jsonl"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist",
                           "worksteal", "--rootdir", str(suite), str(suite)], cwd=suite, capture_output=True,
                          text=True, timeout=300,
                          env={**{k: v for k, v in os.environ.items() if k != "JOBPLANE_TEST_TIMES_OWNER"},
                               "JOBPLANE_TEST_TIMES": str(times), "JOBPLANE_MODULE_TIMES": str(module_times)})
    assert done.returncode == 0, done.stdout[-2000:]
    rows = [json.loads(line) for line in times.read_text().splitlines()]
    assert len(rows) == 19 and {r["worker"] for r in rows} <= {"gw0", "gw1"}
    long = next(r for r in rows if r["test"].startswith("test_z_long.py"))
    assert long["cpu"] >= 0.3 and long["wall"] > 0
    first_of_its_worker = next(r for r in rows if r["worker"] == long["worker"])
    assert first_of_its_worker is long, rows


def test_a_pytest_that_a_test_runs_records_nothing_in_its_runs_file(tmp_path: Path) -> None:
    """tests/test_make_test.py runs pytest in a subprocess: its tests are not the run's own."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
                                       "from suite_timing import pytest_configure, pytest_runtest_protocol\n")
    (suite / "test_inner.py").write_text("def test_inner():\n    assert True\n")
    (suite / "test_outer.py").write_text(textwrap.dedent(f"""\
        import subprocess, sys

        def test_outer():
            inner = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                     {str(suite / "test_inner.py")!r}]
            assert subprocess.run(inner, cwd={str(suite)!r}).returncode == 0
    """))
    times = tmp_path / "times.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("JOBPLANE_TEST_TIMES_OWNER", "PYTEST_XDIST_WORKER")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--rootdir", str(suite), str(suite / "test_outer.py")], cwd=suite, capture_output=True,
                          text=True, timeout=300, env=env | {"JOBPLANE_TEST_TIMES": str(times)})
    assert done.returncode == 0, done.stdout[-2000:]
    assert [json.loads(line)["test"] for line in times.read_text().splitlines()] == ["test_outer.py::test_outer"]
