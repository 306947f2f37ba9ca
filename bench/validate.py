"""`jobplane validate` in a pull request's loop: a 5,000-job repository, one file changed since
the last run (issue 54 item 6: at most 2 s).

    .venv/bin/python bench/validate.py [--jobs 5000]

With bench/jobtree.py's jobs, runs `jobplane validate` as a developer or CI runs it (a process of
its own, its cache in a scratch directory): once from nothing (every file evaluated and checked,
the results kept), then after a one-line change to one job file (that file alone evaluated;
compiler/validate_cache.py says why the others cannot differ; tests/test_validate_cache.py that
a change to what a file imports or to jobplane.toml checks it again). Prints each run's wall time and its CPU time (the process and its Jsonnet
child), and the machine's load average: on a machine shared with other work the wall time
includes waiting for a core, the CPU time does not.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobtree import job_path, write_repo  # noqa: E402  (the benches' one job generator)

JOBPLANE = Path(sys.executable).parent / "jobplane"
TARGET_S = 2.0


def validate(repo: Path, cache: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (with children), the last line printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([str(JOBPLANE), "--root", str(repo), "validate"], capture_output=True, text=True,
                          env=os.environ | {"JOBPLANE_CACHE_DIR": str(cache)})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"jobplane validate failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout.strip().splitlines()[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="jobplane-validate-bench-") as tmp:
        repo, cache = write_repo(Path(tmp) / "repo", args.jobs), Path(tmp) / "cache"
        wall, cpu, said = validate(repo, cache)
        print(f"jobs: {args.jobs}  ({said})")
        print(f"from nothing (every file):        wall {wall:6.2f} s  cpu {cpu:6.2f} s")
        changed = job_path(repo, args.jobs // 2)
        changed.write_text(changed.read_text().replace("description: 'Synthetic", "description: 'Changed synthetic"))
        wall, cpu, _ = validate(repo, cache)
        load = os.getloadavg()[0]
        print(f"one job file changed:             wall {wall:6.2f} s  cpu {cpu:6.2f} s  (target <= {TARGET_S:g} s: "
              f"{'met' if wall <= TARGET_S else 'NOT met'} by wall time, {'met' if cpu <= TARGET_S else 'NOT met'} "
              f"by CPU time; load average {load:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
