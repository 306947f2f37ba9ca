"""The days an expectation's ``when`` names (docs/expectations.md), from jobplane.toml's
[calendars], resolved when the job is validated and compiled into the judge's expression: the
calendar's closed and open dates over the compiled years, its weekend, and the job's timezone
as the UTC offsets it takes over those years (JSONata has no time zones: the judge finds the
scheduled time's local date with the offset in force then). A date outside the compiled years
is judged by the weekend alone, as every reader of a calendar does (contract/calendars.py)."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from jobplane.compiler.calendars import _resolved
from jobplane.compiler.model import Job
from jobplane.contract.config import PlatformConfig

from jobplane.compiler.expect_calendar import BUSINESS_DAYS, JOB_CALENDAR, ExpectDays, offsets

__all__ = ["BUSINESS_DAYS", "JOB_CALENDAR", "ExpectDays", "problems", "with_expect_days"]


def problems(job: Job, config: PlatformConfig) -> list[str]:
    """A ``when`` that names no calendar of jobplane.toml."""
    out = []
    for step in job.all_steps():
        for e in step.expect:
            if e.when not in (None, BUSINESS_DAYS) and e.when not in config.calendars.calendars:
                out.append(f"step {step.name!r}: expect {e.metric} when {e.when!r}: 'business_days' or a calendar of "
                           f"jobplane.toml [calendars] ({', '.join(sorted(config.calendars.calendars)) or 'none declared'})")
    return out


def with_expect_days(job: Job, config: PlatformConfig) -> Job:
    """``job`` carrying the days each ``when`` of its expectations names, and a calendar job's
    calendar when a baseline compares its runs by business day of the month."""
    whens = {e.when for s in job.all_steps() for e in s.expect if e.when is not None}
    if job.calendar is not None and any(e.uses_baseline for s in job.all_steps() for e in s.expect):
        whens.add(JOB_CALENDAR)
    if not whens:
        return job
    tz = job.timezone or config.default_timezone
    first, last = config.calendars.years if config.calendars.calendars else (datetime.now().year, datetime.now().year + 1)
    days: dict[str, object] = {}
    for when in sorted(whens):
        name = job.calendar if when in (BUSINESS_DAYS, JOB_CALENDAR) else when
        if name is not None and name in config.calendars.calendars:
            cal = _resolved(config.calendars, name)
            days[when] = ExpectDays(name, tuple(sorted(cal.closed.items())), tuple(sorted(cal.open)), tuple(cal.weekend),
                                    offsets(tz, cal.first_year, cal.last_year))
        elif when == BUSINESS_DAYS:  # no calendar: Monday to Friday in the job's zone
            days[when] = ExpectDays(None, (), (), (5, 6), offsets(tz, first, last))
    return dataclasses.replace(job, expect_days=days)
