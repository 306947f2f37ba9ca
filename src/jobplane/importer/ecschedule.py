"""ecschedule (github.com/Songmu/ecschedule) configuration: ``rules:`` of ECS scheduled tasks.

ecschedule deploys each rule as an EventBridge rule, so ``scheduleExpression`` is EventBridge
cron()/rate() in UTC; ``disabled: true`` deploys it DISABLED; the command is the first
``containerOverrides`` entry's ``command`` and its ``environment`` map. ecschedule renders Go
templates (``{{ env "NAME" }}``, ``{{ must_env ... }}``, ``{{ tfstate ... }}``) from the deploying
machine's environment when it runs, so a value that is a template is not known here: such a rule
is refused with the variable to give by hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from jobplane.importer.dialects import EVENTBRIDGE
from jobplane.importer.entries import Command, Entry, InputProblem, Origin, Reading, SourceSchedule
from jobplane.importer.sources import ReadContext, Source, SourceFormat
from jobplane.importer.yamldocs import YamlError, documents, line_of
from jobplane.contract.types import JsonValue

_TEMPLATE = re.compile(r"\{\{.*?\}\}")


def _is_config(docs: list[JsonValue]) -> bool:
    return len(docs) == 1 and isinstance(docs[0], dict) and isinstance(docs[0].get("rules"), list)


def looks_like(source: Source) -> bool:
    if not source.is_yaml:
        return False
    try:
        return _is_config(source.documents(quote_templates(source.text)))
    except YamlError:
        return False


def _read(source: Source, context: ReadContext) -> Reading:
    return read(source.name, source.text, source.documents)


def quote_templates(text: str) -> str:
    """A template as a YAML value (``KEY: {{ env "X" }}``) is not valid YAML: read it as a string."""
    return re.sub(r"(:\s*)(\{\{.*?\}\})\s*$", lambda m: m.group(1) + "'" + m.group(2).replace("'", "''") + "'",
                  text, flags=re.M)


def read(path: str, text: str, parse: Callable[[str], list[JsonValue]] = documents) -> Reading:
    """``parse``: the YAML reader (a :class:`Source`'s, which parses a text once for every format)."""
    out = Reading()
    try:
        docs = parse(quote_templates(text))
    except YamlError as e:
        out.problems.append(InputProblem(Origin(path, e.line, "config"), str(e)))
        return out
    if not _is_config(docs):
        out.problems.append(InputProblem(Origin(path, None, "config"), "not an ecschedule config: no rules: list"))
        return out
    for i, rule in enumerate(docs[0]["rules"]):
        line = line_of(rule)
        if not isinstance(rule, dict):
            out.problems.append(InputProblem(Origin(path, line, f"rules[{i}]"), "a rule is not a mapping"))
            continue
        name = str(rule.get("name") or f"rule-{i + 1}")
        origin = Origin(path, line, f"rule {name!r}")
        expression = rule.get("scheduleExpression")
        if not isinstance(expression, str):
            out.problems.append(InputProblem(origin, "scheduleExpression: missing"))
            continue
        blockers: list[str] = []
        overrides = rule.get("containerOverrides") or []
        override = overrides[0] if isinstance(overrides, list) and overrides and isinstance(overrides[0], dict) else {}
        argv = tuple(str(a) for a in override.get("command") or [])
        if not argv:
            blockers.append("no containerOverrides command: the rule runs its task definition's command, which the "
                            "config does not show; add it")
        env = []
        for key, value in (override.get("environment") or {}).items():
            text_value = "" if value is None else str(value)
            if _TEMPLATE.search(text_value):
                blockers.append(f"environment {key}: {text_value!r} is an ecschedule template, rendered from the "
                                "deploying machine's environment; give its value (or a secret) by hand")
            env.append((str(key), text_value))
        for key in ("scheduleExpression", "taskDefinition"):
            if _TEMPLATE.search(str(rule.get(key, ""))):
                blockers.append(f"{key}: {rule[key]!r} is an ecschedule template; render the config first")
        notes = [f"other containerOverrides ({len(overrides) - 1}) are not imported"] if len(overrides) > 1 else []
        out.entries.append(Entry(
            origin=origin,
            name_hint=name,
            schedules=(SourceSchedule(EVENTBRIDGE.name, expression.strip()),),
            command=Command(argv=argv),
            timezone="UTC",
            enabled=not bool(rule.get("disabled")),
            description=str(rule.get("description") or ""),
            env=tuple(env),
            blockers=tuple(blockers),
            notes=tuple(notes),
        ))
    return out


FORMAT = SourceFormat("ecschedule", "a .yaml file with rules:", looks_like, _read, (EVENTBRIDGE,))
