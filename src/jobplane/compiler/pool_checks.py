"""A job's pools against jobplane.toml ``[pools]``: each named pool exists, and one attempt's
weight fits in it (a weight larger than the pool would wait forever)."""

from __future__ import annotations

from jobplane.compiler.kinds.map_ import MapSpec
from jobplane.compiler.model import Job, PoolUse, Step
from jobplane.compiler.problems import Problem
from jobplane.contract.config import PlatformConfig
from jobplane.contract.quoting import did_you_mean, quoted


def _problem(pool: PoolUse, pools: dict[str, int]) -> str | None:
    if pool.name not in pools:
        declared = ", ".join(sorted(pools)) or "none"
        return (f"unknown pool {quoted(pool.name)}; pools are declared in jobplane.toml [pools] (declared: {declared})"
                + did_you_mean(pool.name, sorted(pools)))
    if pool.weight > pools[pool.name]:
        return (f"weight {pool.weight} is more than pool {quoted(pool.name)} has ({pools[pool.name]} slots): "
                "the step could never run")
    return None


def pool_problems(source: str, job: Job, config: PlatformConfig) -> list[Problem]:
    """Every pool use of the job that jobplane.toml does not allow, named where it is written
    (``pool``, ``steps[i].pool``, ``steps[i].parallel[j].pool``, ``steps[i].map.each.pool``); an inherited pool is named
    once, where it is declared."""
    problems: list[Problem] = []
    if job.pool is not None and (message := _problem(job.pool, config.pools)):
        problems.append(Problem(source, job.name, "pool", message))

    def visit(steps: list[Step], where: str, inherited: PoolUse | None) -> None:
        for i, step in enumerate(steps):
            here = f"{where}[{i}]"
            if step.pool is not None and step.pool != inherited and (message := _problem(step.pool, config.pools)):
                problems.append(Problem(source, job.name, f"{here}.pool", message))
            if isinstance(step.target, MapSpec):  # a map's members are named by their field
                visit_map(step.target, f"{here}.map", step.pool)
            elif step.parallel is not None:
                visit(step.parallel, f"{here}.parallel", step.pool)

    def visit_map(spec: MapSpec, where: str, inherited: PoolUse | None) -> None:
        for member, field in ((spec.items, "items"), (spec.each, "each")):
            here = f"{where}.{field}"
            if member.pool is not None and member.pool != inherited and (message := _problem(member.pool, config.pools)):
                problems.append(Problem(source, job.name, f"{here}.pool", message))

    visit(job.steps, "steps", job.pool)
    return problems
