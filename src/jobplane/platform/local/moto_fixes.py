"""Corrections to moto where its Step Functions interpreter differs from AWS in ways our
compiled state machines depend on.

Each fix names the upstream behaviour it corrects and is pinned to ``MOTO_VERSION``: these reach
into moto internals, so an upgrade must re-check them. Every fix has a test that shows the stock
behaviour (tests/test_moto_fixes.py), so an upgrade tells which fixes are still needed.

Not type-checked (``[tool.mypy]`` in pyproject.toml: ``ignore_errors``): it reaches into moto's
untyped internals; its stock-vs-fixed probes in tests/moto_probe.py hold it instead.
"""

from __future__ import annotations

import datetime
import functools
import json
import threading
from importlib.metadata import version
from typing import Any

from jobplane.contract.clock import iso_millis
from jobplane.platform.local.moto_dynamodb import LOCK as DYNAMODB_LOCK
from jobplane.platform.local.moto_dynamodb import (fix_dynamodb_fast_answers, fix_dynamodb_fast_projection,
                                                   fix_dynamodb_index_queries, fix_dynamodb_items_untracked,
                                                   fix_dynamodb_sizes_once, fix_dynamodb_transaction_journal, untrack)
from jobplane.contract.types import JsonObject

MOTO_VERSION = "5.2.5"

_applied: set[str] = set()
_lock = threading.Lock()


@functools.cache  # reading the installed metadata costs ~3 ms; it cannot change in a process
def check_version() -> None:
    installed = version("moto")
    if installed != MOTO_VERSION:
        raise RuntimeError(
            f"jobplane's local engine patches moto {MOTO_VERSION} internals but moto {installed} is installed; "
            "re-check every fix in jobplane.platform.local.moto_fixes before changing the pin")


def _serialise(cls: type, names: tuple[str, ...], lock: threading.RLock | None = None) -> None:
    """Wrap the named methods of a moto backend class in one lock shared by all of them."""
    lock = lock or threading.RLock()
    for name in names:
        original = getattr(cls, name)

        def locked(self, *args, __original=original, **kwargs):
            with lock:
                return __original(self, *args, **kwargs)

        locked.__name__ = "locked"
        setattr(cls, name, locked)


def fix_context_start_time() -> None:
    """``$$.Execution.StartTime`` is a string on AWS; moto 5.2.5 puts a ``datetime`` there.

    A state that writes it anywhere (our execution records do) fails in moto with
    "Object of type datetime is not JSON serializable".
    """
    from moto.stepfunctions.parser.backend import execution_worker

    original = execution_worker.ExecutionWorker._get_evaluation_environment

    def _get_evaluation_environment(self):
        env = original(self)
        execution = env.states.context_object.context_object_data["Execution"]
        if isinstance(execution.get("StartTime"), datetime.datetime):
            execution["StartTime"] = iso_millis(execution["StartTime"])
        return env

    execution_worker.ExecutionWorker._get_evaluation_environment = _get_evaluation_environment


def _epoch_millis(value: object) -> None:
    """SDK datetimes become epoch milliseconds (as the ECS integration returns them on AWS);
    left as datetimes they break the execution's JSON output."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        if isinstance(item, datetime.datetime):
            value[key] = int(item.timestamp() * 1000)
        else:
            _epoch_millis(item)


def fix_service_casing() -> None:
    """Service integrations take and return the API's PascalCase names on AWS, whatever casing
    the SDK uses. moto 5.2.5 keeps LocalStack's converters but never calls them (upstream
    getmoto/moto#10076), so ``aws-sdk:sfn:describeExecution`` with ``ExecutionArn`` fails with
    States.Runtime ``'ExecutionArn'`` (boto3 wants ``executionArn``), and ``ecs:runTask`` with
    ``'Cluster'``. This restores the conversion both ways using botocore's service model.
    """
    import botocore.session
    from botocore import xform_name
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service as sts

    session = botocore.session.get_session()
    operations: dict[tuple[str, str], object] = {}
    lock = threading.Lock()

    def operation(service: str, action: str):
        key = (service, action)
        if key not in operations:
            with lock:  # load each service model once, even when 50 executions ask at once
                if key not in operations:
                    model = session.get_service_model(service)
                    by_snake = {xform_name(op): op for op in model.operation_names}
                    operations[key] = model.operation_model(by_snake[xform_name(action)])
        return operations[key]

    def _normalise_parameters(self, parameters, boto_service_name=None, service_action_name=None):
        op = operation(self._get_boto_service_name(boto_service_name), self._get_boto_service_action(service_action_name))
        if op.input_shape is not None:
            self._to_boto_request(parameters, op.input_shape)

    def _normalise_response(self, response, boto_service_name=None, service_action_name=None):
        op = operation(self._get_boto_service_name(boto_service_name), self._get_boto_service_action(service_action_name))
        if op.output_shape is not None:
            self._from_boto_response(response, op.output_shape)
        _epoch_millis(response)

    sts.StateTaskService._normalise_parameters = _normalise_parameters
    sts.StateTaskService._normalise_response = _normalise_response


def fix_sync_task_exit_code() -> None:
    """On AWS, ``ecs:runTask.sync`` fails with States.TaskFailed when a container exits non-zero
    (or never ran), the task's JSON being the Cause. moto 5.2.5 returns the stopped task as a
    success whatever its exit code."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent, FailureEventException)
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_ecs as ecs
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    original = ecs.StateTaskServiceEcs._build_sync_resolver

    def _build_sync_resolver(self, env, resource_runtime_part, normalised_parameters, state_credentials):
        resolver = original(self, env, resource_runtime_part, normalised_parameters, state_credentials)

        def checked():
            task = resolver()
            if task is None:
                return None
            codes = [c.get("ExitCode") for c in task.get("Containers", [])]
            if not codes or any(code != 0 for code in codes):
                typ = StatesErrorNameType.StatesTaskFailed
                raise FailureEventException(FailureEvent(
                    env=env, error_name=StatesErrorName(typ=typ), event_type=HistoryEventType.TaskFailed,
                    event_details=EventDetails(taskFailedEventDetails=TaskFailedEventDetails(
                        error=typ.to_name(), cause=json.dumps(task, separators=(",", ":"), default=str),
                        resource=self._get_sfn_resource(), resourceType=self._get_sfn_resource_type()))))
            return task

        return checked

    ecs.StateTaskServiceEcs._build_sync_resolver = _build_sync_resolver


def fix_dynamodb_atomic_writes() -> None:
    """DynamoDB conditional writes are atomic on AWS. In moto 5.2.5 concurrent requests evaluate
    a condition and write without a lock: 50 threads racing one conditional update had several
    winners (docs/local-engine.md, the fixes table). One process-wide lock around the write paths -- and
    the reads: transact_write_items deep-copies every table for its rollback, and a read running
    meanwhile ("dictionary changed size during iteration", a 500 from the server in 1 of 100
    concurrent runs, bench/dev_e2e.py) broke it."""
    from moto.dynamodb.models import DynamoDBBackend

    _serialise(DynamoDBBackend, ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item",
                                 "get_item", "query", "scan", "batch_get_item", "transact_get_items",
                                 "create_table", "update_table", "delete_table", "update_time_to_live"),
               lock=DYNAMODB_LOCK)  # shared with dynamodb_transaction_journal's undo


#: Called with (execution_arn, status, state_machine_arn) when an execution ends, as AWS's
#: "Step Functions Execution Status Change" EventBridge events would. moto 5.2.5 emits none.
STATUS_LISTENERS: list = []


def fix_execution_status_events() -> None:
    from moto.stepfunctions.parser.backend import execution as ex
    from moto.stepfunctions.parser.utils import TMP_THREADS

    original = ex.BaseExecutionWorkerCommunication.terminated

    def terminated(self):
        original(self)
        execution = self.execution
        # Bounded memory for a long-running local server: moto never prunes finished threads.
        TMP_THREADS[:] = [t for t in TMP_THREADS if t.is_alive()]
        status = execution.exec_status.value if execution.exec_status else None
        for listener in list(STATUS_LISTENERS):
            try:
                listener(execution.exec_arn, status, execution.state_machine_arn)
            except Exception:  # a listener must never break the interpreter
                import logging

                logging.getLogger(__name__).exception("execution status listener failed")

    ex.BaseExecutionWorkerCommunication.terminated = terminated


def fix_fast_sync_poll(seconds: float = 0.05) -> None:
    """moto polls a .sync task every 0.5 s; locally the task is a process we watch, so poll
    faster (2 ECS steps: ~1.2 s -> ~0.3 s per run, docs/local-engine.md)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    state_task_service_callback._DELAY_SECONDS_SYNC_CONDITION_CHECK = seconds


def _ensure_request_id(parsed: dict | None = None, **_: object) -> None:
    """moto's interpreter formats a service error with ResponseMetadata.RequestId; an error
    answer without one (seen once in 100 concurrent runs over the HTTP server) made it crash with
    States.Runtime KeyError('RequestId') instead of reporting the service's error, which the
    state's Retry would have handled."""
    if isinstance(parsed, dict):
        parsed.setdefault("ResponseMetadata", {}).setdefault("RequestId", "local-no-request-id")


#: The access key the server-mode front (jobplane.platform.local.front) accepts; the
#: interpreter's own calls to localhost:$MOTO_PORT must be signed with it too.
SERVER_CREDENTIALS: Any = None  # the front's Credentials of this start (server mode)


def fix_client_reuse() -> None:
    """moto's interpreter builds a new boto3 client (from the shared default session, which is
    not thread-safe) for every Task state it runs. With 50 concurrent executions that dominated
    the run time (~0.5 s per skip path). Clients are thread-safe once built: build one per
    service, region, endpoint and key, under a lock, and reuse it.

    In server mode the client signs with this start's key (``SERVER_CREDENTIALS``) instead of
    moto's fixed ``ak``, since the front refuses every other key."""
    import boto3
    from botocore.config import Config
    from moto.settings import moto_server_port
    from moto.stepfunctions.parser.asl.utils import boto_client
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSeconds
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_aws_sdk, state_task_service_dynamodb, state_task_service_ecs, state_task_service_sfn,
        state_task_service_sns)

    cache: dict[tuple, object] = {}
    lock = threading.Lock()

    def boto_client_for(region, service, state_credentials=None):
        from moto.core.models import botocore_stubber

        # The endpoint is part of the key: a server-mode client calls localhost:$MOTO_PORT, and
        # a later LocalAWS in this process (a restarted dev platform) serves on another port.
        intercepted = botocore_stubber.enabled
        credentials = SERVER_CREDENTIALS
        key = (region, service, intercepted, moto_server_port(), credentials)
        with lock:
            if key not in cache:
                kwargs = {} if intercepted else {"endpoint_url": f"http://localhost:{moto_server_port()}"}
                client = boto3.client(
                    service, region_name=region,
                    aws_access_key_id=credentials.access_key_id if credentials else "ak",
                    aws_secret_access_key=credentials.secret_access_key if credentials else "sk",
                    config=Config(parameter_validation=False, retries={"max_attempts": 0, "total_max_attempts": 1},
                                  connect_timeout=TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS,
                                  read_timeout=TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS),
                    **kwargs)
                client.meta.events.register("after-call", _ensure_request_id)
                cache[key] = client
            return cache[key]

    boto_client.boto_client_for = boto_client_for
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    for module in (state_task_service_aws_sdk, state_task_service_dynamodb, state_task_service_ecs,
                   state_task_service_sfn, state_task_service_sns, lambda_eval_utils):
        if hasattr(module, "boto_client_for"):
            module.boto_client_for = boto_client_for


def fix_global_cors() -> None:
    """moto's server adds CORS headers allowing every origin to every answer (flask-cors), so a
    web page could read what it sends to the local AWS. Off, with moto's own setting
    (``MOTO_DISABLE_GLOBAL_CORS``), which moto reads once at import; the front refuses browser
    requests anyway (front.py)."""
    from moto import settings
    from moto.moto_server import werkzeug_app

    settings.DISABLE_GLOBAL_CORS = True  # (not the environment variable: children would inherit it)
    werkzeug_app.DISABLE_GLOBAL_CORS = True


def fix_server_dispatch() -> None:
    """moto's server re-derives for every request what never changes while it runs: the backend
    of a host, by listing moto's package directory (``os.listdir`` and an ``isdir`` per entry,
    ~170 of them) and matching the host against every backend's URL patterns; and the action
    methods of the response class, by ``inspect.getmembers`` over all its attributes. A CPU
    profile of `jobplane dev` starting with 300 jobs put over a third of the local AWS's time
    there (~900 requests). Both answers are kept: per host, and per class (our fixes replace
    methods before the server starts and never add names)."""
    import functools

    from moto.core import responses
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = DomainDispatcherApplication.get_backend_for_host
    known: JsonObject = {}

    def get_backend_for_host(self, host):
        if host is None:
            return None
        if host not in known:
            known[host] = original(self, host)
        return known[host]

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host
    names = functools.lru_cache(maxsize=None)(responses.method_names_from_class)
    responses.method_names_from_class = lambda clazz: list(names(clazz))  # a fresh list, as moto's is


def fix_stop_cause() -> None:
    """moto's StopExecution drops the error and cause it is given (it stops with ""), so
    DescribeExecution of a stopped execution cannot say who stopped it and why, as AWS does.
    Pass them through."""
    from moto.stepfunctions import models, responses

    def stop_execution(self, execution_arn: str, error: str | None = None, cause: str | None = None):
        execution = next((x for x in self.executions if x.execution_arn == execution_arn), None)
        if not execution:
            raise models.ExecutionDoesNotExist("Execution Does Not Exist: '" + execution_arn + "'")
        execution.stop(stop_date=models.utcnow(), error=error or "", cause=cause or "")
        return execution

    def backend_stop_execution(self, execution_arn: str, error: str | None = None, cause: str | None = None):
        self._validate_execution_arn(execution_arn)
        return self._get_state_machine_for_execution(execution_arn).stop_execution(execution_arn, error, cause)

    def response_stop_execution(self):
        execution = self.stepfunction_backend.stop_execution(
            self._get_param("executionArn"), self._get_param("error"), self._get_param("cause"))
        return responses.ActionResult({"stopDate": execution.stop_date})

    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
    from moto.stepfunctions.parser.backend import execution as parser_execution

    original_reflect = parser_execution.BaseExecutionWorkerCommunication._reflect_execution_status

    def reflect(self):
        original_reflect(self)
        state = self.execution.exec_worker.env.program_state()
        if isinstance(state, ProgramStopped):
            self.execution.error = state.error or None
            self.execution.cause = state.cause or None

    parser_execution.BaseExecutionWorkerCommunication._reflect_execution_status = reflect
    models.StateMachine.stop_execution = stop_execution
    models.StepFunctionBackend.stop_execution = backend_stop_execution
    responses.StepFunctionResponse.stop_execution = response_stop_execution


def fix_stop_while_starting() -> None:
    """StopExecution right after StartExecution fails in moto 5.2.5 with a 500
    ("'NoneType' object has no attribute 'set_stop'"): the execution's worker thread creates its
    environment only after parsing the definition, and a stop in between finds none. A stop a
    moment later is lost: the new environment's program state stays None until the program sets
    its first state, and ``set_stop`` acts only on a running program, so the execution runs on to
    its end (seen once as a stopped test run that SUCCEEDED). On AWS a just-started execution can
    be stopped. Wait (bounded) for the worker's program to run (or to have ended)."""
    import time

    from moto.stepfunctions.parser.backend import execution_worker

    original = execution_worker.ExecutionWorker.stop

    def started(worker) -> bool:
        env = getattr(worker, "env", None)
        return env is not None and env.program_state() is not None

    def stop(self, stop_date, error, cause):
        deadline = time.monotonic() + 60
        while not started(self) and time.monotonic() < deadline:
            time.sleep(0.01)
        return original(self, stop_date=stop_date, error=error, cause=cause)

    execution_worker.ExecutionWorker.stop = stop


def fix_stop_is_final() -> None:
    """A StopExecution that lands while the worker is inside a state closes the execution's
    frames under that state, which then raises ("IndexError(pop from empty list)", "'dict' object
    has no attribute 'region'", a half-bound DynamoDB request: seen stopping a run within
    milliseconds of its start), and moto 5.2.5 lets that error replace the stop: the execution
    ends FAILED with the garbage as its cause, and the reconciler alerts on a run an operator
    stopped. On AWS a stopped execution is ABORTED with the stop's error and cause. A stop stays
    final here: an error or timeout reported after it is ignored."""
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

    def keeping_a_stop(original):
        def method(self, *args, **kwargs):
            with self._state_mutex:  # an RLock: the original takes it again
                if isinstance(self._program_state, ProgramStopped):
                    return None
                return original(self, *args, **kwargs)
        return method

    Environment.set_error = keeping_a_stop(Environment.set_error)
    Environment.set_timed_out = keeping_a_stop(Environment.set_timed_out)


def fix_no_wait_after_stop() -> None:
    """A stop (or the state's timeout) that ends a Task's frame between the ECS RunTask and the
    start of its ``.sync`` wait left a thread raising ``TypeError: '>' not supported between
    instances of 'dict' and 'int'`` (seen three times in `make test`). moto's components skip their
    evaluation once the frame is no longer running ("Pruning") but the caller pops the stack all
    the same, so the wait-for-token thread got the task's output as its timeout. The frame is
    over by then and the run already stopped, so nothing was lost, but the traceback reached
    stderr of `jobplane dev` and pytest. A frame that is not running (program states only move
    away from running, so this holds for every pruned pop) has nothing to wait for."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback as cb

    original = cb.StateTaskServiceCallback._eval_wait_for_task_token

    def _eval_wait_for_task_token(self, env, timeout_seconds, callback_endpoint, heartbeat_endpoint):
        if not env.is_running():
            return None
        return original(self, env, timeout_seconds, callback_endpoint, heartbeat_endpoint)

    cb.StateTaskServiceCallback._eval_wait_for_task_token = _eval_wait_for_task_token


def fix_jsonpath_variables() -> None:
    """A JSONPath state that reads a workflow variable (``"x.$": "$name"``, or ``$name`` as an
    intrinsic function's argument) fails in moto 5.2.5 with ``TypeError('NoneType' object is not
    callable)``: it samples every variable through its JSONata evaluator, which needs a library it
    does not ship. AWS reads variables in JSONPath states ("To reference a variable, prefix the
    name with a dollar sign", docs.aws.amazon.com/step-functions/latest/dg/workflow-variables.html);
    our state machines record a step's timeout through one state per job that reads the step from a
    variable. Read the variable from the store, then the rest of the path from its value."""
    import copy
    import re

    from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguageMode
    from moto.stepfunctions.parser.asl.component.common.string.string_expression import StringVariableSample
    from moto.stepfunctions.parser.asl.utils.json_path import extract_json

    original = StringVariableSample._eval_body
    reference = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)(.*)$", re.S)

    def _eval_body(self, env):
        match = reference.match(self.expression) if self.query_language_mode == QueryLanguageMode.JSONPath else None
        if match is None:
            return original(self, env)
        name, rest = match.groups()
        value = env.variable_store.get(name)
        if rest:
            value = extract_json("$" + rest, value)
        env.stack.append(copy.deepcopy(value))

    StringVariableSample._eval_body = _eval_body


def fix_execution_name_default() -> None:
    """StartExecution without a name: AWS names the execution with a UUID ("If you don't
    provide a name for the execution, Step Functions automatically generates a universally
    unique identifier (UUID) as the execution name", API reference, StartExecution). moto
    5.2.5's interpreter backend keeps ``None``: the execution is called "None", our claim adds
    null to the job's running set and the local platform breaks (issue 17)."""
    import uuid

    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend.start_execution

    def start_execution(self, state_machine_arn, name=None, execution_input=None, trace_header=None):
        return original(self, state_machine_arn, name or str(uuid.uuid4()), execution_input, trace_header)

    StepFunctionsParserBackend.start_execution = start_execution


# How an execution gets its parsed program: parse_once caches it, validate_on_first_run turns a
# definition that does not parse into a run that fails. One function whichever of the two is on,
# in whatever order they were applied.
_PROGRAMS: dict[str, object] = {}  # definition -> parsed program (insertion order: oldest first)
_PROGRAMS_LOCK = threading.Lock()
#: A parsed program is large (month-end-close's: ~16 MB of Python objects, tracemalloc), so only
#: the most recently run definitions stay parsed; the rest re-parse on their next run.
_PROGRAMS_MAX = 256
_cache_programs = False
_fail_unparsable = False
#: The Error of an execution whose definition did not parse (validate_on_first_run).
INVALID_DEFINITION = "Jobplane.InvalidDefinition"


def _parse(definition: str) -> object:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    try:
        return AmazonStateLanguageParser.parse(definition)[0]
    except Exception as e:
        if not _fail_unparsable:
            raise
        cause = f"the definition does not parse: {type(e).__name__}: {e}"[:2000]
        failing = {"StartAt": "Invalid definition",
                   "States": {"Invalid definition": {"Type": "Fail", "Error": INVALID_DEFINITION, "Cause": cause}}}
        return AmazonStateLanguageParser.parse(json.dumps(failing))[0]


def _program_for(definition: str) -> object:
    if not _cache_programs:
        return _parse(definition)
    with _PROGRAMS_LOCK:  # parse each definition once, even when many executions start together
        program = _PROGRAMS.pop(definition, None)
        if program is None:
            program = _parse(definition)
        _PROGRAMS[definition] = program  # now the newest
        while len(_PROGRAMS) > _PROGRAMS_MAX:
            del _PROGRAMS[next(iter(_PROGRAMS))]
        return program


def _install_program_source() -> None:
    from moto.stepfunctions.parser.backend import execution_worker

    def _get_evaluation_entrypoint(self):
        return _program_for(self._evaluation_details.state_machine_details.definition)

    execution_worker.ExecutionWorker._get_evaluation_entrypoint = _get_evaluation_entrypoint


def fix_parse_once() -> None:
    """moto re-parses the ASL (a Python ANTLR parser) for every execution: with our definitions
    that was ~60% of the engine's time under load (py-spy, 50 concurrent starts). The parsed
    program keeps per-execution values in the execution's environment (components only hold a
    heap key), so one parse per definition can serve every execution."""
    global _cache_programs
    _cache_programs = True
    _install_program_source()


def fix_validate_on_first_run() -> None:
    """moto parses a definition with its ANTLR parser on CreateStateMachine and
    UpdateStateMachine (0.4-1.4 s for each of the example jobs), so `jobplane dev` with 1,000
    jobs needed ~16 minutes to be ready (issue 13). The definitions it deploys are the
    compiler's output, whose every shape the tests run on this parser and tfcheck lints, so the
    create checks what a mistake would break at once (a JSON object whose StartAt names one of
    its States, each with a known Type) and the full parse happens when the state machine first
    runs (cached by parse_once). A definition that does not parse then fails that execution
    with ``Jobplane.InvalidDefinition`` and the parser's message, instead of leaving it RUNNING
    with no interpreter (what moto's worker thread does when the parse raises)."""
    global _fail_unparsable
    from moto.stepfunctions.parser.api import InvalidDefinition
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    def _validate_definition(definition: str) -> None:
        problem = _shape_problem(definition)
        if problem:
            raise InvalidDefinition(message=f"Invalid State Machine Definition: {problem}")

    StepFunctionsParserBackend._validate_definition = staticmethod(_validate_definition)
    _fail_unparsable = True
    _install_program_source()


_STATE_TYPES = frozenset({"Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map"})


def _shape_problem(definition: str) -> str | None:
    """What makes ``definition`` no state machine at all, or None (the cheap part of validation)."""
    try:
        doc = json.loads(definition)
    except ValueError as e:
        return f"not JSON: {e}"
    if not isinstance(doc, dict) or not isinstance(doc.get("States"), dict) or not doc["States"]:
        return "no States object"
    if doc.get("StartAt") not in doc["States"]:
        return f"StartAt {str(doc.get('StartAt'))[:100]!r} names no state"
    for name, state in doc["States"].items():
        if not isinstance(state, dict) or state.get("Type") not in _STATE_TYPES:
            return f"state {name[:100]!r} has no known Type"
    return None


def fix_sync_retry() -> None:
    """A retried ``.sync`` task times out at once in moto 5.2.5 (States.Timeout after ~5 ms):
    every attempt reuses the callback endpoint of the first, which was interrupted when that
    attempt ended. Give each attempt a fresh task token and endpoint, as a new attempt has."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback as cb
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import ResourceCondition

    original = cb.StateTaskServiceCallback._eval_integration_pattern

    def _eval_integration_pattern(self, env, resource_runtime_part, normalised_parameters, state_credentials):
        if (self.resource.condition in (ResourceCondition.Sync, ResourceCondition.Sync2)
                and ResourceCondition.WaitForTaskToken in self._supported_integration_patterns):
            token = env.states.context_object.update_task_token()
            env.callback_pool_manager.add(token)
        return original(self, env, resource_runtime_part, normalised_parameters, state_credentials)

    cb.StateTaskServiceCallback._eval_integration_pattern = _eval_integration_pattern


#: Held by every ECS task path of moto's backend and by the local ECS agent while it changes a
#: task, so a task is only ever seen whole (fix_ecs_thread_safe).
ECS_LOCK = threading.RLock()

#: Who runs the tasks RunTask creates (fix_ecs_local_tasks): the local ECS agents, newest last.
#: Each has ``start(task)`` and ``stop(task_arn_or_id) -> task or None``.
ECS_TASK_RUNNERS: list[Any] = []

_ECS_FIXES: set[str] = set()  # which of the two ECS fixes are applied
_ECS_ORIGINALS: JsonObject = {}  # moto's own methods, captured before either fix replaced them


def finish_task(task: Any, exit_code: int | None, reason: str, stop_code: str) -> None:
    """Record a task's end as ECS does, all at once: under the lock DescribeTasks copies tasks
    in, so no answer shows a stopped task with a running container."""
    now = datetime.datetime.now(datetime.timezone.utc)
    with ECS_LOCK:
        for c in task.containers:
            c.exitCode = exit_code
            c.last_status = "STOPPED"
            c.reason = None if stop_code == "EssentialContainerExited" else reason
        task.stopped_reason = reason
        task.stop_code = stop_code
        task.stopped_at = now
        task.desired_status = "STOPPED"
        task.last_status = "STOPPED"


def _build_ecs_methods() -> None:
    """(Re)build moto's ECS task methods from moto's own, with whichever ECS fixes are applied,
    so neither fix wraps the other's wrapper and the order they are applied in does not matter."""
    import contextlib
    import copy

    from moto.ecs.models import EC2ContainerServiceBackend as Backend

    for name in ("run_task", "start_task", "stop_task", "list_tasks", "describe_tasks"):
        _ECS_ORIGINALS.setdefault(name, getattr(Backend, name))
    original = dict(_ECS_ORIGINALS)
    locked = "ecs_thread_safe" in _ECS_FIXES
    local = "ecs_local_tasks" in _ECS_FIXES

    def guard() -> Any:
        return ECS_LOCK if locked else contextlib.nullcontext()

    def run_task(self, *args, **kwargs):
        with guard():
            tasks = original["run_task"](self, *args, **kwargs)
        if local:  # handed over outside the lock: starting a process must not hold up DescribeTasks
            runner = ECS_TASK_RUNNERS[-1] if ECS_TASK_RUNNERS else None
            for task in tasks:
                if runner is not None:
                    runner.start(task)
                else:
                    finish_task(task, None, "no local ECS agent is running", "TaskFailedToStart")
        return tasks

    def stop_task(self, cluster_str, task_str, reason):
        if local and ECS_TASK_RUNNERS:
            stopped = ECS_TASK_RUNNERS[-1].stop_task(task_str)
            if stopped is not None:
                return stopped
        with guard():
            return original["stop_task"](self, cluster_str, task_str, reason)

    def start_task(self, *args, **kwargs):
        with guard():
            return original["start_task"](self, *args, **kwargs)

    def list_tasks(self, *args, **kwargs):
        with guard():
            return original["list_tasks"](self, *args, **kwargs)

    def describe_tasks(self, cluster_str, tasks):
        if not locked:
            return original["describe_tasks"](self, cluster_str, tasks)
        with ECS_LOCK:
            found = original["describe_tasks"](self, cluster_str, tasks)
            snapshots = []
            for task in found:
                snapshot = copy.copy(task)
                snapshot.containers = [copy.copy(c) for c in task.containers]
                snapshots.append(snapshot)
            return snapshots

    for fn in (run_task, stop_task, start_task, list_tasks, describe_tasks):
        setattr(Backend, fn.__name__, fn)


def fix_ecs_thread_safe() -> None:
    """moto's ECS backend keeps tasks in plain dicts that RunTask writes while DescribeTasks
    iterates them: with ~100 concurrent executions a .sync poll failed with "dictionary changed
    size during iteration" (States.Runtime). Serialise the task paths with one lock.

    DescribeTasks also returned the live task objects, which moto serialises *after* the backend
    call, field by field (containers before lastStatus). When the local agent recorded a task's
    end in between, the answer was torn: task STOPPED, container still PENDING with no exit code,
    and the step failed although the runner had exited 0 (1 in ~100 runs under load, issue 13).
    DescribeTasks now answers with copies taken under the lock the agent holds while it writes
    (``ECS_LOCK``), so every answer is a task as it was at one instant."""
    _ECS_FIXES.add("ecs_thread_safe")
    _build_ecs_methods()


def fix_ecs_tasks_untracked() -> None:
    """moto keeps every model object it creates in its class's ``instances_tracked`` list, for
    its ``/moto-api/`` dashboard, which ``jobplane dev`` never serves (as for DynamoDB items,
    ``dynamodb_items_untracked``). For ECS tasks that list is a leak: DescribeTasks answers with
    a copy of each task and its containers taken under ``ECS_LOCK`` (``ecs_thread_safe``), and
    the .sync wait of every running step asks again and again, so each poll left a task and its
    containers behind for the life of the process: 149 of 197 tasks after 45 runs of no-op
    steps, and a step that runs for an hour polls thousands of times. Tasks and containers are
    not tracked: a copy goes with the answer it was made for, a task with the backend."""
    from moto.ecs import models

    untrack(models.Task, models.Container)


def fix_ecs_local_tasks() -> None:
    """moto's ECS backend runs nothing: a task moves PENDING -> RUNNING -> STOPPED on a timer and
    its container reports exit code 0 from the start. Locally each task is the runner as a
    subprocess (:mod:`jobplane.platform.local.ecs_agent`): a task stays RUNNING until the agent
    records its end (``finish_task``), a container has no exit code until it exits, RunTask hands
    each task to the newest agent in ``ECS_TASK_RUNNERS``, and StopTask asks it to stop the
    task's process. With no agent, a task fails to start instead of pretending to run."""
    from moto.ecs import models
    from moto.moto_api import state_manager

    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 2**62})
    original_container_init = models.Container.__init__

    def container_init(self, task_def):
        original_container_init(self, task_def)
        self.exitCode = None  # not exited yet (moto says 0 from the start)

    models.Container.__init__ = container_init
    _ECS_FIXES.add("ecs_local_tasks")
    _build_ecs_methods()


#: Who answers Invoke for the runner functions (fix_lambda_local_functions): the local Lambda
#: agents, newest last. Each has ``handles(fn) -> bool`` and ``invoke(fn, body, response_headers) -> bytes``.
LAMBDA_RUNNERS: list[Any] = []


def fix_lambda_local_functions() -> None:
    """moto's Lambda runs a function's code in Docker: without it an Invoke fails inside moto (an
    image function: ``AttributeError: 'LambdaFunction' object has no attribute 'code_digest'``,
    States.TaskFailed for the Task). Locally a Lambda step's function is the runner's handler
    (:mod:`jobplane.platform.local.lambda_agent`): Invoke hands a runner function to the newest
    agent in ``LAMBDA_RUNNERS`` and answers with what it says (the payload, and the
    function-error header a raised error sets, which the Step Functions interpreter reads). Any
    other function goes to moto as before."""
    from moto.awslambda.models import LambdaBackend

    original = LambdaBackend.invoke

    def invoke(self, function_name, qualifier, body, headers, response_headers):
        agent = LAMBDA_RUNNERS[-1] if LAMBDA_RUNNERS else None
        if agent is not None:
            fn = self.get_function(function_name, qualifier)
            if agent.handles(fn):
                payload = agent.invoke(fn, body, response_headers)
                response_headers["Content-Length"] = str(len(payload))
                return payload
        return original(self, function_name, qualifier, body, headers, response_headers)

    LambdaBackend.invoke = invoke


FIXES = {
    "context_start_time": fix_context_start_time,
    "service_casing": fix_service_casing,
    "sync_task_exit_code": fix_sync_task_exit_code,
    "dynamodb_atomic_writes": fix_dynamodb_atomic_writes,
    "execution_status_events": fix_execution_status_events,
    "fast_sync_poll": fix_fast_sync_poll,
    "client_reuse": fix_client_reuse,
    "stop_cause": fix_stop_cause,
    "parse_once": fix_parse_once,
    "validate_on_first_run": fix_validate_on_first_run,
    "sync_retry": fix_sync_retry,
    "ecs_thread_safe": fix_ecs_thread_safe,
    "ecs_local_tasks": fix_ecs_local_tasks,
    "global_cors": fix_global_cors,
    "server_dispatch": fix_server_dispatch,
    "stop_while_starting": fix_stop_while_starting,
    "stop_is_final": fix_stop_is_final,
    "no_wait_after_stop": fix_no_wait_after_stop,
    "jsonpath_variables": fix_jsonpath_variables,
    "execution_name_default": fix_execution_name_default,
    "dynamodb_index_queries": fix_dynamodb_index_queries,
    "dynamodb_fast_answers": fix_dynamodb_fast_answers,
    "dynamodb_fast_projection": fix_dynamodb_fast_projection,
    "dynamodb_sizes_once": fix_dynamodb_sizes_once,
    "dynamodb_items_untracked": fix_dynamodb_items_untracked,
    "dynamodb_transaction_journal": fix_dynamodb_transaction_journal,
    "ecs_tasks_untracked": fix_ecs_tasks_untracked,
    "lambda_local_functions": fix_lambda_local_functions,
}


def apply(*names: str) -> None:
    """Apply the named fixes (all by default), once per process."""
    check_version()
    with _lock:
        for name in names or tuple(FIXES):
            if name not in _applied:
                FIXES[name]()
                _applied.add(name)
