"""The contract between the compiled state machine and ``jobplane-runner``.

The compiler writes the container command and environment from these definitions and the runner
reads them back, so both sides change together or not at all (docs/runner-contract.md).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up (bench/runner_start.py)
if TYPE_CHECKING:
    from typing import TypeGuard
    from jobplane.contract.types import JsonObject

# Environment set on every step's container by the state machine.
ENV_JOB = "JOBPLANE_JOB"
ENV_TEAM = "JOBPLANE_TEAM"
ENV_STEP = "JOBPLANE_STEP"
ENV_EXECUTION_ID = "JOBPLANE_EXECUTION_ID"
ENV_SCHEDULED_TIME = "JOBPLANE_SCHEDULED_TIME"
ENV_TRIGGER = "JOBPLANE_TRIGGER"
ENV_PARAMS = "JOBPLANE_PARAMS"  # JSON object: the run's params (defaults merged by the starter)
ENV_ATTEMPT = "JOBPLANE_ATTEMPT"  # 1-based attempt number of this step
ENV_TARGET = "JOBPLANE_TARGET"  # JSON object: the step's kind, target, args and kwargs
#: JSON: a job's calendar defaults and what resolving them needs (contract/params.py FireDefaults);
#: only on the steps of a job that declares some: the runner resolves those a run was not given.
ENV_PARAM_DEFAULTS = "JOBPLANE_PARAM_DEFAULTS"
ENV_TRACEPARENT = "TRACEPARENT"  # W3C trace context, continued by the runner
ENV_STEP_TIMEOUT = "JOBPLANE_STEP_TIMEOUT"  # seconds: the attempt's Task TimeoutSeconds (the runner outlives it by a margin at most)
# a map's steps (contract/map_items.py): where an items step writes its list; an each step's item and index
ENV_ITEMS_URI = "JOBPLANE_ITEMS_URI"
ENV_ITEM = "JOBPLANE_ITEM"
ENV_ITEM_INDEX = "JOBPLANE_ITEM_INDEX"
ITEM_PARAM = "item"  # the param an each step's function receives its item as

#: Why ECS stopped a task that never ran the step to its end through no fault of the step: it
#: could not start (capacity, image pull, network interface, secrets), or AWS stopped it (host
#: health, Spot, a termination notice, a Fargate maintenance stop). Such an attempt is run again
#: without counting against the step's own retries. "UserInitiated" (someone stopped the task)
#: and "EssentialContainerExited" (the step's own exit code) are not in it.
#: https://docs.aws.amazon.com/AmazonECS/latest/developerguide/stopped-task-error-codes.html
INFRA_STOP_CODES = ("TaskFailedToStart", "InfrastructureHealth", "SpotInterruption", "TerminationNotice",
                    "ServiceSchedulerInitiated")
OPERATOR_STOP_CODE = "UserInitiated"
#: The one stop the step itself chooses: its container exited. Every stop that is neither this
#: nor an operator's counts as infrastructure, the codes above and any other: a Fargate task
#: retirement stops a standalone task ("ECS is performing maintenance on the underlying
#: infrastructure hosting the task", its container ending 143 on the SIGTERM), and AWS adds codes
#: (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-maintenance.html).
RUNNER_STOP_CODE = "EssentialContainerExited"

#: ECS allows 8,192 characters of overrides in a RunTask, JSON punctuation included
#: (https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_RunTask.html, "overrides").
OVERRIDES_LIMIT = 8192
#: The longest each run-time environment value can be (params are budgeted per job instead):
#: an execution name is at most 80 characters (StartExecution), a scheduled time ~30, a trigger a
#: word, a traceparent 55, an attempt number 2 (the DSL allows at most 10 attempts).
RUN_TIME_VALUE_MAX = {ENV_EXECUTION_ID: 80, ENV_SCHEDULED_TIME: 32, ENV_TRIGGER: 16, ENV_TRACEPARENT: 55,
                      ENV_ATTEMPT: 2,
                      # a map's steps (contract/map_items.py): an item's JSON escaped once more, its index, the list's URI
                      ENV_ITEM: 2 * 1024 + 2, ENV_ITEM_INDEX: 6, ENV_ITEMS_URI: 400}


def params_in_override(params: JsonObject) -> int:
    """How many characters ``params`` take in a RunTask's overrides: a JSON document inside a
    JSON string, so its quotes and backslashes are escaped once more."""
    import json

    return len(json.dumps(json.dumps(params, separators=(",", ":"), sort_keys=True))) - 2

#: How many lists and objects deep a run's params (and a step's kwargs and args) may nest.
#: Deeper than any job needs; what reads them later gives up far above it (pydantic's
#: serialiser, behind the catalog and the portal's API, at ~250 levels: an execution started
#: with deeper params could not be shown).
MAX_PARAMS_DEPTH = 32


def nesting(value: object, limit: int = MAX_PARAMS_DEPTH) -> int:
    """How many lists and objects deep ``value`` is ('x': 0, []: 1, [[]]: 2), counted level by
    level (no recursion on hostile input), stopping once past ``limit``."""
    depth, level = 0, [value]
    while depth <= limit:
        containers = [c for c in level if isinstance(c, (list, dict))]
        if not containers:
            break
        depth += 1
        level = [v for c in containers for v in (c.values() if isinstance(c, dict) else c)]
    return depth


RUNNER_EXECUTABLE = "jobplane-runner"
CONTAINER_NAME = "runner"
#: The runner container's awslogs driver (terraform/platform/runner.tf, and the local ECS agent)
#: writes each task's output to the stream "<prefix>/<container name>/<task id>" ("Send Amazon
#: ECS logs to CloudWatch", awslogs-stream-prefix:
#: https://docs.aws.amazon.com/AmazonECS/latest/developerguide/using_awslogs.html).
LOG_STREAM_PREFIX = "runner"


def log_stream(task_id: str) -> str:
    return f"{LOG_STREAM_PREFIX}/{CONTAINER_NAME}/{task_id}"

#: The runner's dispatch, the one list of runner kinds (``jobplane-runner run <kind>``): each
#: with the function that runs its step, "module:function" of the runner, imported only for a
#: step of that kind (the runner's start-up: bench/runner_start.py). contract/step_kinds.py's
#: kinds each name one of these as their runner kind (a kind naming another fails to load), and
#: the runner dispatches on this table alone (runner/dispatch.py): a kind without its line here
#: is refused, permanently, never run as another kind.
DISPATCH = {
    "python": "jobplane.runner.steps:python",
    "celery": "jobplane.runner.steps:celery",
    "django": "jobplane.runner.steps:django",
    "shell": "jobplane.runner.steps:shell",
}
STEP_KINDS = tuple(DISPATCH)

# Exit codes. Everything non-zero that is not PERMANENT or TERMINATED counts as retryable, so a
# shell step's ordinary `exit 1` and an out-of-memory kill (137) are retried when retries are set.
EXIT_OK = 0
EXIT_RETRYABLE = 75  # EX_TEMPFAIL: default for an exception raised by user code
EXIT_PERMANENT = 78  # EX_CONFIG: target not found, bad arguments, import error, bad settings
EXIT_TERMINATED = 143  # 128 + SIGTERM: the run was stopped; never retried

NOT_RETRIED_EXIT_CODES = (EXIT_PERMANENT, EXIT_TERMINATED)


def is_retryable(exit_code: int | None) -> bool:
    """Whether the state machine may retry a step that ended with this exit code.

    ``None`` means the container never reported one (it did not start): retryable, since image
    pulls and capacity shortages are transient.
    """
    if exit_code is None:
        return True
    return exit_code != EXIT_OK and exit_code not in NOT_RETRIED_EXIT_CODES


def container_command(kind: str) -> list[str]:
    """The container command for a step: the target itself travels in ``JOBPLANE_TARGET``."""
    return [RUNNER_EXECUTABLE, "run", kind]


def is_runner_command(command: object) -> TypeGuard[list[str]]:
    """Whether a container command is one the compiler writes (``jobplane-runner run <kind>``):
    the local ECS agent runs nothing else."""
    return (isinstance(command, list) and len(command) == 3 and command[:2] == [RUNNER_EXECUTABLE, "run"]
            and command[2] in STEP_KINDS)
