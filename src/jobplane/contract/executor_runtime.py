"""The runtime half of each executor (its compile-time half: compiler/executors/): how its
attempt's facts are read back from the Task's output or Cause (exit code, task or request id,
stop code, reason, log group and stream) and what the Task's scheduled parameters already say
of its log. The timeline (platform/timeline.py) and the attempt rows (contract/attempts.py) ask
the executor that ran the attempt instead of sniffing its output's shape in their own code.

Adding an executor: its class in compiler/executors/ (states, IAM, resources), its runtime class
here with its line in ``RUNTIMES`` (tests/test_kinds.py holds the table to contract/step_kinds.py's
``Executor``), and its local agent in platform/local/.
"""

from __future__ import annotations

import json
from typing import Protocol

from jobplane.contract.arns import resource_name
from jobplane.contract.attribute_values import json_text
from jobplane.contract.types import JsonObject

#: How much of a stop reason or an unparsed error cause a row keeps (rows live on the record).
REASON_MAX = 300


def task_id(task_arn: str) -> str:
    """arn:aws:ecs:<region>:<account>:task/<cluster>/<task id> -> <task id> (an id as it is, too)"""
    try:
        return resource_name(str(task_arn))
    except ValueError:
        return str(task_arn)


class ExecutorRuntime(Protocol):
    """What the runtime asks of the place an attempt ran."""

    name: str  # contract/step_kinds.py Executor's value

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


class EcsRuntime:
    """An ``ecs:runTask.sync`` attempt: the stopped task's JSON (its container's exit code, the
    task's id, StopCode and stopped reason); its log stream is named by the task's id."""

    name = "ecs"

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


class LambdaRuntime:
    """A ``lambda:invoke`` attempt of the job's runner function: its Task's output
    (``{"Payload": <the handler's answer>}``) or a failed Task's Cause (Lambda's function error,
    ``{"errorMessage": <the answer's JSON>, "errorType", "requestId", "stackTrace"}``;
    contract/lambda_step.py); its log group is its function's, known when the Task is scheduled."""

    name = "lambda"

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


#: Every executor's runtime half, by contract/step_kinds.py Executor's value; asked in this order
#: whose output a result is, the default (ECS, the runtime's long-standing default) last.
RUNTIMES: dict[str, ExecutorRuntime] = {"lambda": LambdaRuntime(), "ecs": EcsRuntime()}


def runtime_of(result: JsonObject) -> ExecutorRuntime:
    """The executor whose Task output (or Cause) ``result`` is."""
    return next(r for r in RUNTIMES.values() if r.ran(result))


def scheduled_log_group(details: JsonObject) -> str | None:
    """An attempt's log group from its TaskScheduled details, if its executor knows it then."""
    return next((g for r in RUNTIMES.values() if (g := r.scheduled_log_group(details))), None)


def submitted_facts(output: JsonObject) -> JsonObject:
    """What a TaskSubmitted output says of the attempt, as its executor reads it."""
    facts: JsonObject = {}
    for r in RUNTIMES.values():
        facts |= r.submitted_facts(output)
    return facts
