"""Corrections to moto where it differs from AWS in ways our compiled state machines, the local
agents or `jobplane dev` at scale depend on: the one typed way in to them.

Each patch reaches into moto internals, so it is pinned to ``MOTO_VERSION`` and lives in its own
module of this package (the untyped part, excluded from mypy by name in pyproject.toml), with a
stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py, which fails for a patch
without one). Upgrading moto is therefore a bounded task: bump the pin, run the probes, and re-read
the module of each patch whose probe no longer shows the stock behaviour (docs/local-engine.md).

Nothing outside this package imports its modules: this facade is how the engine, the local agents
and the tests apply the patches, hand moto the local agents, and reach moto's backends directly
(``backends``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from jobplane.platform.local.moto_patches import (aws_limits, botocore_data_once, client_reuse, context_start_time, dynamodb_fast_answers,
                                                  dynamodb_fast_projection, dynamodb_items_untracked, dynamodb_store,
                                                  ec2_no_default_images, ecs_task_errors, ecs_tasks, ecs_tasks_untracked,
                                                  execution_name_default, fault_injection,
                                                  execution_status_events, fast_sync_poll, global_cors,
                                                  jsonata_evaluator, jsonpath_variables, lambda_local_functions, map_jsonl_reader,
                                                  map_result_writer,
                                                  map_tolerated_failures,
                                                  no_wait_after_stop,
                                                  programs, server_dispatch, service_casing, stop_cause,
                                                  stepfunctions_fast_history, stop_is_final, stop_while_starting, sync_retry,
                                                  sync_task_exit_code, time_scale)
from jobplane.platform.local.moto_patches import map_child_executions
from jobplane.platform.local.moto_patches import map_s3_errors
from jobplane.platform.local.moto_patches import sfn_versions
from jobplane.platform.local.moto_patches.backends import (ACCOUNT, LogStreams, Objects, Terraform,
                                                           check_state_machine_name, create_role, create_state_machine,
                                                           count_schedules, deploys_target, dynamodb_item,
                                                           event_rules, forget_ended_executions, put_schedule,
                                                           running_executions)
from jobplane.platform.local.moto_patches.ecs_tasks import ECS_TASK_RUNNERS, finish_task
from jobplane.platform.local.moto_patches.execution_status_events import STATUS_LISTENERS
from jobplane.platform.local.moto_patches.lambda_local_functions import LAMBDA_RUNNERS

# shared with the patches from a module of its own: a patch importing this facade made a cycle
from jobplane.platform.local.moto_patches.shared import MOTO_VERSION, FaultAnswer, FaultHook, check_version

if TYPE_CHECKING:
    from jobplane.platform.local.front import Credentials

__all__ = [
    "ACCOUNT", "ECS_TASK_RUNNERS", "FaultAnswer", "FaultHook", "set_fault_hook", "LAMBDA_RUNNERS", "MOTO_VERSION", "PATCHES", "Patch",
    "LogStreams", "Objects", "STATUS_LISTENERS", "Terraform", "apply", "apply_all", "check_state_machine_name",
    "check_version", "create_role", "create_state_machine",
    "count_schedules", "deploys_target", "dynamodb_item", "event_rules", "finish_task", "forget_ended_executions", "put_schedule", "running_executions",
    "use_server_credentials", "set_time_scale", "time_scale_of", "scaled_waits",
]

@dataclass(frozen=True)
class Patch:
    """One correction to moto: what AWS does, what the pinned moto does instead, and the function
    that installs the correction (its module is the one to re-read when its probe changes)."""

    name: str
    aws: str  # what AWS does (or, for the local AWS's own costs, what it must do)
    moto: str  # what moto MOTO_VERSION does instead
    install: Callable[[], None]

    @property
    def module(self) -> str:
        return self.install.__module__


#: Every patch, in the order ``apply`` installs them (later ones may wrap what earlier ones set).
PATCHES: tuple[Patch, ...] = (
    # first: before the patches below import moto.ec2, which reads botocore's data at its import
    Patch("botocore_data_once", "the local AWS parses each of botocore's data files once per process (its own cost)",
          "parses them again in each boto3 session it makes (three at the import of moto.ec2) and lists every service "
          "for each model its server reads (~0.6 s of each start)",
          botocore_data_once.fix_botocore_data_once),
    Patch("ec2_no_default_images", "a region's EC2 costs nothing until used (the local AWS launches no instance)",
          "makes 1,301 public AMIs, each with a snapshot and a volume, at a region's first EC2 call (~0.2 s of each start)",
          ec2_no_default_images.fix_ec2_no_default_images),
    Patch("context_start_time", "$$.Execution.StartTime is an ISO 8601 string",
          "a datetime: a state that writes it fails 'not JSON serializable'",
          context_start_time.fix_context_start_time),
    Patch("service_casing", "service integrations take and return the API's PascalCase names",
          "passes them to boto3 unconverted (getmoto/moto#10076): describeExecution fails on 'ExecutionArn'",
          service_casing.fix_service_casing),
    Patch("sync_task_exit_code", "ecs:runTask.sync fails with States.TaskFailed when a container exits non-zero",
          "returns the stopped task as a success whatever its exit code",
          sync_task_exit_code.fix_sync_task_exit_code),
    Patch("dynamodb_atomic_writes", "conditional writes are atomic",
          "evaluates a condition and writes without a lock: 50 racing claims had several winners",
          dynamodb_store.fix_dynamodb_atomic_writes),
    Patch("execution_status_events", "an ended execution emits an EventBridge status-change event",
          "emits none (and keeps every finished execution's thread)",
          execution_status_events.fix_execution_status_events),
    Patch("fast_sync_poll", "a .sync task ends when its ECS task does",
          "polls every 0.5 s (locally the task is a process we watch: 0.05 s)",
          fast_sync_poll.fix_fast_sync_poll),
    Patch("client_reuse", "the interpreter's service calls cost only the call, signed for the account",
          "builds a boto3 client per Task state from a shared session, signed with a fixed key",
          client_reuse.fix_client_reuse),
    Patch("stop_cause", "StopExecution keeps the error and cause it is given",
          "drops them (stops with '')",
          stop_cause.fix_stop_cause),
    Patch("parse_once", "starting an execution does not re-read its definition",
          "re-parses the ASL with its ANTLR parser for every execution (~60% of the engine's time)",
          programs.fix_parse_once),
    Patch("validate_on_first_run", "CreateStateMachine answers at once; an execution always ends",
          "parses at create (0.4-1.4 s a job); a run whose parse fails stays RUNNING",
          programs.fix_validate_on_first_run),
    Patch("sync_retry", "each retry of a .sync task is a new attempt with its own task token",
          "reuses the first attempt's interrupted callback: the retry times out at once",
          sync_retry.fix_sync_retry),
    Patch("ecs_thread_safe", "ECS answers concurrent RunTask and DescribeTasks with whole tasks",
          "unlocked dicts ('dictionary changed size') and live tasks serialised after the call (torn)",
          ecs_tasks.fix_ecs_thread_safe),
    Patch("ecs_local_tasks", "a task runs its container and stops with its exit code",
          "runs nothing: a timer stops the task, its container says exit code 0 from the start",
          ecs_tasks.fix_ecs_local_tasks),
    Patch("global_cors", "the local AWS answers jobplane, never another site's page",
          "its server lets every origin read every answer (flask-cors)",
          global_cors.fix_global_cors),
    Patch("server_dispatch", "routing a request costs nothing per request",
          "lists its package and walks a class's members for every request (a third of start-up)",
          server_dispatch.fix_server_dispatch),
    Patch("stop_while_starting", "a just-started execution can be stopped",
          "a 500 ('set_stop') before the worker's environment exists; a stop just after it is lost",
          stop_while_starting.fix_stop_while_starting),
    Patch("stop_is_final", "a stopped execution is ABORTED with the stop's error and cause",
          "an error the stop causes in the running state replaces it: FAILED with garbage as cause",
          stop_is_final.fix_stop_is_final),
    Patch("no_wait_after_stop", "a Task stopped before its .sync wait ends quietly",
          "the abandoned wait thread raises a TypeError to stderr",
          no_wait_after_stop.fix_no_wait_after_stop),
    Patch("jsonpath_variables", "a JSONPath state reads workflow variables ($name)",
          "samples them with a JSONata evaluator it does not ship: TypeError",
          jsonpath_variables.fix_jsonpath_variables),
    Patch("jsonata_evaluator", "a JSONata state evaluates its expressions; a failed one is States.QueryEvaluationError",
          "ships no evaluator: every JSONata state fails with a TypeError, as States.Runtime (uncatchable)",
          jsonata_evaluator.fix_jsonata_evaluator),
    Patch("execution_name_default", "StartExecution without a name names the execution with a UUID",
          "names it 'None'",
          execution_name_default.fix_execution_name_default),
    Patch("dynamodb_index_queries", "a query on an index reads the queried partition only",
          "sorts and compares every item of the table (~330 ms at 20,000 items)",
          dynamodb_store.fix_dynamodb_index_queries),
    Patch("dynamodb_fast_answers", "a read answers its stored items as they are",
          "serialises every value through botocore's shape model (~3 s for 1,000 items)",
          dynamodb_fast_answers.fix_dynamodb_fast_answers),
    Patch("stepfunctions_fast_history", "GetExecutionHistory costs what writing its events does",
          "walks botocore's shape model for each member of each event (~35 ms for a one-step run's 20)",
          stepfunctions_fast_history.fix_stepfunctions_fast_history),
    Patch("dynamodb_fast_projection", "a projection costs what the projected attributes do",
          "converts the whole item once per projected attribute",
          dynamodb_fast_projection.fix_dynamodb_fast_projection),
    Patch("dynamodb_sizes_once", "sizing an item for the 1 MB page limit costs once",
          "walks every attribute of each item a read meets, twice per read",
          dynamodb_store.fix_dynamodb_sizes_once),
    Patch("dynamodb_items_untracked", "an item read lives as long as its answer",
          "keeps every item it ever creates for its dashboard (a leak)",
          dynamodb_items_untracked.fix_dynamodb_items_untracked),
    Patch("dynamodb_transaction_journal", "TransactWriteItems is all-or-nothing at the cost of its own items",
          "deep-copies every named table once per action and keeps the copies (2.4 s at 25,000 items)",
          dynamodb_store.fix_dynamodb_transaction_journal),
    Patch("ecs_tasks_untracked", "a DescribeTasks answer lives as long as the answer",
          "keeps each copy of a task it answers with for its dashboard (a leak per .sync poll)",
          ecs_tasks_untracked.fix_ecs_tasks_untracked),
    Patch("lambda_local_functions", "Invoke runs the function's code",
          "needs Docker; without it an image function fails ('code_digest')",
          lambda_local_functions.fix_lambda_local_functions),
    Patch("map_tolerated_failures", "a Distributed Map fails once its failed items exceed ToleratedFailureCount/Percentage",
          "ignores both: the Map run succeeds whatever its items did",
          map_tolerated_failures.fix_map_tolerated_failures),
    Patch("map_jsonl_reader", "a Distributed Map's ItemReader reads JSON Lines (InputType JSONL)",
          "knows CSV and JSON only: the definition does not parse",
          map_jsonl_reader.fix_map_jsonl_reader),
    Patch("map_child_executions", "each item of a Distributed Map runs in a child execution of its own ARN, $$.Execution "
          "and history, listed by ListExecutions(mapRunArn) and read by DescribeExecution and GetExecutionHistory",
          "runs the children in the parent's interpreter with the parent's $$.Execution, drops their events, "
          "ignores mapRunArn and knows no child ARN",
          map_child_executions.fix_map_child_executions),
    Patch("map_s3_errors", "a Distributed Map whose ItemReader cannot read S3 fails with States.ItemReaderFailed, "
          "whose ResultWriter cannot write with States.ResultWriterFailed (its Retry and Catch match them)",
          "lets the S3 client's error escape: States.Runtime, which no Retry or Catch takes",
          map_s3_errors.fix_map_s3_errors),
    Patch("map_result_writer", "a Distributed Map's ResultWriter exports its children's results to S3 (WriterConfig: "
          "Transformation, OutputType) and outputs a reference to the manifest",
          "refuses WriterConfig while parsing (the run fails); without it, writes a manifest of no result file",
          map_result_writer.fix_map_result_writer),
    Patch("map_result_limit", "a Map's collected result past 256 KiB fails it (States.DataLimitExceeded) unless a "
          "ResultWriter exports it, whatever its ResultPath",
          "checks only the state's output after ResultPath: a Map with ResultPath null returns any amount",
          map_result_writer.fix_map_result_limit),
    Patch("data_limit_terminal", "States.ALL catches every error but the terminal States.DataLimitExceeded",
          "States.ALL matches it too: a Map past its result limit was caught as the step's failure",
          map_result_writer.fix_data_limit_terminal),
    Patch("ecs_task_errors", "RunTask's failures fail an ecs:runTask Task as AmazonECS.Unknown, its errors as ECS.<Code>",
          "an IndexError on failures and no mapping of ECS errors: both States.Runtime, never retried",
          ecs_task_errors.fix_ecs_task_errors),
    Patch("aws_limits", "a call past a documented size or count limit fails with AWS's error (contract/limits.py)",
          "takes RunTask overrides, Lambda environments and payloads, SNS messages in bytes, schedules and rules of any size or number",
          aws_limits.fix_aws_limits),
    Patch("fault_injection", "any call may be throttled or refused as each API documents (a profile or a test scripts them)",
          "answers every call it implements with success",
          fault_injection.fix_fault_injection),
    Patch("time_scale", "a Retrier waits its interval, a Wait state its seconds (locally: divided by the engine's "
          "time scale when a test sets one, the same ASL deciding the same tries; 1, real time, by default)",
          "sleeps both in real time (a test of an infrastructure retry waited out 15 s, then 60 s)",
          time_scale.fix_time_scale),
    Patch("sfn_versions", "a published version can be started (its own definition), listed newest first and deleted "
          "(its running executions go on); a publish of an unchanged revision answers its version",
          "StartExecution on a version ARN fails (500); ListStateMachineVersions and DeleteStateMachineVersion "
          "are not implemented; every publish makes a new version",
          sfn_versions.fix_sfn_versions),
)

_BY_NAME = {patch.name: patch for patch in PATCHES}
_applied: set[str] = set()
_lock = threading.Lock()


def apply(*names: str) -> None:
    """Apply the named patches (all, in ``PATCHES`` order, when none are named), each once per process."""
    check_version()
    with _lock:
        for name in names or tuple(_BY_NAME):
            if name not in _applied:
                _BY_NAME[name].install()
                _applied.add(name)


def apply_all() -> None:
    """Apply every patch (what `jobplane dev` and the engine run with)."""
    apply()




def set_fault_hook(hook: FaultHook | None, done: Callable[[str, str], None] | None = None) -> None:
    """Let ``hook`` decide every call's answer first (None: moto answers all), and tell ``done``
    when moto has answered a call ``hook`` let through; process-wide, as moto's backends are
    (jobplane.platform.local.faults installs its injector here)."""
    fault_injection.DONE = done
    fault_injection.HOOK = hook


def use_server_credentials(credentials: Credentials | None) -> None:
    """Sign the interpreter's own calls to the local server with this start's key (server mode;
    the front refuses every other key), or with moto's fixed key again (None). See ``client_reuse``."""
    client_reuse.SERVER_CREDENTIALS = credentials


def set_time_scale(factor: float) -> None:
    """Divide every Retrier interval and Wait-state duration of the local engine by ``factor``
    (>= 1; 1: real time, the default), process-wide as moto's interpreter is; the patch
    ``time_scale`` says what is scaled and what is not (timeouts, Timestamp waits)."""
    time_scale.set_scale(factor)


def time_scale_of() -> float:
    """The time scale in force (1: real time)."""
    return time_scale.SCALE[0]


def scaled_waits() -> list[tuple[str, float, float]]:
    """The waits run under a scale above 1, oldest first: ("retry" or "wait", the seconds the
    ASL asked for, the seconds waited)."""
    return list(time_scale.ASKED)
