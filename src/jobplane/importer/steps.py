"""What runs, as a jobplane step: a Django management command (``python manage.py NAME ...``)
becomes a ``django`` step, ``celery call TASK`` and a Celery beat entry a ``celery`` step,
anything else a ``shell`` step, so nothing is lost in the mapping.

A cron command is a shell string, run by ``/bin/sh -c`` (or its SHELL). One that is a plain
command (words, quotes; no pipes, redirections, variables, globs or ``;``) runs the same from
its argv, so it is split and recognised; any other stays a shell string, as cron ran it.
Environment values whose names the runner treats as credentials (contract/secret_names.py), or
that hold one (a URL's password, a known token: contract/credentials.py), are never written: each
becomes a secret reference the team creates, listed in the report; so does a credential assigned
in front of the command (``PGPASSWORD=x pg_dump``); any other credential in what would be written
refuses the entry, naming it (importer/inline_secrets.py).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from jobplane.contract import credentials
from jobplane.contract.secret_names import has_url_password, is_secret_name
from jobplane.importer import inline_secrets
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


def step_for(entry: Entry, team: str) -> tuple[StepSpec, list[SecretTodo], list[str]]:
    """The step, the secrets the team creates for it, and the refusals: a credential in what
    would be written that cannot become a secret reference (importer/inline_secrets.py)."""
    env: list[tuple[str, str]] = []
    secrets: list[tuple[str, str]] = []
    todos: list[SecretTodo] = []
    refused: list[str] = []
    for name, value in entry.env:
        if value and (is_secret_name(name) or has_url_password(value) or credentials.in_text(value)):
            # one secret per variable of the team: a crontab's variable serves every entry below it
            secret = f"{team}/{name.lower().replace('_', '-')}"
            secrets.append((name, secret))
            todos.append(SecretTodo(name, secret, f"{name} in {entry.origin.file}"))
        else:
            env.append((name, value))
    for name, ref in entry.secrets:
        secrets.append((name, ref.secret_name))
        todos.append(SecretTodo(name, ref.secret_name, ref.came_from))
    command = entry.command
    if command.shell_text is not None:
        text, inline, problems = inline_secrets.take_assignments(command.shell_text)
        refused.extend(problems)
        given = {n for n, _ in env} | {n for n, _ in secrets}
        for i in inline:
            if i.name in given:
                refused.append(f"the variable {i.name} is set both above the entry and in its command: "
                               "keep one")
                continue
            secret = f"{team}/{i.name.lower().replace('_', '-')}"
            secrets.append((i.name, secret))
            todos.append(SecretTodo(i.name, secret, f"{i.name}, set in the command of {entry.origin}"))
        if inline:
            command = replace(command, shell_text=text.strip())
    step = _target(command)
    refused.extend(inline_secrets.refusals(_written_values(step, env)))
    return StepSpec(**{**step.__dict__, "env": tuple(env), "secrets": tuple(secrets)}), todos, refused


def _written_values(step: StepSpec, env: list[tuple[str, str]]) -> list[tuple[str, list[credentials.Finding]]]:
    """Every value of ``step`` the job file would hold, with the credentials found in each."""
    out: list[tuple[str, list[credentials.Finding]]] = []
    # a word with blanks in it is a script (`sh -c TEXT`, a GitHub `run:`): searched as one
    out.extend(("the command", credentials.in_shell(w)) for w in step.argv if re.search(r"\s", w))
    out.append(("the command", credentials.in_words(step.argv)))
    out.append(("the command", credentials.in_words([step.command])))
    out.append(("the arguments", inline_secrets.json_findings(list(step.args))))
    out.append(("the keyword arguments", inline_secrets.json_findings(dict(step.kwargs))))
    out.extend((f"the variable {name}", credentials.in_text(value)) for name, value in env)
    return [(where, found) for where, found in out if found]


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


#: Django management commands that run another job named by their first argument
#: (``manage.py cron send_reminders``, django-extensions' ``runjob``/``runscript``).
_DJANGO_RUNNERS = frozenset({"cron", "runjob", "runjobs", "runscript", "run_task", "runtask", "crontab", "task"})
#: Words that set up or wrap a command rather than name it.
_SETUP = frozenset({"cd", "source", ".", "export", "set", "unset", "umask", "ulimit", "test", "[", "[[", "echo",
                    "printf", "command", "type", "hash", "which", "sleep", "true", "false", ":", "mkdir", "touch",
                    "date", "exit", "if", "then", "else", "fi", "{", "}", "(", ")", "!", "do", "done", "for", "while"})
#: Wrappers: the command is what follows them: their options (with the values of those listed)
#: and as many arguments as the number say (timeout's duration, flock's lock file) are skipped.
_WRAPPERS: dict[str, tuple[int, frozenset[str]]] = {
    "nice": (0, frozenset({"-n"})), "ionice": (0, frozenset({"-c", "-n", "-p"})), "nohup": (0, frozenset()),
    "exec": (0, frozenset()), "time": (0, frozenset()), "env": (0, frozenset({"-u", "-C"})),
    "sudo": (0, frozenset({"-u", "-g", "-C"})), "chronic": (0, frozenset()), "cronic": (0, frozenset()),
    "setsid": (0, frozenset()), "stdbuf": (0, frozenset({"-i", "-o", "-e"})), "timeout": (1, frozenset({"-s", "-k"})),
    "flock": (1, frozenset({"-w", "-E"})), "setlock": (1, frozenset()),
}
#: Tools that run another (``bundle exec rake x``, ``uv run x``): the name is what they run.
_RUNNERS = {"bundle": "exec", "poetry": "run", "uv": "run", "pipenv": "run", "npx": "", "yarn": "run", "npm": "run",
            "pnpm": "run"}
#: Programs whose first argument names the job (``rake jobs:work``, ``make report``).
_TASK_RUNNERS = frozenset({"rake", "make", "invoke", "fab", "just", "task"})
_INTERPRETERS = re.compile(r"^(?:python\d*(?:\.\d+)?|php\d*|ruby|node|nodejs|perl|bash|sh|zsh|dash|deno|bun|"
                           r"Rscript|java)$")
_SCRIPT = re.compile(r"\.(sh|py|rb|pl|php|js|ts|bash)$")


def name_from_command(command: Command, step: StepSpec) -> str:
    """A job name for a crontab line, which has none: the Django command (or the task a runner
    command runs), the Celery task, the script or program the line runs; never a shell built-in,
    a wrapper, a variable assignment or an argument (``cd .../bin; php artisan x`` is ``x``)."""
    if step.kind == "django":
        if step.command in _DJANGO_RUNNERS and step.args and isinstance(step.args[0], str) \
                and re.fullmatch(r"[A-Za-z_][\w.:-]*", step.args[0]):
            return step.args[0].rsplit(".", 1)[-1]
        return step.command
    if step.kind == "celery":
        return step.command.rsplit(".", 1)[-1]
    text = command.shell_text if command.shell_text is not None else " ".join(shlex.quote(a) for a in command.argv)
    text = re.sub(r"\$\([^()]*\)|`[^`]*`", " ", text)  # what a substitution prints is not what the job is
    text = re.sub(r"\d*(>>?|<)&?\s*\S+", " ", text)  # nor where output goes
    for segment in re.split(r"&&|\|\||[;|\n]", text):
        name = _segment_name(_words(segment))
        if name:
            return name
    return _first_word(text)


def _words(segment: str) -> list[str]:
    try:
        words = shlex.split(segment)
    except ValueError:
        words = segment.split()
    return [w for w in words if w not in ("{", "}", "(", ")")]


def _segment_name(words: list[str]) -> str:
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):  # PATH=... cmd
        words = words[1:]
    while words and PurePosixPath(words[0]).name in _WRAPPERS:
        skip, with_value = _WRAPPERS[PurePosixPath(words[0]).name]
        words = words[1:]
        while words and (words[0].startswith("-") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0])):
            words = words[2:] if words[0] in with_value else words[1:]
        words = words[skip:]
    while words and words[0] in _RUNNERS and (not _RUNNERS[words[0]] or words[1:2] == [_RUNNERS[words[0]]]):
        words = words[2:] if _RUNNERS[words[0]] else words[1:]
    if not words or words[0] in _SETUP or words[0].startswith("$") and "/" not in words[0]:
        return ""
    program = PurePosixPath(words[0]).name
    args = [w for w in words[1:] if not w.startswith("-")]
    if program == "run-parts" and args:
        return PurePosixPath(args[-1]).name  # /etc/cron.daily
    if program in _TASK_RUNNERS and args:
        return args[0].replace(":", "-")
    if program in ("manage.py", "artisan", "console"):  # ./manage.py x, as an executable
        args = [program, *args]
    elif not _INTERPRETERS.match(program):
        return _SCRIPT.sub("", program)
    if len(args) > 1 and PurePosixPath(args[0]).name in ("artisan", "console", "manage.py"):
        if PurePosixPath(args[0]).name == "manage.py" and args[1] in _DJANGO_RUNNERS and len(args) > 2:
            return args[2].rsplit(".", 1)[-1]  # manage.py cron send_reminders
        return args[1].replace(":", "-")  # php artisan cache:prune, python manage.py clearsessions
    if "-m" in words[1:] and words.index("-m") + 1 < len(words):  # python -m app.jobs.cleanup
        return words[words.index("-m") + 1].rsplit(".", 1)[-1]
    return _SCRIPT.sub("", PurePosixPath(args[0]).name) if args else program


def _first_word(text: str) -> str:
    """The last resort (a line that only echoes): the first word that is not a built-in."""
    words = re.findall(r"[\w./-]+", text)
    plain = [w for w in words if w not in _SETUP and w not in _WRAPPERS and not w.startswith("-")]
    return plain[0] if plain else (words[0] if words else "")
