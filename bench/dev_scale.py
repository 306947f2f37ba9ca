"""`jobplane dev` at a company's size: how long until it is ready with N generated jobs, and after
a restart with the same definitions.

    .venv/bin/python bench/dev_scale.py [--jobs 1000]

Generates N varied jobs (bench/jobtree.py's generator, three teams) in a scratch repository and
starts the platform `jobplane dev` runs (compile, the embedded AWS, every state machine and
schedule deployed, the portal listening; the local scheduler and the example services off, so
nothing fires while it is measured), stops it, and starts it again on the same data directory.
Prints the time to ready of both starts, the compile's share, the target (issue 13: ready <= 30 s
at 1,000 jobs; issue 54: <= 60 s at 5,000; a restart faster still), and how long the first stop took.
Each start's CPU seconds (this process and the compile's forked workers) are printed beside its
wall time: on a shared machine the wall time moves with the load, the CPU time much less.

Where the time went at 5,000 jobs (cProfile, docs/local-engine.md): three lookups that grew with
the square of the jobs. moto's CreateStateMachine and CreateRole each walked every state machine
and every role that existed (12.5 million comparisons each), now one look-up per deploy
(moto_patches.Terraform); and the compiler's write_output listed a team's directory once per
written file (~5,000 listings of ~1,700 entries), now once per directory a removed file may leave
empty. What is left is linear: the compile, and per job reading its ~60 KB Terraform file, taking
the ASL out of it, binding it, the create's shape check (two JSON parses of the definition).
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobtree import write_repo  # noqa: E402  (the benches' one job generator)

from jobplane.compiler.output import compile_all  # noqa: E402
from jobplane.contract.config import load_config  # noqa: E402
from jobplane.devserver.dev_platform import DevPlatform  # noqa: E402

def cpu_seconds() -> float:
    """CPU time of this process and its reaped children (the compile's forked workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def start_and_stop(root: Path, data: Path) -> tuple[float, float, float]:
    """Seconds to ready (wall, CPU), and to stopped again (Ctrl-C on `jobplane dev`)."""
    started, cpu = time.perf_counter(), cpu_seconds()
    platform = DevPlatform(load_config(root), data, 0, 0, run_scheduler=False, run_services=False).start()
    took, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    assert len(platform.jobs) > 0
    started = time.perf_counter()
    platform.stop()
    return took, cpu, time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    args = ap.parse_args()
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="jobplane-dev-scale-") as tmp:
        root, data = Path(tmp) / "repo", Path(tmp) / "data"
        write_repo(root, args.jobs)
        t, cpu = time.perf_counter(), cpu_seconds()
        compile_all(load_config(root))
        compile_s, compile_cpu = time.perf_counter() - t, cpu_seconds() - cpu
        first, first_cpu, stop = start_and_stop(root, data)
        again, again_cpu, _ = start_and_stop(root, data)
    print(f"jobs: {args.jobs}")
    print(f"compile alone:            {compile_s:6.1f} s  (CPU {compile_cpu:.1f} s)")
    target = 30 if args.jobs <= 1000 else 60  # issue 13 at 1,000 jobs; issue 54 at 5,000
    print(f"first start, to ready:    {first:6.1f} s  (CPU {first_cpu:.1f} s; target <= {target} s at {max(args.jobs, 1000):,} jobs: "
          f"{'met' if first <= target else 'NOT met'}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"restart, same definitions:{again:6.1f} s  (CPU {again_cpu:.1f} s; {'faster' if again < first else 'NOT faster'} than the first: "
          "it reuses the compiled output, the definitions' digest unchanged, and the table's records from the "
          "snapshot; the embedded AWS starts empty, so every state machine and schedule is deployed again)")
    print(f"stop (nothing running):   {stop:6.1f} s")


if __name__ == "__main__":
    main()
