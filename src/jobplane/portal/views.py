"""How the portal words things: schedules, durations, times in a job's timezone."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from cron_descriptor import Options, get_description

from jobplane.platform.schedule import AtExpression, CronExpression, RateExpression, parse


@lru_cache(maxsize=4096)  # cron-descriptor loads its locale per call: ~2/3 of the jobs page (bench/portal.py)
def schedule_words(expression: str) -> str:
    """'cron(30 23 L * ? *)' -> 'At 11:30 PM, on the last day of the month'. cron-descriptor
    reads the six EventBridge fields (year last); day-of-week numbers are EventBridge's 1=SUN."""
    parsed = parse(expression)
    if isinstance(parsed, RateExpression):
        return f"Every {expression[5:-1]}"
    if isinstance(parsed, AtExpression):
        return f"Once, at {expression[3:-1]}"
    assert isinstance(parsed, CronExpression)
    fields = expression[5:-1].split()
    options = Options()
    options.day_of_week_start_index_zero = False  # 1-7 = SUN-SAT, as EventBridge
    options.use_24hour_time_format = True
    minute, hour, dom, month, dow, year = fields
    unix_like = " ".join([minute, hour, dom, month, dow] + ([] if year == "*" else [year]))
    try:
        return get_description(unix_like, options)
    except Exception:  # a form the describer does not know: show the expression itself
        return expression


def duration(start: str | None, end: str | None) -> str:
    if not start or not end:
        return ""
    seconds = (_dt(end) - _dt(start)).total_seconds()
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def duration_seconds(start: str | None, end: str | None) -> float | None:
    return (_dt(end) - _dt(start)).total_seconds() if start and end else None


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def local_time(value: str | datetime | None, zone: str) -> str:
    if not value:
        return ""
    when = _dt(value) if isinstance(value, str) else value
    return when.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %a %H:%M %Z")


def short_time(value: str | None) -> str:
    return value.replace("T", " ")[:19] + " UTC" if value else ""


def step_rows(view: Any) -> list[dict[str, Any]]:
    """The execution page's step timeline: one row per attempt, with what the record knows
    (exit code, error) laid over what the history knows (times)."""
    rows = []
    record_steps = view.record.steps if view.record else {}
    for item in view.timeline:
        row = dict(item)
        row["duration"] = duration(item.get("started_at"), item.get("finished_at"))
        result = _attempt_result(record_steps, item["step"], item["attempt"])
        container = (result or {}).get("Container") or {}
        if result and result.get("Error"):
            row["error"] = result["Error"]
            task = _task_of(result.get("Cause"))
            container = (task.get("Containers") or [{}])[0] if task else {}
            row["cause"] = (task.get("StoppedReason") if task else None) or (result.get("Cause") or "")[:500]
        row["exit_code"] = container.get("ExitCode")
        rows.append(row)
    return rows


def _attempt_result(steps: dict[str, Any], step: str, attempt: int) -> dict[str, Any] | None:
    value = steps.get(step.replace("-", "_"), {}).get(f"a{attempt}")  # the compiler's Step.key
    return value if isinstance(value, dict) else None


def _task_of(cause: str | None) -> dict[str, Any] | None:
    """A failed ecs:runTask.sync's Cause is the task's JSON (exit code, stop reason)."""
    import json

    try:
        task = json.loads(cause or "")
    except ValueError:
        return None
    return task if isinstance(task, dict) else None
