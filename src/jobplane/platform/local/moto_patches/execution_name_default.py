"""The moto patch ``execution_name_default``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_execution_name_default`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_execution_name_default() -> None:
    """StartExecution without a name: AWS names the execution with a UUID ("If you don't
    provide a name for the execution, Step Functions automatically generates a universally
    unique identifier (UUID) as the execution name", API reference, StartExecution). moto
    5.2.5's interpreter backend keeps ``None``: the execution is called "None", our claim adds
    null to the job's running set and the local platform breaks (issue 17)."""
    import uuid

    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend.start_execution

    def start_execution(self, state_machine_arn, name=None, execution_input=None, trace_header=None):
        return original(self, state_machine_arn, name or str(uuid.uuid4()), execution_input, trace_header)

    StepFunctionsParserBackend.start_execution = start_execution
