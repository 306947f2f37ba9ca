"""The moto patch ``sfn_versions``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_sfn_versions`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import threading

#: the version a thread is starting an execution of (describe_state_machine answers it then)
_STARTING = threading.local()


def _split_version(arn):
    """(state machine ARN, version number) of a version ARN, else None."""
    head, _, tail = (arn or "").rpartition(":")
    if tail.isdigit() and head.count(":") >= 6:
        return head, int(tail)
    return None


def fix_sfn_versions() -> None:
    """Published versions of a state machine, as Step Functions keeps them
    (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-state-machine-version.html).
    moto 5.2.5 publishes a version on CreateStateMachine/UpdateStateMachine with ``publish``
    (a copy of the definition), but:

    - StartExecution on a version ARN fails with a 500 (``'StateMachineVersion' object has no
      attribute '_handle_name_input_idempotency'``). AWS starts the version's definition ("If you
      provide a qualified state machine ARN that refers to a version ARN or an alias ARN, the
      request starts execution for that version or alias", API_StartExecution), names the
      execution under the state machine (``execution:<machine>:<name>``), and DescribeExecution and
      ListExecutions carry its ``stateMachineVersionArn``. Here the execution is started as
      moto starts any (its own clone of the machine: the version's definition and role), kept
      with the machine's executions, and answered with the version's ARN.
    - ListStateMachineVersions and DeleteStateMachineVersion are not implemented. AWS lists
      versions newest first (API_ListStateMachineVersions: "sorted in descending order of the
      version creation time"); a deleted version can no longer be started, its running
      executions go on (API_DeleteStateMachineVersion: "Deleting a state machine version won't
      terminate its in-progress executions"), and a version an alias references cannot be
      deleted (ConflictException here).
    - a publish of an unchanged definition makes another version; AWS's publish is idempotent
      per revision ("It doesn't create a duplicate state machine version if it already exists
      for the current revision", API_PublishStateMachineVersion): the newest version is
      answered again when it holds the same definition and role.
    """
    from moto.core.responses import ActionResult
    from moto.stepfunctions.exceptions import AWSError, StateMachineDoesNotExist
    from moto.stepfunctions.models import StateMachine, StepFunctionBackend
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    class ConflictException(AWSError):
        TYPE = "ConflictException"
        STATUS = 409

    original_publish = StateMachine.publish

    def publish(self, description):
        latest = self.latest_version
        if latest is not None and latest.definition == self.definition and latest.roleArn == self.roleArn:
            return  # the same revision: its version stands (AWS's idempotent publish)
        original_publish(self, description)

    StateMachine.publish = publish

    def _machine(backend, arn):
        return next((m for m in backend.state_machines if m.arn == arn), None)

    def list_state_machine_versions(self, state_machine_arn):
        machine = _machine(self, state_machine_arn)
        if machine is None:
            raise StateMachineDoesNotExist(f"State Machine Does Not Exist: '{state_machine_arn}'")
        return sorted(machine.versions.values(), key=lambda v: v.version, reverse=True)

    def delete_state_machine_version(self, version_arn):
        split = _split_version(version_arn)
        machine = _machine(self, split[0]) if split else None
        if machine is None or split[1] not in machine.versions:
            return  # nothing to delete
        if any(version_arn == r.get("stateMachineVersionArn")
               for alias in machine.aliases.values() for r in alias.routing_configuration):
            raise ConflictException(f"Version is referenced by an alias: '{version_arn}'")
        del machine.versions[split[1]]

    StepFunctionBackend.list_state_machine_versions = list_state_machine_versions
    StepFunctionBackend.delete_state_machine_version = delete_state_machine_version

    original_describe = StepFunctionsParserBackend.describe_state_machine
    original_start = StepFunctionsParserBackend.start_execution

    def describe_state_machine(self, arn):
        starting = getattr(_STARTING, "value", None)
        if starting is not None and starting[0] == arn:
            return starting[1]
        return original_describe(self, arn)

    def start_execution(self, state_machine_arn, name=None, execution_input=None, trace_header=None):
        split = _split_version(state_machine_arn)
        machine = _machine(self, split[0]) if split else None
        if machine is None:
            return original_start(self, state_machine_arn, name, execution_input, trace_header)
        version = machine.versions.get(split[1])
        if version is None:
            raise StateMachineDoesNotExist(f"State Machine Does Not Exist: '{state_machine_arn}'")
        # the machine as the version holds it: its executions list and backend are the
        # machine's own (shared, so the execution is kept where DescribeExecution looks)
        import copy

        as_version = copy.copy(machine)
        as_version.definition, as_version.roleArn = version.definition, version.roleArn
        _STARTING.value = (state_machine_arn, as_version)
        try:
            execution = original_start(self, state_machine_arn, name, execution_input, trace_header)
        finally:
            _STARTING.value = None
        execution.jobplane_version_arn = version.arn
        return execution

    StepFunctionsParserBackend.describe_state_machine = describe_state_machine
    StepFunctionsParserBackend.start_execution = start_execution

    def list_versions_response(self):
        arn = self._get_param("stateMachineArn")
        versions = self.stepfunction_backend.list_state_machine_versions(arn)
        size = self._get_int_param("maxResults") or 100
        start = int(self._get_param("nextToken") or 0)
        page = versions[start:start + size]
        answer = {"stateMachineVersions": [{"stateMachineVersionArn": v.arn, "creationDate": v.creation_date}
                                           for v in page]}
        if start + size < len(versions):
            answer["nextToken"] = str(start + size)
        return ActionResult(answer)

    def delete_version_response(self):
        self.stepfunction_backend.delete_state_machine_version(self._get_param("stateMachineVersionArn"))
        return ActionResult({})

    StepFunctionResponse.list_state_machine_versions = list_versions_response
    StepFunctionResponse.delete_state_machine_version = delete_version_response

    original_describe_execution = StepFunctionResponse.describe_execution
    original_list_executions = StepFunctionResponse.list_executions

    def describe_execution_response(self):
        answer = original_describe_execution(self)
        execution = self.stepfunction_backend.describe_execution(self._get_param("executionArn"))
        version = getattr(execution, "jobplane_version_arn", None)
        if version is not None and isinstance(answer.result, dict):
            answer.result["stateMachineVersionArn"] = version
        return answer

    def list_executions_response(self):
        answer = original_list_executions(self)
        if isinstance(answer.result, dict):
            arn = self._get_param("stateMachineArn")
            machine = _machine(self.stepfunction_backend, arn)
            versions = {e.execution_arn: getattr(e, "jobplane_version_arn", None)
                        for e in (machine.executions if machine is not None else [])}
            for item in answer.result.get("executions", []):
                version = versions.get(item.get("executionArn"))
                if version is not None:
                    item["stateMachineVersionArn"] = version
        return answer

    StepFunctionResponse.describe_execution = describe_execution_response
    StepFunctionResponse.list_executions = list_executions_response
