"""The benches' job trees: a scratch repository like ours holding N varied generated jobs.

One generator for every bench (compile, quotas, dev_scale, portal, terraform_roots, validate), so
their figures are about the same jobs: seed 42, job i's definition drawn in order, its file
``jobs/<team>/bench-<i>.jsonnet``. The teams take turns (``TEAMS``, round robin) unless a split
is given: ``skewed`` gives one team most of the jobs, as a company whose platform team owns the
bulk of the schedules (the case a team root split into shards is for).

``mix=True`` gives the jobs what issue 62 (finding 5) calls a realistic mix: 30% of the jobs read
a secret of their own (``<team>/bench-<i>-token``, on their first step) and 20% have a Lambda step
(``jp.lambda``, half of those holding that secret when the job has one). It is drawn from its own
random stream, so the jobs are otherwise the same as without it.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEAMS = ("billing", "growth", "platform")
POLICIES = ["ALWAYS_RUN", "SKIP_IF_RUNNING", "SKIP_IF_FAILED", "SKIP_IF_RUNNING_OR_FAILED"]
SCHEDULES = ["jp.daily('02:00')", "jp.everyMinutes(15)", "jp.weekly('MON', '06:00')", "jp.monthly('L', '23:30')",
             "'rate(1 hour)'", "jp.weekdays(['09:00', '18:00'])", "jp.manual"]
CHANNELS = {"billing": "#billing-alerts", "growth": "#growth-alerts", "platform": "#platform-oncall"}  # jobplane.toml's
ZONES = ["UTC", "Asia/Tokyo", "America/New_York", "Europe/Berlin"]
#: platform 60%, billing and growth 20% each (job i's team: its place in a cycle of five)
SKEWED = ("platform", "billing", "platform", "growth", "platform")


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


#: issue 62 finding 5's mix: the share of jobs with a secret of their own, and with a Lambda step
MIX_SECRET, MIX_LAMBDA = 0.30, 0.20


def with_mix(text: str, mix: random.Random, i: int, team: str) -> str:
    """A generated definition given a secret of its own and a Lambda step as the mix draws them."""
    secret = mix.random() < MIX_SECRET
    lam = mix.random() < MIX_LAMBDA
    on_lambda = secret and lam and mix.random() < 0.5
    opts = f"opts={{ secrets: {{ API_TOKEN: jp.secret('{team}/bench-{i:04d}-token') }} }}"
    if secret and not on_lambda:
        text = text.replace("steps: [", f"steps: [jp.python('read-secret', 'app.jobs.read_secret:run', {opts}), ", 1)
    if lam:
        step = f"jp.lambda('quick', 'app.jobs.quick:run'{', ' + opts if on_lambda else ''})"
        text = text.replace("steps: [", f"steps: [{step}, ", 1)
    return text


def team_of(i: int, split: tuple[str, ...] = TEAMS) -> str:
    return split[i % len(split)]


def job_path(root: Path, i: int, split: tuple[str, ...] = TEAMS) -> Path:
    return root / "jobs" / team_of(i, split) / f"bench-{i:04d}.jsonnet"


def write_repo(root: Path, jobs: int, split: tuple[str, ...] = TEAMS, platform_module: bool = False,
               roots: dict[str, int] | None = None, mix: bool = False) -> Path:
    """``root`` made a repository with ``jobs`` generated definitions: jobplane.toml (ours, with
    ``roots``: how many Terraform roots a team's jobs are split into), the DSL library and, with
    ``platform_module``, the base module (what `jobplane plan` and the offline plans read).
    ``mix``: issue 62's mix of secrets and Lambda steps (:func:`with_mix`). Returns ``root``."""
    rng = random.Random(42)
    mix_rng = random.Random(62)
    root.mkdir(parents=True, exist_ok=True)
    toml = (ROOT / "jobplane.toml").read_text()
    for team, n in (roots or {}).items():
        toml = toml.replace(f"[teams.{team}]\n", f"[teams.{team}]\nroots = {n}\n")
    (root / "jobplane.toml").write_text(toml)
    shutil.copytree(ROOT / "jobs" / "lib", root / "jobs" / "lib")
    if platform_module:
        shutil.copytree(ROOT / "terraform" / "platform", root / "terraform" / "platform")
    for i in range(jobs):
        path = job_path(root, i, split)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = definition(rng, i, team_of(i, split))
        path.write_text(with_mix(text, mix_rng, i, team_of(i, split)) if mix else text)
    return root
