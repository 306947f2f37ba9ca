"""crontab(5): a user's crontab, or a system one (``/etc/crontab``, ``/etc/cron.d/*``) whose
entries carry a user field.

Read as Vixie/Debian cron and cronie read it: blank lines and ``#`` comments; ``NAME=value``
lines set the environment of the entries below them (quotes keep spaces); ``CRON_TZ=`` sets the
zone the schedules below it are evaluated in (cronie), ``TZ=`` only the command's environment,
``SHELL=`` the shell that runs the command and ``MAILTO=`` where cron mailed the output (jobplane
alerts go to Slack instead, and the report says so); ``@reboot`` is reported, not imported; in
the command an unescaped ``%`` ends the command and the rest, its ``%`` turned into line breaks,
is the command's standard input. The comment lines right above an entry become its description.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from cronsim import CronSim, CronSimError

from jobplane.importer.dialects import UNIX_CRON
from jobplane.importer.entries import Command, Entry, InputProblem, Origin, Reading, Skipped, SourceSchedule
from jobplane.importer.sources import ReadContext, Source, SourceFormat

KEYWORDS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_ENV = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}\$?$")
#: A 1970-01-01 UTC start: only to ask cronsim whether it accepts an expression.
_PROBE_START = __import__("datetime").datetime(1970, 1, 1, tzinfo=__import__("datetime").timezone.utc)


def is_system_crontab(path: str) -> bool:
    """``/etc/crontab`` and ``/etc/cron.d/*`` have a user field; a user's crontab does not."""
    p = PurePath(path)
    return p.name == "crontab" or "cron.d" in p.parts


def read(path: str, text: str, system: bool | None = None) -> Reading:
    system = is_system_crontab(path) if system is None else system
    out = Reading()
    env: dict[str, str] = {}
    cron_tz: str | None = None
    comments: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        origin = Origin(path, number, f"crontab line {number}")
        if not line:
            comments = []
            continue
        if line.startswith("#"):
            comment = line.lstrip("#").strip()
            if comment and not _looks_like_entry(comment):
                comments.append(comment)
            continue
        if m := _ENV.match(line):
            if not (line.startswith("@") or line[0].isdigit() or line[0] == "*"):
                name, value = m.group(1), _unquote(m.group(2))
                if name == "CRON_TZ":
                    cron_tz = value or None
                else:
                    env[name] = value
                comments = []
                continue
        entry = _entry(origin, line, system, env, cron_tz, comments, out)
        if entry is not None:
            out.entries.append(entry)
        comments = []
    return out


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _looks_like_entry(text: str) -> bool:
    """A commented-out entry is not a description of the next one."""
    fields = text.split()
    if fields and fields[0] in KEYWORDS or fields and fields[0] == "@reboot":
        return True
    return len(fields) >= 6 and all(re.fullmatch(r"[\d*/,A-Za-z-]+", f) for f in fields[:5]) and \
        any(c.isdigit() or c == "*" for c in "".join(fields[:5]))


def _entry(origin: Origin, line: str, system: bool, env: dict[str, str], cron_tz: str | None,
           comments: list[str], out: Reading) -> Entry | None:
    fields = line.split(None, 1 if line.startswith("@") else 5)
    if line.startswith("@"):
        keyword = fields[0].lower()
        rest = fields[1] if len(fields) > 1 else ""
        if keyword == "@reboot":
            out.skipped.append(Skipped(origin, "@reboot runs when the machine starts, not on a schedule: "
                                               "not imported (run it from the application's start-up instead)"))
            return None
        if keyword not in KEYWORDS:
            out.problems.append(InputProblem(origin, f"unknown keyword {fields[0]!r} (crontab(5) knows "
                                                     f"@reboot, {', '.join(KEYWORDS)})"))
            return None
        expression = KEYWORDS[keyword]
        source_text = fields[0]
    else:
        if len(fields) < 6:
            out.problems.append(InputProblem(origin, "an entry needs five time fields and a command "
                                                     f"(minute hour day-of-month month day-of-week command); got {line[:80]!r}"))
            return None
        expression = " ".join(fields[:5])
        source_text = expression
        rest = fields[5]
        try:
            CronSim(expression, _PROBE_START)
        except (CronSimError, ValueError) as e:
            out.problems.append(InputProblem(origin, f"{expression!r} is not a valid cron schedule: {e}"))
            return None
    notes: list[str] = []
    if system:
        user, rest = (rest.split(None, 1) + [""])[:2]
        rest = rest.strip()
        if not _USER.match(user) or not rest:
            out.problems.append(InputProblem(origin, "a system crontab entry needs a user field before the "
                                                     f"command (e.g. 'root'); got {line[:80]!r}"))
            return None
        if user != "root":
            notes.append(f"ran as user {user!r}: the step runs as the runner image's user")
    if not rest.strip():
        out.problems.append(InputProblem(origin, "the entry has no command"))
        return None
    command_text, stdin = split_percent(rest)
    shell = env.get("SHELL", "/bin/sh")
    job_env = {k: v for k, v in env.items() if k not in ("SHELL", "MAILTO")}
    if "MAILTO" in env:
        notes.append(f"MAILTO={env['MAILTO']!r}: cron mailed the output there; jobplane posts failures to the "
                     "team's Slack channel (notify) and keeps the output in the step's logs")
    return Entry(
        origin=origin,
        name_hint="",
        schedules=(SourceSchedule(UNIX_CRON.name, expression),),
        command=Command(shell_text=command_text, shell=shell, stdin=stdin),
        timezone=cron_tz,
        description=" ".join(comments),
        env=tuple(job_env.items()),
        notes=tuple(notes) + ((f"{source_text} is {expression}",) if source_text != expression else ()),
    )


def split_percent(command: str) -> tuple[str, str | None]:
    """crontab(5): "Percent-signs (%) in the command, unless escaped with backslash (\\), will be
    changed into newline characters, and all data after the first % will be sent to the command
    as standard input." An escaped ``\\%`` stands for ``%`` (the backslash is removed)."""
    parts: list[str] = []
    current = ""
    i = 0
    while i < len(command):
        c = command[i]
        if c == "\\" and i + 1 < len(command) and command[i + 1] == "%":
            current += "%"
            i += 2
            continue
        if c == "%":
            parts.append(current)
            current = ""
        else:
            current += c
        i += 1
    parts.append(current)
    if len(parts) == 1:
        return parts[0].strip(), None
    return parts[0].strip(), "\n".join(parts[1:])


def _read_user(source: Source, context: ReadContext) -> Reading:
    return read(source.name, source.text, system=False)


def _read_system(source: Source, context: ReadContext) -> Reading:
    return read(source.name, source.text, system=True)


#: A system crontab (``/etc/crontab``, ``/etc/cron.d/*``): a user field before each command.
SYSTEM = SourceFormat("system-crontab", "a file named crontab or under cron.d/",
                      lambda source: is_system_crontab(source.name), _read_system, (UNIX_CRON,))
#: A user's crontab (``crontab -l``): whatever no other format claims.
USER = SourceFormat("crontab", "anything else", lambda source: True, _read_user, (UNIX_CRON,))
