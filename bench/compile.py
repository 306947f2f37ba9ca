"""How long the compiler takes for 1,000 and 5,000 varied jobs, next to evaluating the same
Jsonnet alone (issue 54 item 4: compile <= 1.5x at both sizes).

    .venv/bin/python bench/compile.py [--jobs 1000 5000] [--repeat 3]

Prints, per size, both times and their ratio: the ratio is the cost of validation and of
rendering ASL, Terraform and the catalog on top of Jsonnet itself, measured in one run on one
machine (alternating the two, the median of each). The CPU seconds of both (the compile's
evaluating children included) are printed beside them: on a machine shared with other work the
wall clock says as much about the others as about the compiler.

Where the time went (profiled with cProfile, issue 54): at 1,000 jobs the compile was Jsonnet
(one child, the compiler waiting) plus the compiler's own passes, half of which was Python's
cyclic garbage collector walking every live object again and again; at 5,000 jobs the
collector was most of the compile (10 ms per job against 4.5). Now the passes run with the
collector paused (compiler/gc_pause.py), two children evaluate the definitions at once on a
machine with two CPUs (compiler/sandbox.py), forked workers build the jobs' files there too
(compiler/job_build.py) and each team root's files (compiler/root_pool.py), the import callback checks and reads the library once per
evaluation, and the hot spots of the ASL builder and of rendering do less. What is
left, per 1,000 jobs in CPU seconds: building the ASL ~1.0-1.4, rendering it ~0.6-0.9,
validation and the models ~0.6, the Terraform files ~0.6, against ~2.2-2.9 for Jsonnet
together and ~2.8-3.3 for the denominator (every file alone).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jobtree import write_repo  # noqa: E402  (the benches' one job generator)

from jobplane.compiler.output import compile_all  # noqa: E402
from jobplane.compiler.validate import definition_files, evaluate  # noqa: E402
from jobplane.contract.config import load_config  # noqa: E402


def cpu_seconds() -> float:
    """This process's CPU time and that of its ended children (the evaluating ones)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(jobs: int, repeat: int) -> float:
    """Compile ``jobs`` generated jobs; print the figures; return the wall-clock ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        root = write_repo(Path(tmp), jobs)
        config = load_config(root)
        files = definition_files(config)
        jsonnet_times, compile_times, jsonnet_cpu, compile_cpu = [], [], [], []
        for _ in range(repeat):
            t, c = time.perf_counter(), cpu_seconds()
            for f in files:
                evaluate(f, config)
            jsonnet_times.append(time.perf_counter() - t)
            jsonnet_cpu.append(cpu_seconds() - c)
            t, c = time.perf_counter(), cpu_seconds()
            out = compile_all(config)
            compile_times.append(time.perf_counter() - t)
            compile_cpu.append(cpu_seconds() - c)
        jsonnet_s, compile_s = statistics.median(jsonnet_times), statistics.median(compile_times)
        jsonnet_c, compile_c = statistics.median(jsonnet_cpu), statistics.median(compile_cpu)
        states = sum(j.states for j in out.catalog.jobs)
        size = sum(len(v) for v in out.files.values())
        print(f"jobs: {jobs}  files: {len(out.files)}  output: {size / 1e6:.1f} MB  states: {states}")
        print(f"jsonnet evaluation alone: {jsonnet_s:.2f} s (median of {repeat}; CPU {jsonnet_c:.2f} s)")
        print(f"whole compile:            {compile_s:.2f} s (median of {repeat}; CPU {compile_c:.2f} s), "
              f"{compile_s / jobs * 1000:.1f} ms per job")
        ratio = compile_s / jsonnet_s
        print(f"ratio compile / jsonnet at {jobs} jobs: {ratio:.2f} (target <= 1.5: "
              f"{'met' if ratio <= 1.5 else 'NOT met'}; CPU {compile_c / jsonnet_c:.2f})", flush=True)
        return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for jobs in args.jobs:
        measure(jobs, args.repeat)


if __name__ == "__main__":
    main()
