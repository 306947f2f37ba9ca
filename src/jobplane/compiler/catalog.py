"""The catalog: job metadata for the portal and the CLI, independent of AWS.

The portal reads this instead of parsing Jsonnet or Terraform, so it carries what an operator
needs to understand a job: owner, schedule, policy, steps, runbook and where it is defined.
"""

from __future__ import annotations

import json
from typing import Any

from jobplane.contract import names
from jobplane.compiler.model import Step
from jobplane.compiler.validate import LoadedJob
from jobplane.contract.config import PlatformConfig

CATALOG_VERSION = 1


def step_entry(step: Step) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": step.name, "kind": step.kind, "description": step.description}
    if step.parallel is not None:
        entry["parallel"] = [step_entry(s) for s in step.parallel]
        return entry
    entry |= {
        "target": step.target_spec(),
        "timeout": step.timeout,
        "retry": step.retry.model_dump(),
        "cpu": step.cpu,
        "memory": step.memory,
        "env": dict(sorted(step.env.items())),
        "secrets": sorted(step.secrets),  # names only: the portal never needs the ARNs
    }
    return entry


def build_catalog(jobs: list[LoadedJob], config: PlatformConfig, state_counts: dict[str, int]) -> dict[str, Any]:
    entries = []
    for lj in jobs:
        job = lj.job
        entries.append({
            "name": job.name,
            "team": job.team,
            "description": job.description,
            "runbook": job.runbook.model_dump() if job.runbook else None,
            "source": lj.source,
            "schedule": job.schedule,
            "timezone": job.timezone,
            "enabled": job.enabled,
            "policy": job.policy.value,
            "timeout": job.timeout,
            "expected_duration": job.expected_duration,
            "notify": job.notify.model_dump(mode="json"),
            "params": job.params,
            "steps": [step_entry(s) for s in job.steps],
            "state_machine": names.state_machine_name(config.name_prefix, job.name),
            "asl": f"asl/{job.name}.asl.json",
            "states": state_counts[job.name],
        })
    teams = sorted({lj.job.team for lj in jobs} | set(config.teams))
    return {
        "version": CATALOG_VERSION,
        "name_prefix": config.name_prefix,
        "teams": [{"name": t, "channel": config.teams[t].channel if t in config.teams else None} for t in teams],
        "jobs": entries,
    }


def render(catalog: dict[str, Any]) -> str:
    return json.dumps(catalog, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
