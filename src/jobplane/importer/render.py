"""Job files as a person would write them, in the form ``jsonnetfmt`` gives (two-space indent,
single quotes unless the text holds one, ``{ a: 1 }`` inside a line, a trailing comma after each
line of a block): a reviewer reads the import's pull request like any other, and the repository's
formatter changes nothing (tests/test_import.py runs Debian's jsonnetfmt over the output).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from jobplane.importer.steps import StepSpec

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Jsonnet's keywords cannot be bare field names.
_KEYWORDS = {"assert", "else", "error", "false", "for", "function", "if", "import", "importstr", "importbin",
             "in", "local", "null", "tailstrict", "then", "self", "super", "true"}
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


@dataclass(frozen=True)
class JobFile:
    """Everything one imported job file says."""

    name: str
    team: str
    description: str
    schedules: tuple[str, ...]
    timezone: str
    policy: str
    enabled: bool
    timeout: int | None
    step: StepSpec
    step_timeout: int | None
    attempts: int | None
    header: tuple[str, ...]  # comment lines: where it came from, what the reviewer should know


def string(text: str) -> str:
    quote = '"' if "'" in text and '"' not in text else "'"
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c == quote:
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return quote + "".join(out) + quote


def value(v: object) -> str:
    """A JSON value as Jsonnet, on one line."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"{v!r} is not a JSON number")
        return json.dumps(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{key(k)}: {value(x)}" for k, x in v.items()) + " }"
    raise ValueError(f"{type(v).__name__} is not a JSON value")


def key(k: object) -> str:
    if not isinstance(k, str):
        raise ValueError(f"object key {k!r} is not a string")
    return k if _IDENTIFIER.fullmatch(k) and k not in _KEYWORDS else string(k)


def duration(seconds: int) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


#: The indentation of a step's line in the file :func:`render` writes.
STEP_INDENT = "    "
_BLOCK_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def text_block(text: str, indent: str) -> str | None:
    """A multi-line script as a Jsonnet text block (``|||``), as a person would write it, or None
    when a block would not say exactly ``text``: a text block ends with a line break and takes
    its first line's indentation as its own, jsonnetfmt empties a line of blanks, and ``|||``
    would end it."""
    if "\n" not in text[:-1] or not text.endswith("\n") or "|||" in text or text[0] in " \t" \
            or _BLOCK_UNSAFE.search(text):
        return None
    lines = text[:-1].split("\n")
    if any(line and not line.strip() for line in lines):
        return None
    return "|||\n" + "".join(f"{indent}  {line}\n" if line else "\n" for line in lines) + f"{indent}|||"


def _comment(line: str) -> str:
    return "// " + re.sub(r"[\x00-\x1f\x7f]", " ", line).rstrip() if line else "//"


def _step(job: JobFile) -> str:
    s = job.step
    opts: dict[str, str] = {}
    if job.step_timeout:
        opts["timeout"] = string(duration(job.step_timeout))
    if job.attempts and job.attempts > 1:
        opts["retry"] = f"jp.retry({job.attempts}, '10s', 2, '6m')"
    if s.env:
        opts["env"] = value(dict(s.env))
    if s.secrets:
        opts["secrets"] = "{ " + ", ".join(f"{key(k)}: jp.secret({string(v)})" for k, v in s.secrets) + " }"
    tail = (", opts={ " + ", ".join(f"{k}: {v}" for k, v in opts.items()) + " }") if opts else ""
    if s.kind == "django":
        args = f", {value(list(s.args))}" if s.args or opts else ""
        return f"jp.django({string(s.name)}, {string(s.command)}{args}{tail})"
    if s.kind == "celery":
        args = ""
        if s.args or s.kwargs or opts:
            args = f", {value(list(s.args))}, {value(dict(s.kwargs))}"
        return f"jp.celery({string(s.name)}, {string(s.command)}{args}{tail})"
    argv = "[" + ", ".join(text_block(a, STEP_INDENT) or string(a) for a in s.argv) + "]"
    return f"jp.shell({string(s.name)}, {argv}{tail})"


def render(job: JobFile) -> str:
    lines = [_comment(h) for h in job.header]
    lines += ["local jp = import 'jobplane.libsonnet';", "", "{"]
    fields = [("name", string(job.name)), ("team", string(job.team))]
    if job.description:
        fields.append(("description", string(job.description)))
    schedule = string(job.schedules[0]) if len(job.schedules) == 1 else value(list(job.schedules))
    fields += [("schedule", schedule), ("timezone", string(job.timezone)), ("policy", f"jp.policy.{job.policy}")]
    if not job.enabled:
        fields.append(("enabled", "false"))
    if job.timeout:
        fields.append(("timeout", string(duration(job.timeout))))
    lines += [f"  {k}: {v}," for k, v in fields]
    lines += ["  steps: [", f"    {_step(job)},", "  ],", "}"]
    return "\n".join(lines) + "\n"
