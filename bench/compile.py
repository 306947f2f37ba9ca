"""How long the compiler takes for 1,000 varied jobs, next to evaluating the same Jsonnet alone.

    .venv/bin/python bench/compile.py [--jobs 1000]

Prints both times and their ratio: the ratio is the cost of validation and of rendering ASL,
Terraform and the catalog on top of Jsonnet itself, measured in one run on one machine.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(42)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copy(ROOT / "jobplane.toml", root / "jobplane.toml")
        shutil.copytree(ROOT / "jobs" / "lib", root / "jobs" / "lib")
        teams = ["billing", "growth", "platform"]
        for i in range(args.jobs):
            team = teams[i % 3]
            path = root / "jobs" / team / f"bench-{i:04d}.jsonnet"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(definition(rng, i, team))
        config = load_config(root)
        files = definition_files(config)
        jsonnet_times, compile_times = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            for f in files:
                evaluate(f, config)
            jsonnet_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            out = compile_all(config)
            compile_times.append(time.perf_counter() - t)
        jsonnet_s, compile_s = statistics.median(jsonnet_times), statistics.median(compile_times)
        states = sum(j.states for j in out.catalog.jobs)
        size = sum(len(v) for v in out.files.values())
        print(f"jobs: {args.jobs}  files: {len(out.files)}  output: {size / 1e6:.1f} MB  states: {states}")
        print(f"jsonnet evaluation alone: {jsonnet_s:.2f} s (median of {args.repeat})")
        print(f"whole compile:            {compile_s:.2f} s (median of {args.repeat}), {compile_s / args.jobs * 1000:.1f} ms per job")
        print(f"ratio compile / jsonnet:  {compile_s / jsonnet_s:.2f}")


if __name__ == "__main__":
    main()
