"""The moto patch ``dynamodb_fast_answers``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_dynamodb_fast_answers`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import json
from typing import Any

from jobplane.contract.types import JsonObject


#: Keys of a read's answer that hold items (AttributeValue maps), passed through as they are.
_ITEM_KEYS = ("Items", "Item", "LastEvaluatedKey", "Responses")
_FAST_OPERATIONS = frozenset({"Query", "Scan", "GetItem", "BatchGetItem"})


def _wire_ready(value: Any) -> bool:
    """True when ``value`` (moto's item dicts) is already what DynamoDB's JSON protocol sends:
    strings, booleans, lists and maps only. Binary values (bytes, which the protocol sends as
    base64) and anything else are left to moto's serializer."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _wire_ready(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_wire_ready(v) for v in value)
    return isinstance(value, (str, bool))


def _flat_items(result: Any) -> JsonObject | None:
    """A Query, Scan or GetItem answer's ``Items`` / ``Item`` as DynamoDB's wire form, when every
    value of every item is a string, number, boolean or null (moto keeps these as ``str`` or
    ``bool``); None for anything else (a binary, a set, a list or map, another kind of answer),
    which moto converts as it does."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    if not isinstance(result, dict):
        return None
    out: JsonObject = {}
    for key in ("Items", "Item"):
        held = result.get(key)
        if held is None:
            continue
        items = held if key == "Items" else [held]
        if not isinstance(items, list):
            return None
        flat = []
        for item in items:
            if not isinstance(item, dict):
                return None
            wire = {}
            for name, value in item.items():
                if type(value) is not DynamoType or type(name) is not str or value.type == "B" \
                        or type(value.value) not in (str, bool):
                    return None
                wire[name] = {value.type: value.value}
            flat.append(wire)
        out[key] = flat if key == "Items" else flat[0]
    return out or None


def fix_dynamodb_fast_answers() -> None:
    """moto 5.2.5 serialises every answer by walking botocore's shape model value by value: for
    the 1,000 job states of the jobs page that took ~3 s of the request (cProfile; 270,000 shape
    lookups). A read's items are stored as DynamoDB's wire form already (``{"S": "..."}``,
    numbers as strings), so Query, Scan, GetItem and BatchGetItem answers made only of such
    values are written with ``json.dumps``; the rest of the answer (counts, consumed capacity)
    still goes through moto's serializer, and an answer holding a binary value entirely."""
    from moto.dynamodb.responses import DynamoResult

    original, init = DynamoResult.execute_result, DynamoResult.__init__

    def converted(self, result):
        """moto converts the answer's stored values to plain dicts value by value first
        (``dynamo_to_dict``); items of flat strings, numbers, booleans and nulls are converted
        in one step here and known to be wire-ready, so they are not checked again below."""
        flat = _flat_items(result)
        if flat is None:
            init(self, result)
            self._jobplane_ready = False
        else:
            init(self, {k: v for k, v in result.items() if k not in flat})
            self._result.update(flat)
            self._jobplane_ready = True

    def execute_result(self, context):
        result = self.result
        if context.operation_model.name not in _FAST_OPERATIONS or not isinstance(result, dict):
            return original(self, context)
        held = {k: result[k] for k in _ITEM_KEYS if result.get(k) is not None}
        if not getattr(self, "_jobplane_ready", False) and not _wire_ready(held):
            return original(self, context)
        rest = DynamoResult.__new__(DynamoResult)
        rest._result = {k: v for k, v in result.items() if k not in held}
        status, headers, body = original(rest, context)
        answer = json.loads(body) if body else {}
        answer.update(held)
        return status, headers, json.dumps(answer)

    DynamoResult.__init__ = converted
    DynamoResult.execute_result = execute_result
