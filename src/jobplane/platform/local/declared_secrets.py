"""The names of a job's declared secrets, as each executor's step learns them on AWS, for the
local agents (issue 65 item 2).

On AWS an ECS step's task definition of its own (a job whose steps declare secrets) sets
``JOBPLANE_SECRET_NAMES`` to the secrets of the job's ECS steps (compiler/executors/ecs.py), and a
Lambda step's handler adds the names of its function's ``JOBPLANE_SECRET_SOURCES``
(runner/lambda_handler.py ``child_environment``): the runner never prints those variables' values
(runner/logs.py ``secret_values``). Locally every ECS step runs the shared task definition and a
function is created without its sources, so a secret given a value through ``[dev.env]`` (the
documented way: docs/dev.md) was printed in clear in ``jobplane logs``, the portal and the log
cache. The agents add the same names from the deployed catalog, so redaction is the same in both
homes.
"""

from __future__ import annotations

from jobplane.contract.catalog import Catalog, CatalogStep
from jobplane.contract.step_kinds import kind_info

#: The runner's variable of declared secret names (runner/logs.py ENV_SECRET_NAMES; the
#: platform does not import the runner: tests/test_layers.py).
ENV_SECRET_NAMES = "JOBPLANE_SECRET_NAMES"
LAMBDA = "lambda"


def declared_names(catalog: Catalog) -> dict[tuple[str, str], frozenset[str]]:
    """(job, 'ecs' or 'lambda') -> the names its steps of that executor declare (a map's and a
    parallel group's members included)."""
    out: dict[tuple[str, str], set[str]] = {}
    for job in catalog.jobs:
        for step in _leaves(job.steps):
            if step.secrets:
                executor = kind_info(step.kind).executor.value  # the kind's executor, not its name
                out.setdefault((job.name, executor), set()).update(step.secrets)
    return {key: frozenset(names) for key, names in out.items()}


def with_names(env: dict[str, str], names: frozenset[str] | None) -> dict[str, str]:
    """``env`` with ``names`` added to its JOBPLANE_SECRET_NAMES (kept sorted, as compiled)."""
    if not names:
        return env
    given = {n for n in env.get(ENV_SECRET_NAMES, "").split(",") if n}
    return env | {ENV_SECRET_NAMES: ",".join(sorted(given | names))}


def _leaves(steps: list[CatalogStep]) -> list[CatalogStep]:
    return [leaf for s in steps for leaf in ([s] if s.parallel is None else _leaves(s.parallel))]
