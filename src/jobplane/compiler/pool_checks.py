"""A job's pools against jobplane.toml ``[pools]``: each named pool exists, the job's team may use
it (``teams``), one attempt's weight fits in it (a weight larger than the pool would wait forever),
and no pooled attempt may hold a slot longer than the pool's ``max_hold`` (issue 64 item 3: a job
of another team naming ``billing-db`` with ``timeout: '365d'`` held all of billing's slots for a
year, and the pull request touched only its own team's directory)."""

from __future__ import annotations

from jobplane.compiler.kinds.map_ import MapSpec
from jobplane.compiler.model import Job, PoolUse, Step
from jobplane.compiler.problems import Problem
from jobplane.contract.config import PlatformConfig
from jobplane.contract.pools import PoolAccess
from jobplane.contract.quoting import did_you_mean, quoted


def _problem(pool: PoolUse, team: str, config: PlatformConfig) -> str | None:
    pools = config.pools
    if pool.name not in pools:
        declared = ", ".join(sorted(pools)) or "none"
        return (f"unknown pool {quoted(pool.name)}; pools are declared in jobplane.toml [pools] (declared: {declared})"
                + did_you_mean(pool.name, sorted(pools)))
    access = config.pool_access.get(pool.name)
    if access is not None and not access.allows(team):
        return (f"pool {quoted(pool.name)} is for {access.describe()} (jobplane.toml [pools.{pool.name}] teams); "
                f"this job's team {quoted(team)} may not use it")
    if pool.weight > pools[pool.name]:
        return (f"weight {pool.weight} is more than pool {quoted(pool.name)} has ({pools[pool.name]} slots): "
                "the step could never run")
    return None


def _seconds(n: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}s"


def _hold_problem(step: Step, access: PoolAccess | None) -> str | None:
    if step.pool is None or access is None or access.max_hold is None or step.timeout <= access.max_hold:
        return None
    return (f"timeout {_seconds(step.timeout)} is longer than pool {quoted(step.pool.name)} lets one attempt hold a slot "
            f"(max_hold {_seconds(access.max_hold)}, jobplane.toml [pools.{step.pool.name}]): lower the timeout")


def pool_problems(source: str, job: Job, config: PlatformConfig) -> list[Problem]:
    """Every pool use of the job that jobplane.toml does not allow, named where it is written
    (``pool``, ``steps[i].pool``, ``steps[i].parallel[j].pool``, ``steps[i].map.each.pool``); an
    inherited pool is named once, where it is declared. A pooled attempt's timeout above the
    pool's max_hold is named at the step's ``timeout`` (the step that runs: a group's members,
    a map's items and each)."""
    problems: list[Problem] = []
    if job.pool is not None and (message := _problem(job.pool, job.team, config)):
        problems.append(Problem(source, job.name, "pool", message))

    def runs(step: Step, here: str) -> None:
        if step.pool is not None and (message := _hold_problem(step, config.pool_access.get(step.pool.name))):
            problems.append(Problem(source, job.name, f"{here}.timeout", message))

    def visit(steps: list[Step], where: str, inherited: PoolUse | None) -> None:
        for i, step in enumerate(steps):
            here = f"{where}[{i}]"
            if step.pool is not None and step.pool != inherited and (message := _problem(step.pool, job.team, config)):
                problems.append(Problem(source, job.name, f"{here}.pool", message))
            if isinstance(step.target, MapSpec):  # a map's members are named by their field
                visit_map(step.target, f"{here}.map", step.pool)
            elif step.parallel is not None:
                visit(step.parallel, f"{here}.parallel", step.pool)
            else:
                runs(step, here)

    def visit_map(spec: MapSpec, where: str, inherited: PoolUse | None) -> None:
        for member, field in ((spec.items, "items"), (spec.each, "each")):
            here = f"{where}.{field}"
            if member.pool is not None and member.pool != inherited and (
                    message := _problem(member.pool, job.team, config)):
                problems.append(Problem(source, job.name, f"{here}.pool", message))
            runs(member, here)

    visit(job.steps, "steps", job.pool)
    return problems
