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
(compiler/job_build.py), the import callback checks and reads the library once per
evaluation, and the hot spots of the ASL builder and of rendering do less. What is
left, per 1,000 jobs in CPU seconds: building the ASL ~1.0-1.4, rendering it ~0.6-0.9,
validation and the models ~0.6, the Terraform files ~0.6, against ~2.2-2.9 for Jsonnet
together and ~2.8-3.3 for the denominator (every file alone).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from jobplane.compiler.output import compile_all
from jobplane.compiler.validate import definition_files, evaluate
from jobplane.contract.config import load_config

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ["ALWAYS_RUN", "SKIP_IF_RUNNING", "SKIP_IF_FAILED", "SKIP_IF_RUNNING_OR_FAILED"]
SCHEDULES = ["jp.daily('02:00')", "jp.everyMinutes(15)", "jp.weekly('MON', '06:00')", "jp.monthly('L', '23:30')",
             "'rate(1 hour)'", "jp.weekdays(['09:00', '18:00'])", "jp.manual"]
CHANNELS = {"billing": "#billing-alerts", "growth": "#growth-alerts", "platform": "#platform-oncall"}  # jobplane.toml's
ZONES = ["UTC", "Asia/Tokyo", "America/New_York", "Europe/Berlin"]


def step(rng: random.Random, name: str) -> str:
    kind = rng.choice(["python", "celery", "django", "shell"])
    retry = f", opts={{ retry: jp.retry({rng.randint(1, 4)}, '30s') }}" if rng.random() < 0.5 else ""
    if kind == "python":
        return f"jp.python('{name}', 'app.jobs.{name.replace('-', '_')}:run', kwargs={{ n: {rng.randint(1, 9)} }}{retry})"
    if kind == "celery":
        return f"jp.celery('{name}', 'app.tasks.{name.replace('-', '_')}', args=[1, 2]{retry})"
    if kind == "django":
        return f"jp.django('{name}', 'rebuild_{name.replace('-', '_')}', args=['--all']{retry})"
    return f"jp.shell('{name}', ['python', '-m', 'app.{name.replace('-', '_')}']{retry})"


def definition(rng: random.Random, i: int, team: str) -> str:
    n = rng.randint(1, 6)
    steps = [step(rng, f"step-{k}") for k in range(n)]
    if n >= 3 and rng.random() < 0.3:
        steps[1] = f"jp.parallel('fan-out', [{step(rng, 'left')}, {step(rng, 'right')}])"
    return f"""local jp = import 'jobplane.libsonnet';
{{
  name: 'bench-job-{i:04d}',
  team: '{team}',
  description: 'Synthetic job {i} for the compiler benchmark.',
  schedule: {rng.choice(SCHEDULES)},
  timezone: '{rng.choice(ZONES)}',
  policy: '{rng.choice(POLICIES)}',
  steps: [{', '.join(steps)}],
  notify: jp.slack('{CHANNELS[team]}'),
}}
"""


def cpu_seconds() -> float:
    """This process's CPU time and that of its ended children (the evaluating ones)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(jobs: int, repeat: int) -> float:
    """Compile ``jobs`` generated jobs; print the figures; return the wall-clock ratio."""
    rng = random.Random(42)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copy(ROOT / "jobplane.toml", root / "jobplane.toml")
        shutil.copytree(ROOT / "jobs" / "lib", root / "jobs" / "lib")
        teams = ["billing", "growth", "platform"]
        for i in range(jobs):
            team = teams[i % 3]
            path = root / "jobs" / team / f"bench-{i:04d}.jsonnet"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(definition(rng, i, team))
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
