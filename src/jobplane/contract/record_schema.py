"""The JSON Schema of a record (:mod:`jobplane.contract.records`), read from its dataclass.

The portal's API models are built from the same fields (portal/api_models.py), so the API
cannot describe a record differently from what the repository reads; this schema is what a
client outside Python reads, and what a test holds the API's OpenAPI document to.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Literal, Union, get_args, get_origin

from jobplane.contract.types import JsonObject

#: Python types as JSON Schema types.
_SCALARS: dict[object, JsonObject] = {str: {"type": "string"}, int: {"type": "integer"},
                                      float: {"type": "number"}, bool: {"type": "boolean"},
                                      type(None): {"type": "null"}}


def doc(text: str) -> dict[str, str]:
    """A record field's description (its dataclass metadata): the JSON Schema's and the API's."""
    return {"description": text}


def field_types(record: type) -> dict[str, object]:
    """Each field's resolved annotation (the records use ``from __future__ import annotations``)."""
    hints = typing.get_type_hints(record)
    return {f.name: hints[f.name] for f in dataclasses.fields(record)}


def type_schema(annotation: object) -> JsonObject:
    """One annotation as a schema: scalars, a Literal of strings as an enum, ``X | None``, tuples, lists and sets as arrays, a
    record as its own object schema, a loose dict as an object."""
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal and all(isinstance(a, str) for a in args):  # a closed set of words: an enum
        return {"type": "string", "enum": list(args)}
    if origin in (Union, types.UnionType):
        return {"anyOf": [type_schema(a) for a in args]}
    if origin in (tuple, list, frozenset, set):
        return {"type": "array", "items": type_schema(args[0]) if args else {}}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return json_schema(annotation)
    raise TypeError(f"no JSON Schema for {annotation!r}")


def json_schema(record: type, only: tuple[str, ...] | None = None) -> JsonObject:
    """The record's object schema: every field (or ``only`` these), its description, and as
    required the fields without a default."""
    types_of = field_types(record)
    props: JsonObject = {}
    required = []
    for f in dataclasses.fields(record):
        if only is not None and f.name not in only:
            continue
        prop = type_schema(types_of[f.name])
        if f.metadata.get("description"):
            prop["description"] = f.metadata["description"]
        props[f.name] = prop
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    return {"title": record.__name__, "type": "object", "properties": props, "required": required}
