"""A job's ``params`` field as the compiler checks it: plain values as before (any JSON, nested
no deeper than rc.MAX_PARAMS_DEPTH), ``jp.param.*`` declarations by contract/params.py's rules,
each problem at the field below ``params`` it is about (``params.tenant.pattern``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from jobplane.compiler.fields import BAD, Anything, Loc, MapOf, Problems
from jobplane.contract import params as cp
from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from jobplane.compiler.model import Job
    from jobplane.contract.config import PlatformConfig


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


def with_fire_defaults(job: Job, config: PlatformConfig) -> Job:
    """``job`` carrying what its steps' runner needs to resolve its calendar defaults at a fire:
    its timezone and, for ``previous_business_day``, its calendar's closed and open days over the
    compiled years (compiler/calendars.py resolves them from jobplane.toml)."""
    rules = job.param_set.calendar_defaults()
    if not rules:
        return job
    closed: frozenset[str] = frozenset()
    opened: frozenset[str] = frozenset()
    weekend: tuple[int, ...] = (5, 6)
    if job.calendar is not None and any(r in cp.NEEDS_CALENDAR for r in rules.values()):
        from jobplane.compiler.calendars import calendar_schedule

        try:
            cs = calendar_schedule(job, config)
        except Exception:  # an unknown calendar: calendar_problems names it
            cs = None
        if cs is not None:
            closed, opened = frozenset(cs.calendar.closed), frozenset(cs.calendar.open)
            weekend = tuple(cs.calendar.weekend)
    fd = cp.FireDefaults(tz=job.timezone or config.default_timezone, rules=rules, closed=closed, opened=opened,
                         weekend=weekend)
    return dataclasses.replace(job, param_fire_defaults=fd)
