"""The moto patches ``ecs_thread_safe`` and ``ecs_local_tasks``, registered in
:data:`jobplane.platform.local.moto_patches.PATCHES`: one module because both replace the same five
methods of moto's ECS backend (rebuilt from moto's own by ``_build_ecs_methods``, so neither wraps
the other's wrapper) and share ``ECS_LOCK``, which the local ECS agent holds while it ends a task
(``finish_task``).

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

from jobplane.contract.types import JsonObject


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
