"""The local ECS agent: runs each ECS task's container command as a real subprocess.

moto's ECS never runs anything (a task reaches STOPPED with exit code 0 whatever its command).
Locally, the compiled state machine's ``ecs:runTask.sync`` must run the real
``jobplane-runner``, so this agent hooks moto's ECS backend (in the moto process):

* ``RunTask``: start the container command with the task definition's environment plus the
  override environment. Only the command the compiler writes, ``jobplane-runner run <kind>``, is
  run (from this installation's own ``bin``, whatever ``PATH`` says); any other command fails
  the task to start with a clear reason, since a RunTask is all it takes to start a process here; moto's automatic status progression is switched off, so the task stays
  RUNNING while the process lives;
* the process ends: record its exit code (128+N for signal N), stop code and STOPPED status on
  the task, as ECS does;
* ``StopTask``: SIGTERM the process (SIGKILL after the grace period), as ECS does, and let the
  exit be recorded as above.

A task's output goes where its container definition's ``awslogs`` options say, as on AWS: the
embedded CloudWatch Logs (:mod:`jobplane.platform.local.awslogs`), where
:mod:`jobplane.platform.logs` reads it for the CLI, the portal and the alerts.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from jobplane.contract import runner as rc
from jobplane.platform.local import moto_patches
from jobplane.platform.local.declared_secrets import with_names
from jobplane.platform.local.awslogs import Destination, LogCache, start_shipping
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from moto.ecs.models import Task

    from jobplane.platform.local.agents import Deployment

log = logging.getLogger(__name__)

FINISHED_KEPT = 1000
#: How long a stopped task waits for the rest of its output to reach CloudWatch Logs (only a
#: process that escaped the task's cleanup can hold its output open that long).
SHIP_WAIT_SECONDS = 30.0
#: The runner of this installation (next to the interpreter running the agent).
RUNNER_PATH = Path(sys.executable).parent / "jobplane-runner"


@dataclass
class RunningTask:
    task: Task  # moto's
    process: subprocess.Popen[bytes]
    execution_id: str
    job: str
    step: str
    log_path: Path
    shipper: threading.Thread | None = None
    stop_requested: bool = False


#: What a step inherits from the process running the agent: what a container's OS would give it,
#: nothing else. Everything the step needs comes from the task (definition and overrides) and
#: ``[dev] env``; the developer's own environment (AWS keys, JOBPLANE_SLACK_WEBHOOK_URL, tokens)
#: never reaches a step, whose output every portal user can read.
INHERITED_ENV = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM", "USER", "LOGNAME")


def container_env(extra: dict[str, str]) -> dict[str, str]:
    """The base environment of a step's process: the OS basics, PATH with this installation's
    ``bin`` first (where jobplane-runner and python are), and ``extra`` (``[dev] env``)."""
    env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", os.defpath)
    return env | extra


@dataclass
class LocalEcsAgent:
    log_dir: Path
    extra_env: dict[str, str] = field(default_factory=dict)  # [dev] env: added to every task's environment
    stop_grace_seconds: float = 10.0
    #: what the runner task role gives a step that calls AWS itself (a map's items step writes
    #: its list to S3: contract/map_items.py; every step its progress: contract/progress.py):
    #: the local endpoint and its key. With moto in-process (no endpoint) there is nothing to give.
    task_role_env: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, RunningTask] = field(default_factory=dict)
    finished: dict[str, JsonObject] = field(default_factory=dict)
    #: (job, executor) -> its declared secrets' names, from the deployed catalog (the engine's
    #: deploy_output sets it): a task gets them as its own task definition gives them on AWS
    declared_secrets: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.log_dir = Path(self.log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------------
    def activate(self) -> LocalEcsAgent:
        """From now on RunTask hands its tasks to this agent (the moto patch ecs_local_tasks)."""
        moto_patches.ECS_TASK_RUNNERS.append(self)
        return self

    def deactivate(self) -> None:
        self.stop_all()
        if self in moto_patches.ECS_TASK_RUNNERS:
            moto_patches.ECS_TASK_RUNNERS.remove(self)

    # -- hooks called from moto's ECS backend --------------------------------------------------
    def start(self, task: Task) -> None:
        container_def = _container_definition(task)
        override = _container_override(task, container_def.get("name"))
        command = override.get("command") or container_def.get("command")
        if not rc.is_runner_command(command):
            shown = json.dumps(command)[:200] if command else "none"
            moto_patches.finish_task(task, None, f"CannotStartContainerError: the local ECS agent runs only "
                                  f"'{rc.RUNNER_EXECUTABLE} run <{'|'.join(rc.STEP_KINDS)}>'; refused command {shown}",
                    "TaskFailedToStart")
            log.warning("refused to start task %s: command %s", task.id, shown)
            return
        target = next((i.get("value") for i in override.get("environment") or [] if i.get("name") == rc.ENV_TARGET), None)
        if not isinstance(target, str) or not moto_patches.deploys_target(task._account_id, task.region_name, target):
            # the runner runs what a deployed state machine sends, not a target any caller makes
            # up (a RunTask with the key and its own JOBPLANE_TARGET ran `id`, issue 40 item 10)
            shown = json.dumps(target)[:200]
            moto_patches.finish_task(task, None, "CannotStartContainerError: the local ECS agent runs only the steps of "
                                                 f"deployed state machines; refused JOBPLANE_TARGET {shown}",
                                     "TaskFailedToStart")
            log.warning("refused to start task %s: JOBPLANE_TARGET %s", task.id, shown)
            return
        command = [str(RUNNER_PATH), *command[1:]]
        env = container_env(self.extra_env)
        for item in (container_def.get("environment") or []) + (override.get("environment") or []):
            env[item["name"]] = item["value"]
        env |= self.task_role_env  # every step may write its progress (contract/progress.py)
        # the job's declared secrets' names, which the shared task definition does not carry
        env = with_names(env, self.declared_secrets.get((env.get(rc.ENV_JOB, ""), "ecs")))
        task_id = task.id
        env[ENV_TASK_MARK] = task_id  # every process of the task carries it: see _end_task_processes
        destination = self._log_destination(task, container_def, env)
        if isinstance(destination, str):
            moto_patches.finish_task(task, None, destination, "TaskFailedToStart")
            return
        cache = LogCache(self.log_dir).open(destination)
        try:
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            cache.close()
            moto_patches.finish_task(task, None, f"CannotStartContainerError: {e}", "TaskFailedToStart")
            return
        assert process.stdout is not None
        shipper = start_shipping(process.stdout, destination, _put_events(task), cache, f"awslogs-{task_id}")
        running = RunningTask(task, process, env.get(rc.ENV_EXECUTION_ID, ""), env.get(rc.ENV_JOB, ""),
                              env.get(rc.ENV_STEP, ""), destination.cache, shipper)
        with self._lock:
            self.tasks[task.task_arn] = running
        # not an attribute moto declares: its response shows it as startedAt when set (as on AWS)
        task.started_at = datetime.datetime.now(datetime.timezone.utc)  # type: ignore[attr-defined]
        threading.Thread(target=self._wait, args=(running,), name=f"ecs-agent-{task_id}", daemon=True).start()

    def _log_destination(self, task: Task, container_def: JsonObject, env: dict[str, str]) -> Destination | str:
        """The container's awslogs stream, or why the task cannot start: ECS refuses to start a
        task whose log group does not exist (ResourceInitializationError)."""
        config = container_def.get("logConfiguration") or {}
        options = config.get("options") or {}
        if config.get("logDriver") != "awslogs" or not options.get("awslogs-group"):
            return ("ResourceInitializationError: the local ECS agent needs the awslogs log driver "
                    "(awslogs-group, awslogs-stream-prefix) in the container definition")
        group = options["awslogs-group"]
        stream = f"{options.get('awslogs-stream-prefix', 'ecs')}/{container_def.get('name')}/{task.id}"
        from moto.logs.models import logs_backends

        if group not in logs_backends[task._account_id][task.region_name].groups:
            return f"ResourceInitializationError: failed to validate logger args: the log group {group} does not exist"
        cache = LogCache(self.log_dir).path(env.get(rc.ENV_EXECUTION_ID, ""), env.get(rc.ENV_STEP, ""),
                                            env.get(rc.ENV_ATTEMPT, ""), task.id)
        return Destination(group, stream, cache)

    def _wait(self, running: RunningTask) -> None:
        code = running.process.wait()
        _end_task_processes(running.process.pid, running.task.id)
        if running.shipper is not None:  # every line is in CloudWatch Logs before the task stops
            running.shipper.join(timeout=SHIP_WAIT_SECONDS)
            if running.shipper.is_alive():
                log.warning("task %s: its output is still open after the runner ended; reported stopped anyway",
                            running.task.id)
        exit_code = 128 - code if code < 0 else code
        reason = "Task stopped by user" if running.stop_requested else "Essential container in task exited"
        stop_code = "UserInitiated" if running.stop_requested else "EssentialContainerExited"
        moto_patches.finish_task(running.task, exit_code, reason, stop_code)
        with self._lock:
            self.tasks.pop(running.task.task_arn, None)
            while len(self.finished) >= FINISHED_KEPT:  # bounded for a long-running `jobplane dev`
                self.finished.pop(next(iter(self.finished)))
            self.finished[running.task.task_arn] = {
                "execution_id": running.execution_id, "job": running.job, "step": running.step,
                "exit_code": exit_code, "log": str(running.log_path)}

    def stop(self, task_arn: str) -> bool:
        with self._lock:
            running = self.tasks.get(task_arn)
        if running is None:
            return False
        running.stop_requested = True
        _signal_group(running.process, signal.SIGTERM)
        threading.Timer(self.stop_grace_seconds, _signal_group, args=(running.process, signal.SIGKILL)).start()
        return True

    def stop_task(self, task: str) -> Task | None:
        """StopTask on one of this agent's tasks (by ARN or id): stop its process, answer with
        the task; None if the task is not this agent's (moto's own StopTask handles it)."""
        with self._lock:
            arn = next((a for a in self.tasks if a == task or a.endswith("/" + task)), None)
            running = self.tasks.get(arn) if arn else None
        if running is None or arn is None:
            return None
        self.stop(arn)
        return running.task

    def deploy(self, definition: str, deployment: Deployment) -> list[str]:
        """Nothing: every ECS step runs the runner's task definition, which the engine provisions
        as the base module does (its log group included)."""
        return []

    def stop_execution(self, execution_id: str) -> list[str]:
        """What Step Functions does for a .sync task when its execution is stopped or times out
        (contract/executor_runtime.py ``EcsRuntime.stops_with_execution``): StopTask."""
        with self._lock:
            arns = [arn for arn, t in self.tasks.items() if t.execution_id == execution_id]
        for arn in arns:
            self.stop(arn)
        return arns

    def stop_all(self) -> None:
        with self._lock:
            arns = list(self.tasks)
        for arn in arns:
            self.stop(arn)
        for arn in arns:
            t = self.tasks.get(arn)
            if t is not None:
                try:
                    t.process.wait(timeout=self.stop_grace_seconds + 1)
                except subprocess.TimeoutExpired:
                    _signal_group(t.process, signal.SIGKILL)

    def running_processes(self, execution_id: str | None = None) -> dict[str, int]:
        """Task ARN -> runner pid of the tasks running now (of one execution, if named)."""
        with self._lock:
            return {arn: t.process.pid for arn, t in self.tasks.items()
                    if execution_id is None or t.execution_id == execution_id}


#: Set in each task's environment: how the agent finds every process the task started.
ENV_TASK_MARK = "JOBPLANE_LOCAL_TASK"


def _end_task_processes(runner_pid: int, task_id: str) -> list[int]:
    """When a container's main process ends, ECS ends every process in the container. Locally
    a step's children can outlive the runner (a shell step's command runs in a session of its
    own; a runner killed with SIGKILL cannot stop it): SIGKILL the runner's process group and
    every process that still carries this task's mark in its environment (Linux /proc; the
    developer's own processes only). Returns the pids killed."""
    killed: list[int] = []
    try:
        os.killpg(runner_pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    killed += kill_marked(ENV_TASK_MARK, task_id)
    if killed:
        log.warning("task %s: killed %d process(es) left running after its runner ended: %s", task_id, len(killed), killed)
    return killed


def kill_marked(name: str, value: str) -> list[int]:
    """SIGKILL every process whose environment holds ``name=value`` (Linux /proc; the developer's
    own processes only): what a task or an invocation started, wherever it went. The pids killed."""
    killed: list[int] = []
    needle = f"{name}={value}".encode()
    proc = Path("/proc")
    if not proc.is_dir():
        return killed
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return killed


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass


def _put_events(task: Task) -> Callable[[str, str, list[JsonObject]], None]:
    """PutLogEvents into the embedded CloudWatch Logs of the task's account and region, as the
    awslogs driver does (the agent lives in the moto process)."""
    from moto.logs.models import logs_backends

    backend = logs_backends[task._account_id][task.region_name]

    def put(group: str, stream: str, events: list[JsonObject]) -> None:
        backend.ensure_log_stream(group, stream)
        backend.put_log_events(group, stream, events)

    return put


def _container_definition(task: Task) -> JsonObject:
    from moto.ecs.models import ecs_backends

    backend = ecs_backends[task._account_id][task.region_name]
    task_def = backend.describe_task_definition(task.task_definition_arn)
    return task_def.container_definitions[0]


def _container_override(task: Task, name: str | None) -> JsonObject:
    for o in (task.overrides or {}).get("containerOverrides", []) or []:
        if o.get("name") in (None, name):
            override: JsonObject = o
            return override
    return {}


