"""Not tracking moto model objects: shared by the patches ``dynamodb_items_untracked`` and
``ecs_tasks_untracked`` (moto keeps every model object it creates for its ``/moto-api/``
dashboard, which ``jobplane dev`` never serves).

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def untrack(*classes: type) -> None:
    """New objects of these moto model classes are not added to ``instances_tracked`` (moto's
    ``BaseModel.__new__`` without the tracking), and those tracked so far are let go."""
    for cls in classes:
        cls.__new__ = _untracked_new
        cls.instances_tracked.clear()


def _untracked_new(cls, *args, **kwargs):
    return object.__new__(cls)
