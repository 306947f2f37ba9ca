"""The moto patch ``stop_while_starting``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_stop_while_starting`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


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
