"""A job's ``params`` field as the compiler checks it: plain values as before (any JSON, nested
no deeper than rc.MAX_PARAMS_DEPTH), ``jp.param.*`` declarations by contract/params.py's rules,
each problem at the field below ``params`` it is about (``params.tenant.pattern``)."""

from __future__ import annotations

from jobplane.compiler.fields import BAD, Anything, Loc, MapOf, Problems
from jobplane.contract import params as cp
from jobplane.contract.types import JsonObject, JsonValue


class ParamsType(MapOf):
    """``params``: names to plain values or typed declarations."""

    def __init__(self) -> None:
        super().__init__(Anything())

    def check(self, value: JsonValue, loc: Loc, problems: Problems) -> JsonValue:
        out = super().check(value, loc, problems)
        if out is BAD:
            return BAD
        _, found = cp.declared(out)
        for where, message in found:
            problems.append((loc + tuple(where.split(".", 1)), message))
        return BAD if found else out

    def schema(self, defs: JsonObject) -> JsonObject:
        declaration: JsonObject = {
            "type": "object", "required": [cp.MARKER],
            "properties": {cp.MARKER: {"enum": [t for t in cp.TYPES if t != "any"]}},
            "description": "A typed parameter (jp.param.*): docs/dsl.md#typed-parameters"}
        return {"type": "object", "additionalProperties": {"anyOf": [declaration, {}]}}


def schedule_problems(job_params: JsonObject, scheduled: bool, has_calendar: bool) -> list[tuple[str, str]]:
    """Rules across fields: a scheduled (or ``after``) job's fires have no one to give a required
    parameter; ``previous_business_day`` reads the job's calendar."""
    ps, _ = cp.declared(job_params)
    out = []
    for s in ps.specs:
        if scheduled and s.required:
            out.append((s.name, "is required (no default), but the job's schedule or after starts runs that give "
                                "none: give it a default"))
        if s.calendar in cp.NEEDS_CALENDAR and not has_calendar:
            out.append((f"{s.name}.default", f"{s.calendar} needs the job's calendar (calendar: '<name>' of "
                                             "jobplane.toml's [calendars])"))
    return out

