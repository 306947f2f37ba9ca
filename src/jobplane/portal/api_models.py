"""The API's models of jobplane's records, built from the records' own fields.

A model here is the fields a record defines (contract/records.py, contract/execution_input.py),
with their types and descriptions, plus what the API adds (a URL, a duration in seconds). So a
field is described once, and the OpenAPI document says what the repository reads (a test holds
each model's schema to :func:`jobplane.contract.record_schema.json_schema`).
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, Field, create_model

from jobplane.contract.record_schema import field_types
from jobplane.contract.types import JsonObject

#: (record, the fields of it the model shows)
Source = tuple[type, tuple[str, ...]]


def api_type(annotation: Any) -> Any:
    """A record's field type as JSON carries it: tuples and sets are lists."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        return Union[tuple(api_type(a) for a in args)]
    if origin in (tuple, frozenset, set):
        return list[api_type(args[0])]  # type: ignore[misc]  # a type built at run time
    return annotation


def model_from(name: str, sources: list[Source], base: type[BaseModel] = BaseModel,
               **extra: tuple[Any, Any]) -> type[BaseModel]:
    """A pydantic model of the named fields of each source (a record, or a pydantic model of
    the catalog), then ``extra`` (name: (type, Field or default)), in that order."""
    fields: JsonObject = {}
    for record, names in sources:
        if issubclass(record, BaseModel):  # the catalog's models (contract/catalog.py)
            for n in names:
                fields[n] = (record.model_fields[n].annotation, record.model_fields[n])
            continue
        if not dataclasses.is_dataclass(record):
            raise TypeError(f"{record.__name__} is neither a record nor a model")
        types_of = field_types(record)
        by_name = {f.name: f for f in dataclasses.fields(record)}
        unknown = set(names) - set(by_name)
        if unknown:
            raise KeyError(f"{record.__name__} has no field {sorted(unknown)}")
        for n in names:
            f = by_name[n]
            description = f.metadata.get("description")
            if f.default is not dataclasses.MISSING:
                default = list(f.default) if isinstance(f.default, (tuple, frozenset)) else f.default
                spec = Field(default, description=description)
            elif f.default_factory is not dataclasses.MISSING:
                spec = Field(default_factory=f.default_factory, description=description)
            else:
                spec = Field(description=description)
            fields[n] = (api_type(types_of[n]), spec)
    fields.update(extra)
    model: type[BaseModel] = create_model(name, __base__=base, **fields)
    return model
