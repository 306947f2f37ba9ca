"""The runtime half of each executor (its compile-time half: compiler/executors/), as Dagster's
run launcher holds launch, terminate and health together: how its attempt's facts are read back
from the Task's output or Cause (exit code, task or request id, stop code, reason, log group and
stream), what the Task's scheduled parameters already say of its log, where an attempt's log
is (:meth:`ExecutorRuntime.log_place`), and whether stopping the run stops a running attempt
(:attr:`ExecutorRuntime.stops_with_execution`). The timeline (platform/timeline.py), the attempt
rows (contract/attempts.py), the step logs (platform/logs.py) and the local engine's stop
(platform/local/engine.py) ask the executor that ran the attempt instead of sniffing its
output's shape or its row's fields in their own code.

Adding an executor: its compile-time class in compiler/executors/ (states, IAM, resources, its
line in that package's ``EXECUTORS``), its runtime class here with its line in ``RUNTIMES``, and
its local agent in platform/local/ with its line in platform/local/agents.py ``LOCAL_AGENTS``
(tests/test_executors.py holds the three tables to contract/step_kinds.py's ``Executor``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from jobplane.contract.arns import resource_name
from jobplane.contract.attribute_values import json_text
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.contract.attempts import Attempt

#: How much of a stop reason or an unparsed error cause a row keeps (rows live on the record).
REASON_MAX = 300


def task_id(task_arn: str) -> str:
    """arn:aws:ecs:<region>:<account>:task/<cluster>/<task id> -> <task id> (an id as it is, too)"""
    try:
        return resource_name(str(task_arn))
    except ValueError:
        return str(task_arn)


@dataclass(frozen=True)
class SharedLog:
    """An attempt's lines in a stream it shares with others (a Lambda function's execution
    environment serves one invocation after another into one stream): only the lines between
    its request's marks are its own (contract/lambda_step.py invocation_lines). An attempt that
    never answered has no stream (``stream`` empty): its lines are found by the run's identity
    the runner writes on each (``execution``, ``step``, ``attempt``)."""

    group: str
    stream: str
    execution: str = ""
    step: str = ""
    attempt: int = 0


@dataclass(frozen=True)
class LogPlace:
    """Where one attempt's log is. ``key``: the attempt's id among its execution's logs (an ECS
    task's id, a Lambda request's; ``<step>#<attempt>`` for one found by identity). ``shared``:
    None for a stream of its own in the deployment's runner log group, named by ``key``
    (contract/runner.py log_stream)."""

    key: str
    shared: SharedLog | None = None


class ExecutorRuntime(Protocol):
    """What the runtime asks of the place an attempt ran."""

    name: str  # contract/step_kinds.py Executor's value
    #: Whether stopping the execution stops its running attempt: Step Functions stops what a
    #: ``.sync`` (Run a Job) Task started when its execution stops ("Run a Job (.sync)",
    #: https://docs.aws.amazon.com/step-functions/latest/dg/connect-to-resource.html#connect-sync);
    #: a request-response invocation runs on to its end. The local engine's agents do the same
    #: (platform/local/agents.py); a REPLACE job's Lambda steps are refused for it
    #: (compiler/executors/lambda_.py replace_problems).
    stops_with_execution: bool

    def ran(self, result: JsonObject) -> bool:
        """Whether a Task's output (or failed Task's Cause) is one of this executor's."""
        ...

    def attempt_facts(self, result: JsonObject, with_reason: bool) -> JsonObject:
        """The attempt's facts from that output or Cause (``with_reason``: a failed attempt's)."""
        ...

    def scheduled_log_group(self, details: JsonObject) -> str | None:
        """The attempt's log group as its TaskScheduled event's details give it, before it ran."""
        ...

    def submitted_facts(self, output: JsonObject) -> JsonObject:
        """What the Task's TaskSubmitted output says of the attempt (an ECS task's id)."""
        ...

    def wrote(self, row: Attempt) -> bool:
        """Whether a timeline row is one of this executor's attempts (as its facts show it)."""
        ...

    def log_place(self, row: Attempt, execution: str | None) -> LogPlace | None:
        """Where the attempt's log is, None if nothing says yet (``execution``: its name, for an
        attempt whose log is found by its run's identity)."""
        ...


class EcsRuntime:
    """An ``ecs:runTask.sync`` attempt: the stopped task's JSON (its container's exit code, the
    task's id, StopCode and stopped reason); its log stream is named by the task's id."""

    name = "ecs"
    #: a .sync Task: Step Functions stops the task (StopTask: SIGTERM, then SIGKILL after the
    #: container's stop timeout) when the execution stops
    stops_with_execution = True

    def ran(self, result: JsonObject) -> bool:
        return True  # the default: a runner task's JSON, or a Cause that is not a Lambda answer

    def attempt_facts(self, result: JsonObject, with_reason: bool) -> JsonObject:
        container = (result.get("Containers") or [{}])[0] or {}
        facts: JsonObject = {"exit_code": container.get("ExitCode")}
        if result.get("TaskArn"):
            facts["task_id"] = task_id(result["TaskArn"])
        if result.get("StopCode"):
            facts["stop_code"] = result["StopCode"]
        reason = result.get("StoppedReason") or container.get("Reason")
        if with_reason and reason:
            facts["reason"] = str(reason)[:REASON_MAX]
        return facts

    def scheduled_log_group(self, details: JsonObject) -> str | None:
        return None  # one group for every task (the deployment's): the stream comes with the task

    def submitted_facts(self, output: JsonObject) -> JsonObject:
        tasks = output.get("Tasks")
        if tasks and isinstance(tasks[0], dict) and tasks[0].get("TaskArn"):
            return {"task_id": task_id(tasks[0]["TaskArn"])}
        return {}

    def wrote(self, row: Attempt) -> bool:
        return True  # the default, asked last

    def log_place(self, row: Attempt, execution: str | None) -> LogPlace | None:
        """The task's own stream of the runner log group (``runner/runner/<task id>``)."""
        key = row.task_id or row.log_stream
        return LogPlace(key) if key else None


class LambdaRuntime:
    """A ``lambda:invoke`` attempt of the job's runner function: its Task's output
    (``{"Payload": <the handler's answer>}``) or a failed Task's Cause (Lambda's function error,
    ``{"errorMessage": <the answer's JSON>, "errorType", "requestId", "stackTrace"}``;
    contract/lambda_step.py); its log group is its function's, known when the Task is scheduled."""

    name = "lambda"
    #: a request-response Task: an invocation cannot be cancelled and runs on to its end
    #: ("Invoke", https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html)
    stops_with_execution = False

    def ran(self, result: JsonObject) -> bool:
        return "Payload" in result or "errorType" in result

    def attempt_facts(self, result: JsonObject, with_reason: bool) -> JsonObject:
        """Exit code, log group and stream, request id; for an error the handler did not raise
        (Sandbox.Timedout, an import error of the image), its message as the reason."""
        from jobplane.contract.lambda_step import Answer

        payload = result.get("Payload")
        if isinstance(payload, dict):
            answer = Answer.from_json(json.dumps(payload))
        else:
            answer = Answer.from_json(str(result.get("errorMessage", "")))
        facts: JsonObject = {}
        if answer is not None:
            facts = {"exit_code": answer.exit_code, "log_group": answer.log_group or None,
                     "log_stream": answer.log_stream or None, "task_id": answer.request_id or None}
            return {k: v for k, v in facts.items() if v is not None}
        if isinstance(result.get("requestId"), str) and result["requestId"]:
            facts["task_id"] = result["requestId"]
        if with_reason and result.get("errorMessage"):
            facts["reason"] = str(result["errorMessage"])[:REASON_MAX]
        return facts

    def scheduled_log_group(self, details: JsonObject) -> str | None:
        """The log group of the function the Task invokes (its scheduled parameters)."""
        from jobplane.contract.lambda_step import log_group

        if details.get("resourceType") != "lambda":
            return None
        params = json_text(details.get("parameters"))
        name = params.get("FunctionName") if isinstance(params, dict) else None
        if not isinstance(name, str) or not name:
            return None
        return log_group(name.rsplit(":function:", 1)[-1].split(":", 1)[0])

    def submitted_facts(self, output: JsonObject) -> JsonObject:
        return {}

    def wrote(self, row: Attempt) -> bool:
        """A row with its function's log group (known from its TaskScheduled, platform/timeline.py)."""
        return bool(row.log_group)

    def log_place(self, row: Attempt, execution: str | None) -> LogPlace | None:
        """Its request's lines of its execution environment's stream; for an attempt that never
        answered (its Task timed out: no stream), its run's identity's lines of the group."""
        assert row.log_group
        if row.log_stream:
            return LogPlace(row.task_id or row.log_stream, SharedLog(row.log_group, row.log_stream))
        if row.task_id:
            return LogPlace(row.task_id)
        if execution:
            return LogPlace(f"{row.step}#{row.attempt}", SharedLog(row.log_group, "", execution, row.step, row.attempt))
        return None


#: Every executor's runtime half, by contract/step_kinds.py Executor's value; asked in this order
#: whose output a result is, the default (ECS, the runtime's long-standing default) last.
RUNTIMES: dict[str, ExecutorRuntime] = {"lambda": LambdaRuntime(), "ecs": EcsRuntime()}


def register(runtime: ExecutorRuntime) -> None:
    """Add an executor's runtime half, asked before the default (the last: ECS). Returns
    nothing; :func:`unregister` takes it out again (a test's own executor)."""
    *others, default = RUNTIMES.items()
    RUNTIMES.clear()
    RUNTIMES.update([*others, (runtime.name, runtime), default])


def unregister(name: str) -> None:
    RUNTIMES.pop(name, None)


def runtime_of(result: JsonObject) -> ExecutorRuntime:
    """The executor whose Task output (or Cause) ``result`` is."""
    return next(r for r in RUNTIMES.values() if r.ran(result))


def runtime_of_row(row: Attempt) -> ExecutorRuntime:
    """The executor that ran a timeline row's attempt."""
    return next(r for r in RUNTIMES.values() if r.wrote(row))


def log_place(row: Attempt, execution: str | None = None) -> LogPlace | None:
    """Where a timeline row's attempt logged, as the executor that ran it says."""
    return runtime_of_row(row).log_place(row, execution)


def scheduled_log_group(details: JsonObject) -> str | None:
    """An attempt's log group from its TaskScheduled details, if its executor knows it then."""
    return next((g for r in RUNTIMES.values() if (g := r.scheduled_log_group(details))), None)


def submitted_facts(output: JsonObject) -> JsonObject:
    """What a TaskSubmitted output says of the attempt, as its executor reads it."""
    facts: JsonObject = {}
    for r in RUNTIMES.values():
        facts |= r.submitted_facts(output)
    return facts
