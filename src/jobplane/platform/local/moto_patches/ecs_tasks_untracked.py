"""The moto patch ``ecs_tasks_untracked``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_ecs_tasks_untracked`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

from jobplane.platform.local.moto_patches._tracking import untrack


def fix_ecs_tasks_untracked() -> None:
    """moto keeps every model object it creates in its class's ``instances_tracked`` list, for
    its ``/moto-api/`` dashboard, which ``jobplane dev`` never serves (as for DynamoDB items,
    ``dynamodb_items_untracked``). For ECS tasks that list is a leak: DescribeTasks answers with
    a copy of each task and its containers taken under ``ECS_LOCK`` (``ecs_thread_safe``), and
    the .sync wait of every running step asks again and again, so each poll left a task and its
    containers behind for the life of the process: 149 of 197 tasks after 45 runs of no-op
    steps, and a step that runs for an hour polls thousands of times. Tasks and containers are
    not tracked: a copy goes with the answer it was made for, a task with the backend."""
    from moto.ecs import models

    untrack(models.Task, models.Container)
