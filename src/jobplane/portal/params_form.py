"""A job's typed parameters as the portal shows them (contract/params.py): the run form's
inputs (one control per type, pre-filled with the default a run started now would get, its
calendar defaults resolved in the job's timezone) and the schema the API serves."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.params import ParamSpec, calendar_value
from jobplane.contract.types import JsonObject


@dataclass(frozen=True)
class FormInput:
    """One input of the run form: ``control`` is the HTML input type (or ``select``,
    ``checkbox``, ``textarea`` for a plain value of any JSON), ``value`` its text."""

    name: str
    control: str
    value: str
    required: bool
    description: str
    rule: str  # what it takes, in words (shown beside it)
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    minimum: str | None = None
    maximum: str | None = None
    checked: bool = False


def _default_now(spec: ParamSpec, entry: CatalogJob, now: datetime) -> object:
    if spec.calendar is not None:
        return calendar_value(spec.calendar, now, entry.timezone, entry.calendar, now)
    return spec.default if spec.has_default else None


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def form_inputs(entry: CatalogJob, now: datetime | None = None) -> list[FormInput]:
    """The run form's inputs, in the order the job declares its params."""
    now = now or datetime.now(timezone.utc)
    out = []
    for s in entry.param_set().specs:
        value = _default_now(s, entry, now)
        rule = {"string": "text", "int": "a whole number", "number": "a number", "bool": "true or false",
                "date": "a date", "month": "a month (YYYY-MM)", "enum": "one of the choices",
                "any": "JSON, or text"}[s.type]
        if s.calendar is not None:
            rule += f"; default {s.calendar.replace('_', ' ')}, resolved at the run's start"
        if s.pattern:
            rule += f"; matching {s.pattern}"
        common = dict(name=s.name, value=_text(value), required=s.required, description=s.description, rule=rule)
        if s.type == "bool":
            out.append(FormInput(control="checkbox", checked=value is True, **common))  # type: ignore[arg-type]
        elif s.type == "enum" or (s.type == "string" and s.choices):
            out.append(FormInput(control="select", choices=tuple(_text(c) for c in s.choices), **common))  # type: ignore[arg-type]
        elif s.type in ("int", "number"):
            out.append(FormInput(control="number", minimum=_text(s.minimum), maximum=_text(s.maximum),
                                 **common))  # type: ignore[arg-type]
        elif s.type in ("date", "month"):
            out.append(FormInput(control=s.type, pattern=r"[0-9]{4}-[0-9]{2}" if s.type == "month" else None,
                                 **common))  # type: ignore[arg-type]
        elif s.type == "string":
            out.append(FormInput(control="text", pattern=s.pattern, **common))  # type: ignore[arg-type]
        else:
            out.append(FormInput(control="textarea", **common))  # type: ignore[arg-type]
    return out


def form_params(entry: CatalogJob, form: dict[str, str], checked: set[str]) -> JsonObject:
    """The params a submitted run form gives: each input's text as its type takes it, a
    checkbox by whether it is ticked, an empty optional input left to the job's default."""
    param_set = entry.param_set()
    texts: dict[str, str] = {}
    out: JsonObject = {}
    for s in param_set.specs:
        if s.type == "bool":
            out[s.name] = s.name in checked
        elif form.get(s.name, "").strip() != "" or s.type == "string" and s.name in form and s.has_default:
            texts[s.name] = form.get(s.name, "").strip()
    out.update(param_set.from_text(texts))
    return out


def schema_now(entry: CatalogJob, now: datetime | None = None) -> JsonObject:
    """The job's params schema, with each calendar default's value for a run started now."""
    now = now or datetime.now(timezone.utc)
    schema = entry.param_set().schema(title=f"{entry.name} params")
    for s in entry.param_set().specs:
        if s.calendar is not None:
            schema["properties"][s.name]["x-jobplane-default-now"] = _default_now(s, entry, now)
    return schema


def text_params(entry: CatalogJob, text: str) -> JsonObject:
    """A form's ``key=value`` lines (the backfill form's box) as the job's typed parameters take
    them (a string parameter keeps ``42`` as text); a line that is not key=value: Invalid."""
    from jobplane.platform.control import Invalid

    try:
        return dict(entry.param_set().from_items(text.splitlines()))
    except ValueError as e:
        raise Invalid(f"params: {e}", {"params": str(e)}) from None
