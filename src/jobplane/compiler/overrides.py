"""What one step attempt's ECS container override holds, and how much room it leaves for params;
what a Lambda step's payload and its runner function's environment hold, and whether that fits.

ECS refuses a RunTask whose container overrides exceed 8,192 characters, and a run's params
travel in them (JOBPLANE_PARAMS). The compiled Task sends this override; ``jobplane validate``
checks every job's budget with it. Lambda refuses a function whose environment is over 4 KB
(contract/lambda_step.py ENVIRONMENT_LIMIT), and the runner function's grows with its steps and
their secrets: validate checks it (the Lambda executor's job_problems) with the environment the
Terraform sets, built here. It is its own module
so validate does not import the whole ASL builder (issue 13: validate's start-up).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from jobplane.contract import lambda_step, progress
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
    if (fire_defaults := job.fire_defaults) is not None:  # calendar defaults: the runner resolves them (contract/params.py)
        env.append({"Name": rc.ENV_PARAM_DEFAULTS,
                    "Value": json.dumps(fire_defaults.to_json(), sort_keys=True, separators=(",", ":"))})
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


def step_environment(job: Job, step: Step, counter: str | None) -> list[dict[str, str]]:
    """The environment an ECS step's container gets, and the names of the step's own secrets
    (:data:`jobplane.contract.lambda_step.ENV_STEP_SECRETS`): the handler reads those and no
    other of the function's (issue 62 finding 6: each step read every secret of the job's
    Lambda steps). Digested with the rest, so a payload cannot name another step's."""
    env = container_env(job, step, counter)
    if step.secrets:
        env.append({"Name": lambda_step.ENV_STEP_SECRETS, "Value": ",".join(sorted(step.secrets))})
    return env


def fixed_environment(job: Job, step: Step) -> dict[str, str]:
    """The literal part of a step's payload environment, as compiled (the ``.$`` names change per
    attempt and are not part of its digest). The attempt counter's path does not matter here."""
    counter = "$.n" if step.retry.attempts > 1 else None
    return {var["Name"]: var["Value"] for var in step_environment(job, step, counter) if "Value" in var}


#: The platform's table, as the job roots read it from the base module's outputs.
TABLE_NAME = "${local.platform.table_name}"


def function_environment(job: Job, steps: list[Step], sources: dict[str, str]) -> dict[str, str]:
    """The runner function's own environment: the digests of the steps it runs and where each of
    their secrets is read from (``sources``: ENV_NAME -> ARN, or its Terraform reference)."""
    # the handler runs only a payload whose fixed part is one of these steps' (contract/lambda_step.py)
    digests = sorted({lambda_step.step_digest(fixed_environment(job, s)) for s in steps})
    # where its steps' progress goes (contract/progress.py), as an ECS task definition's
    environment = {lambda_step.ENV_STEP_DIGESTS: ",".join(digests), progress.ENV_TABLE: TABLE_NAME}
    if sources:
        environment[lambda_step.ENV_SECRET_SOURCES] = lambda_step.secret_sources_json(sources)
    return environment


#: The longest partition ("aws-us-gov") and region name (14 characters today, 16 allowed for)
#: a secret's ARN may hold: the compiled Terraform reads both from the deployment's provider.
_LONGEST_PARTITION, _LONGEST_REGION, _ACCOUNT = "aws-us-gov", "x" * 16, "0" * 12


def longest_source(value: str) -> str:
    """The longest ARN a step's secret (``secretsmanager:NAME`` or ``ssm:NAME``) resolves to in
    the function's environment: a Secrets Manager secret's ends with '-' and six characters
    (terraform_iam.secret_references), an SSM parameter's is ``parameter`` then its name."""
    from jobplane.compiler.secret_scope import SecretRef

    ref = SecretRef.parse("", value)
    if ref.service == "ssm":
        return f"arn:{_LONGEST_PARTITION}:ssm:{_LONGEST_REGION}:{_ACCOUNT}:parameter/{ref.name.lstrip('/')}"
    return f"arn:{_LONGEST_PARTITION}:secretsmanager:{_LONGEST_REGION}:{_ACCOUNT}:secret:{ref.name}-AbCdEf"
