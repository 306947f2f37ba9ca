"""``jobplane plan``'s words for a calendar job whose fires change: its rules, and the fires of
the next 90 days added and removed (a new calendar, a holiday added by law, a closure, a rule
changed), each from the one computation of fires (contract/business_fires.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from jobplane.contract.business_fires import Fire
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.job_fires import job_fires
from jobplane.contract.schedule import validate_timezone
from jobplane.contract.schedule_kinds import kind_of

#: How far ahead the plan compares a calendar job's fires.
HORIZON = timedelta(days=90)
#: At most this many added or removed fires are listed (the count is always given).
LISTED = 20
#: A calendar whose compiled years end within this long is named by every plan until extended.
YEARS_WARNING = timedelta(days=90)


def fires(job: CatalogJob, start: datetime, end: datetime) -> list[Fire]:
    """The job's fires from ``start`` to ``end``: its calendar's, or its schedules' own (rate()
    schedules, which count from their deployment, are left out)."""
    if job.calendar_schedule is None and any(kind_of(e).counts_from_deployment for e in job.schedule):
        job = job.model_copy(update={"schedule": [e for e in job.schedule if not kind_of(e).counts_from_deployment]})
    return job_fires(job, start, end)


def rule_words(expression: str) -> str:
    """A calendar job's declared expression: a business-day rule in words, a cron or at() as written."""
    kind = kind_of(expression)
    return kind.describe(expression) if kind.needs_calendar else expression


def schedule_words(job: CatalogJob) -> str:
    """The schedule as declared: a calendar job's rules (not the crons compiled from them)."""
    if job.calendar is None:
        return " + ".join(job.schedule) or job.started_by
    rules = " + ".join(rule_words(r) for r in job.rules)
    return f"{rules} on {job.calendar.name} business days"


def calendar_change_lines(old: CatalogJob, new: CatalogJob, now: datetime) -> list[str]:
    """What a change of a calendar job's schedule, calendar or timezone does to its fires."""
    lines = []
    if (schedule_words(old), old.timezone) != (schedule_words(new), new.timezone):
        lines.append(f"schedule: {schedule_words(old)} ({old.timezone}) -> {schedule_words(new)} ({new.timezone})")
    if old.calendar != new.calendar and old.calendar is not None and new.calendar is not None:
        if (old.calendar.first_year, old.calendar.last_year) != (new.calendar.first_year, new.calendar.last_year):
            lines.append(f"calendar years: {old.calendar.first_year}-{old.calendar.last_year} -> "
                         f"{new.calendar.first_year}-{new.calendar.last_year}")
        if old.calendar.source != new.calendar.source:
            lines.append(f"holiday data: {old.calendar.source or 'none'} -> {new.calendar.source or 'none'}")
    end = now + HORIZON
    before = {f.at: f for f in fires(old, now, end)}
    after = {f.at: f for f in fires(new, now, end)}
    added = [after[t] for t in sorted(set(after) - set(before))]
    removed = [before[t] for t in sorted(set(before) - set(after))]
    zone = validate_timezone(new.timezone)
    if added or removed:
        lines.append(f"fires added/removed by this calendar change (next {HORIZON.days} days): "
                     f"{len(added)} added, {len(removed)} removed")
        for sign, group in (("+", added), ("-", removed)):
            lines += [f"  {sign} {f.at.astimezone(zone).strftime('%Y-%m-%d %a %H:%M %Z')}"
                      + (f" ({f.note})" if f.note else "") for f in group[:LISTED]]
            if len(group) > LISTED:
                lines.append(f"  {sign} ... and {len(group) - LISTED} more")
    elif not lines:
        lines.append(f"schedules recompiled; the fires of the next {HORIZON.days} days are unchanged")
    return lines


def years_ending_lines(jobs: list[CatalogJob], now: datetime) -> list[str]:
    """A warning for each calendar whose compiled years (``[calendars] years``) end within
    :data:`YEARS_WARNING` of ``now`` or have ended, naming its jobs: past the last year no
    schedule is deployed, so they stop firing and the fire ledger records MISSED fires. A plan
    runs on every pull request, so the warning reaches the team months before that."""
    ending: dict[tuple[str, int], list[str]] = {}
    for job in jobs:
        cal = job.calendar
        if cal is None:
            continue
        end = datetime(cal.last_year + 1, 1, 1, tzinfo=validate_timezone(job.timezone))
        if end - now <= YEARS_WARNING:
            ending.setdefault((cal.name, cal.last_year), []).append(job.name)
    lines = []
    for (name, last), names in sorted(ending.items()):
        days = (datetime(last + 1, 1, 1, tzinfo=now.tzinfo) - now).days
        when = f"ended {-days} days ago" if days < 0 else f"end in {days} days"
        shown = ", ".join(sorted(names)[:LISTED]) + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
        lines.append(f"WARNING: calendar {name}'s compiled years {when} (last: {last}): extend [calendars] years "
                     f"in jobplane.toml and recompile, or its jobs stop firing after {last}-12-31 and their "
                     f"business-day fires are recorded MISSED: {shown}")
    return lines


def next_fire_lines(job: CatalogJob, now: datetime, count: int) -> list[str]:
    zone = validate_timezone(job.timezone)
    found = fires(job, now, now + timedelta(days=400))[:count]
    return ["next: " + ", ".join(f.at.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z") for f in found)]
