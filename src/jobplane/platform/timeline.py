"""An execution's step timeline from its Step Functions history: which step attempt started and
ended when, how it ended, and how many state transitions the execution used (the billed unit).

The state machine's own record keeps each attempt's result but not its times; the reconciler
stores this timeline on the record when the execution ends (history is kept 90 days on AWS and
not at all across a restart locally), and the portal builds it live while the execution runs.
"""

from __future__ import annotations

import json
from typing import Any

from jobplane.contract.states import Role, StateName, attempt_key, classify, step_key
from jobplane.platform.clock import as_iso


def timeline(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """[{step, attempt, started_at, finished_at, outcome}] for every step attempt, in order.
    outcome: 'running', 'succeeded', 'failed', 'timed out' or 'stopped'.

    An attempt cut short by the end of its execution (stopped, or the whole run timed out) is
    'stopped' / 'timed out', whatever its Task said: moto 5.2.5 writes a TaskSucceeded with no
    output for the running task of a stopped execution (AWS writes none), and a .sync task that
    really succeeded always has its task as output.

    A step's Task is entered once per attempt (the attempt loop), and once more for an attempt
    the infrastructure retried: the attempt number is one more than the back-off waits
    (Role.WAIT) the step has entered, which also holds for machines compiled before the loop
    (``<step> #N``, each preceded by ``<step> #N-1: wait``)."""
    waits: dict[str, int] = {}  # step -> back-off waits entered so far
    row_of: dict[int, dict[str, Any]] = {}  # event id -> its attempt row (events chain by previousEventId)
    rows: list[dict[str, Any]] = []
    by_state: dict[str, dict[str, Any]] = {}
    cut_short: list[dict[str, Any]] = []  # attempts the execution's end interrupted
    for e in sorted(events, key=lambda e: e["id"]):
        kind = e["type"]
        if kind in ("ExecutionAborted", "ExecutionTimedOut"):
            ended = "stopped" if kind == "ExecutionAborted" else "timed out"
            for row in rows:
                if row["outcome"] == "running" or row in cut_short:
                    row["outcome"] = ended
                    row["finished_at"] = row["finished_at"] or as_iso(e["timestamp"])
            continue
        if kind == "WaitStateEntered":
            state = _classified(e["stateEnteredEventDetails"]["name"])
            if state is not None and state.role == Role.WAIT and state.step is not None:
                waits[state.step] = waits.get(state.step, 0) + 1
        elif kind == "TaskStateEntered":
            name = e["stateEnteredEventDetails"]["name"]
            state = _classified(name)
            # not a compiled job's state machine (no steps to show), or the platform's own
            # Tasks (claim, records, notifications)
            if state is None or state.role != Role.STEP or state.step is None:
                continue
            attempt = 1 + waits.get(state.step, 0)
            row = {"step": state.step, "attempt": attempt, "started_at": as_iso(e["timestamp"]),
                   "finished_at": None, "outcome": "running"}
            rows.append(row)
            row_of[e["id"]] = row
            by_state[name] = row
        elif kind in ("TaskScheduled", "TaskStarted", "TaskSubmitted") and e.get("previousEventId") in row_of:
            row = row_of[e["id"]] = row_of[e["previousEventId"]]
            if kind == "TaskSubmitted":  # RunTask's answer: the task (and its log stream) is known
                submitted = _json((e.get("taskSubmittedEventDetails") or {}).get("output"))
                tasks = submitted.get("Tasks") if isinstance(submitted, dict) else None
                if tasks and isinstance(tasks[0], dict) and tasks[0].get("TaskArn"):
                    row["task_id"] = _task_id(tasks[0]["TaskArn"])
        elif kind in ("TaskSucceeded", "TaskFailed", "TaskTimedOut", "TaskStartFailed", "TaskSubmitFailed"):
            # parallel branches interleave: follow the event chain, else the newest open attempt
            ended_row = row_of.get(e.get("previousEventId", -1)) or _latest_open(rows)
            if ended_row is not None:
                ended_row["finished_at"] = as_iso(e["timestamp"])
                if kind == "TaskSucceeded":
                    ended_row["outcome"] = "succeeded"
                    output = (e.get("taskSucceededEventDetails") or {}).get("output")
                    if output in (None, "null", ""):
                        cut_short.append(ended_row)
                    ended_row.update(_task_facts(output, with_reason=False))
                else:
                    details: dict[str, Any] = next((v for k, v in e.items() if k.endswith("EventDetails")), {}) or {}
                    ended_row["outcome"] = "timed out" if kind == "TaskTimedOut" else "failed"
                    if details.get("error"):
                        ended_row["error"] = details["error"]
                    ended_row.update(_task_facts(details.get("cause"), with_reason=True))
        elif kind == "TaskStateExited":
            name = e["stateExitedEventDetails"]["name"]
            exited_row = by_state.get(name)
            if exited_row is not None and exited_row["finished_at"] is None:
                exited_row["finished_at"] = as_iso(e["timestamp"])
                row["outcome"] = "succeeded"
    return rows


def _classified(name: str) -> StateName | None:
    try:
        return classify(name)
    except ValueError:
        return None


#: How much of a stop reason or an unparsed error cause a row keeps (rows live on the record).
REASON_MAX = 300


def _task_facts(text: str | None, with_reason: bool) -> dict[str, Any]:
    """What the platform reads from an attempt's ECS task (a .sync Task's output, or a failed
    one's Cause): the container's exit code, the task's StopCode and stop reason. The state data
    does not keep failed attempts' tasks (their JSON is 4-6 KB each), so this is where they live."""
    task = _task_of(text)
    if task is None:
        return {"reason": text[:REASON_MAX]} if with_reason and text else {}
    container = (task.get("Containers") or [{}])[0] or {}
    facts: dict[str, Any] = {"exit_code": container.get("ExitCode")}
    if task.get("TaskArn"):
        facts["task_id"] = _task_id(task["TaskArn"])
    if task.get("StopCode"):
        facts["stop_code"] = task["StopCode"]
    reason = task.get("StoppedReason") or container.get("Reason")
    if with_reason and reason:
        facts["reason"] = str(reason)[:REASON_MAX]
    return facts


def _latest_open(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((row for row in reversed(rows) if row["finished_at"] is None), None)


def history(sfn: Any, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**kwargs)
        events += page["events"]
        if not page.get("nextToken"):
            return events
        kwargs["nextToken"] = page["nextToken"]


def state_transitions(events: list[dict[str, Any]]) -> int:
    """What Standard Workflows bill: one per state entered (the start counts via the first)."""
    return sum(1 for e in events if e["type"].endswith("StateEntered"))


def attempt_rows(record_steps: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Timeline rows, each with its container's exit code (None if it never exited), and for a
    failed attempt its error, StopCode and stop reason. Rows read from the history carry these
    themselves; records written before they did kept each attempt's result in ``steps``."""
    out = []
    for item in rows:
        row = {"exit_code": None, **item}
        if "exit_code" not in item and "reason" not in item:
            result = _attempt_result(record_steps, item["step"], item["attempt"]) or {}
            if result.get("Error"):
                row["error"] = result["Error"]
                row.update(_task_facts(result.get("Cause"), with_reason=True))
            else:
                row["exit_code"] = (result.get("Container") or {}).get("ExitCode")
        out.append(row)
    return out


def _attempt_result(steps: dict[str, Any], step: str, attempt: int) -> dict[str, Any] | None:
    value = steps.get(step_key(step), {}).get(attempt_key(attempt))
    return value if isinstance(value, dict) else None


def _task_of(cause: str | None) -> dict[str, Any] | None:
    """A failed ecs:runTask.sync's Cause is the task's JSON (exit code, stop reason)."""
    task = _json(cause)
    return task if isinstance(task, dict) else None


def _json(text: str | None) -> Any:
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def _task_id(task_arn: str) -> str:
    """arn:aws:ecs:<region>:<account>:task/<cluster>/<task id> -> <task id>"""
    return str(task_arn).rsplit("/", 1)[-1]
