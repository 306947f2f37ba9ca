"""The moto patch ``dynamodb_fast_projection``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_dynamodb_fast_projection`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

from typing import Any


def fix_dynamodb_fast_projection() -> None:
    """moto 5.2.5 projects an item by converting the whole item to plain Python once per
    projected attribute (``Item.to_regular_json`` inside the loop), then serialising the result
    back into a new item whose every insert re-sizes all attributes before it: the jobs' state
    query (13 attributes of 1,000 items) took ~4x as long with a projection as without one. Fixed
    for the common form, a list of top-level attribute names: the new item takes those
    attributes as stored, in the expression's order (moto's own order), and a missing one is
    left out as before. Nested paths and list elements (``a.b``, ``a[1]``) still go through
    moto's code. The one difference is an improvement: a string, number or binary set keeps its
    stored order instead of a Python set's (DynamoDB sets have no order)."""
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict

    original = Item.project
    # A query projects each of its items with the same list: whether it is all top-level names
    # is decided once per list, not once per item (13 names x 1,000 items on the jobs page).
    # The list itself is held, so its identity cannot pass to another list; the pair is one
    # tuple, read and replaced whole, so threads never mix one list's answer with another's.
    last: list[tuple[Any, bool]] = [(None, False)]

    def top_level_names(projection_expressions):
        seen, simple = last[0]
        if seen is not projection_expressions:
            simple = all(len(path) == 1 and "[" not in path[0] for path in projection_expressions)
            last[0] = (projection_expressions, simple)
        return simple

    def project(self, projection_expressions):
        if not top_level_names(projection_expressions):
            return original(self, projection_expressions)
        result = Item.__new__(Item)
        result.hash_key, result.range_key = self.hash_key, self.range_key
        attrs = LimitedSizeDict.__new__(LimitedSizeDict)  # no larger than the stored item: no size check
        dict.__init__(attrs)
        for (name,) in projection_expressions:
            value = self.attrs.get(name)
            if value is not None:
                dict.__setitem__(attrs, name, value)  # read only: the answer is made of new dicts
        result.attrs = attrs
        return result

    Item.project = project
