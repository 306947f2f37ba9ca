"""The CLI's start-up next to `python -c pass` as the floor: `jobplane --help` and `jobplane
validate` of the example jobs, medians of N rounds and their ratios, in one run.

    .venv/bin/python bench/cli_start.py [-n 15]

Targets (issue 13): --help <= 5x the floor, validate of the examples <= 10x.

Each round runs the three commands one after the other, so a machine that slows down or speeds
up during the run (this one does, by up to 2x) moves the floor with the commands instead of
skewing their ratio.

The package's bytecode is compiled first, as ``pip install`` does: on a machine with
PYTHONDONTWRITEBYTECODE set (this one), changed modules would otherwise be compiled from source
on every start and measured with it.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def interleaved_medians(commands: list[list[str]], n: int) -> list[float]:
    """The median seconds of each command over ``n`` rounds that run every command once."""
    for argv in commands:
        subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)  # warm the page cache
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(n):
        for argv, taken in zip(commands, times):
            start = time.perf_counter()
            subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
            taken.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=15, help="rounds")
    n = ap.parse_args().n
    jobplane = str(Path(sys.executable).parent / "jobplane")
    compileall.compile_dir(ROOT / "src" / "jobplane", quiet=1)
    floor, help_, validate = interleaved_medians(
        [[sys.executable, "-c", "pass"], [jobplane, "--help"], [jobplane, "validate"]], n)
    rows = [("jobplane --help", help_, 5), ("jobplane validate (examples)", validate, 10)]
    print(f"{'python -c pass (floor)':32s} median {floor * 1000:7.1f} ms over {n} rounds")
    for label, seconds, target in rows:
        ratio = seconds / floor
        print(f"{label:32s} median {seconds * 1000:7.1f} ms  = {ratio:4.1f}x the floor (target <= {target}x: "
              f"{'met' if ratio <= target else 'NOT met'})")


if __name__ == "__main__":
    main()
