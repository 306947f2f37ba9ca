"""Typed fields for the job DSL: one table per model drives both the checks and the JSON Schema.

Why not pydantic, which the runtime models use: ``jobplane validate`` runs on every pull request
and in editor hooks, and importing pydantic alone took 7x ``python -c pass`` of issue 13's 10x
budget for the whole command. The DSL needs a dozen types, so they are written out here, each with
its check and its schema side by side, and the models in :mod:`jobplane.compiler.model` are frozen
dataclasses whose fields carry a :class:`FieldSpec`.

Every problem is collected, not the first: a developer fixing a pull request wants the whole list,
each naming its field. A field's own ``check`` runs only once its type is right, and a model's
``model_problems`` runs with the refused fields' defaults standing in, skipping the rules that read
a refused field, so no problem is reported from a value that was already refused, and none is
hidden behind another.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import Any, ClassVar, TypeVar, cast

from jobplane.contract import runner as rc
from jobplane.contract.quoting import did_you_mean, quoted
from jobplane.contract.types import JsonObject, JsonValue

#: Where a problem is: field names and list indexes from the definition's root.
Loc = tuple[str | int, ...]
Problems = list[tuple[Loc, str]]

M = TypeVar("M", bound="Model")


class _Bad:
    """What a check returns for a refused value (its problems are already recorded)."""


BAD: Any = _Bad()


class Invalid(ValueError):
    """A definition that does not fit the model: every problem, as (location, message)."""

    def __init__(self, problems: Problems):
        super().__init__("; ".join(f"{'.'.join(map(str, loc)) or '(root)'}: {msg}" for loc, msg in problems))
        self.problems = problems


class Type:
    """One kind of value: ``check`` returns the value to keep, or BAD after recording why not."""

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        raise NotImplementedError

    def schema(self, defs: JsonObject) -> JsonObject:
        raise NotImplementedError


class _Scalar(Type):
    """A JSON scalar of one Python type (bool is never an int or a number here, unlike Python)."""

    kinds: tuple[type, ...] = ()
    what = ""
    json_type = ""

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        if isinstance(value, bool) != (bool in self.kinds) or not isinstance(value, self.kinds):
            problems.append((loc, f"must be {self.what}, not {describe_value(value)}"))
            return BAD
        return value

    def schema(self, defs: JsonObject) -> JsonObject:
        return {"type": self.json_type}


class Str(_Scalar):
    kinds, what, json_type = (str,), "a string", "string"


class Bool(_Scalar):
    kinds, what, json_type = (bool,), "true or false", "boolean"


class _Bounded(_Scalar):
    def __init__(self, ge: float | None = None, le: float | None = None):
        self.ge, self.le = ge, le

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        value = super().check(value, loc, problems)
        if value is BAD:
            return BAD
        if self.ge is not None and value < self.ge:
            problems.append((loc, f"must be at least {self.ge:g}, not {quoted(value)}"))
            return BAD
        if self.le is not None and value > self.le:
            problems.append((loc, f"must be at most {self.le:g}, not {quoted(value)}"))
            return BAD
        return value

    def schema(self, defs: JsonObject) -> JsonObject:
        out = super().schema(defs)
        if self.ge is not None:
            out["minimum"] = self.ge
        if self.le is not None:
            out["maximum"] = self.le
        return out


class Int(_Bounded):
    """A whole number written as one: '3' and 3.5 are refused, not coerced."""

    kinds, what, json_type = (int,), "a whole number", "integer"


class Number(_Bounded):
    kinds, what, json_type = (int, float), "a number", "number"


class Anything(Type):
    """Any JSON value (job params, kwargs): passed through to the step as written, nested at
    most rc.MAX_PARAMS_DEPTH lists and objects deep (Jsonnet allows ~500; what reads the value
    later, the catalog's serialiser among them, gives up at ~250 with a traceback)."""

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        if rc.nesting(value) > rc.MAX_PARAMS_DEPTH:
            problems.append((loc, f"nested more than {rc.MAX_PARAMS_DEPTH} lists or objects deep"))
            return BAD
        return value

    def schema(self, defs: JsonObject) -> JsonObject:
        return {}


class Parsed(Type):
    """A value read by a function that raises ValueError with the message to show (durations)."""

    def __init__(self, parse: Callable[[JsonValue], JsonValue], json_schema: JsonObject):
        self.parse, self.json_schema = parse, json_schema

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        try:
            return self.parse(value)
        except ValueError as e:
            problems.append((loc, str(e)))
            return BAD

    def schema(self, defs: JsonObject) -> JsonObject:
        return dict(self.json_schema)


class Choice(Type):
    """One of fixed strings; an Enum class keeps its members (and its docstring in the schema)."""

    def __init__(self, options: type[Enum] | tuple[str, ...]):
        self.enum = options if isinstance(options, type) else None
        self.options = [m.value for m in options] if isinstance(options, type) else list(options)

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        if isinstance(value, str) and value in self.options:
            return self.enum(value) if self.enum else value
        hint = did_you_mean(value[:80], self.options) if isinstance(value, str) else ""
        problems.append((loc, f"{quoted(value)} is not one of {', '.join(self.options)}{hint}"))
        return BAD

    def schema(self, defs: JsonObject) -> JsonObject:
        out: JsonObject = {"type": "string", "enum": list(self.options)}
        if self.enum is None:
            return out
        if self.enum.__doc__ and self.enum.__doc__ != Enum.__doc__:
            out["description"] = self.enum.__doc__.strip()
        defs[self.enum.__name__] = out
        return {"$ref": f"#/$defs/{self.enum.__name__}"}


class ListOf(Type):
    def __init__(self, item: Type, min_length: int = 0, too_short: str = ""):
        self.item, self.min_length, self.too_short = item, min_length, too_short

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        if not isinstance(value, list):
            problems.append((loc, f"must be an array [...], not {describe_value(value)}"))
            return BAD
        if len(value) < self.min_length:
            problems.append((loc, self.too_short or f"at least {self.min_length} items are needed"))
            return BAD
        out = [self.item.check(v, loc + (i,), problems) for i, v in enumerate(value)]
        return BAD if any(v is BAD for v in out) else out

    def schema(self, defs: JsonObject) -> JsonObject:
        out: JsonObject = {"type": "array", "items": self.item.schema(defs)}
        if self.min_length:
            out["minItems"] = self.min_length
        return out


class MapOf(Type):
    """A JSON object with free keys (env, secrets, kwargs): each value checked under its key."""

    def __init__(self, value: Type):
        self.value = value

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        if not isinstance(value, dict):
            problems.append((loc, f"must be an object {{...}}, not {describe_value(value)}"))
            return BAD
        out = {k: self.value.check(v, loc + (k,), problems) for k, v in value.items()}
        return BAD if any(v is BAD for v in out.values()) else out

    def schema(self, defs: JsonObject) -> JsonObject:
        inner = self.value.schema(defs)
        return {"type": "object", "additionalProperties": inner or True}


class Nullable(Type):
    """The value, or null (which means 'not given': the field's default is None)."""

    def __init__(self, inner: Type):
        self.inner = inner

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        return None if value is None else self.inner.check(value, loc, problems)

    def schema(self, defs: JsonObject) -> JsonObject:
        return {"anyOf": [self.inner.schema(defs), {"type": "null"}]}


class Nested(Type):
    """A model inside a model. ``model`` is a function so a model can hold itself (parallel)."""

    def __init__(self, model: Callable[[], type[Model]]):
        self.model = model

    @classmethod
    def named(cls, name: str) -> Nested:
        """The model of that class name, found when first used: how a step kind's field holds
        steps (a group's members) without importing the model, which imports the kinds' registry
        (tests/test_layers.py: no import cycle)."""
        return cls(lambda: Model.by_name[name])

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        return self.model().build(value, loc, problems)

    def schema(self, defs: JsonObject) -> JsonObject:
        model = self.model()
        if model.__name__ not in defs:
            defs[model.__name__] = {}  # placeholder first: the model may refer to itself
            defs[model.__name__] = model.object_schema(defs)
        return {"$ref": f"#/$defs/{model.__name__}"}


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    type: Type
    description: str = ""
    #: Yields problems with a value of the right type. Gets the fields before it that are right
    #: (or defaulted), in declaration order; a field that was refused is absent.
    check: Callable[[JsonValue, JsonObject], Iterable[str]] | None = None
    #: Rewrites the value as written before its type is checked (a lone schedule string -> list).
    before: Callable[[JsonValue], JsonValue] | None = None
    #: The schema of the value as written, when ``before`` accepts more than ``type`` describes.
    json_schema: JsonObject | None = None


_REQUIRED: Any = dataclasses.MISSING


def field(type_: Type, default: JsonValue = _REQUIRED, *, factory: Callable[[], JsonValue] | None = None,
          description: str = "", check: Callable[[JsonValue, JsonObject], Iterable[str]] | None = None,
          before: Callable[[JsonValue], JsonValue] | None = None, json_schema: JsonObject | None = None) -> JsonValue:
    """A model field: its type, default (or factory, for lists, dicts and models) and checks."""
    meta = {"jobplane": FieldSpec(type_, description, check, before, json_schema)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True)
class Slot:
    """One field of a model's table: its name, spec and default (or factory). Most come from
    the dataclass's fields; a model may add slots that are not attributes of its own (a step's
    kind fields, from the kinds registry) and fold them in :meth:`Model.construct`."""

    name: str
    spec: FieldSpec
    default: Any = _REQUIRED
    factory: Callable[[], Any] | None = None

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED and self.factory is None


class Model:
    """Base of the DSL models (frozen, keyword-only dataclasses whose fields come from :func:`field`)."""

    _slots: ClassVar[dict[type, list[Slot]]] = {}
    #: every model class by its name (:meth:`Nested.named`)
    by_name: ClassVar[dict[str, type[Model]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Model.by_name[cls.__name__] = cls

    @classmethod
    def from_definition(cls: type[M], data: JsonValue) -> M:
        """The model of ``data``, or :class:`Invalid` with every problem found in it."""
        problems: Problems = []
        built = cls.build(data, (), problems)
        if problems:
            raise Invalid(problems)
        return built

    @classmethod
    def slots(cls) -> list[Slot]:
        if cls not in Model._slots:
            # every Model subclass is a dataclass (its decorator), which type[Model] cannot say
            Model._slots[cls] = [
                Slot(f.name, f.metadata["jobplane"], f.default,
                     f.default_factory if callable(f.default_factory) else None)
                for f in dataclasses.fields(cls) if "jobplane" in f.metadata]  # type: ignore[arg-type]
        return Model._slots[cls]

    @classmethod
    def construct(cls: type[M], values: JsonObject) -> M:
        """The model from its checked values (one per slot)."""
        return cls(**values)

    @classmethod
    def build(cls: type[M], data: JsonValue, loc: Loc, problems: Problems) -> M:
        if not isinstance(data, dict):
            problems.append((loc, f"must be an object {{...}}, not {describe_value(data)}"))
            return cast("M", BAD)
        before = len(problems)
        slots = cls.slots()
        names = [s.name for s in slots]
        for key in data:
            if key not in names:
                problems.append((loc + (key,), "unknown field" + did_you_mean(str(key), names)))
        values: JsonObject = {}
        refused: set[str] = set()  # the fields given but refused (their problems are recorded)
        for slot in slots:
            spec = slot.spec
            where = loc + (slot.name,)
            if slot.name not in data:
                if slot.default is not _REQUIRED:
                    values[slot.name] = slot.default
                elif slot.factory is not None:
                    values[slot.name] = slot.factory()
                else:
                    problems.append((where, "required field is missing"))
                    refused.add(slot.name)
                continue
            raw = spec.before(data[slot.name]) if spec.before else data[slot.name]
            value = spec.type.check(raw, where, problems)
            if value is BAD:
                refused.add(slot.name)
                continue
            found = list(spec.check(value, values)) if spec.check else []
            problems.extend((where, message) for message in found)
            if found:
                refused.add(slot.name)
            else:
                values[slot.name] = value
        # A refused field hid every rule across the model's fields (issue 65 item 6: a map's
        # bad tolerated_failures hid its shell items step, its max_concurrency its retry; an
        # unknown field hid the missing kind). A refused field that has a default stands in
        # with it, so the rules still run (each model skips those reading a refused field:
        # model_problems' ``refused``); one with no default (required) cannot stand in.
        if refused and any(s.name in refused and s.required for s in slots) or not cls.checkable(frozenset(refused)):
            return cast("M", BAD)
        for slot in slots:
            if slot.name in refused:
                values[slot.name] = slot.default if slot.factory is None else slot.factory()
        built = cls.construct(values)
        found = list(built.model_problems(frozenset(refused)))
        problems.extend((loc, message) for message in found)
        # with refused fields the model stands in for its parent's rules (they read its kind,
        # its members: right), but the definition is still refused (from_definition raises)
        return cast("M", BAD) if found else built

    @classmethod
    def checkable(cls, refused: frozenset[str]) -> bool:
        """Whether the model can stand in, with its defaults for the ``refused`` fields, for
        the rules of the model holding it (a step whose kind field was refused cannot)."""
        return True

    def model_problems(self, refused: frozenset[str] = frozenset()) -> Iterator[str]:
        """Rules across this model's fields. ``refused``: fields whose value was refused (their
        default stands in): a rule reading one of them is skipped, its value was not the author's."""
        return iter(())

    def as_dict(self) -> JsonObject:
        """The model as JSON data (enums as their values), for the catalog and the ASL."""
        return cast(JsonObject, _plain(self))

    @classmethod
    def object_schema(cls, defs: JsonObject) -> JsonObject:
        properties: JsonObject = {}
        required = []
        for slot in cls.slots():
            spec = slot.spec
            prop = dict(spec.json_schema) if spec.json_schema is not None else spec.type.schema(defs)
            if spec.description:
                prop["description"] = spec.description
            if slot.default is not _REQUIRED:
                prop["default"] = _plain(slot.default)
            elif slot.factory is not None and not isinstance(default := slot.factory(), Model):
                prop["default"] = _plain(default)
            elif slot.required:
                required.append(slot.name)
            properties[slot.name] = prop
        out: JsonObject = {"type": "object", "title": cls.__name__, "properties": properties,
                               "additionalProperties": False}
        if cls.__doc__:
            out["description"] = " ".join(cls.__doc__.split())
        if required:
            out["required"] = required
        return out


def json_schema(model: type[Model], title: str) -> JsonObject:
    """A JSON Schema (2020-12) of definitions of ``model``, for editors and `jobplane schema`."""
    defs: JsonObject = {}
    out = model.object_schema(defs)
    out.pop("title")
    defs.pop(model.__name__, None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, **out,
            "$defs": dict(sorted(defs.items()))}


def describe_value(value: JsonValue) -> str:
    """What a value is, in the words of the definition's author (the Jsonnet/JSON names, not the
    Python type library's "valid dictionary"), with the value where it is short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{'true' if value else 'false'} (true or false)"
    if isinstance(value, (int, float)):
        return f"the number {quoted(value)}"
    if isinstance(value, str):
        return f"the string {quoted(value)}"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else "a value"


def _plain(value: JsonValue) -> JsonValue:
    if isinstance(value, Model):
        # a Model instance is a dataclass instance (see Model.slots)
        return {f.name: _plain(getattr(value, f.name))
                for f in dataclasses.fields(value) if "jobplane" in f.metadata}  # type: ignore[arg-type]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
