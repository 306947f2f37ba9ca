"""The moto patch ``sync_task_exit_code``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_sync_task_exit_code`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import json


def fix_sync_task_exit_code() -> None:
    """On AWS, ``ecs:runTask.sync`` fails with States.TaskFailed when a container exits non-zero
    (or never ran), the task's JSON being the Cause. moto 5.2.5 returns the stopped task as a
    success whatever its exit code."""
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent, FailureEventException)
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_ecs as ecs
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    original = ecs.StateTaskServiceEcs._build_sync_resolver

    def _build_sync_resolver(self, env, resource_runtime_part, normalised_parameters, state_credentials):
        resolver = original(self, env, resource_runtime_part, normalised_parameters, state_credentials)

        def checked():
            task = resolver()
            if task is None:
                return None
            codes = [c.get("ExitCode") for c in task.get("Containers", [])]
            if not codes or any(code != 0 for code in codes):
                typ = StatesErrorNameType.StatesTaskFailed
                raise FailureEventException(FailureEvent(
                    env=env, error_name=StatesErrorName(typ=typ), event_type=HistoryEventType.TaskFailed,
                    event_details=EventDetails(taskFailedEventDetails=TaskFailedEventDetails(
                        error=typ.to_name(), cause=json.dumps(task, separators=(",", ":"), default=str),
                        resource=self._get_sfn_resource(), resourceType=self._get_sfn_resource_type()))))
            return task

        return checked

    ecs.StateTaskServiceEcs._build_sync_resolver = _build_sync_resolver
