"""What runs, as a jobplane step: a Django management command (``python manage.py NAME ...``)
becomes a ``django`` step, ``celery call TASK`` and a Celery beat entry a ``celery`` step,
anything else a ``shell`` step, so nothing is lost in the mapping.

A cron command is a shell string, run by ``/bin/sh -c`` (or its SHELL). One that is a plain
command (words, quotes; no pipes, redirections, variables, globs or ``;``) runs the same from
its argv, so it is split and recognised; any other stays a shell string, as cron ran it.
Environment values whose names the runner treats as credentials (contract/secret_names.py), or
that embed a password in a URL, are never written: each becomes a secret reference the team
creates, listed in the report.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from jobplane.contract.secret_names import has_url_password, is_secret_name
from jobplane.importer.entries import Command, Entry

#: Shell syntax that a split argv would not keep.
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?\[\]{}~!#\n]|^\s*\w+=|\\")
_PYTHON = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)?)?$")


@dataclass(frozen=True)
class StepSpec:
    name: str
    kind: str  # shell | django | celery
    argv: tuple[str, ...] = ()  # shell
    command: str = ""  # django command or celery task
    args: tuple[object, ...] = ()
    kwargs: tuple[tuple[str, object], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    secrets: tuple[tuple[str, str], ...] = ()  # ENV name -> Secrets Manager secret name
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class SecretTodo:
    env: str
    secret_name: str
    came_from: str

    def __str__(self) -> str:
        return (f"create the Secrets Manager secret {self.secret_name!r} with the value of {self.came_from} "
                f"(read as {self.env})")


def step_for(entry: Entry, team: str) -> tuple[StepSpec, list[SecretTodo]]:
    env: list[tuple[str, str]] = []
    secrets: list[tuple[str, str]] = []
    todos: list[SecretTodo] = []
    for name, value in entry.env:
        if value and (is_secret_name(name) or has_url_password(value)):
            # one secret per variable of the team: a crontab's variable serves every entry below it
            secret = f"{team}/{name.lower().replace('_', '-')}"
            secrets.append((name, secret))
            todos.append(SecretTodo(name, secret, f"{name} in {entry.origin.file}"))
        else:
            env.append((name, value))
    for name, ref in entry.secrets:
        secrets.append((name, ref.secret_name))
        todos.append(SecretTodo(name, ref.secret_name, ref.came_from))
    step = _target(entry.command)
    return StepSpec(**{**step.__dict__, "env": tuple(env), "secrets": tuple(secrets)}), todos


def _target(command: Command) -> StepSpec:
    if command.celery_task:
        return StepSpec(_step_name(command.celery_task.rsplit(".", 1)[-1]), "celery", command=command.celery_task,
                        args=command.celery_args, kwargs=command.celery_kwargs)
    if command.shell_text is not None:
        text = command.shell_text
        if command.stdin is not None:
            feed = f"printf '%s' {shlex.quote(command.stdin)} | (\n{text}\n)"
            return StepSpec("run", "shell", argv=(command.shell, "-c", feed),
                            notes=("cron's % rule fed the text after the first % to the command's standard input; "
                                   "the step pipes it in",))
        if _SHELL_SYNTAX.search(text):
            return StepSpec("run", "shell", argv=(command.shell, "-c", text))
        try:
            argv = tuple(shlex.split(text))
        except ValueError:  # an unclosed quote: cron would hand it to the shell, which fails the same way
            return StepSpec("run", "shell", argv=(command.shell, "-c", text))
        return _recognise(argv)
    return _recognise(command.argv)


def _recognise(argv: tuple[str, ...]) -> StepSpec:
    if len(argv) >= 3 and _PYTHON.match(argv[0]) and PurePosixPath(argv[1]).name == "manage.py" \
            and re.fullmatch(r"[a-z_][a-z0-9_]*", argv[2]):
        return StepSpec(_step_name(argv[2]), "django", command=argv[2], args=tuple(argv[3:]))
    celery = _celery_call(argv)
    if celery is not None:
        return celery
    return StepSpec("run", "shell", argv=argv)


def _celery_call(argv: tuple[str, ...]) -> StepSpec | None:
    """``celery [-A APP] call TASK [--args JSON] [--kwargs JSON]`` (Celery's CLI reference)."""
    words = list(argv)
    if not words or PurePosixPath(words[0]).name != "celery" or "call" not in words:
        return None
    rest = words[words.index("call") + 1:]
    if not rest or rest[0].startswith("-"):
        return None
    task, args, kwargs = rest[0], [], {}
    i = 1
    while i < len(rest):
        opt, _, inline = rest[i].partition("=")
        value = inline if inline else (rest[i + 1] if i + 1 < len(rest) else None)
        if opt in ("-a", "--args", "-k", "--kwargs") and value is not None:
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                return None
            if opt in ("-a", "--args") and isinstance(parsed, list):
                args = parsed
            elif opt in ("-k", "--kwargs") and isinstance(parsed, dict):
                kwargs = parsed
            else:
                return None
            i += 1 if inline else 2
        else:
            return None  # an option that changes delivery (--eta, --queue): keep the command as it was
    return StepSpec(_step_name(task.rsplit(".", 1)[-1]), "celery", command=task, args=tuple(args),
                    kwargs=tuple(kwargs.items()))


def _step_name(word: str) -> str:
    name = re.sub(r"[^a-z0-9_-]+", "-", word.lower()).strip("-_")[:40]
    return name if name[:1].isalpha() else "run"


def name_from_command(command: Command, step: StepSpec) -> str:
    """A job name for a crontab line, which has none: the Django command, the Celery task, or
    the script the line runs."""
    if step.kind in ("django", "celery"):
        return step.command.rsplit(".", 1)[-1]
    text = command.shell_text or " ".join(command.argv)
    if m := re.search(r"manage\.py\s+([a-z_][a-z0-9_]*)", text):  # cd /srv/app && python manage.py X
        return m.group(1)
    text = re.sub(r"\d*(>>?|<)&?\s*\S+", " ", text)  # where output goes is not what the job is
    words = re.findall(r"[\w./-]+", text)
    skip = {"cd", "sh", "bash", "env", "nice", "ionice", "flock", "timeout", "sudo", "exec", "test", "echo"}
    paths = [PurePosixPath(w) for w in words if "/" in w and PurePosixPath(w).name]
    if paths:  # the last path named: the script, or what run-parts runs (/etc/cron.daily)
        last = paths[-1]
        return last.stem if re.search(r"\.(sh|py|rb|pl|php|js)$", last.name) else last.name
    plain = [w for w in words if w not in skip and not w.startswith("-")]
    return plain[0] if plain else (words[0] if words else "")
