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

from jobplane.importer.entries import Command, Entry, InputProblem, Origin, Reading, Skipped, SourceSchedule
from jobplane.contract.types import JsonObject, JsonValue
from jobplane.contract.arns import service_of

UNIVERSAL_RUN_TASK = "arn:aws:scheduler:::aws-sdk:ecs:runTask"


def is_targets(doc: JsonValue) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("Targets"), list) and "Rules" not in doc


def looks_like(doc: JsonValue) -> bool:
    items = doc if isinstance(doc, list) else [doc]
    return bool(items) and all(isinstance(d, dict) for d in items) and any(
        "ScheduleExpression" in d or "Rules" in d or "Schedules" in d for d in items)


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
        kind = "schedule"
    elif isinstance(doc, dict) and isinstance(doc.get("Rules"), list):
        items, kind = doc["Rules"], "rule"
    else:
        items, kind = (doc if isinstance(doc, list) else [doc]), "schedule"
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            out.problems.append(InputProblem(Origin(path, None, f"item {i}"), "not a JSON object"))
            continue
        name = str(item.get("Name") or f"{kind}-{i + 1}")
        origin = Origin(path, None, f"{kind} {name!r}")
        if kind == "rule":
            if "ScheduleExpression" not in item:
                out.skipped.append(Skipped(origin, "an event-pattern rule, not a schedule"))
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
    window = item.get("FlexibleTimeWindow")
    if isinstance(window, dict) and window.get("Mode") == "FLEXIBLE":
        notes.append(f"a flexible time window of {window.get('MaximumWindowInMinutes')} minutes: jobplane "
                     "starts at the scheduled minute")
    out.entries.append(Entry(
        origin=origin,
        name_hint=str(item.get("Name") or ""),
        schedules=(SourceSchedule("eventbridge", expression.strip()),),
        command=Command(argv=argv),
        timezone=tz,
        enabled=item.get("State", "ENABLED") != "DISABLED",
        description=str(item.get("Description") or ""),
        env=tuple(env),
        blockers=tuple(blockers),
        notes=tuple(notes),
    ))


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
