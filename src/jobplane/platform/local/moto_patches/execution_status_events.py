"""The moto patch ``execution_status_events``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_execution_status_events`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


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
