"""The moto patch ``sync_retry``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_sync_retry`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_sync_retry() -> None:
    """A retried ``.sync`` task times out at once in moto 5.2.5 (States.Timeout after ~5 ms):
    every attempt reuses the callback endpoint of the first, which was interrupted when that
    attempt ended. Give each attempt a fresh task token and endpoint, as a new attempt has."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback as cb
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import ResourceCondition

    original = cb.StateTaskServiceCallback._eval_integration_pattern

    def _eval_integration_pattern(self, env, resource_runtime_part, normalised_parameters, state_credentials):
        if (self.resource.condition in (ResourceCondition.Sync, ResourceCondition.Sync2)
                and ResourceCondition.WaitForTaskToken in self._supported_integration_patterns):
            token = env.states.context_object.update_task_token()
            env.callback_pool_manager.add(token)
        return original(self, env, resource_runtime_part, normalised_parameters, state_credentials)

    cb.StateTaskServiceCallback._eval_integration_pattern = _eval_integration_pattern
