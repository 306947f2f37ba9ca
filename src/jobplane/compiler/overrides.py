"""What one step attempt's ECS container override holds, and how much room it leaves for params.

ECS refuses a RunTask whose container overrides exceed 8,192 characters, and a run's params
travel in them (JOBPLANE_PARAMS). The compiled Task sends this override; ``jobplane validate``
checks every job's budget with it. It is its own module so validate does not import the whole
ASL builder (issue 13: validate's start-up).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from jobplane.contract import runner as rc
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.model import Job, Step


def container_env(job: Job, step: Step, counter: str | None) -> list[dict[str, str]]:
    """``counter``: the state-data path of the step's attempt number (None: it has one attempt)."""
    attempt = {"Value.$": f"States.Format('{{}}', {counter})"} if counter else {"Value": "1"}
    env = [
        {"Name": rc.ENV_JOB, "Value": job.name},
        {"Name": rc.ENV_TEAM, "Value": job.team},
        {"Name": rc.ENV_STEP, "Value": step.name},
        {"Name": rc.ENV_ATTEMPT, **attempt},
        {"Name": rc.ENV_STEP_TIMEOUT, "Value": str(step.timeout)},
        {"Name": rc.ENV_TARGET, "Value": json.dumps(step.target_spec(), sort_keys=True, separators=(",", ":"))},
        {"Name": rc.ENV_EXECUTION_ID, "Value.$": "$$.Execution.Name"},
        {"Name": rc.ENV_SCHEDULED_TIME, "Value.$": ExecutionInput.ref("scheduled_time").expr},
        {"Name": rc.ENV_TRIGGER, "Value.$": ExecutionInput.ref("trigger").expr},
        {"Name": rc.ENV_PARAMS, "Value.$": f"States.JsonToString({ExecutionInput.ref('params').expr})"},
        # W3C trace context: the trace id is the MD5 of the execution ARN (32 hex, shared by
        # every step of the run); the parent id is 16 hex from a fresh UUID's last group.
        {"Name": rc.ENV_TRACEPARENT,
         "Value.$": "States.Format('00-{}-0000{}-01', States.Hash($$.Execution.Id, 'MD5'), "
                    "States.ArrayGetItem(States.StringSplit(States.UUID(), '-'), 4))"},
    ]
    env += [{"Name": k, "Value": v} for k, v in sorted(step.env.items())]
    from jobplane.compiler.map_env import map_env

    extra, execution = map_env(job, step)  # a map's member (compiler/map_states.py); else nothing
    if execution:
        env = [{"Name": e["Name"], "Value.$": execution} if e["Name"] == rc.ENV_EXECUTION_ID else e for e in env]
    return env + extra


def container_overrides(job: Job, step: Step, counter: str | None) -> list[JsonObject]:
    """RunTask's Overrides.ContainerOverrides for every attempt of ``step``."""
    return [{
        "Name": rc.CONTAINER_NAME,
        "Command": rc.container_command(str(step.kind.info.runner_kind)),
        "Environment": container_env(job, step, counter),
    }]


def params_budget(job: Job) -> int:
    """Characters left for the run's params in the largest container override any step attempt
    sends (the rest is fixed by the definition, or bounded: rc.RUN_TIME_VALUE_MAX)."""
    largest = 0
    for step in job.runnable_steps():
        counter = "$.attempt" if step.retry.attempts > 1 else None  # any path: its value is sized
        sized = [{**o, "Environment": [
            {"Name": e["Name"], "Value": "x" * rc.RUN_TIME_VALUE_MAX.get(e["Name"], 0)} if "Value.$" in e else e
            for e in o["Environment"]]} for o in container_overrides(job, step, counter)]
        largest = max(largest, len(json.dumps(sized, separators=(",", ":"), ensure_ascii=False)))
    return rc.OVERRIDES_LIMIT - largest
