"""EventBridge schedules, as the AWS CLI prints them.

* Scheduler: ``aws scheduler get-schedule`` (one schedule), or a JSON array of those.
  ``list-schedules`` does not print expressions, so its output is refused with the command to run.
* Rules: ``aws events list-rules`` (``{"Rules": [...]}``), each rule's targets from
  ``aws events list-targets-by-rule --rule NAME`` saved as ``NAME.targets.json`` beside it (or a
  ``Targets`` list added to the rule). EventBridge rules evaluate cron() in UTC
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html);
  a Scheduler schedule in ``ScheduleExpressionTimezone``, UTC when absent
  (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html).

The command is an ECS ``RunTask`` target's container override: a templated ECS target's
``Input`` (``{"containerOverrides": [...]}``) or the universal target
``arn:aws:scheduler:::aws-sdk:ecs:runTask``'s (``{"Overrides": {"ContainerOverrides": [...]}}``).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jobplane.contract.schedule import ScheduleError, iter_fire_times, parse

from jobplane.importer.dialects import EVENTBRIDGE
from jobplane.importer.entries import Command, Entry, InputProblem, Origin, Reading, Skipped, SourceSchedule
from jobplane.importer.sources import ReadContext, Source, SourceFormat
from jobplane.contract.types import JsonObject, JsonValue
from jobplane.contract.arns import service_of

UNIVERSAL_RUN_TASK = "arn:aws:scheduler:::aws-sdk:ecs:runTask"


def is_targets(doc: JsonValue) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("Targets"), list) and "Rules" not in doc


def looks_like(source: Source) -> bool:
    return source.suffix == ".json" or (
        not source.is_yaml and source.suffix != ".py" and source.text.lstrip().startswith(("{", "[")))


@lru_cache(maxsize=256)
def _parsed(source: Source) -> JsonValue | InputProblem:
    try:
        value: JsonValue = json.loads(source.text)
        return value
    except json.JSONDecodeError as e:
        return InputProblem(Origin(source.name, e.lineno, "JSON"), f"invalid JSON: {e.msg}")
    except RecursionError:
        return InputProblem(Origin(source.name, None, "JSON"), "invalid JSON: nested too deep")


def _read(source: Source, context: ReadContext) -> Reading:
    """A rules file with its targets files beside it (given in the same import), or schedules;
    a targets file is read with its rules, not on its own."""
    doc = _parsed(source)
    if isinstance(doc, InputProblem):
        return Reading(problems=[doc])
    if is_targets(doc):
        return Reading()
    targets: dict[str, list[JsonValue]] = {}
    for other in context.siblings:
        value = _parsed(other)
        if other != source and isinstance(value, dict) and is_targets(value):
            targets[other.path.name.removesuffix(".json").removesuffix(".targets")] = value["Targets"]
    return read(source.name, doc, targets)


def read(path: str, doc: JsonValue, targets: dict[str, list[JsonValue]]) -> Reading:
    """``targets``: rule name -> its targets, from the ``*.targets.json`` files given."""
    out = Reading()
    if isinstance(doc, dict) and isinstance(doc.get("Schedules"), list):
        if any("ScheduleExpression" not in s for s in doc["Schedules"] if isinstance(s, dict)):
            out.problems.append(InputProblem(Origin(path, None, "list-schedules"), (
                "this is `aws scheduler list-schedules` output, which has no schedule expressions: save "
                "`aws scheduler get-schedule --name NAME --group-name GROUP` of each (a JSON array of them "
                "works too) and import those")))
            return out
        items = doc["Schedules"]
        kind, doc_key = "schedule", "Schedules"
    elif isinstance(doc, dict) and isinstance(doc.get("Rules"), list):
        items, kind, doc_key = doc["Rules"], "rule", "Rules"
    else:
        items, kind, doc_key = (doc if isinstance(doc, list) else [doc]), "schedule", ""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            out.problems.append(InputProblem(Origin(path, None, f"item {i}"), "not a JSON object"))
            continue
        name = str(item.get("Name") or f"{kind}-{i + 1}")
        where = f"{doc_key}[{i}]" if doc_key else f"[{i}]" if isinstance(doc, list) else ""
        origin = Origin(path, None, f"{kind} {name!r}" + (f", {where}" if where else ""))
        if kind == "rule":
            if "ScheduleExpression" not in item:
                out.skipped.append(Skipped(origin, "an event-pattern rule, not a schedule", counts=False))
                continue
            rule_targets = item.get("Targets") if isinstance(item.get("Targets"), list) else targets.get(name)
            _entry(origin, item, rule_targets, "UTC", out, rule=True)
        else:
            target = item.get("Target")
            tz = item.get("ScheduleExpressionTimezone") or "UTC"
            _entry(origin, item, [target] if isinstance(target, dict) else None, tz, out, rule=False)
    return out


def _entry(origin: Origin, item: JsonObject, targets: list[JsonValue] | None, tz: str, out: Reading,
           rule: bool) -> None:
    expression = item.get("ScheduleExpression")
    if not isinstance(expression, str):
        out.problems.append(InputProblem(origin, "ScheduleExpression: missing"))
        return
    blockers: list[str] = []
    notes: list[str] = []
    argv: tuple[str, ...] = ()
    env: list[tuple[str, str]] = []
    if targets is None:
        blockers.append(f"no targets given: save `aws events list-targets-by-rule --rule {item.get('Name')}` as "
                        f"{item.get('Name')}.targets.json beside the rules and import both")
    elif len(targets) != 1:
        blockers.append(f"{len(targets)} targets: jobplane runs one command per step; import it by hand")
    else:
        override, why = _container_override(targets[0])
        if override is None:
            blockers.append(why)
        else:
            argv = tuple(str(a) for a in override.get("command") or override.get("Command") or [])
            for var in override.get("environment") or override.get("Environment") or []:
                if isinstance(var, dict):
                    env.append((str(var.get("name", var.get("Name"))), str(var.get("value", var.get("Value", "")))))
            if not argv:
                blockers.append("the ECS target does not override the container's command, so it runs the task "
                                "definition's, which this JSON does not show: add the command to the import")
    blockers.extend(_bounds(item, expression.strip(), tz))
    if targets is not None and len(targets) == 1 and isinstance(targets[0], dict):
        notes.extend(_delivery(targets[0]))
    window = item.get("FlexibleTimeWindow")
    if isinstance(window, dict) and window.get("Mode") == "FLEXIBLE":
        notes.append(f"a flexible time window of {window.get('MaximumWindowInMinutes')} minutes: jobplane "
                     "starts at the scheduled minute")
    out.entries.append(Entry(
        origin=origin,
        name_hint=str(item.get("Name") or ""),
        schedules=(SourceSchedule(EVENTBRIDGE.name, expression.strip()),),
        command=Command(argv=argv),
        timezone=tz,
        enabled=item.get("State", "ENABLED") != "DISABLED",
        description=str(item.get("Description") or ""),
        env=tuple(env),
        blockers=tuple(blockers),
        notes=tuple(notes),
    ))


#: What jobplane's own schedules do (compiler/terraform.py): retry starting a run for an hour, at
#: most 10 times, then send the event to the platform's scheduler dead-letter queue.
JOBPLANE_DELIVERY = ("jobplane's schedules retry starting a run for up to an hour (10 attempts) and send what they "
                     "cannot start to the platform's scheduler dead-letter queue (docs/operate.md)")


def _bounds(item: JsonObject, expression: str, tz: str) -> list[str]:
    """A Scheduler schedule's StartDate/EndDate: it fires only between them. A jobplane schedule
    has no bounds, so the job would fire where the source never did: refused, with the count."""
    start, end = item.get("StartDate"), item.get("EndDate")
    if start is None and end is None:
        return []
    said = " and ".join(f"{k} {v}" for k, v in (("StartDate", start), ("EndDate", end)) if v is not None)
    count = ""
    try:
        begin = _instant(start) if start is not None else None
        finish = _instant(end) if end is not None else None
        if begin is not None and finish is not None:
            fires = 0
            for when in iter_fire_times(parse(expression), ZoneInfo(tz), begin - timedelta(seconds=1)):
                if when > finish or fires > 100_000:
                    break
                fires += 1
            count = f" (it fires {fires} time{'s' if fires != 1 else ''} between them)"
    except (ValueError, ScheduleError, ZoneInfoNotFoundError, OverflowError):
        pass
    return [f"the schedule fires only within {said}{count}; a jobplane schedule has no start or end date, so the "
            "job would fire outside them: write it by hand (and disable or delete it when the window ends), or "
            "import the schedule without its bounds if they no longer matter"]


def _instant(value: JsonValue) -> datetime:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, timezone.utc)
    when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _delivery(target: JsonObject) -> list[str]:
    """RetryPolicy and DeadLetterConfig say how EventBridge delivered the start to the target;
    the job gets jobplane's, and the report says what is not carried."""
    notes = []
    retry = target.get("RetryPolicy")
    if isinstance(retry, dict):
        notes.append(f"RetryPolicy (MaximumRetryAttempts {retry.get('MaximumRetryAttempts')}, "
                     f"MaximumEventAgeInSeconds {retry.get('MaximumEventAgeInSeconds')}) is not carried: "
                     + JOBPLANE_DELIVERY)
    dead = target.get("DeadLetterConfig")
    if isinstance(dead, dict) and dead.get("Arn"):
        notes.append(f"the dead-letter queue {dead['Arn']!r} is not carried: " + JOBPLANE_DELIVERY)
    return notes


def _container_override(target: JsonValue) -> tuple[JsonObject | None, str]:
    if not isinstance(target, dict):
        return None, "the target is not a JSON object"
    arn = str(target.get("Arn", ""))
    try:
        payload = json.loads(target["Input"]) if isinstance(target.get("Input"), str) else target.get("Input") or {}
    except json.JSONDecodeError:
        return None, "the target's Input is not JSON"
    if arn == UNIVERSAL_RUN_TASK:
        overrides = ((payload.get("Overrides") or {}).get("ContainerOverrides")) if isinstance(payload, dict) else None
    elif ":ecs:" in arn and (target.get("EcsParameters") or ":cluster/" in arn):
        overrides = payload.get("containerOverrides") if isinstance(payload, dict) else None
    else:
        service = service_of(arn) or "unknown"
        return None, (f"the target is {service} ({arn or 'no ARN'}), not an ECS task: jobplane runs commands; "
                      "write a step that does what it did")
    if not isinstance(overrides, list) or not overrides or not isinstance(overrides[0], dict):
        return None, ("the ECS target does not override the container's command, so it runs the task "
                      "definition's, which this JSON does not show: add the command to the import")
    return overrides[0], ""


FORMAT = SourceFormat("eventbridge", "a .json file, or text that starts with { or [", looks_like, _read,
                      (EVENTBRIDGE,))
