"""The CLI's start-up next to `python -c pass` as the floor: `jobplane --help` and `jobplane
validate` of the example jobs, medians of N runs and their ratios, in one run.

    .venv/bin/python bench/cli_start.py [-n 10]

Targets (issue 13): --help <= 5x the floor, validate of the examples <= 10x. A reference line
shows what importing pydantic alone costs (validate needs its DSL models), next to the target.

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


def median_seconds(argv: list[str], n: int) -> float:
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)  # warm the page cache
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10)
    n = ap.parse_args().n
    jobplane = str(Path(sys.executable).parent / "jobplane")
    compileall.compile_dir(ROOT / "src" / "jobplane", quiet=1)
    floor = median_seconds([sys.executable, "-c", "pass"], n)
    rows = [("jobplane --help", median_seconds([jobplane, "--help"], n), 5),
            ("jobplane validate (examples)", median_seconds([jobplane, "validate"], n), 10)]
    pydantic = median_seconds([sys.executable, "-c", "from pydantic import BaseModel"], n)
    print(f"{'python -c pass (floor)':32s} median {floor * 1000:7.1f} ms over {n} runs")
    for label, seconds, target in rows:
        ratio = seconds / floor
        print(f"{label:32s} median {seconds * 1000:7.1f} ms  = {ratio:4.1f}x the floor (target <= {target}x: "
              f"{'met' if ratio <= target else 'NOT met'})")
    print(f"{'  reference: import pydantic':32s} median {pydantic * 1000:7.1f} ms  = {pydantic / floor:4.1f}x the floor "
          "(`from pydantic import BaseModel` alone)")


if __name__ == "__main__":
    main()
