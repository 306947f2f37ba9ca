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
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

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


#: Commands, wrappers and shell built-ins a crontab line starts with: a sixth field that is one of
#: these is the command, not a user field (``15 6 * * * source ~/.bash_profile && ./run.sh``).
COMMAND_WORDS = frozenset({
    "source", "cd", "sh", "bash", "zsh", "dash", "ksh", "csh", "python", "python2", "python3", "php", "ruby",
    "perl", "node", "nodejs", "java", "test", "echo", "printf", "curl", "wget", "env", "nice", "ionice", "flock",
    "timeout", "sudo", "su", "exec", "command", "nohup", "time", "make", "docker", "kubectl", "aws", "git", "rsync",
    "cp", "mv", "rm", "find", "tar", "gzip", "mysqldump", "pg_dump", "psql", "run-parts", "true", "false", "sleep",
    "date", "touch", "mkdir", "cat", "ls", "npm", "npx", "yarn", "bundle", "rake", "rails", "certbot",
    "logrotate", "uv", "poetry", "pipenv", "ansible-playbook", "systemctl", "service", "export", "set", "if",
    "for", "while", "[", "[[", "wp", "drush", "artisan", "composer", "deno", "bun", "go", "cargo",
})
#: Accounts a system crontab names (Debian's base system users and common service accounts).
KNOWN_USERS = frozenset({
    "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data",
    "backup", "list", "irc", "nobody", "_apt", "postgres", "mysql", "redis", "nginx", "apache", "www", "ubuntu",
    "ec2-user", "admin", "deploy", "app", "operator", "smmsp", "_www", "postfix", "git", "jenkins", "ftp",
})
_NOT_A_NAME = re.compile(r"[/~$`'\"=%;&|<>(){}\[\]*?!]|^[.#-]")


def is_system_path(path: str) -> bool:
    """Files under ``cron.d/`` are system crontabs by definition (cron(8)); a file merely named
    ``crontab`` is as often ``crontab -l > crontab`` as ``/etc/crontab``, so the name alone
    decides nothing."""
    p = PurePath(path)
    return "cron.d" in p.parts or p.as_posix() == "/etc/crontab"


@dataclass(frozen=True)
class UserField:
    """Whether a crontab's entries carry a user field, decided from what they hold."""

    verdict: Literal["yes", "no", "unknown"]
    why: str = ""


def user_field(path: str, text: str) -> UserField:
    """``no`` as soon as one entry's sixth field cannot be an account (a path, shell syntax, a
    command's name, or nothing after it); ``yes`` when every one is an account a system crontab
    names, or the file is under cron.d/; otherwise ``unknown``, with the line that leaves it open."""
    unknown: tuple[int, str] | None = None
    seen = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#") or (_ENV.match(line) and not (line[0].isdigit() or line[0] in "*@")):
            continue
        fields = line.split(None, 2 if line.startswith("@") else 7)
        sixth_at = 1 if line.startswith("@") else 5
        if len(fields) <= sixth_at:
            continue
        seen = True
        sixth = fields[sixth_at]
        after = fields[sixth_at + 1] if len(fields) > sixth_at + 1 else ""
        if _NOT_A_NAME.search(sixth) or sixth.lower() in COMMAND_WORDS or not _USER.match(sixth) or not after \
                or after.startswith("-"):
            return UserField("no", f"line {number}: {sixth!r} is the command, not a user")
        if sixth not in KNOWN_USERS and unknown is None:
            unknown = (number, sixth)
    if not seen:
        return UserField("no")
    if unknown is None:
        return UserField("yes", "every entry names an account")
    if is_system_path(path):
        return UserField("yes", "under cron.d/")
    number, word = unknown
    return UserField("unknown", f"line {number}: {word!r} may be a user (a system crontab) or the command (a user's "
                                "crontab)")


def read(path: str, text: str, system: bool | None = None) -> Reading:
    """``system``: whether entries carry a user field; None: decided from the content, and a file
    it leaves open is refused, naming the ``--format`` that says."""
    if system is None:
        found = user_field(path, text)
        if found.verdict == "unknown":
            return Reading(problems=[InputProblem(Origin(path, None, "crontab"), (
                f"cannot tell whether the entries have a user field ({found.why}): pass --format crontab (a "
                "user's crontab, `crontab -l`) or --format system-crontab (/etc/crontab, /etc/cron.d/*)"))])
        system = found.verdict == "yes"
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
            if is_column_header(comment):
                comments = []  # the block above a column header is the file's preamble, not a description
            elif comment and re.search(r"[A-Za-z0-9]", comment) and not _looks_like_entry(comment):
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


#: Words of a crontab's column header (``m h  dom mon dow   command``, Debian's ``.---- minute
#: (0 - 59)`` diagram): such a comment describes the file's columns, not the entry below it.
_HEADER_WORDS = frozenset({
    "m", "h", "dom", "mon", "dow", "min", "minute", "minutes", "hour", "hours", "day", "days", "mday", "wday",
    "month", "months", "week", "weekday", "of", "or", "command", "cmd", "user", "username", "user-name", "to", "be",
    "executed", "sunday", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", "sun",
    "tue", "wed", "thu", "fri", "sat", "who", "what",
})


def is_column_header(comment: str) -> bool:
    words = re.findall(r"[a-z][a-z-]*", comment.lower())
    marks = sum(w in ("m", "h", "dom", "mon", "dow", "minute", "hour", "month", "mday", "wday", "command", "cmd")
                for w in words)
    return bool(words) and marks >= 1 and all(w.strip("-") in _HEADER_WORDS or w == "-" for w in words) and (
        marks >= 3 or "|" in comment or "---" in comment)


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
    blockers: list[str] = []
    if system:
        user, rest = (rest.split(None, 1) + [""])[:2]
        rest = rest.strip()
        if not _USER.match(user) or not rest:
            out.problems.append(InputProblem(origin, "a system crontab entry needs a user field before the "
                                                     f"command (e.g. 'root'); got {line[:80]!r} (a crontab without "
                                                     "user fields: pass --format crontab)"))
            return None
        if user.lower() in COMMAND_WORDS or rest.startswith("-"):
            blockers.append(f"the user field {user!r} is not a plausible account (it is a command's name, or what "
                            "follows it is an option): if this crontab has no user field, pass --format crontab")
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
        blockers=tuple(blockers),
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
    """Given with --format crontab: no user field. Detected (no other format claimed it): the
    content decides, and a file it leaves open is refused."""
    return read(source.name, source.text, system=None if context.detected else False)


def _read_system(source: Source, context: ReadContext) -> Reading:
    return read(source.name, source.text, system=True)


#: A system crontab (``/etc/crontab``, ``/etc/cron.d/*``): a user field before each command.
SYSTEM = SourceFormat("system-crontab", "entries with a user field (every sixth field an account, or under cron.d/)",
                      lambda source: user_field(source.name, source.text).verdict == "yes", _read_system,
                      (UNIX_CRON,))
#: A user's crontab (``crontab -l``): whatever no other format claims.
USER = SourceFormat("crontab", "anything else", lambda source: True, _read_user, (UNIX_CRON,))
