"""An execution's step timeline from its Step Functions history: which step attempt started and
ended when, how it ended, and how many state transitions the execution used (the billed unit).

The state machine's own record keeps each attempt's result but not its times; the reconciler
stores this timeline on the record when the execution ends (history is kept 90 days on AWS and
not at all across a restart locally), and the portal builds it live while the execution runs.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Callable

from botocore.exceptions import ClientError

from jobplane.contract.attempts import task_facts
from jobplane.contract.attribute_values import json_text
from jobplane.contract.clock import as_iso
from jobplane.contract.executor_runtime import scheduled_log_group, submitted_facts
from jobplane.contract.attempts import Attempt
from jobplane.contract.states import Role, StateName, classify
from jobplane.contract.types import Client, JsonObject, Response


def timeline(events: list[Response]) -> list[Attempt]:
    """[{step, attempt, started_at, finished_at, outcome}] for every step attempt, in order.
    outcome: 'waiting', 'running', 'succeeded', 'failed', 'timed out' or 'stopped'.

    A pooled step's attempt is 'waiting' from its ticket (``<step>: pool``) until its Task is
    entered (its ``started_at``; ``waiting_since`` keeps when it began to wait); one that its
    execution's end caught waiting is 'stopped' / 'timed out' with no start.

    An attempt cut short by the end of its execution (stopped, or the whole run timed out) is
    'stopped' / 'timed out', whatever its Task said: moto 5.2.5 writes a TaskSucceeded with no
    output for the running task of a stopped execution (AWS writes none), and a .sync task that
    really succeeded always has its task as output.

    A step's Task is entered once per attempt (the attempt loop), and once more for an attempt
    the infrastructure retried: the attempt number is one more than the back-off waits
    (Role.WAIT) the step has entered, which also holds for machines compiled before the loop
    (``<step> #N``, each preceded by ``<step> #N-1: wait``).

    A Task's own retry (its Retry field: a throttle, a function not ready) schedules the Task
    again without entering the state: each try is a row of its own, the failed one with its
    error, the next with the same attempt number, as an infrastructure retry shows."""
    waits: dict[str, int] = {}  # step -> back-off waits entered so far
    row_of: dict[int, JsonObject] = {}  # event id -> its attempt row (events chain by previousEventId)
    rows: list[JsonObject] = []
    by_state: dict[str, JsonObject] = {}
    cut_short: list[JsonObject] = []  # attempts the execution's end interrupted
    others: set[int] = set()  # events of a step's own platform Tasks (its pool's claim and release)
    tried: dict[int, tuple[JsonObject, str]] = {}  # a failed try's event -> its row and state, for a retry
    for e in sorted(events, key=lambda e: e["id"]):
        kind = e["type"]
        if kind in ("ExecutionAborted", "ExecutionTimedOut"):
            ended = "stopped" if kind == "ExecutionAborted" else "timed out"
            for row in rows:
                if row["outcome"] in ("running", "waiting") or row in cut_short:
                    row["outcome"] = ended
                    row["finished_at"] = row["finished_at"] or as_iso(e["timestamp"])
            continue
        if kind == "WaitStateEntered":
            state = _classified(e["stateEnteredEventDetails"]["name"])
            if state is not None and state.role == Role.WAIT and state.step is not None:
                waits[state.step] = waits.get(state.step, 0) + 1
        elif kind == "PassStateEntered":
            state = _classified(e["stateEnteredEventDetails"]["name"])
            if state is not None and state.role == Role.POOL and state.step is not None:
                rows.append({"step": state.step, "attempt": 1 + waits.get(state.step, 0), "started_at": None,
                             "finished_at": None, "outcome": "waiting", "waiting_since": as_iso(e["timestamp"])})
        elif kind == "TaskStateEntered":
            name = e["stateEnteredEventDetails"]["name"]
            state = _classified(name)
            # not a compiled job's state machine (no steps to show), or the platform's own
            # Tasks (claim, records, notifications)
            if state is None or state.role != Role.STEP or state.step is None:
                if state is not None and state.step is not None:  # a pool's claim or release: not an attempt
                    others.add(e["id"])
                continue
            attempt = 1 + waits.get(state.step, 0)
            waited = next((r for r in rows if r["step"] == state.step and r["outcome"] == "waiting"), None)
            if waited is not None:  # its pool's slot is held: the attempt runs (the oldest waiting one)
                row = waited
                row.update(started_at=as_iso(e["timestamp"]), outcome="running")
            else:
                row = {"step": state.step, "attempt": attempt, "started_at": as_iso(e["timestamp"]),
                       "finished_at": None, "outcome": "running"}
                rows.append(row)
            row_of[e["id"]] = row
            by_state[name] = row
        elif kind in ("TaskScheduled", "TaskStarted", "TaskSubmitted") and e.get("previousEventId") in others:
            others.add(e["id"])
        elif kind == "TaskScheduled" and e.get("previousEventId") in tried:
            # the Task's own retry of a try that failed: the same attempt, tried again
            failed_row, state_name = tried.pop(e["previousEventId"])
            row = {"step": failed_row["step"], "attempt": failed_row["attempt"], "started_at": as_iso(e["timestamp"]),
                   "finished_at": None, "outcome": "running"}
            rows.append(row)
            row_of[e["id"]] = by_state[state_name] = row
            group = scheduled_log_group(e.get("taskScheduledEventDetails") or {})
            if group:
                row["log_group"] = group
        elif kind in ("TaskScheduled", "TaskStarted", "TaskSubmitted") and e.get("previousEventId") in row_of:
            row = row_of[e["id"]] = row_of[e["previousEventId"]]
            if kind == "TaskScheduled":  # a Lambda step: its function's log group is known before it answers
                group = scheduled_log_group(e.get("taskScheduledEventDetails") or {})
                if group:
                    row["log_group"] = group
            if kind == "TaskSubmitted":  # RunTask's answer: the task (and its log stream) is known
                submitted = json_text((e.get("taskSubmittedEventDetails") or {}).get("output"))
                if isinstance(submitted, dict):
                    row.update(submitted_facts(submitted))
        elif kind in ("TaskSucceeded", "TaskFailed", "TaskTimedOut", "TaskStartFailed", "TaskSubmitFailed"):
            if e.get("previousEventId") in others:
                others.add(e["id"])  # its own retry follows from this event
                continue
            # parallel branches interleave: follow the event chain, else the newest open attempt
            ended_row = row_of.get(e.get("previousEventId", -1)) or _latest_open(rows)
            if kind == "TaskSucceeded" and ended_row is not None and ended_row["outcome"] in ("timed out", "failed") \
                    and (e.get("taskSucceededEventDetails") or {}).get("output") in (None, "null", ""):
                # moto 5.2.5 writes a TaskSucceeded with no output when a timed-out ECS task it
                # still watched stops, after the TaskTimedOut; AWS ends a Task once ("Task",
                # https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html): the
                # attempt timed out, as the state machine acted on (issue 65 item 5)
                continue
            if ended_row is not None:
                ended_row["finished_at"] = as_iso(e["timestamp"])
                if kind == "TaskSucceeded":
                    ended_row["outcome"] = "succeeded"
                    output = (e.get("taskSucceededEventDetails") or {}).get("output")
                    if output in (None, "null", ""):
                        cut_short.append(ended_row)
                    ended_row.update(task_facts(output, with_reason=False))
                else:
                    details: JsonObject = next((v for k, v in e.items() if k.endswith("EventDetails")), {}) or {}
                    ended_row["outcome"] = "timed out" if kind == "TaskTimedOut" else "failed"
                    if details.get("error"):
                        ended_row["error"] = details["error"]
                    ended_row.update(task_facts(details.get("cause"), with_reason=True))
                    tried_state = next((n for n, r in by_state.items() if r is ended_row), None)
                    if tried_state is not None:
                        tried[e["id"]] = (ended_row, tried_state)
        elif kind == "TaskStateExited":
            name = e["stateExitedEventDetails"]["name"]
            exited_row = by_state.get(name)
            if exited_row is not None and exited_row["finished_at"] is None:
                exited_row["finished_at"] = as_iso(e["timestamp"])
                exited_row["outcome"] = "succeeded"
    return [Attempt(**row) for row in rows]


_END_EVENTS = {"ABORTED": "ExecutionAborted", "TIMED_OUT": "ExecutionTimedOut"}


def with_end(events: list[Response], status: str, finished: datetime) -> list[Response]:
    """``events`` ending with the end event ``status`` implies (stopped, timed out) when the
    history read does not have it yet: the status Step Functions answered is final, and under
    the local engine moto 5.2.5 appends ExecutionTimedOut from the execution's worker thread once
    the state it was in wakes, which can be after the status listeners (the reconciler) ran; an
    attempt that waited or ran then is 'timed out' / 'stopped', as the event would make it."""
    kind = _END_EVENTS.get(status)
    if kind is None or any(e["type"] == kind for e in events):
        return events
    last = max((int(e["id"]) for e in events), default=0)
    return [*events, {"id": last + 1, "type": kind, "timestamp": finished}]


def _classified(name: str) -> StateName | None:
    try:
        return classify(name)
    except ValueError:
        return None


def _latest_open(rows: list[JsonObject]) -> JsonObject | None:
    return next((row for row in reversed(rows) if row["finished_at"] is None and row["outcome"] != "waiting"), None)


#: What Step Functions answers when a caller is over its API quota.
THROTTLED = frozenset({"ThrottlingException", "TooManyRequestsException"})


@dataclass(frozen=True)
class Patience:
    """How a reader that must not give up (the reconciler) waits out a throttled history read.

    GetExecutionHistory draws on a small token bucket per account and Region, shared by the
    portal, the operator CLI, the notifier, the periodic check and the reconciler (Step Functions
    developer guide, "Service quotas", API action throttling:
    https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html#service-limits-api-action-throttling-general).
    When many runs end at once, every reconciler invocation reads a history in the same second;
    botocore's own retries (a few, within a second or two) run out while the bucket refills. A
    throttled read is retried with capped exponential backoff and full jitter, spreading the
    readers over the refill (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html);
    past ``attempts`` the error propagates, the Lambda fails and its event is tried again
    (never dropped: a read that gave up leaves the record for the retry, not half-done).
    Worst case about 40 s of waiting, inside the reconciler's timeout (functions.tf)."""

    attempts: int = 8
    base: float = 0.5
    cap: float = 10.0
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.cap, self.base * 2 ** attempt))


def history(sfn: Client, execution_arn: str, patience: Patience | None = None) -> list[Response]:
    """Every event of an execution's history, oldest first. With ``patience``, a throttled page
    is waited for and asked again (see :class:`Patience`); without it (a page someone is looking
    at), the first throttle is the caller's to show."""
    events: list[Response] = []
    kwargs: JsonObject = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = _page(sfn, kwargs, patience)
        events += page["events"]
        if not page.get("nextToken"):
            return events
        kwargs["nextToken"] = page["nextToken"]


def _page(sfn: Client, kwargs: JsonObject, patience: Patience | None) -> Response:
    attempt = 0
    while True:
        try:
            page: Response = sfn.get_execution_history(**kwargs)
            return page
        except ClientError as e:
            if patience is None or e.response.get("Error", {}).get("Code") not in THROTTLED \
                    or attempt + 1 >= patience.attempts:
                raise
            patience.sleep(patience.delay(attempt))
            attempt += 1


def state_transitions(events: list[Response]) -> int:
    """What Standard Workflows bill: one per state entered (the start counts via the first)."""
    return sum(1 for e in events if e["type"].endswith("StateEntered"))
