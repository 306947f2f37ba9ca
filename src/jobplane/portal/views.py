"""How the portal words things: schedules, durations, times in a job's timezone."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo

from jobplane.contract import policies
from jobplane.contract.catalog import StepRetry
from jobplane.contract.schedule_kinds import kind_of
from jobplane.contract.step_kinds import call_of
from jobplane.contract.clock import parse_iso
from jobplane.contract.attempts import attempt_rows
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.attempts import Attempt
from jobplane.contract.records import ExecutionRecord, JobState
from jobplane.platform.control import ExecutionView
from jobplane.contract.types import JsonObject


@lru_cache(maxsize=4096)  # cron-descriptor loads its locale per call: ~2/3 of the jobs page (bench/portal.py)
def schedule_words(expression: str) -> str:
    """'cron(30 23 L * ? *)' -> 'At 11:30 PM, on the last day of the month'. cron-descriptor
    reads the six EventBridge fields (year last); day-of-week numbers are EventBridge's 1=SUN.
    A calendar job's business-day rule: its own words. Each kind words its own
    (contract/schedule_kinds.py)."""
    kind = kind_of(expression)
    kind.parse(expression)  # an expression that does not parse is refused, as before
    return kind.describe(expression)


def duration(start: str | None, end: str | None) -> str:
    if not start or not end:
        return ""
    seconds = (parse_iso(end) - parse_iso(start)).total_seconds()
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def duration_seconds(start: str | None, end: str | None) -> float | None:
    return (parse_iso(end) - parse_iso(start)).total_seconds() if start and end else None


def local_time(value: str | datetime | None, zone: str) -> str:
    if not value:
        return ""
    return _local_time(parse_iso(value) if isinstance(value, str) else value, zone)


@lru_cache(maxsize=8192)  # the jobs page words ~3,000 next fires, the same ones within a minute
def _local_time(when: datetime, zone: str) -> str:
    return when.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %a %H:%M %Z")


def short_time(value: str | None) -> str:
    return value.replace("T", " ")[:19] + " UTC" if value else ""


@dataclass(frozen=True)
class StepRow(Attempt):
    """An attempt as the execution page shows it: with how long it took, in words."""

    duration: str = ""


def step_rows(view: ExecutionView) -> list[StepRow]:
    """The execution page's step timeline: one row per attempt, with what the record knows
    (exit code, error) laid over what the history knows (times), and each attempt's duration."""
    return [StepRow(**dataclasses.asdict(row), duration=duration(row.started_at, row.finished_at))
            for row in attempt_rows(view.record.steps or {} if view.record else {}, view.timeline)]


def step_call(target: JsonObject | None) -> str:
    """A step's target as a person would write the call: ``module:function(day="x", n=1)``,
    ``manage.py post_ledger --period 2026-10``, or a shell command line (contract/step_kinds.py)."""
    return call_of(target)


def seconds(value: int | float | None) -> str:
    """86400 -> '1 d', 5400 -> '1 h 30 min', 90 -> '1 min 30 s'."""
    if value is None:
        return ""
    total = int(value)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        n, total = divmod(total, size)
        if n:
            parts.append(f"{n} {unit}")
    return " ".join(parts[:2]) or "0 s"


def retry_words(retry: StepRetry | None) -> str:
    if not retry or retry.attempts <= 1:
        return "no retry"
    text = f"{retry.attempts} attempts, {seconds(retry.interval)} apart"
    if retry.backoff != 1:
        text += f" (x{retry.backoff:g} each time, at most {seconds(retry.max_interval)})"
    return text


def failure_groups(failures: list[ExecutionRecord], states: dict[str, JobState],
                   entries: dict[str, CatalogJob]) -> list[JsonObject]:
    """The failures page's incident view: the listed failures grouped by job, newest first,
    each with what the job is doing now and the one action that moves it on.

    ``state``: "recovered" (a run succeeded since), "running", "blocked" (a SKIP_IF_FAILED job
    skipping its schedule until someone acts), "acknowledged" (by whom is in ``state_by``) or
    "failing". ``action``: "acknowledge" for a blocked job (its schedule goes on), "rerun" of the
    newest failure (from its failed step when it has one) for a failing one, else None."""
    groups: dict[str, JsonObject] = {}
    for x in failures:  # newest first: the first of a job is its newest failure
        g = groups.setdefault(x.job, {"job": x.job, "team": x.team, "latest": x, "count": 0})
        g["count"] += 1
    for g in groups.values():
        state, entry = states.get(g["job"]), entries.get(g["job"])
        g["state_by"] = None
        if state is not None and state.last_status == "SUCCEEDED":
            g["state"], g["action"] = "recovered", None
        elif state is not None and state.running:
            g["state"], g["action"] = "running", None
        elif state is not None and state.blocked and entry is not None and policies.of(entry.policy).skips_after_failure:
            g["state"], g["action"] = "blocked", "acknowledge"
        elif state is not None and state.acknowledged_by:
            g["state"], g["state_by"], g["action"] = "acknowledged", state.acknowledged_by, "rerun"
        else:
            g["state"], g["action"] = "failing", "rerun"
        if entry is None:  # the job is no longer defined: nothing to act on
            g["action"] = None
    return list(groups.values())
