"""Where a step's attempts run, one class each (ECS on Fargate, Lambda): the Task state and its
check, its retries, and what the state machine's role may call for it. After Dagster's executors:
the job's graph (compiler/asl.py) is the same whichever runs an attempt.

Adding an executor: its class here (a module, and its line in :func:`registry`), its runtime
class (contract/executor_runtime.py ``RUNTIMES``) and its local agent (platform/local/agents.py
``LOCAL_AGENTS``); a kind says which it runs on in contract/step_kinds.py, and its compiler class
finds it here by that name (compiler/kinds/base.py ``StepKind.executor``)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import StepExecutor
    from jobplane.compiler.model import Step


@cache
def registry() -> dict[str, StepExecutor]:
    """Every executor's compile-time class, by contract/step_kinds.py Executor's value. Loaded
    when first asked: ``jobplane validate`` reads kinds without the executors' states."""
    from jobplane.compiler.executors.ecs import ECS
    from jobplane.compiler.executors.lambda_ import LAMBDA

    return {e.name: e for e in (ECS, LAMBDA)}


def executor_named(name: str) -> StepExecutor:
    """The executor contract/step_kinds.py names for a kind."""
    try:
        return registry()[name]
    except KeyError:
        raise LookupError(f"no executor {name!r} in compiler/executors/__init__.py registry()") from None


def by_executor(steps: list[Step]) -> list[tuple[StepExecutor, list[Step]]]:
    """``steps`` (a job's runnable steps) grouped by the executor each runs on, in order of first use."""
    grouped: dict[str, tuple[StepExecutor, list[Step]]] = {}
    for step in steps:
        executor = step.kind.executor
        grouped.setdefault(executor.name, (executor, []))[1].append(step)
    return list(grouped.values())
