#!/usr/bin/env python3
"""Where the test suite's time goes (issue 66 item 7): the slowest tests and the totals.

    .venv/bin/python scripts/test_durations.py                      # the whole suite, as make test runs it
    .venv/bin/python scripts/test_durations.py -- -n 0 tests/test_engine.py   # any pytest arguments
    .venv/bin/python scripts/test_durations.py --from times.jsonl   # a run's file again, nothing run
    .venv/bin/python scripts/test_durations.py --save               # also write tests/module_times.json

Runs pytest (by default ``-n 3 --dist worksteal``, make test's distribution) with
``JOBPLANE_TEST_TIMES`` set: tests/suite_timing.py then records each test's wall time and CPU
time from its setup to its teardown (a module's shared fixtures count on the test that set them
up and the one that tore them down). Prints the ten slowest tests (``--top``), the slowest
modules, and the totals: the run's wall and CPU time (pytest, its workers and every child they
waited for) and the tests' summed wall and CPU. On a machine shared with other work, compare CPU
times: wall time counts the neighbours too.

``--save`` writes the modules that took 10 s or more to tests/module_times.json, which the
suite's ordering (tests/suite_timing.py) deals longest first to the workers; re-save it after a
full run when the slow modules change.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_TIMES = ROOT / "tests" / "module_times.json"
SAVED_FROM = 10.0  # seconds: the modules worth ordering


def run_pytest(args: list[str], times: Path) -> tuple[int, float, float]:
    """pytest with the timing hook on; its exit code, wall seconds and CPU seconds (with children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    code = subprocess.call([str(ROOT / ".venv" / "bin" / "pytest"), "-p", "no:cacheprovider", *args], cwd=ROOT,
                           env=os.environ | {"JOBPLANE_TEST_TIMES": str(times)})
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return code, wall, cpu


def load(times: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in times.read_text().splitlines() if line.strip()]


def report(rows: list[dict[str, object]], top: int) -> dict[str, float]:
    """Prints the slowest tests and modules and the tests' totals; the modules' wall seconds."""
    tests = sorted(rows, key=lambda r: -float(r["wall"]))  # type: ignore[arg-type]
    print(f"\nthe {min(top, len(tests))} slowest of {len(tests)} tests (wall s, CPU s, from setup to teardown):")
    for r in tests[:top]:
        print(f"  {float(r['wall']):8.1f} {float(r['cpu']):8.1f}  {r['test']}")  # type: ignore[arg-type]
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        m = modules[str(r["test"]).split("::", 1)[0].rsplit("/", 1)[-1]]
        m[0] += float(r["wall"])  # type: ignore[arg-type]
        m[1] += float(r["cpu"])  # type: ignore[arg-type]
        m[2] += 1
    print(f"\nthe {min(top, len(modules))} slowest modules (wall s, CPU s, tests):")
    for name, (wall, cpu, n) in sorted(modules.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"  {wall:8.1f} {cpu:8.1f} {int(n):5d}  {name}")
    wall = sum(float(r["wall"]) for r in rows)  # type: ignore[arg-type]
    cpu = sum(float(r["cpu"]) for r in rows)  # type: ignore[arg-type]
    workers = len({r.get("worker") for r in rows})
    print(f"\ntests' total: {len(rows)} tests, {wall:.1f} s wall summed over {workers} worker(s), {cpu:.1f} s CPU")
    return {name: round(v[0], 1) for name, v in modules.items()}


def save(modules: dict[str, float]) -> None:
    slow = dict(sorted(((m, s) for m, s in modules.items() if s >= SAVED_FROM), key=lambda kv: -kv[1]))
    MODULE_TIMES.write_text(json.dumps({
        "why": "wall seconds of the modules that took 10 s or more (one worker), for tests/suite_timing.py's "
               "order; written by scripts/test_durations.py --save",
        "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "modules": slow}, indent=1) + "\n")
    print(f"wrote {MODULE_TIMES.relative_to(ROOT)} ({len(slow)} modules)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--from", dest="source", type=Path, help="a times file a run wrote; nothing is run")
    parser.add_argument("--keep", type=Path, help="where to keep this run's times file")
    parser.add_argument("--save", action="store_true", help="write tests/module_times.json")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments")
    options = parser.parse_args()
    code = 0
    if options.source:
        rows = load(options.source)
    else:
        times = options.keep or Path(tempfile.mkdtemp(prefix="test-times-")) / "times.jsonl"
        times.unlink(missing_ok=True)
        code, wall, cpu = run_pytest(options.pytest_args or ["-n", "3", "--dist", "worksteal"], times)
        print(f"\nthe run: exit {code}, {wall:.1f} s wall, {cpu:.1f} s CPU (pytest, its workers and their children); "
              f"times in {times}")
        rows = load(times) if times.exists() else []
    if not rows:
        print("no test ran", file=sys.stderr)
        return code or 1
    modules = report(rows, options.top)
    if options.save:
        save(modules)
    return code


if __name__ == "__main__":
    sys.exit(main())
