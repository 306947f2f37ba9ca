"""The moto patch ``stop_cause``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_stop_cause`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


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
