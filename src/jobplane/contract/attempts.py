"""A step attempt (:class:`Attempt`), and what its ECS task said, read where the state machine
leaves it: a ``.sync`` Task's output, or a failed one's ``Cause`` (the task's JSON), and, in
records written before the timeline carried them, the step's slot of the run's ``steps``.

The state data does not keep failed attempts' tasks (their JSON is 4-6 KB each), so the
timeline rows built from the history (platform/timeline.py) carry these facts, and
:func:`attempt_rows` fills them in for older records.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, cast, get_args

from jobplane.contract.arns import resource_name
from jobplane.contract.attribute_values import json_text
from jobplane.contract.executor_runtime import REASON_MAX as REASON_MAX, runtime_of, task_id as task_id
from jobplane.contract.states import attempt_key, step_key
from jobplane.contract.record_schema import doc
from jobplane.contract.types import JsonObject, JsonValue


#: How an attempt stands or ended (the API's enum, the record's ``timeline``). ``waiting``: a
#: pooled step's attempt waiting for its pool's slot (docs/pools.md), WAITING, not RUNNING: its
#: timeout has not started. ``unknown``: a stored row whose outcome is none of these.
Outcome = Literal["waiting", "running", "succeeded", "failed", "timed out", "stopped", "unknown"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)


@dataclass(frozen=True)
class Attempt:
    """One attempt of a step, as the execution history tells it (platform/timeline.py): when it
    ran, how it ended, and what its ECS task said."""

    step: str
    attempt: int
    started_at: str | None
    finished_at: str | None
    outcome: Outcome = field(metadata=doc(
        "waiting (for a pool's slot: WAITING, not running; its timeout has not started), running, succeeded, "
        "failed, timed out or stopped; unknown for a stored row that says none of these"))
    exit_code: int | None = field(default=None, metadata=doc("the container's exit code, if it exited"))
    error: str | None = None
    stop_code: str | None = field(default=None, metadata=doc("the ECS task's StopCode, for an attempt that failed"))
    reason: str | None = field(default=None, metadata=doc("why the task stopped, for an attempt that failed"))
    task_id: str | None = field(default=None, metadata=doc(
        "the ECS task that ran it (its log stream's name), or the Lambda invocation's request id"))
    log_group: str | None = field(default=None, metadata=doc("a Lambda attempt's log group (/aws/lambda/<function>)"))
    log_stream: str | None = field(default=None, metadata=doc("a Lambda attempt's log stream in that group"))
    waiting_since: str | None = field(default=None, metadata=doc(
        "a pooled step's attempt: when it began waiting for its pool's slot (docs/pools.md)"))

    @property
    def waiting(self) -> bool:
        """Waiting for a pool's slot: WAITING, not RUNNING (its timeout has not started)."""
        return self.outcome == "waiting"

    def to_json(self) -> JsonObject:
        """As the record's ``timeline`` keeps it: unset facts left out."""
        out: JsonObject = {"step": self.step, "attempt": self.attempt, "started_at": self.started_at,
                           "finished_at": self.finished_at, "outcome": self.outcome}
        for name in ("exit_code", "error", "stop_code", "reason", "task_id", "log_group", "log_stream", "waiting_since"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, row: JsonValue) -> Attempt | None:
        """A row of a stored timeline; None for one that is not a row (never raised on: a page
        that lists executions must not fail for one damaged record)."""
        if not isinstance(row, dict) or not isinstance(row.get("step"), str) or not isinstance(row.get("attempt"), int):
            return None

        def text(name: str) -> str | None:
            value = row.get(name)
            return value if isinstance(value, str) else None

        code = row.get("exit_code")
        outcome = text("outcome")
        return cls(step=row["step"], attempt=row["attempt"], started_at=text("started_at"),
                   finished_at=text("finished_at"), outcome=cast(Outcome, outcome if outcome in OUTCOMES else "unknown"),
                   exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                   error=text("error"), stop_code=text("stop_code"), reason=text("reason"), task_id=text("task_id"),
                   log_group=text("log_group"), log_stream=text("log_stream"), waiting_since=text("waiting_since"))


def timeline_of(rows: JsonValue) -> tuple[Attempt, ...]:
    return tuple(a for a in (Attempt.from_json(r) for r in (rows if isinstance(rows, list) else [])) if a)


def task_facts(text: str | None, with_reason: bool) -> JsonObject:
    """The attempt's facts from a Task's output or a failed Task's Cause (``with_reason``: whose
    text is the reason when it is not JSON), as the executor that ran it reads them
    (contract/executor_runtime.py: an ECS task's exit code, id, StopCode and stop reason; a Lambda
    step's answer)."""
    task = _task_of(text)
    if task is None:
        return {"reason": text[:REASON_MAX]} if with_reason and text else {}
    return runtime_of(task).attempt_facts(task, with_reason)


def attempt_rows(record_steps: JsonObject, rows: Sequence[Attempt]) -> list[Attempt]:
    """Timeline rows, each with its container's exit code (None if it never exited), and for a
    failed attempt its error, StopCode and stop reason. Rows read from the history carry these
    themselves; records written before they did kept each attempt's result in ``steps``."""
    out = []
    for row in rows:
        if (row.exit_code, row.reason, row.stop_code, row.task_id) == (None, None, None, None):
            result = _attempt_result(record_steps, row.step, row.attempt) or {}
            if result.get("Error"):
                facts = task_facts(result.get("Cause"), with_reason=True)
                row = dataclasses.replace(row, error=result["Error"], **facts)
            else:
                code = (result.get("Container") or {}).get("ExitCode")
                row = dataclasses.replace(row, exit_code=code if isinstance(code, int) else None)
        out.append(row)
    return out


def _attempt_result(steps: JsonObject, step: str, attempt: int) -> JsonObject | None:
    slot = steps.get(step_key(step))
    value = slot.get(attempt_key(attempt)) if isinstance(slot, dict) else None
    return value if isinstance(value, dict) else None


def _task_of(cause: str | None) -> JsonObject | None:
    """A failed ecs:runTask.sync's Cause is the task's JSON (exit code, stop reason)."""
    task = json_text(cause)
    return task if isinstance(task, dict) else None
