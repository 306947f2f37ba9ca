"""The moto patch ``map_child_executions``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_map_child_executions`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import datetime
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

#: child executions kept, by ARN, and the ARNs of each Map Run's children in the order they started
_LOCK = threading.Lock()
_CHILDREN: dict[str, "Child"] = {}
_OF_MAP_RUN: dict[str, list[str]] = {}
#: the ListExecutions page size when maxResults is not given ("maxResults ... The default is 100
#: and the maximum allowed page size is 1000": ListExecutions,
#: https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html)
PAGE, MAX_PAGE = 100, 1000


@dataclass
class Child:
    """One child workflow execution of a Distributed Map's Map Run, as DescribeExecution,
    ListExecutions (mapRunArn) and GetExecutionHistory answer it."""

    arn: str
    name: str
    map_run_arn: str
    state_machine_arn: str  # the Map Run's labelled state machine ARN: ``stateMachine:<sm>/<label>``
    parent: str
    start_date: datetime.datetime
    events: Any  # the child's own moto EventManager
    input: str = "{}"
    status: str = "RUNNING"
    stop_date: datetime.datetime | None = None
    output: str | None = None
    error: str | None = None
    cause: str | None = None
    # what DescribeExecution's response reads (moto's Execution's attribute names)
    output_details: dict[str, Any] = field(default_factory=lambda: {"included": True})

    @property
    def execution_arn(self) -> str:
        return self.arn

    @property
    def execution_input(self) -> str:
        return self.input


def child(arn: str) -> Child | None:
    with _LOCK:
        return _CHILDREN.get(arn)


def children(map_run_arn: str) -> list[Child]:
    with _LOCK:
        return [_CHILDREN[a] for a in _OF_MAP_RUN.get(map_run_arn, []) if a in _CHILDREN]


def forget(parents: set[str]) -> int:
    """Drop the children of these (forgotten) parent executions; how many."""
    with _LOCK:
        gone = [a for a, c in _CHILDREN.items() if c.parent in parents]
        for a in gone:
            c = _CHILDREN.pop(a)
            runs = _OF_MAP_RUN.get(c.map_run_arn)
            if runs is not None:
                runs.remove(a)
                if not runs:
                    del _OF_MAP_RUN[c.map_run_arn]
        return len(gone)


def fix_map_child_executions() -> None:
    """A Distributed Map runs each item (or batch) in a child workflow execution of its own: "a
    Map Run refers to a set of child workflow executions that a Distributed Map state starts"
    (Step Functions developer guide, "Viewing a Distributed Map Run execution",
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-examine-map-run.html), each
    with its own history (GetExecutionHistory), listed by ``ListExecutions`` with ``mapRunArn``
    ("If the mapRunArn field is specified, a list of all of the child workflow executions
    started by a Map Run is returned", with ``mapRunArn`` and ``itemCount`` in each item:
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html), and
    described by ``DescribeExecution``; its ARN is ``execution:<state machine>/<Map Run label>:<id>``
    ("IAM policies for using Distributed Map states",
    https://docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html), and its
    Context object's ``$$.Execution`` is its own (Id, Name, Input, StartTime: the "Context
    object", https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html),
    while its ItemSelector is evaluated with the parent's.

    moto 5.2.5 runs every child of a Map Run in the parent's interpreter, writes all their
    events into one event list that it then drops, gives each the parent's ``$$.Execution``, and
    answers ListExecutions from the stateMachineArn only (a mapRunArn is ignored, a child's ARN is
    not found): a child's history, so a map item's own retries (its Task's throttles and capacity
    failures), cannot be read. Here each child gets its own ARN, ``$$.Execution`` and event list
    (ExecutionStarted ... ExecutionSucceeded/Failed), kept with its parent (forgotten with it:
    ``forget``) and served by DescribeExecution, GetExecutionHistory and ListExecutions(mapRunArn)."""
    from moto.core.responses import ActionResult
    from moto.core.utils import iso_8601_datetime_with_milliseconds
    from moto.stepfunctions.parser.api import (
        ExecutionStartedEventDetails, ExecutionSucceededEventDetails, HistoryEventExecutionDataDetails,
        HistoryEventType)
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor import (
        distributed_item_processor_worker as dipw)
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext, EventManager
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramError, ProgramStopped, ProgramTimedOut
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    worker = dipw.DistributedItemProcessorWorker
    original_eval_job, original_eval_input = worker._eval_job, worker._eval_input

    def _eval_input(self, env_frame):
        original_eval_input(self, env_frame)  # the ItemSelector: evaluated with the parent's $$.Execution
        c = getattr(env_frame, "_jobplane_child", None)
        if c is None:
            return
        c.input = to_json_str(env_frame.states.get_input(), separators=(",", ":"))
        data = env_frame.states.context_object.context_object_data
        # the child's own: a copy, the parent's dict is shared by every frame of the parent
        data["Execution"] = {**data["Execution"], "Id": c.arn, "Name": c.name, "Input": env_frame.states.get_input(),
                             "StartTime": iso_8601_datetime_with_milliseconds(c.start_date)}
        env_frame.event_manager.add_event(
            context=env_frame.event_history_context, event_type=HistoryEventType.ExecutionStarted,
            event_details=EventDetails(executionStartedEventDetails=ExecutionStartedEventDetails(
                input=c.input, inputDetails=HistoryEventExecutionDataDetails(truncated=False),
                roleArn=env_frame.aws_execution_details.role_arn)),
            timestamp=c.start_date)

    def _eval_job(self, env, job):
        record = self._map_run_record
        name = str(uuid.uuid4())
        sm = record.map_state_machine_arn
        c = Child(arn=sm.replace(":stateMachine:", ":execution:", 1) + ":" + name, name=name,
                  map_run_arn=record.map_run_arn, state_machine_arn=sm, parent=record.execution_arn,
                  start_date=datetime.datetime.now(tz=datetime.timezone.utc), events=EventManager())
        # the child's history is its own, numbered from 1 (its ExecutionStarted)
        env.event_manager = c.events
        env.event_history_context = EventHistoryContext.of_program_start()
        env._jobplane_child = c
        with _LOCK:
            _CHILDREN[c.arn] = c
            _OF_MAP_RUN.setdefault(c.map_run_arn, []).append(c.arn)
        try:
            original_eval_job(self, env, job)
        finally:
            _ended(c, env)

    def _ended(c, env):
        state = env.program_state()
        ctx = env.event_history_context
        if isinstance(state, ProgramStopped) or c.status == "ABORTED":  # stopped (with its parent)
            c.status = "ABORTED"
            c.events.add_event(context=ctx, event_type=HistoryEventType.ExecutionAborted,
                               event_details=EventDetails(executionAbortedEventDetails={}))
        elif isinstance(state, ProgramError):  # a Fail state, or an error no Catch took
            error = state.error or {}
            c.status, c.error, c.cause = "FAILED", error.get("error"), error.get("cause")
            details = {k: v for k, v in {"error": c.error, "cause": c.cause}.items() if v is not None}
            c.events.add_event(context=ctx, event_type=HistoryEventType.ExecutionFailed,
                               event_details=EventDetails(executionFailedEventDetails=details))
        elif isinstance(state, ProgramTimedOut):
            c.status = "TIMED_OUT"
            c.events.add_event(context=ctx, event_type=HistoryEventType.ExecutionTimedOut,
                               event_details=EventDetails(executionTimedOutEventDetails={}))
        else:
            c.status = "SUCCEEDED"
            c.output = to_json_str(env.states.get_input(), separators=(",", ":"))
            c.events.add_event(context=ctx, event_type=HistoryEventType.ExecutionSucceeded,
                               event_details=EventDetails(executionSucceededEventDetails=ExecutionSucceededEventDetails(
                                   output=c.output, outputDetails=HistoryEventExecutionDataDetails(truncated=False))))
        c.stop_date = datetime.datetime.now(tz=datetime.timezone.utc)

    worker._eval_input = _eval_input
    worker._eval_job = _eval_job

    describe, history = StepFunctionsParserBackend.describe_execution, StepFunctionsParserBackend.get_execution_history

    def settled(backend, c):
        """A child still RUNNING whose parent has ended was stopped with it: "If the parent
        execution is stopped ..., the child workflow executions are stopped" (the Map Run is
        aborted with its execution). Its worker may still be unwinding here; its status is
        what AWS answers at once."""
        if c.status == "RUNNING":
            try:
                parent = describe(backend, c.parent)
            except Exception:  # the parent is no longer kept: neither is the child on AWS
                parent = None
            if parent is None or parent.status != "RUNNING":
                with _LOCK:
                    if c.status == "RUNNING":
                        c.status = "ABORTED"
                        c.stop_date = datetime.datetime.now(tz=datetime.timezone.utc)
        return c

    def describe_execution(self, execution_arn):
        c = child(execution_arn)
        return settled(self, c) if c is not None else describe(self, execution_arn)

    def get_execution_history(self, execution_arn):
        c = child(execution_arn)
        if c is None:
            return history(self, execution_arn)
        return {"events": c.events.get_event_history()}

    StepFunctionsParserBackend.describe_execution = describe_execution
    StepFunctionsParserBackend.get_execution_history = get_execution_history

    list_executions = StepFunctionResponse.list_executions

    def list_map_run_executions(self):
        map_run_arn = self._get_param("mapRunArn")
        if not map_run_arn:
            return list_executions(self)
        status_filter = self._get_param("statusFilter")
        size = min(self._get_int_param("maxResults") or PAGE, MAX_PAGE)
        start = int(self._get_param("nextToken") or 0)
        found = [settled(self.stepfunction_backend, c) for c in children(map_run_arn)]
        found = [c for c in found if not status_filter or c.status == status_filter]
        found.sort(key=lambda c: c.start_date, reverse=True)  # newest first, as for a state machine
        page = found[start:start + size]
        executions = []
        for c in page:
            row = {"executionArn": c.arn, "name": c.name, "startDate": c.start_date,
                   "stateMachineArn": c.state_machine_arn, "status": c.status, "mapRunArn": c.map_run_arn,
                   "itemCount": 1}
            if c.stop_date is not None:
                row["stopDate"] = c.stop_date
            executions.append(row)
        answer = {"executions": executions}
        if start + size < len(found):
            answer["nextToken"] = str(start + size)
        return ActionResult(answer)

    StepFunctionResponse.list_executions = list_map_run_executions
