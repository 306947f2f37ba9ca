"""The moto patch ``context_start_time``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_context_start_time`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import datetime

from jobplane.contract.clock import iso_millis


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
