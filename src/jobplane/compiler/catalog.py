"""The catalog (:mod:`jobplane.contract.catalog`) from the validated jobs.

It carries what an operator needs to understand a job: owner, schedule, policy, steps, runbook
and where it is defined.
"""

from __future__ import annotations

from typing import Any

from jobplane.compiler.model import Job, Step
from jobplane.compiler.validate import LoadedJob
from jobplane.contract import layout, names
from jobplane.contract.catalog import (CATALOG_VERSION, Catalog, CatalogAfter, CatalogJob, CatalogStep, CatalogTeam,
                                       NotifySettings, Runbook, StepRetry)
from jobplane.contract.config import PlatformConfig
from jobplane.compiler.blackouts import job_windows
from jobplane.compiler.calendars import calendar_schedule, deployed_schedule
from jobplane.contract.types import JsonObject


def _calendar_fields(lj: LoadedJob, config: PlatformConfig) -> JsonObject:
    """A calendar job's entry: the schedules deployed (explicit crons over the calendar's years),
    its declared rules, and its calendar as dates (what the runtime computes fires from)."""
    cs = calendar_schedule(lj.job, config)
    if cs is None:
        return {}
    return {"rules": list(cs.schedule), "calendar": cs.calendar,
            "on_closed_day": cs.on_closed_day}


def _blackout_fields(lj: LoadedJob, config: PlatformConfig) -> JsonObject:
    """A job in blackout windows: each window with its occurrences (what every reader of its
    fires checks a fire against: the fire ledger, deadlines, `next`, the portal)."""
    windows = job_windows(lj.job, config)
    return {"blackouts": [w.as_json() for w in windows]} if windows else {}


def _pool_peak(job: Job) -> JsonObject:
    """The slots a run of ``job`` holds at once at most, per pool (its peak, compiler/peak.py):
    set only when it holds a pool, so a catalog without pools is as it was."""
    from jobplane.compiler.quota_usage import job_peak

    if not _holds_pool(job.steps):  # nothing to hold: the peak's pools are empty, not measured
        return {}
    pools = dict(job_peak(job).pools)
    return {"pool_peak": pools} if pools else {}


def _holds_pool(steps: list[Step]) -> bool:
    """Whether any of ``steps`` or their groups' members names a pool: a peak's pools come from
    those alone (quota_usage.step_peak; a group's peak is its members')."""
    return any(s.pool is not None or (s.parallel is not None and _holds_pool(s.parallel)) for s in steps)


def step_entry(step: Step) -> CatalogStep:
    # each set only when the step sets it, so a catalog without them is as it was
    optional: dict[str, Any] = {"pool": step.pool.name} if step.pool is not None else {}
    if step.stall_after is not None:
        optional["stall_after"] = step.stall_after
    if step.expect:
        optional["expect"] = [e.as_dict() for e in step.expect]
    if step.parallel is not None:
        return CatalogStep(name=step.name, kind=step.kind.name, description=step.description,
                           parallel=[step_entry(s) for s in step.parallel])
    return CatalogStep(
        name=step.name, kind=step.kind.name, description=step.description, target=step.target_spec(),
        timeout=step.timeout, retry=StepRetry.model_validate(step.retry.as_dict()), cpu=step.cpu, memory=step.memory,
        env=dict(sorted(step.env.items())), secrets=sorted(step.secrets),
        **optional)


def build_catalog(jobs: list[LoadedJob], config: PlatformConfig, state_counts: dict[str, int],
                  team: str | None = None, root: str | None = None) -> Catalog:
    """The catalog of ``jobs``; with ``team``, that team's part (its root uploads it), which
    names only that team; ``root``: the name of the root their files are in when the team's
    jobs are split into several (contract/root_shards.py)."""
    entries = []
    for lj in jobs:
        job = lj.job
        entry = CatalogJob(
            name=job.name, team=job.team, description=job.description,
            runbook=Runbook.model_validate(job.runbook.as_dict()) if job.runbook else None, source=lj.source,
            schedule=deployed_schedule(job, config),
            timezone=job.timezone or config.default_timezone, enabled=job.enabled, policy=job.policy, timeout=job.timeout,
            expected_duration=job.expected_duration, notify=NotifySettings.model_validate(_notify(job)), params=job.param_defaults,
            steps=[step_entry(s) for s in job.steps],
            state_machine=names.state_machine_name(config.name_prefix, job.name),
            asl=layout.job_file(root or job.team, job.name), states=state_counts[job.name],
            params_budget=lj.params_budget, after=[CatalogAfter(job=a.job, on=a.on) for a in job.after])
        # fields the compiler sets only when they apply (the catalog leaves unset fields out)
        updates = ({k: v for k, v in (("missed_after", job.missed_after), ("deadline", job.deadline)) if v is not None}
                   | _calendar_fields(lj, config) | _blackout_fields(lj, config) | _pool_peak(job)
                   # typed params: their JSON Schema, which every starter validates against (contract/params.py)
                   | ({"params_schema": job.param_set.schema()} if job.param_set.typed else {}))
        entries.append(CatalogJob.model_validate(entry.model_dump(exclude_unset=True) | updates) if updates else entry)
    teams = [team] if team else sorted({lj.job.team for lj in jobs} | set(config.teams))
    return Catalog(version=CATALOG_VERSION, name_prefix=config.name_prefix,
                   teams=[CatalogTeam(name=t, channel=config.teams[t].channel if t in config.teams else None)
                          for t in teams],
                   jobs=entries)


def _notify(job: Job) -> JsonObject:
    """The job's notify settings, each left out while it has its default, so the catalog entry of
    a job that sets none of the later ones stays byte for byte what it was."""
    settings = job.notify.as_dict()
    return {k: v for k, v in settings.items()
            if not ((k == "after_failures" and v == 1) or (k == "renotify_after" and v is None))}
