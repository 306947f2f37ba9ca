"""Whether a job's schedules are deployed as compiled: the cause the fire ledger names for
missed fires (platform/missed.py), and what ``jobplane status`` and the job page show.

A schedule can be changed outside jobplane (the console, a script, a bad apply): deleted,
DISABLED, its expression, timezone or flexible time window edited. EventBridge Scheduler then fires differently or
not at all and says nothing; GetSchedule (the same call locally and on AWS) tells.
"""

from __future__ import annotations

from datetime import timedelta

from jobplane.contract import names
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.types import Client, JsonObject


def deployed_schedules(scheduler: Client, prefix: str, entry: CatalogJob) -> dict[str, JsonObject | None]:
    """The job's schedules as deployed (GetSchedule each), by name; None: not deployed."""
    return {name: _get(scheduler, prefix, name) for name in _names(prefix, entry)}


class DeployedSchedules:
    """The job's schedules as deployed, for a reader that asks again and again (the job page,
    ``jobplane status``): a calendar job deploys one schedule per cron its calendar compiles to
    (36 for a month-end job), and reading each with GetSchedule on every view was 36 calls a
    page (issue 66 item 3). For a job of more than :attr:`LIST_FROM` schedules, one ListSchedules
    (its summaries carry each schedule's State and LastModificationDate,
    https://docs.aws.amazon.com/scheduler/latest/APIReference/API_ScheduleSummary.html) says
    which are there and which changed since they were last read; only those are read again. A
    job of few schedules is read directly (its name prefix may list other jobs' schedules).
    Both calls count against the account's per-second request rates of the Region (GetSchedule
    and ListSchedules each have their own, adjustable:
    https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html), which every
    portal view, `jobplane status` and the ledger share: one call a view instead of one per
    schedule keeps a busy page far from them."""

    LIST_FROM = 2

    def __init__(self, scheduler: Client, prefix: str):
        self.scheduler, self.prefix = scheduler, prefix
        self._read: dict[str, tuple[object, JsonObject]] = {}  # name -> (LastModificationDate, GetSchedule)

    def of(self, entry: CatalogJob) -> dict[str, JsonObject | None]:
        wanted = _names(self.prefix, entry)
        if len(wanted) <= self.LIST_FROM:
            return deployed_schedules(self.scheduler, self.prefix, entry)
        modified = self._listed(names.schedule_name(self.prefix, entry.name, 0), set(wanted))
        found: dict[str, JsonObject | None] = {}
        for name in wanted:
            if name not in modified:
                found[name] = None
                self._read.pop(name, None)
                continue
            known = self._read.get(name)
            if known is not None and known[0] == modified[name]:
                found[name] = known[1]
                continue
            found[name] = got = _get(self.scheduler, self.prefix, name)
            if got is not None:
                self._read[name] = (got.get("LastModificationDate"), got)
        return found

    def _listed(self, name_prefix: str, wanted: set[str]) -> dict[str, object]:
        """The LastModificationDate of each of ``wanted`` that is deployed (every page read)."""
        out: dict[str, object] = {}
        kwargs: JsonObject = {"GroupName": self.prefix, "NamePrefix": name_prefix}
        while True:
            page = self.scheduler.list_schedules(**kwargs)
            for s in page.get("Schedules", []):
                if s.get("Name") in wanted:
                    out[s["Name"]] = s.get("LastModificationDate")
            if not page.get("NextToken"):
                return out
            kwargs["NextToken"] = page["NextToken"]


def _names(prefix: str, entry: CatalogJob) -> list[str]:
    return [names.schedule_name(prefix, entry.name, i) for i in range(len(entry.schedule))]


def _get(scheduler: Client, prefix: str, name: str) -> JsonObject | None:
    try:
        found: JsonObject = scheduler.get_schedule(Name=name, GroupName=prefix)
    except scheduler.exceptions.ResourceNotFoundException:
        return None
    found.pop("ResponseMetadata", None)  # the schedule, not the request that read it (kept)
    return found


def schedule_problems(scheduler: Client, prefix: str, entry: CatalogJob, paused: bool,
                      deployed: dict[str, JsonObject | None] | None = None) -> dict[str, str]:
    """What is wrong with the job's deployed schedules (``deployed``, or read now), by schedule
    name: not deployed, DISABLED though the job is enabled and not paused, or an expression,
    timezone or flexible time window that is not the compiled one. Empty: deployed as compiled."""
    deployed = deployed_schedules(scheduler, prefix, entry) if deployed is None else deployed
    problems = {}
    for (name, found), expression in zip(deployed.items(), entry.schedule):
        if found is None:
            problems[name] = f"schedule {name} is missing (deleted outside jobplane?); deploy the job again"
        elif found.get("State") == "DISABLED" and entry.enabled and not paused:
            problems[name] = (f"schedule {name} is DISABLED outside jobplane (the job is enabled and not paused); "
                              "deploy the job again to enable it, or `jobplane pause` and then `jobplane resume` it")
        elif found.get("ScheduleExpression") != expression:
            problems[name] = (f"schedule {name} says {found.get('ScheduleExpression')} outside jobplane; "
                              f"compiled: {expression}")
        elif (found.get("ScheduleExpressionTimezone") or "UTC") != entry.timezone:
            problems[name] = (f"schedule {name} runs in {found.get('ScheduleExpressionTimezone') or 'UTC'} "
                              f"outside jobplane; compiled: {entry.timezone}")
        elif minutes := _window(found):
            problems[name] = (f"schedule {name} has a flexible time window of {minutes} minutes set outside "
                              "jobplane (each fire may start that much later); compiled: OFF")
    return problems


def flexible_window(deployed: dict[str, JsonObject | None]) -> timedelta:
    """The longest flexible time window of the job's deployed schedules: EventBridge Scheduler
    may start a fire anywhere within it after the fire's time
    (https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-flexible-time-windows.html).
    jobplane compiles OFF; a window set outside jobplane delays what counts as missed."""
    return timedelta(minutes=max((_window(found) for found in deployed.values() if found), default=0))


def _window(schedule: JsonObject) -> int:
    window = schedule.get("FlexibleTimeWindow") or {}
    return int(window.get("MaximumWindowInMinutes") or 0) if window.get("Mode") == "FLEXIBLE" else 0
