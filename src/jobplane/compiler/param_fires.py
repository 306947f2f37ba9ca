"""What a job's steps need to resolve its calendar defaults at a fire (contract/params.py
FireDefaults), from jobplane.toml's [calendars]: its own module, since the calendars import the
model, which imports compiler/params.py (no import cycle: tests/test_layers.py)."""

from __future__ import annotations

import dataclasses

from jobplane.compiler.calendars import calendar_schedule
from jobplane.compiler.model import Job
from jobplane.contract import params as cp
from jobplane.contract.config import PlatformConfig


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
