"""A job's typed parameters (issue 69 part 2): what each takes, its default, and the JSON Schema
every starter checks a run's params against before anything starts.

A job's ``params`` maps names to either a plain JSON value (its own default, of any type: what
``params`` always was) or a declaration ``jp.param.*`` writes: an object with the key
:data:`MARKER` naming the type. The compiler reads declarations with :func:`declared` (its
problems name the field), renders :func:`to_schema` into the catalog, and every reader of the
catalog gets the same :class:`ParamSet` back with :func:`from_schema`: the CLI, the portal's run
form, backfills and the API validate with :meth:`ParamSet.problems` (every problem at once,
each naming the parameter and the rule), through the control plane's one ``checked_params``.

Calendar defaults (``last_closed`` month, ``previous_business_day``, ``fire_date``, ``today``)
are not values: :meth:`ParamSet.resolve` computes them from the run's scheduled time in the
job's timezone (and, for business days, its calendar), so the same fire gives the same value
wherever it is resolved.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from jobplane.contract.types import JsonObject, JsonValue, Params

if TYPE_CHECKING:
    from jobplane.contract.calendars import CatalogCalendar

#: The key that makes a params value a declaration (``jp.param.month(...)`` writes it).
MARKER = "$param"
#: Types a parameter may declare; ``any`` is a plain value's (no rule but JSON).
TYPES = ("string", "int", "number", "bool", "date", "month", "enum", "any")
#: Defaults resolved at the fire, by the type they give.
CALENDAR_DEFAULTS: dict[str, tuple[str, ...]] = {
    "month": ("last_closed", "fire_month"),
    "date": ("previous_business_day", "fire_date", "today"),
}
#: The calendar defaults that read the job's calendar (the compiler refuses them without one).
NEEDS_CALENDAR = frozenset({"previous_business_day"})
#: The schema keyword that carries a calendar default (JSON Schema keeps unknown keywords).
CALENDAR_KEY = "x-jobplane-default"
#: The schema keyword that carries the jobplane type (``int`` and ``month`` are not JSON types).
TYPE_KEY = "x-jobplane-type"

_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_MONTH = re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$")
#: What a declaration may say, besides the marker (each type reads the ones that apply).
_KEYS = ("default", "required", "description", "pattern", "choices", "min_length", "max_length", "min", "max")


@dataclass(frozen=True)
class ParamProblem:
    """One rule a value breaks: the parameter's name, the rule (``type``, ``pattern``, ``enum``,
    ``min``, ``max``, ``min_length``, ``max_length``, ``required``, ``unknown``), and a sentence."""

    name: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


@dataclass(frozen=True)
class ParamSpec:
    """One parameter. ``default`` is its value when none is given (``has_default`` says whether
    there is one: null is a value); ``calendar`` a calendar default, resolved at the fire."""

    name: str
    type: str = "any"
    default: JsonValue = None
    has_default: bool = True
    calendar: str | None = None
    description: str = ""
    pattern: str | None = None
    choices: tuple[JsonValue, ...] = ()
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    optional: bool = False  # no default, and a run need not give it (``required=false``): absent then

    @property
    def required(self) -> bool:
        """A run must give it: no default, no calendar default, not optional."""
        return not self.has_default and self.calendar is None and not self.optional

    def problems(self, value: JsonValue) -> list[ParamProblem]:
        """The rules ``value`` breaks (none for an ``any`` parameter: a plain value's)."""
        def bad(rule: str, message: str) -> list[ParamProblem]:
            return [ParamProblem(self.name, rule, message)]

        t = self.type
        if t == "any":
            return []
        if t == "bool":
            return [] if isinstance(value, bool) else bad("type", f"must be true or false, not {_shown(value)}")
        if t in ("int", "number"):
            ok = isinstance(value, int) if t == "int" else isinstance(value, (int, float))
            if isinstance(value, bool) or not ok:
                return bad("type", f"must be {'a whole number' if t == 'int' else 'a number'}, not {_shown(value)}")
            out = []
            if self.minimum is not None and value < self.minimum:
                out += bad("min", f"must be at least {_num(self.minimum)}, not {_shown(value)}")
            if self.maximum is not None and value > self.maximum:
                out += bad("max", f"must be at most {_num(self.maximum)}, not {_shown(value)}")
            return out
        if t == "enum":
            return [] if value in self.choices else bad(
                "enum", f"must be one of {', '.join(_shown(c) for c in self.choices)}, not {_shown(value)}")
        if not isinstance(value, str):
            return bad("type", f"must be {_WHAT[t]}, not {_shown(value)}")
        if t == "date":
            return [] if _is_date(value) else bad("type", f"must be a date YYYY-MM-DD, not {_shown(value)}")
        if t == "month":
            return [] if _MONTH.match(value) else bad("type", f"must be a month YYYY-MM, not {_shown(value)}")
        out = []
        if self.choices and value not in self.choices:
            out += bad("enum", f"must be one of {', '.join(_shown(c) for c in self.choices)}, not {_shown(value)}")
        if self.pattern is not None and not re.search(self.pattern, value):
            out += bad("pattern", f"must match {self.pattern}, not {_shown(value)}")
        if self.min_length is not None and len(value) < self.min_length:
            out += bad("min_length", f"must be at least {self.min_length} characters, not {len(value)}")
        if self.max_length is not None and len(value) > self.max_length:
            out += bad("max_length", f"must be at most {self.max_length} characters, not {len(value)}")
        return out

    def from_text(self, text: str) -> JsonValue:
        """A value a person typed (``-p name=value``, a form's input) as this type takes it: the
        text itself for the string-like types, JSON for the others (an enum of numbers: JSON)."""
        if self.type in ("string", "date", "month") or (self.type == "enum" and text in self.choices):
            return text
        if self.type == "bool" and text.lower() in ("true", "false", "on", "off", "yes", "no"):
            return text.lower() in ("true", "on", "yes")
        try:
            return json.loads(text)
        except ValueError:
            return text
        except RecursionError:
            raise ValueError(f"{self.name}: the value nests too deep") from None

    def schema(self) -> JsonObject:
        """This parameter's JSON Schema (2020-12); the jobplane type and a calendar default ride
        in ``x-`` keywords, which validators ignore and :func:`from_schema` reads back."""
        out: JsonObject = {TYPE_KEY: self.type}
        t = self.type
        if t in ("string", "date", "month"):
            out["type"] = "string"
        elif t in ("int", "number", "bool"):
            out["type"] = {"int": "integer", "number": "number", "bool": "boolean"}[t]
        if t == "date":
            out["format"] = "date"
        if t == "month":
            out["pattern"] = _MONTH.pattern
        if t == "enum" or (t == "string" and self.choices):
            out["enum"] = list(self.choices)
        if self.pattern is not None:
            out["pattern"] = self.pattern
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.has_default:
            out["default"] = self.default
        if self.calendar is not None:
            out[CALENDAR_KEY] = self.calendar
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True)
class ParamSet:
    """A job's parameters, in the order declared."""

    specs: tuple[ParamSpec, ...] = field(default_factory=tuple)

    def names(self) -> list[str]:
        return [s.name for s in self.specs]

    def get(self, name: str) -> ParamSpec | None:
        return next((s for s in self.specs if s.name == name), None)

    @property
    def typed(self) -> bool:
        """Whether any parameter declares a type (an all-plain set validates nothing but names)."""
        return any(s.type != "any" for s in self.specs)

    def defaults(self) -> Params:
        """The values a run gets when none is given and no calendar is asked: a scheduled fire's
        params (the compiled schedule input, the state machine's defaults)."""
        return {s.name: s.default for s in self.specs if s.has_default}

    def calendar_defaults(self) -> dict[str, str]:
        return {s.name: s.calendar for s in self.specs if s.calendar is not None}

    def problems(self, params: Params, *, complete: bool = True) -> list[ParamProblem]:
        """Every rule ``params`` break, in declaration order then unknown names: a value of the
        wrong type or outside its rules, a parameter the job does not declare, and (``complete``:
        the params a run will have) a required one missing."""
        out: list[ParamProblem] = []
        for s in self.specs:
            if s.name in params:
                out += s.problems(params[s.name])
            elif complete and s.required:
                out.append(ParamProblem(s.name, "required", "is required (it has no default)"))
        declared = set(self.names())
        out += [ParamProblem(k, "unknown", "is not a parameter of this job") for k in params if k not in declared]
        return out

    def from_text(self, items: dict[str, str]) -> Params:
        """Typed values from text a person typed, by name (an unknown name: JSON, or the text)."""
        out: Params = {}
        for name, text in items.items():
            spec = self.get(name) or ParamSpec(name)
            out[name] = spec.from_text(text)
        return out

    def from_items(self, items: list[str]) -> Params:
        """``key=value`` items a person typed (``-p``, a form's lines), each value as its
        parameter's type takes it (:meth:`ParamSpec.from_text`: ``-p tenant=42`` stays the
        string a string parameter wants); a name the job does not declare as JSON, or the text."""
        from jobplane.contract.execution_input import parse_params

        parse_params(items)  # the syntax: ValueError naming a line that is not key=value
        texts = {key.strip(): value.strip() for key, _, value in (i.strip().partition("=") for i in items) if key.strip()}
        return self.from_text(texts)

    def resolve(self, params: Params, scheduled_time: datetime, tz: str,
                calendar: CatalogCalendar | None = None, now: datetime | None = None) -> tuple[Params, Params]:
        """``params`` with each calendar default they lack resolved for a fire at
        ``scheduled_time`` in ``tz`` (``today``: the day of ``now``, the start; the fire's day
        when not given), and the resolved values alone (what the run records)."""
        resolved: Params = {}
        for s in self.specs:
            if s.calendar is not None and s.name not in params:
                resolved[s.name] = calendar_value(s.calendar, scheduled_time, tz, calendar, now)
        return {**params, **resolved}, resolved

    def schema(self, title: str = "") -> JsonObject:
        """The job's params as one JSON Schema (2020-12) object: unknown names refused."""
        out: JsonObject = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                           "properties": {s.name: s.schema() for s in self.specs},
                           "additionalProperties": False}
        if title:
            out["title"] = title
        required = [s.name for s in self.specs if s.required]
        if required:
            out["required"] = required
        return out


_WHAT = {"string": "a string", "date": "a date YYYY-MM-DD", "month": "a month YYYY-MM"}


def _shown(value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _is_date(text: str) -> bool:
    if not _DATE.match(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def calendar_value(rule: str, scheduled_time: datetime, tz: str, calendar: CatalogCalendar | FireDefaults | None,
                   now: datetime | None = None) -> str:
    """A calendar default's value for a fire at ``scheduled_time``, in the job's timezone:
    ``last_closed`` the month before the fire's, ``fire_month`` the fire's, ``fire_date`` its
    day, ``today`` the day of ``now`` (the start), ``previous_business_day`` the last open day
    of ``calendar`` before the fire's day (weekends only when there is no calendar)."""
    zone = ZoneInfo(tz)
    day = scheduled_time.astimezone(zone).date()
    if rule == "fire_date":
        return day.isoformat()
    if rule == "today":
        return (now or scheduled_time).astimezone(zone).date().isoformat()
    if rule == "fire_month":
        return f"{day.year:04d}-{day.month:02d}"
    if rule == "last_closed":
        last = day.replace(day=1) - timedelta(days=1)
        return f"{last.year:04d}-{last.month:02d}"
    if rule == "previous_business_day":
        d = day - timedelta(days=1)
        for _ in range(366):
            if (calendar.is_open(d) if calendar is not None else d.weekday() < 5):
                return d.isoformat()
            d -= timedelta(days=1)
        raise ValueError(f"no business day in the year before {day.isoformat()}")
    raise ValueError(f"unknown calendar default {rule!r}")


@dataclass(frozen=True)
class FireDefaults:
    """What resolving a job's calendar defaults at a fire needs, compiled into each step's
    environment (``JOBPLANE_PARAM_DEFAULTS``) so the runner resolves a scheduled fire's with the
    very function the control plane resolves a manual run's: the rules by parameter, the job's
    timezone, and its calendar's closed and open days over the compiled years (only when a
    rule reads it: ``previous_business_day``). No library of holidays at run time."""

    tz: str
    rules: dict[str, str]
    closed: frozenset[str] = frozenset()
    opened: frozenset[str] = frozenset()
    weekend: tuple[int, ...] = (5, 6)

    def is_open(self, d: date) -> bool:
        text = d.isoformat()
        return text in self.opened or (text not in self.closed and d.weekday() not in self.weekend)

    def resolve(self, params: Params, scheduled_time: str) -> tuple[Params, Params]:
        """``params`` with each rule's value for the fire at ``scheduled_time`` (ISO 8601) that
        they do not give, and those values alone."""
        at = datetime.fromisoformat(scheduled_time.replace("Z", "+00:00"))
        resolved = {name: calendar_value(rule, at, self.tz, self) for name, rule in self.rules.items()
                    if name not in params}
        return {**params, **resolved}, resolved

    def to_json(self) -> JsonObject:
        out: JsonObject = {"tz": self.tz, "rules": dict(sorted(self.rules.items()))}
        if any(r in NEEDS_CALENDAR for r in self.rules.values()):
            out |= {"closed": sorted(self.closed), "open": sorted(self.opened), "weekend": list(self.weekend)}
        return out

    @classmethod
    def from_json(cls, raw: JsonValue) -> FireDefaults:
        if not (isinstance(raw, dict) and isinstance(raw.get("tz"), str) and isinstance(raw.get("rules"), dict)):
            raise ValueError("not a job's fire defaults: {\"tz\": ..., \"rules\": {...}}")
        return cls(tz=raw["tz"], rules={str(k): str(v) for k, v in raw["rules"].items()},
                   closed=frozenset(raw.get("closed") or ()), opened=frozenset(raw.get("open") or ()),
                   weekend=tuple(int(d) for d in raw.get("weekend") or (5, 6)))


def is_declaration(value: JsonValue) -> bool:
    return isinstance(value, dict) and MARKER in value


def declared(params: JsonObject) -> tuple[ParamSet, list[tuple[str, str]]]:
    """The parameters of a job's ``params`` as written, and the problems of its declarations as
    (the field below ``params``, message): an unknown type or key, a rule of the wrong shape, a
    default its own rules refuse, an unknown calendar default."""
    specs: list[ParamSpec] = []
    problems: list[tuple[str, str]] = []
    for name, value in params.items():
        if not is_declaration(value):
            specs.append(ParamSpec(name, default=value))
            continue
        spec, found = _declaration(name, value)
        problems += [(f"{name}{'.' + where if where else ''}", message) for where, message in found]
        if spec is not None:
            specs.append(spec)
    return ParamSet(tuple(specs)), problems


def _declaration(name: str, d: JsonObject) -> tuple[ParamSpec | None, list[tuple[str, str]]]:
    problems: list[tuple[str, str]] = []
    t = d.get(MARKER)
    if t not in TYPES or t == "any":
        return None, [("", f"unknown parameter type {_shown(t)}; one of {', '.join(x for x in TYPES if x != 'any')}")]
    for key in d:
        if key != MARKER and key not in _KEYS:
            problems.append((key, "unknown key; " + ", ".join(_KEYS)))
    description = d.get("description", "") or ""
    if not isinstance(description, str):
        problems.append(("description", "must be a string"))
        description = ""
    pattern, choices = d.get("pattern"), d.get("choices")
    if pattern is not None:
        if t != "string" or not isinstance(pattern, str):
            problems.append(("pattern", "only a string parameter takes a pattern (a string)"))
            pattern = None
        else:
            try:
                re.compile(pattern)
            except re.error as e:
                problems.append(("pattern", f"not a regular expression: {e}"))
                pattern = None
    if choices is not None and (t not in ("string", "enum") or not isinstance(choices, list) or not choices):
        problems.append(("choices", "only a string or enum parameter takes choices (a non-empty array)"))
        choices = None
    if t == "enum" and not choices:
        problems.append(("choices", "an enum parameter needs its choices"))
    bounds: dict[str, int | float | None] = {}
    for key, kinds, types in (("min_length", (int,), ("string",)), ("max_length", (int,), ("string",)),
                              ("min", (int, float), ("int", "number")), ("max", (int, float), ("int", "number"))):
        v = d.get(key)
        if v is not None and (t not in types or isinstance(v, bool) or not isinstance(v, kinds)):
            problems.append((key, f"only a {' or '.join(types)} parameter takes {key} (a number)"))
            v = None
        bounds[key] = v
    required = d.get("required")
    if required is not None and not isinstance(required, bool):
        problems.append(("required", "must be true or false"))
        required = None
    has_default, default, calendar = "default" in d and d["default"] is not None, d.get("default"), None
    if has_default and isinstance(default, str) and default in CALENDAR_DEFAULTS.get(str(t), ()):
        has_default, default, calendar = False, None, default
    if required and (has_default or calendar is not None):
        problems.append(("required", "a required parameter has no default"))
    # no default (nor a calendar one): required unless it says required=false (optional: absent)
    optional = required is False and not has_default and calendar is None
    spec = ParamSpec(name, type=str(t), default=default, has_default=has_default, calendar=calendar,
                     description=description, pattern=pattern, choices=tuple(choices or ()),
                     min_length=_int(bounds["min_length"]), max_length=_int(bounds["max_length"]),
                     minimum=bounds["min"], maximum=bounds["max"], optional=optional)
    if has_default:
        hint = (f"; or one of {', '.join(CALENDAR_DEFAULTS[str(t)])}, resolved at the fire"
                if t in CALENDAR_DEFAULTS else "")
        problems += [("default", f"{p.message} (its own rule {p.rule}){hint}") for p in spec.problems(default)]
    return (None if problems else spec), problems


def _int(value: int | float | None) -> int | None:
    return None if value is None else int(value)


def from_schema(schema: JsonValue, plain: Params | None = None) -> ParamSet:
    """The parameters a catalog's schema declares (:meth:`ParamSet.schema`); without one (a
    catalog from before typed params), ``plain``'s values as plain defaults."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return ParamSet(tuple(ParamSpec(k, default=v) for k, v in (plain or {}).items()))
    specs = []
    required = schema.get("required") or []
    for name, p in schema["properties"].items():
        if not isinstance(p, dict):
            continue
        specs.append(ParamSpec(
            name, type=str(p.get(TYPE_KEY, "any")), default=p.get("default"), has_default="default" in p,
            calendar=p.get(CALENDAR_KEY), description=str(p.get("description", "")),
            pattern=p.get("pattern") if p.get(TYPE_KEY) == "string" else None,
            choices=tuple(p.get("enum") or ()), min_length=p.get("minLength"), max_length=p.get("maxLength"),
            minimum=p.get("minimum"), maximum=p.get("maximum"),
            optional="default" not in p and CALENDAR_KEY not in p and name not in required))
    return ParamSet(tuple(specs))
