"""The local engine's agents, one per executor: what runs a step's attempt where AWS would (the
ECS agent answers RunTask with a process, the Lambda agent answers a runner function's Invoke),
what it deploys besides the state machine (a Lambda step's function) and how it stops an
execution's attempts. The engine (engine.py) starts one agent for each executor of
contract/executor_runtime.py ``RUNTIMES``, found here by its name, and asks them all the same
questions: it names none of them.

Adding an executor: its compile-time class (compiler/executors/), its runtime class
(contract/executor_runtime.py) and its agent's factory here in ``LOCAL_AGENTS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from jobplane.contract.executor_runtime import RUNTIMES
from jobplane.contract.types import Client


@dataclass(frozen=True)
class AgentSetup:
    """What every agent is started with: where its logs' cache goes, the deployment's prefix,
    ``[dev] env`` (added to every step's environment) and what a runner's role gives a step
    that calls AWS itself (a map's items step, every step's progress: the local endpoint and its
    key), the ECS task role's on ECS and the runner function's role's on Lambda."""

    log_dir: Path
    prefix: str
    env: dict[str, str] = field(default_factory=dict)
    task_role_env: dict[str, str] = field(default_factory=dict)


class Deployment(Protocol):
    """What an agent may use of the engine to deploy what its steps need (engine.py ``LocalAWS``)."""

    region: str
    resources: dict[str, str]

    def client(self, service: str) -> Client: ...


class LocalAgent(Protocol):
    #: (job, executor) -> its declared secrets' names, from the deployed catalog
    #: (declared_secrets.py): its steps get them as on AWS
    declared_secrets: dict[tuple[str, str], frozenset[str]]

    def activate(self) -> LocalAgent:
        """From now on the embedded AWS hands this executor's attempts to the agent."""
        ...

    def deactivate(self) -> None:
        """Stop what still runs and let go of the embedded AWS."""
        ...

    def deploy(self, definition: str, deployment: Deployment) -> list[str]:
        """Create (or update) what a bound state machine definition's steps of this executor need
        besides the state machine, as the compiled Terraform does; the names of what it deployed."""
        ...

    def stop_execution(self, execution_id: str) -> list[str]:
        """Stop an ended execution's running attempts (its executor's ``stops_with_execution``:
        only an executor whose attempts AWS stops with the execution is asked); what it stopped."""
        ...


AgentFactory = Callable[[AgentSetup], LocalAgent]


def _ecs(setup: AgentSetup) -> LocalAgent:
    from jobplane.platform.local.ecs_agent import LocalEcsAgent

    return LocalEcsAgent(setup.log_dir, setup.env, task_role_env=setup.task_role_env)


def _lambda(setup: AgentSetup) -> LocalAgent:
    from jobplane.platform.local.lambda_agent import LocalLambdaAgent

    return LocalLambdaAgent(setup.log_dir, setup.prefix, setup.env, role_env=setup.task_role_env)


#: Each executor's local agent, by contract/executor_runtime.py ``RUNTIMES``'s names.
LOCAL_AGENTS: dict[str, AgentFactory] = {"ecs": _ecs, "lambda": _lambda}


def start_agents(setup: AgentSetup) -> dict[str, LocalAgent]:
    """One activated agent for each executor, in ``RUNTIMES``'s order. An executor without one
    is refused here, at the engine's start, not at its first step."""
    missing = [name for name in RUNTIMES if name not in LOCAL_AGENTS]
    if missing:
        raise LookupError(f"executors without a local agent (platform/local/agents.py LOCAL_AGENTS): {missing}")
    return {name: LOCAL_AGENTS[name](setup).activate() for name in RUNTIMES}


def stop_execution(agents: dict[str, LocalAgent], execution_id: str) -> list[str]:
    """What AWS does to an execution's running attempts when it is stopped or times out: each
    executor whose attempts stop with their execution has its agent stop them."""
    return [stopped for name, agent in agents.items() if RUNTIMES[name].stops_with_execution
            for stopped in agent.stop_execution(execution_id)]
