"""The local Lambda service for runner functions: each Invoke runs the runner's Lambda handler.

moto's Lambda runs a function's code in Docker, which ``jobplane dev`` does not need and this
kind of machine lacks (an Invoke of an image function fails inside moto). Locally a Lambda
step's ``lambda:invoke`` must run the real runner, so this agent answers moto's Invoke for the
runner functions (``<prefix>-<job>-runner``, contract/lambda_step.py ``function_name``) the way
the local ECS agent answers RunTask:

* the handler runs in a process of its own, as Lambda runs it: ``handler(event, context)``
  called by the handler module's stand-in for the runtime interface client
  (contract/lambda_step.py ``LOCAL_*``), with the function's configuration (its environment as
  created, Lambda's own variables, its timeout), so the payload checks, the runner as a child
  process, the exit classes and the answer are the ones Lambda runs;
* the step's process gets what an ECS step gets under ``jobplane dev`` (the OS basics and
  ``[dev] env``: ecs_agent.container_env), never the developer's own environment; the
  function's environment over it, as on Lambda;
* its output goes to CloudWatch Logs as Lambda sends it: the group ``/aws/lambda/<function>``,
  a stream ``YYYY/MM/DD/[$LATEST]<32 hex>``, between ``START RequestId: ...`` and ``END``/
  ``REPORT`` lines, also kept in the data directory's log cache (awslogs.py) like a task's;
* the answer is Lambda's: the handler's return value as the payload, or a function error
  (``X-Amz-Function-Error: Unhandled``) whose payload is ``{"errorMessage", "errorType",
  "requestId", "stackTrace"}``, which the Step Functions interpreter turns into the Task's
  ``Error`` (errorType) and ``Cause`` (that JSON), as AWS does.

Only steps of deployed state machines run (as the ECS agent: moto_patches.deploys_target). A
step's declared secrets are unset locally, as for ECS steps (docs/dev.md), unless ``[dev.env]``
gives them; their names reach the runner as on AWS (declared_secrets.py), so such a value is
redacted as the deployed step's is.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobplane.contract import progress
from jobplane.contract import lambda_step as ls
from jobplane.contract import runner as rc
from jobplane.contract.types import JsonObject, JsonValue
from jobplane.platform.local import moto_patches
from jobplane.platform.local.awslogs import Destination, LogCache, start_shipping
from jobplane.platform.local.declared_secrets import LAMBDA, with_names
from jobplane.platform.local.ecs_agent import SHIP_WAIT_SECONDS, container_env, kill_marked

if TYPE_CHECKING:
    from moto.awslambda.models import LambdaFunction

    from jobplane.platform.local.agents import Deployment

log = logging.getLogger(__name__)

#: Set in each invocation's step environment: how the agent finds the processes an invocation
#: started, to end them when the engine stops (ecs_agent.kill_marked).
ENV_INVOCATION_MARK = "JOBPLANE_LOCAL_INVOCATION"
#: How long past the function's timeout its process may still answer before it is killed.
KILL_MARGIN_SECONDS = 1.0


def lambda_tasks(node: JsonValue) -> list[JsonObject]:
    """Every Task state of a definition (Parallel branches and Map processors included) that
    invokes a Lambda function (contract/lambda_step.py INVOKE_RESOURCE)."""
    found: list[JsonObject] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("Type") == "Task" and item.get("Resource") == ls.INVOKE_RESOURCE:
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


@dataclass
class LocalLambdaAgent:
    log_dir: Path
    prefix: str
    extra_env: dict[str, str] = field(default_factory=dict)  # [dev] env, as the ECS agent's
    #: what Lambda gives a function from its execution role (its credentials): here the local
    #: endpoint and its key, with which the runner writes its steps' progress (contract/progress.py)
    role_env: dict[str, str] = field(default_factory=dict)
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: (job, executor) -> declared secrets' names (declared_secrets.py), as the ECS agent's
    declared_secrets: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.log_dir = Path(self.log_dir)
        self._lock = threading.Lock()

    def activate(self) -> LocalLambdaAgent:
        """From now on moto's Invoke hands runner functions to this agent (the moto patch lambda_local_functions)."""
        moto_patches.LAMBDA_RUNNERS.append(self)
        return self

    def deactivate(self) -> None:
        if self in moto_patches.LAMBDA_RUNNERS:
            moto_patches.LAMBDA_RUNNERS.remove(self)
        self.stop_all()

    def deploy(self, definition: str, deployment: Deployment) -> list[str]:
        """Create (or update) the runner functions a definition's Lambda steps invoke, as the
        compiled Terraform creates them: each deployed for the steps that invoke it (the digests
        of their fixed environments, contract/lambda_step.py ENV_STEP_DIGESTS) with a timeout
        FUNCTION_TIMEOUT_MARGIN past the longest step's. This agent runs them."""
        if ls.INVOKE_RESOURCE not in definition and "\\u" not in definition:
            # no Lambda step (its resource is written as is, unless escaped): reading the whole
            # definition for none took a third of a restart's deploy (bench/dev_scale.py)
            return []
        functions: dict[str, tuple[set[str], int]] = {}
        for task in lambda_tasks(json.loads(definition)):
            params = task.get("Parameters") or {}
            name, payload = params.get("FunctionName"), params.get("Payload") or {}
            env = payload.get(ls.PAYLOAD_ENVIRONMENT) if isinstance(payload, dict) else None
            if not isinstance(name, str) or not isinstance(env, dict):
                continue
            digests, timeout = functions.setdefault(name, (set(), 0))
            timeout = max(timeout, int(task.get("TimeoutSeconds") or 60) + ls.FUNCTION_TIMEOUT_MARGIN)
            functions[name] = (digests | {ls.step_digest(env)}, min(timeout, ls.MAX_TIMEOUT))
        client = deployment.client("lambda")
        for name, (digests, timeout) in functions.items():
            config: JsonObject = {"FunctionName": name, "Timeout": timeout, "MemorySize": 512,
                                  # as the compiled function's (compiler/overrides.py function_environment)
                                  "Environment": {"Variables": {ls.ENV_STEP_DIGESTS: ",".join(sorted(digests)),
                                                                progress.ENV_TABLE: deployment.resources["table_name"]}}}
            try:
                client.get_function(FunctionName=name)
            except client.exceptions.ResourceNotFoundException:
                client.create_function(**config, Role=deployment.resources["role_arn"], PackageType="Image",
                                       Code={"ImageUri": f"{moto_patches.ACCOUNT}.dkr.ecr.{deployment.region}"
                                                         ".amazonaws.com/jobplane-runner:local"})
            else:
                client.update_function_configuration(**config)
        return sorted(functions)

    def stop_execution(self, execution_id: str) -> list[str]:
        """Nothing, as on AWS: stopping an execution does not stop its Lambda invocation, which
        runs to its end (contract/executor_runtime.py ``LambdaRuntime.stops_with_execution``)."""
        return []

    def stop_all(self) -> None:
        """End every invocation's processes (the engine is stopping): each handler then answers."""
        with self._lock:
            ids = list(self.running)
        for request_id in ids:
            kill_marked(ENV_INVOCATION_MARK, request_id)

    def handles(self, fn: LambdaFunction) -> bool:
        """A runner function of this deployment: ``<prefix>-<job>-runner``."""
        name, suffix = str(fn.function_name), ls.function_name("", "").lstrip("-")
        job = name[len(self.prefix) + 1:-len(suffix) - 1]
        return bool(job) and name == ls.function_name(self.prefix, job)

    # -- moto's Invoke -------------------------------------------------------------------------
    def invoke(self, fn: LambdaFunction, body: Any, response_headers: dict[str, str]) -> bytes:
        """Run one invocation to its end; the response payload (and the function-error header)."""
        request_id = str(uuid.uuid4())
        group = ls.log_group(fn.function_name)
        stream = f"{datetime.now(timezone.utc):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"
        event = _event(body)
        env = event.get(ls.PAYLOAD_ENVIRONMENT) if isinstance(event, dict) else None
        env = env if isinstance(env, dict) else {}
        target = env.get(rc.ENV_TARGET)
        if not isinstance(target, str) or not moto_patches.deploys_target(fn.account_id, fn.region, target):
            log.warning("refused to invoke %s: JOBPLANE_TARGET %s", fn.function_name, json.dumps(target)[:200])
            return _function_error(response_headers, request_id, "Local.Refused",
                                   "the local Lambda runs only the steps of deployed state machines; refused "
                                   f"JOBPLANE_TARGET {json.dumps(target)[:200]}", [])
        function_env = {str(k): str(v) for k, v in (fn.environment_vars or {}).items()}
        secrets = function_env.pop(ls.ENV_SECRET_SOURCES, None)
        timeout = float(fn.timeout or 3)
        process_env = container_env(self.extra_env) | self.role_env | function_env | {
            # what Lambda sets in every function's environment
            "AWS_LAMBDA_FUNCTION_NAME": str(fn.function_name), "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_size), "AWS_LAMBDA_LOG_GROUP_NAME": group,
            "AWS_LAMBDA_LOG_STREAM_NAME": stream, "AWS_REGION": str(fn.region), "_HANDLER": ls.HANDLER,
            ls.ENV_LOCAL_REQUEST_ID: request_id, ls.ENV_LOCAL_DEADLINE: repr(time.time() + timeout),
            ENV_INVOCATION_MARK: request_id}
        # the names the handler learns from the function's JOBPLANE_SECRET_SOURCES on AWS (which
        # a local function is created without): its runner redacts the [dev.env] values
        process_env = with_names(process_env, self.declared_secrets.get((str(env.get(rc.ENV_JOB, "")), LAMBDA)))
        destination = Destination(group, stream, LogCache(self.log_dir).path(
            str(env.get(rc.ENV_EXECUTION_ID, "")), str(env.get(rc.ENV_STEP, "")), str(env.get(rc.ENV_ATTEMPT, "")),
            request_id))
        _ensure_group(fn, group)
        answer_path = destination.cache.with_suffix(".answer")
        read_end, write_end = os.pipe()
        shipper = start_shipping(os.fdopen(read_end, "rb"), destination, _put_events(fn),
                                 LogCache(self.log_dir).open(destination), f"lambda-{request_id}")
        started = time.monotonic()
        try:
            _write(write_end, f"{ls.START_MARK}{request_id} Version: $LATEST")
            if secrets:
                _write(write_end, json.dumps({"level": "warning", "logger": "jobplane.local", "message":
                                              "the step's secrets are unset locally, as for ECS steps (docs/dev.md)"}))
            process = subprocess.Popen([sys.executable, "-P", "-m", ls.LOCAL_RUNTIME_MODULE, str(answer_path)],
                                       env=process_env, stdin=subprocess.PIPE, stdout=write_end, stderr=write_end,
                                       start_new_session=True)
            with self._lock:
                self.running[request_id] = process
            try:
                process.communicate(json.dumps(event).encode(), timeout=timeout + KILL_MARGIN_SECONDS)
            except subprocess.TimeoutExpired:  # Lambda ends a function at its timeout
                kill_marked(ENV_INVOCATION_MARK, request_id)
                process.wait()
            kill_marked(ENV_INVOCATION_MARK, request_id)  # the execution environment is frozen: nothing runs on
            payload = self._answer(answer_path, response_headers, request_id, timeout, time.monotonic() - started)
            took = (time.monotonic() - started) * 1000
            _write(write_end, f"{ls.END_MARK}{request_id}")
            _write(write_end, f"{ls.REPORT_MARK}{request_id}\tDuration: {took:.2f} ms\t"
                              f"Billed Duration: {int(took) + 1} ms\tMemory Size: {fn.memory_size} MB")
        finally:
            os.close(write_end)
            shipper.join(timeout=SHIP_WAIT_SECONDS)  # every line is in CloudWatch Logs before the answer
            with self._lock:
                self.running.pop(request_id, None)
            answer_path.unlink(missing_ok=True)
        return payload

    @staticmethod
    def _answer(path: Path, response_headers: dict[str, str], request_id: str, timeout: float,
                took: float) -> bytes:
        try:
            answer = json.loads(path.read_text())
        except (OSError, ValueError):
            answer = None
        if isinstance(answer, dict) and "result" in answer:
            return json.dumps(answer["result"]).encode()
        if isinstance(answer, dict) and isinstance(answer.get("errorType"), str):
            return _function_error(response_headers, request_id, answer["errorType"], str(answer.get("errorMessage")),
                                   [str(s) for s in answer.get("stackTrace") or []])
        if took >= timeout:  # Lambda's answer for a function still running at its timeout
            return _function_error(response_headers, request_id, "Sandbox.Timedout",
                                   f"RequestId: {request_id} Error: Task timed out after {timeout:.2f} seconds", [])
        return _function_error(response_headers, request_id, "Runtime.ExitError",
                               f"RequestId: {request_id} Error: Runtime exited without providing a reason", [])


def _event(body: Any) -> object:
    if isinstance(body, (bytes, str)):
        try:
            return json.loads(body or "{}")
        except ValueError:
            return None
    return body


def _function_error(response_headers: dict[str, str], request_id: str, error_type: str, message: str,
                    stack: list[str]) -> bytes:
    """What Lambda answers for an error the function raised (Invoke's X-Amz-Function-Error,
    https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html; the payload as the Python
    runtime writes it, https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html)."""
    response_headers["x-amz-function-error"] = "Unhandled"
    error: JsonObject = {"errorMessage": message, "errorType": error_type, "requestId": request_id,
                         "stackTrace": [line.rstrip("\n") for line in stack]}
    return json.dumps(error).encode()


def _write(fd: int, line: str) -> None:
    os.write(fd, (line + "\n").encode())


def _ensure_group(fn: LambdaFunction, group: str) -> None:
    """Lambda creates its function's log group on first output when the role allows it; the
    compiled Terraform creates it beforehand. Here: created when missing."""
    from moto.logs.models import logs_backends

    backend = logs_backends[fn.account_id][fn.region]
    if group not in backend.groups:
        try:
            backend.create_log_group(group, {})
        except Exception:  # noqa: BLE001 - created meanwhile by another invocation
            pass


def _put_events(fn: LambdaFunction) -> Any:
    from moto.logs.models import logs_backends

    backend = logs_backends[fn.account_id][fn.region]

    def put(group: str, stream: str, events: list[JsonObject]) -> None:
        backend.ensure_log_stream(group, stream)
        backend.put_log_events(group, stream, events)

    return put
