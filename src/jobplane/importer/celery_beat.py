"""Celery beat schedules, read statically from the Python module that defines them.

The module is parsed, never imported: a settings module may connect to brokers or read secrets
at import, and a file handed to ``jobplane import`` is input, not code to run. What is read:
an assignment to ``beat_schedule`` (``app.conf.beat_schedule = {...}``, a ``celeryconfig``
module's ``beat_schedule``, Django's ``CELERY_BEAT_SCHEDULE`` / ``CELERYBEAT_SCHEDULE``) or
``app.conf.update(beat_schedule=...)``, whose value is a literal dict; each entry's ``task``,
``schedule`` (``crontab(...)``, ``timedelta(...)``, ``schedule(...)``, a number of seconds),
``args`` and ``kwargs``. ``solar(...)`` is reported, not imported. The zone is the module's
``timezone`` / ``CELERY_TIMEZONE`` setting, else Celery's documented default, UTC
(https://docs.celeryq.dev/en/stable/userguide/configuration.html#timezone). A value that is not a
literal (a variable, a function call) is reported with its line: write that entry by hand.
"""

from __future__ import annotations

import ast
import math
from datetime import timedelta
from typing import Any

from jobplane.importer.dialects import CELERY_CRONTAB, INTERVAL
from jobplane.importer.entries import Command, Entry, InputProblem, Origin, Reading, Skipped, SourceSchedule
from jobplane.importer.sources import ReadContext, Source, SourceFormat

SCHEDULE_NAMES = {"beat_schedule", "CELERY_BEAT_SCHEDULE", "CELERYBEAT_SCHEDULE"}
TIMEZONE_NAMES = {"timezone", "CELERY_TIMEZONE"}
CRONTAB_FIELDS = ("minute", "hour", "day_of_week", "day_of_month", "month_of_year")
#: The longest interval read (a year): past it, a "schedule" is a typo or an attack.
MAX_INTERVAL_SECONDS = 366 * 86400
_TIMEDELTA_ARGS = ("days", "seconds", "microseconds", "milliseconds", "minutes", "hours", "weeks")


class NotLiteral(ValueError):
    def __init__(self, node: ast.AST, what: str):
        super().__init__(what)
        self.line = getattr(node, "lineno", None)


class Crontab:
    def __init__(self, fields: dict[str, str]):
        self.fields = fields

    def unix(self) -> str:
        f = self.fields
        return " ".join([f["minute"], f["hour"], f["day_of_month"], f["month_of_year"], f["day_of_week"]]).upper()


class Solar:
    def __init__(self, text: str):
        self.text = text


def looks_like(source: Source) -> bool:
    return source.suffix == ".py"


def _read(source: Source, context: ReadContext) -> Reading:
    return read(source.name, source.text)


def read(path: str, text: str) -> Reading:
    out = Reading()
    try:
        tree = ast.parse(text, path)
    except SyntaxError as e:
        out.problems.append(InputProblem(Origin(path, e.lineno, "module"), f"not valid Python: {e.msg}"))
        return out
    except (RecursionError, MemoryError):
        out.problems.append(InputProblem(Origin(path, None, "module"), "not read: nested too deep"))
        return out
    schedules: list[ast.expr] = []
    zone: str | None = None
    for node in ast.walk(tree):
        for name, value in _assignments(node):
            if name in SCHEDULE_NAMES:
                schedules.append(value)
            elif name in TIMEZONE_NAMES and isinstance(value, ast.Constant) and isinstance(value.value, str):
                zone = value.value
    if not schedules:
        out.problems.append(InputProblem(Origin(path, None, "module"), "no beat_schedule assignment found"))
    for value in schedules:
        if not isinstance(value, ast.Dict):
            out.problems.append(InputProblem(Origin(path, value.lineno, "beat_schedule"),
                                             "beat_schedule is not a literal dict: write these jobs by hand"))
            continue
        for key_node, entry_node in zip(value.keys, value.values):
            line = getattr(key_node, "lineno", None) or entry_node.lineno
            try:
                key = _literal(key_node) if key_node is not None else None
                entry = _literal(entry_node)
            except NotLiteral as e:
                out.problems.append(InputProblem(Origin(path, e.line or line, "beat_schedule"), str(e)))
                continue
            except (RecursionError, OverflowError, ValueError) as e:
                out.problems.append(InputProblem(Origin(path, line, "beat_schedule"), f"not read: {e or 'too deep'}"))
                continue
            origin = Origin(path, line, f"beat entry {key!r}")
            _entry(origin, str(key), entry, zone, out)
    return out


def _assignments(node: ast.AST) -> list[tuple[str, ast.expr]]:
    def name_of(target: ast.expr) -> str | None:
        if isinstance(target, ast.Name):
            return target.id
        if isinstance(target, ast.Attribute):
            return target.attr
        return None

    found: list[tuple[str, ast.expr]] = []
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if (name := name_of(target)) is not None:
                found.append((name, node.value))
    elif isinstance(node, ast.AnnAssign) and node.value is not None and (name := name_of(node.target)):
        found.append((name, node.value))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update":
        found.extend((kw.arg, kw.value) for kw in node.keywords if kw.arg)
    return found


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Set):
        return sorted(_literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)):
        left, right = _literal(node.left), _literal(node.right)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)):
            return left * right if isinstance(node.op, ast.Mult) else left + right
    if isinstance(node, ast.Call):
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        args = [_literal(a) for a in node.args]
        kwargs = {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg}
        if func == "crontab":
            fields = dict(zip(CRONTAB_FIELDS, args)) | kwargs
            unknown = set(fields) - set(CRONTAB_FIELDS)
            if unknown:
                raise NotLiteral(node, f"crontab() takes {', '.join(CRONTAB_FIELDS)}; not {', '.join(sorted(unknown))}")
            return Crontab({f: _cron_field(fields.get(f, "*")) for f in CRONTAB_FIELDS})
        if func == "timedelta":
            try:
                return timedelta(**dict(zip(_TIMEDELTA_ARGS, args)) | kwargs)
            except (OverflowError, TypeError, ValueError) as e:
                raise NotLiteral(node, f"{ast.unparse(node)[:80]!r} is not a usable interval: {e}") from None
        if func == "schedule":
            every = kwargs.get("run_every", args[0] if args else None)
            return every
        if func == "solar":
            return Solar(ast.unparse(node))
    raise NotLiteral(node, f"{ast.unparse(node)[:80]!r} is not a literal this static read can evaluate "
                           "(a variable or a call): write this entry by hand")


def _cron_field(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value).replace(" ", "")


def _entry(origin: Origin, key: str, entry: Any, zone: str | None, out: Reading) -> None:
    if not isinstance(entry, dict) or not isinstance(entry.get("task"), str):
        out.problems.append(InputProblem(origin, "a beat entry is a dict with 'task' and 'schedule'"))
        return
    when = entry.get("schedule")
    if isinstance(when, Solar):
        out.skipped.append(Skipped(origin, f"{when.text}: solar schedules follow the sun's position, which "
                                           "EventBridge cannot express; not imported"))
        return
    if isinstance(when, Crontab):
        schedule = SourceSchedule(CELERY_CRONTAB.name, when.unix())
    elif isinstance(when, timedelta) or isinstance(when, (int, float)) and not isinstance(when, bool):
        seconds = when.total_seconds() if isinstance(when, timedelta) else float(when)
        if not math.isfinite(seconds) or seconds > MAX_INTERVAL_SECONDS:
            out.problems.append(InputProblem(origin, f"schedule {when!r}: not an interval a scheduler can keep "
                                                     f"(at most {MAX_INTERVAL_SECONDS // 86400} days)"))
            return
        schedule = SourceSchedule(INTERVAL.name, f"every {seconds:g} s", seconds=int(seconds) if seconds == int(seconds) else None)
    else:
        out.problems.append(InputProblem(origin, f"schedule {when!r}: expected crontab(), timedelta() or seconds"))
        return
    args = entry.get("args") or []
    kwargs = entry.get("kwargs") or {}
    notes = []
    if entry.get("options"):
        notes.append(f"options {entry['options']!r} (queue, expiry, ...) have no meaning when the task runs inline")
    if entry.get("relative"):
        notes.append("relative=True rounded the interval to its unit of time; the interval is imported as given")
    out.entries.append(Entry(
        origin=origin,
        name_hint=key,
        schedules=(schedule,),
        command=Command(celery_task=entry["task"], celery_args=tuple(args) if isinstance(args, list) else (),
                        celery_kwargs=tuple(kwargs.items()) if isinstance(kwargs, dict) else ()),
        timezone=zone,
        timezone_default="UTC",
        notes=tuple(notes),
    ))


FORMAT = SourceFormat("celery", "a .py file", looks_like, _read, (CELERY_CRONTAB, INTERVAL))
