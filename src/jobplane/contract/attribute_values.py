"""DynamoDB's typed JSON (``{"S": ...}``, ``{"N": ...}``, ``{"SS": [...]}``) to plain values and
back, for the records of :mod:`jobplane.contract.records`.

boto3's ``TypeDeserializer`` does the same with a dispatch per value and Decimals for numbers;
the records hold strings, string sets and small integers, and the jobs page reads a thousand
items at a time, so the common case is read directly (most values are strings).
"""

from __future__ import annotations

import json

from jobplane.contract.types import AttributeValue, Item, JsonObject, JsonValue


def from_attribute(value: AttributeValue) -> JsonValue:
    """One attribute value as a plain one: S as str, N as int (or float), SS/NS as a set, L and
    M recursively, NULL as None, B as bytes."""
    if len(value) != 1:
        raise ValueError(f"not one DynamoDB attribute value: {sorted(value)}")
    (kind, v), = value.items()
    if kind == "S" or kind == "BOOL" or kind == "B":
        return v
    if kind == "N":
        return _number(v)
    if kind == "SS" or kind == "BS":
        return set(v)
    if kind == "NS":
        return {_number(n) for n in v}
    if kind == "NULL":
        return None
    if kind == "L":
        return [from_attribute(x) for x in v]
    if kind == "M":
        return {k: from_attribute(x) for k, x in v.items()}
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def to_attribute(value: JsonValue) -> AttributeValue:
    """A plain value as DynamoDB's typed JSON (the inverse of :func:`from_attribute`)."""
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, (int, float)):
        return {"N": str(value)}
    if isinstance(value, (set, frozenset)):
        if all(isinstance(v, str) for v in value):
            return {"SS": sorted(value)}
        return {"NS": sorted(str(v) for v in value)}
    if value is None:
        return {"NULL": True}
    if isinstance(value, (list, tuple)):
        return {"L": [to_attribute(v) for v in value]}
    if isinstance(value, dict):
        return {"M": {str(k): to_attribute(v) for k, v in value.items()}}
    raise TypeError(f"no DynamoDB type for {type(value).__name__}")


def item_of(values: JsonObject) -> Item:
    """Plain values as an item (or a key, or expression values); a None is left out."""
    return {k: to_attribute(v) for k, v in values.items() if v is not None}


def json_text(value: JsonValue) -> JsonValue:
    """The value a JSON text attribute (``input``, ``steps``, ``timeline``, a task's Cause)
    holds; None when it is not JSON text (a damaged item is shown, never raised on)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def json_object(value: JsonValue) -> JsonObject:
    """:func:`json_text` when it holds an object; an empty one otherwise."""
    parsed = json_text(value)
    return parsed if isinstance(parsed, dict) else {}


def plain(item: Item) -> JsonObject:
    """An item's attributes as plain values."""
    out: JsonObject = {}
    for k, v in item.items():
        text = v.get("S") if len(v) == 1 else None
        out[k] = text if type(text) is str else from_attribute(v)
    return out


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)
