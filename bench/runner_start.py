"""Time from process start to the user's function being called, next to `python -c` as the floor.

    .venv/bin/python bench/runner_start.py [-n 20]

Both measure wall time from just before the process is spawned to the same statement writing
time.time() to a file: ``python -c`` runs it as its program, the runner as the body of a step's
function in a module that imports only ``time``, so the ratio is the runner's own cost (a real
step's module pays for its own imports either way). Medians of N runs and their ratio, in one run.

The package's bytecode is compiled first, as ``pip install`` does in the runner's image: on a
machine with PYTHONDONTWRITEBYTECODE set (this one), a changed module would otherwise be compiled
from source on every start and measured with it.
"""

from __future__ import annotations

import argparse
import compileall
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
    compileall.compile_dir(ROOT / "src" / "jobplane", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "called"
        floor_code = f"import time; open({str(out)!r}, 'w').write(repr(time.time()))"
        (Path(tmp) / "bench_step.py").write_text(
            "import time\n\n\ndef mark_called(out):\n    open(out, 'w').write(repr(time.time()))\n")
        env = dict(os.environ, PYTHONPATH=tmp,
                   JOBPLANE_TARGET=json.dumps({"kind": "python", "target": "bench_step:mark_called",
                                               "kwargs": {"out": str(out)}}))
        once([sys.executable, "-c", floor_code], env, out)  # warm the page cache
        once([runner, "run", "python"], env, out)
        floor, runner_times = [], []
        for _ in range(n):  # interleaved: a busy moment of the machine slows both alike
            floor.append(once([sys.executable, "-c", floor_code], env, out))
            runner_times.append(once([runner, "run", "python"], env, out))
    f, r = statistics.median(floor), statistics.median(runner_times)
    print(f"python -c (floor):           median {f * 1000:.1f} ms over {n} runs")
    print(f"jobplane-runner to function: median {r * 1000:.1f} ms over {n} runs")
    print(f"ratio runner / floor:        {r / f:.2f} (target <= 3: {'met' if r / f <= 3 else 'NOT met'})")


if __name__ == "__main__":
    main()
