"""Whether a job's schedules are deployed as compiled: the cause the fire ledger names for
missed fires (platform/missed.py), and what ``jobplane status`` and the job page show.

A schedule can be changed outside jobplane (the console, a script, a bad apply): deleted,
DISABLED, its expression or timezone edited. EventBridge Scheduler then fires differently or
not at all and says nothing; GetSchedule (the same call locally and on AWS) tells.
"""

from __future__ import annotations

from typing import Any

from jobplane.contract import names
from jobplane.contract.catalog import CatalogJob


def schedule_problems(scheduler: Any, prefix: str, entry: CatalogJob, paused: bool) -> dict[str, str]:
    """What is wrong with the job's deployed schedules, by schedule name (GetSchedule each): not
    deployed, DISABLED though the job is enabled and not paused, or an expression or timezone
    that is not the compiled one. Empty: deployed as compiled."""
    problems = {}
    for i, expression in enumerate(entry.schedule):
        name = names.schedule_name(prefix, entry.name, i)
        try:
            found = scheduler.get_schedule(Name=name, GroupName=prefix)
        except scheduler.exceptions.ResourceNotFoundException:
            problems[name] = f"schedule {name} is missing (deleted outside jobplane?); deploy the job again"
            continue
        if found.get("State") == "DISABLED" and entry.enabled and not paused:
            problems[name] = (f"schedule {name} is DISABLED outside jobplane (the job is enabled and not paused); "
                              "deploy the job again to enable it, or `jobplane pause` and then `jobplane resume` it")
        elif found.get("ScheduleExpression") != expression:
            problems[name] = (f"schedule {name} says {found.get('ScheduleExpression')} outside jobplane; "
                              f"compiled: {expression}")
        elif (found.get("ScheduleExpressionTimezone") or "UTC") != entry.timezone:
            problems[name] = (f"schedule {name} runs in {found.get('ScheduleExpressionTimezone') or 'UTC'} "
                              f"outside jobplane; compiled: {entry.timezone}")
    return problems
