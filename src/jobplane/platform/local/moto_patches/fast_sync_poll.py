"""The moto patch ``fast_sync_poll``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_fast_sync_poll`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_fast_sync_poll(seconds: float = 0.05) -> None:
    """moto polls a .sync task every 0.5 s; locally the task is a process we watch, so poll
    faster (2 ECS steps: ~1.2 s -> ~0.3 s per run, docs/local-engine.md)."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    state_task_service_callback._DELAY_SECONDS_SYNC_CONDITION_CHECK = seconds
