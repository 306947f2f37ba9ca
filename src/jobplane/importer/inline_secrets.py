"""Credentials in what an entry runs, not only in its ``NAME=value`` lines (issue 65 item 1).

A crontab line ``30 4 1,15 * * DATABASE_URL=postgres://app:pw@db/app /opt/app/bin/vacuum`` sets
a variable for the one command it runs. An assignment in front of a command (or after ``env`` or
``export``) whose name names a credential or whose value holds one (contract/credentials.py)
becomes a secret reference, as a ``NAME=value`` line above the entry does: the assignment is taken
out of the command (the step's environment holds the variable, read from Secrets Manager) and a
to-do names the secret to create. Any other credential left in what would be written (an argument
such as ``--password=...``, ``curl -u user:pw``, an ``Authorization`` header, a URL with a
password, a token, a Celery argument) refuses the entry, naming what was found and never its value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jobplane.contract import credentials
from jobplane.contract.secret_names import is_secret_name

#: ``NAME=value`` as a shell word: at the start of the text or after a blank or an operator; the
#: value a single-quoted string, a double-quoted one without expansions, or a plain word.
_ASSIGN = re.compile(r"(?<![^\s;&|(])([A-Za-z_][A-Za-z0-9_]*)=('[^']*'|\"[^\"$`\\]*\"|[^\s'\"\\;&|()<>`$]+)"
                     r"(?=[\s;&|)]|$)")
_SEPARATORS = re.compile(r"[;&|(\n]")


@dataclass(frozen=True)
class Inline:
    """A credential assigned in front of a command: the variable and its value (never printed)."""

    name: str
    value: str


def take_assignments(text: str) -> tuple[str, list[Inline], list[str]]:
    """``text`` without its credential assignments in command position, those assignments, and
    the problems (the same variable given two values)."""
    found: list[Inline] = []
    problems: list[str] = []
    out, last = [], 0
    for m in _ASSIGN.finditer(text):
        name, raw = m.group(1), m.group(2)
        value = raw[1:-1] if raw[:1] in "'\"" else raw
        if credentials.is_reference(value) or not (is_secret_name(name) or credentials.in_text(value)):
            continue
        start = max((s.end() for s in _SEPARATORS.finditer(text, 0, m.start())), default=0)
        before = text[start:m.start()].split()
        if not all(w in ("env", "export") or _ASSIGN.fullmatch(w) for w in before):
            continue  # an argument, not an assignment: the scan after refuses it
        if any(i.name == name and i.value != value for i in found):
            problems.append(f"the variable {name} is given two values in the command: give each its own name")
            continue
        found.append(Inline(name, value))
        end = m.end()
        keep = name if before and before[-1] == "export" else ""  # `export NAME`: the step's env has it
        if not keep:
            while end < len(text) and text[end] in " \t":
                end += 1
        out.append(text[last:m.start()] + keep)
        last = end
    out.append(text[last:])
    return "".join(out), found, problems


def refusals(values: list[tuple[str, list[credentials.Finding]]]) -> list[str]:
    """One refusal per credential left in a value the job file would hold."""
    out = []
    for where, found in values:
        for f in found:
            line = (f"{f.what} in {where}: jobplane import never writes a credential into a job file; "
                    "read it from a variable instead (`$NAME` in the command, with NAME=value on a line "
                    "above the entry: that becomes a secret) and import again")
            if line not in out:
                out.append(line)
    return out


def json_findings(value: object, key: str | None = None) -> list[credentials.Finding]:
    """Credentials in a Celery or Django argument: strings searched as words, a keyword argument
    named like a credential with a literal string value."""
    if isinstance(value, str):
        found = credentials.in_words([value])
        if key is not None and is_secret_name(key) and value and not credentials.is_reference(value):
            found.append(credentials.Finding(f"the argument {key}", value))
        return found
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in json_findings(v)]
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in json_findings(v, str(k))]
    return []
