"""An execution's step timeline from its Step Functions history: which step attempt started and
ended when, how it ended, and how many state transitions the execution used (the billed unit).

The state machine's own record keeps each attempt's result but not its times; the reconciler
stores this timeline on the record when the execution ends (history is kept 90 days on AWS and
not at all across a restart locally), and the portal builds it live while the execution runs.
"""

from __future__ import annotations

import json
from typing import Any

from jobplane.contract.states import Role, attempt_key, classify, step_key
from jobplane.platform.clock import as_iso


def timeline(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """[{step, attempt, started_at, finished_at, outcome}] for every step attempt, in order.
    outcome: 'running', 'succeeded', 'failed', 'timed out' or 'stopped'.

    An attempt cut short by the end of its execution (stopped, or the whole run timed out) is
    'stopped' / 'timed out', whatever its Task said: moto 5.2.5 writes a TaskSucceeded with no
    output for the running task of a stopped execution (AWS writes none), and a .sync task that
    really succeeded always has its task as output."""
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
        if kind == "TaskStateEntered":
            name = e["stateEnteredEventDetails"]["name"]
            try:
                state = classify(name)
            except ValueError:  # not a compiled job's state machine: it has no steps to show
                continue
            if state.role != Role.STEP:  # the platform's own Tasks (claim, records, notifications)
                continue
            row = {"step": state.step, "attempt": state.attempt, "started_at": as_iso(e["timestamp"]),
                   "finished_at": None, "outcome": "running"}
            rows.append(row)
            row_of[e["id"]] = row
            by_state[name] = row
        elif kind in ("TaskScheduled", "TaskStarted", "TaskSubmitted") and e.get("previousEventId") in row_of:
            row_of[e["id"]] = row_of[e["previousEventId"]]
        elif kind in ("TaskSucceeded", "TaskFailed", "TaskTimedOut", "TaskStartFailed", "TaskSubmitFailed"):
            # parallel branches interleave: follow the event chain, else the newest open attempt
            row = row_of.get(e.get("previousEventId", -1)) or _latest_open(rows)
            if row is not None:
                row["finished_at"] = as_iso(e["timestamp"])
                if kind == "TaskSucceeded":
                    row["outcome"] = "succeeded"
                    if (e.get("taskSucceededEventDetails") or {}).get("output") in (None, "null", ""):
                        cut_short.append(row)
                else:
                    details = next((v for k, v in e.items() if k.endswith("EventDetails")), {}) or {}
                    row["outcome"] = "timed out" if kind == "TaskTimedOut" else "failed"
                    if details.get("error"):
                        row["error"] = details["error"]
        elif kind == "TaskStateExited":
            name = e["stateExitedEventDetails"]["name"]
            row = by_state.get(name)
            if row is not None and row["finished_at"] is None:
                row["finished_at"] = as_iso(e["timestamp"])
                row["outcome"] = "succeeded"
    return rows


def _latest_open(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    for row in reversed(rows):
        if row["finished_at"] is None:
            return row
    return None


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
    """Timeline rows with what the execution record knows of each attempt laid over them: the
    container's exit code, and for a failed attempt its error and the task's stop reason."""
    out = []
    for item in rows:
        row = dict(item)
        result = _attempt_result(record_steps, item["step"], item["attempt"])
        container = (result or {}).get("Container") or {}
        if result and result.get("Error"):
            row["error"] = result["Error"]
            task = _task_of(result.get("Cause"))
            container = (task.get("Containers") or [{}])[0] if task else {}
            row["cause"] = (task.get("StoppedReason") if task else None) or (result.get("Cause") or "")[:500]
        row["exit_code"] = container.get("ExitCode")
        out.append(row)
    return out


def _attempt_result(steps: dict[str, Any], step: str, attempt: int) -> dict[str, Any] | None:
    value = steps.get(step_key(step), {}).get(attempt_key(attempt))
    return value if isinstance(value, dict) else None


def _task_of(cause: str | None) -> dict[str, Any] | None:
    """A failed ecs:runTask.sync's Cause is the task's JSON (exit code, stop reason)."""
    try:
        task = json.loads(cause or "")
    except ValueError:
        return None
    return task if isinstance(task, dict) else None
