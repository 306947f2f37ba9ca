"""Time from process start to the user's function being called, next to `python -c` as the floor.

    .venv/bin/python bench/runner_start.py [-n 20]

Both measure wall time from just before the process is spawned to the first statement of user
code writing time.time() to a file; medians of N runs and their ratio, in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def once(argv: list[str], env: dict[str, str], out: Path) -> float:
    out.unlink(missing_ok=True)
    start = time.time()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return float(out.read_text()) - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20)
    n = ap.parse_args().n
    runner = str(Path(sys.executable).parent / "jobplane-runner")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "called"
        env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"),
                   JOBPLANE_TARGET=json.dumps({"kind": "python", "target": "sample_apps.functions:mark_called",
                                               "kwargs": {"out": str(out)}}))
        floor_code = f"import time; open({str(out)!r}, 'w').write(repr(time.time()))"
        once([sys.executable, "-c", floor_code], env, out)  # warm the page cache
        once([runner, "run", "python"], env, out)
        floor = [once([sys.executable, "-c", floor_code], env, out) for _ in range(n)]
        runner_times = [once([runner, "run", "python"], env, out) for _ in range(n)]
    f, r = statistics.median(floor), statistics.median(runner_times)
    print(f"python -c (floor):           median {f * 1000:.1f} ms over {n} runs")
    print(f"jobplane-runner to function: median {r * 1000:.1f} ms over {n} runs")
    print(f"ratio runner / floor:        {r / f:.2f}")


if __name__ == "__main__":
    main()
