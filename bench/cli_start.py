"""The CLI's start-up next to `python -c pass` as the floor: `jobplane --help` and `jobplane
validate` of the example jobs, medians of N rounds and their ratios, in one run; then where the
time goes (each command's imports by package, from ``python -X importtime``).

    .venv/bin/python bench/cli_start.py [-n 15]

Targets (issue 66 item 1): --help <= 4x the floor, validate of the examples <= 8x. `validate`
runs as a developer runs it again (its cache, in a scratch directory, holds the last run's
results); `validate --no-cache` evaluates every file in the Jsonnet child (compiler/sandbox.py)
and checks it, which is what a changed file pays.

Each round runs the three commands one after the other, so a machine that slows down or speeds
up during the run (this one does, by up to 2x) moves the floor with the commands instead of
skewing their ratio.

The package's bytecode is compiled first, and the virtualenv's (`make .venv` installs with
--no-compile), as ``pip install`` does: on a machine with PYTHONDONTWRITEBYTECODE set (this
one), every module would otherwise be compiled from source on every start and measured with it.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def interleaved_medians(commands: list[list[str]], n: int, env: dict[str, str]) -> list[float]:
    """The median seconds of each command over ``n`` rounds that run every command once."""
    for argv in commands:
        subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, env=env)  # warm the page cache
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(n):
        for argv, taken in zip(commands, times):
            start = time.perf_counter()
            subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, env=env)
            taken.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def where_the_time_goes(argv: list[str], env: dict[str, str], top: int = 6) -> str:
    """The command's imports (``-X importtime``, self times summed by top-level package), the
    largest first, and what is not imports (the rest of its wall time, its children's included)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "import sys; from jobplane.cli import console; sys.argv[0] = 'jobplane'; console()", *argv],
                          cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    by_package: dict[str, int] = defaultdict(int)
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            self_us, _, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
            by_package[name.split(".")[0]] += int(self_us)
    imports = sum(by_package.values()) / 1e6
    shown = ", ".join(f"{name} {us / 1000:.0f}" for name, us in sorted(by_package.items(), key=lambda kv: -kv[1])[:top])
    return (f"  {' '.join(argv)}: imports {imports * 1000:.0f} ms ({len(by_package)} packages; {shown} ms), "
            f"the rest {max(0.0, wall - imports) * 1000:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=15, help="rounds")
    n = ap.parse_args().n
    jobplane = str(Path(sys.executable).parent / "jobplane")
    compileall.compile_dir(ROOT / "src" / "jobplane", quiet=1)
    compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=2)  # skips what is compiled already
    with tempfile.TemporaryDirectory(prefix="jobplane-cli-bench-") as cache:
        env = os.environ | {"JOBPLANE_CACHE_DIR": cache}
        floor, help_, validate, fresh = interleaved_medians(
            [[sys.executable, "-c", "pass"], [jobplane, "--help"], [jobplane, "validate"],
             [jobplane, "validate", "--no-cache"]], n, env)
        rows = [("jobplane --help", help_, 4), ("jobplane validate (examples)", validate, 8),
                ("jobplane validate --no-cache", fresh, None)]
        print(f"{'python -c pass (floor)':32s} median {floor * 1000:7.1f} ms over {n} rounds")
        for label, seconds, target in rows:
            ratio = seconds / floor
            verdict = f" (target <= {target}x: {'met' if ratio <= target else 'NOT met'})" if target else ""
            print(f"{label:32s} median {seconds * 1000:7.1f} ms  = {ratio:4.1f}x the floor{verdict}")
        print("where the time goes (one run each, imports by package):")
        for argv in (["--help"], ["validate"], ["validate", "--no-cache"]):
            print(where_the_time_goes(argv, env))


if __name__ == "__main__":
    main()
