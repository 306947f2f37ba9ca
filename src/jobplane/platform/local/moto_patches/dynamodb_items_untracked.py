"""The moto patch ``dynamodb_items_untracked``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_dynamodb_items_untracked`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

from jobplane.platform.local.moto_patches._tracking import untrack


def fix_dynamodb_items_untracked() -> None:
    """moto 5.2.5 appends every model object it ever creates to its class's ``instances_tracked``
    list (``BaseModel.__new__``), for its ``/moto-api/`` dashboard, and never removes one: every
    item a query copies or projects for its answer stays in memory for the life of the process.
    The jobs page alone left 1,000 items behind per view; the heap grew by ~2 objects per item
    read, and each full garbage collection, walking them all, paused the local AWS for 100-150 ms
    (the page's p95). ``jobplane dev`` never serves ``/moto-api/`` (see front.py), so a DynamoDB
    item is simply not tracked: it lives as long as the table or the answer that holds it."""
    from moto.dynamodb.models.dynamo_type import Item

    untrack(Item)
