"""The moto patch ``no_wait_after_stop``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_no_wait_after_stop`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


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
