"""What every source format is read into: one :class:`Entry` per scheduled job found, in the
source's own terms (its schedule language, its command, its environment), before anything is
translated. Readers only read; :mod:`jobplane.importer.importing` decides what jobplane makes of
an entry, so the mapping rules live in one place whatever the format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal



@dataclass(frozen=True)
class Origin:
    """Where an entry came from, for every message and the report: ``file:line`` and what the
    source calls it (a crontab line, a CronJob's name, a beat entry's key)."""

    file: str
    line: int | None
    label: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class SourceSchedule:
    #: the name of the schedule language it speaks: a :class:`jobplane.importer.dialects.Dialect`
    #: of a registered format (``unix-cron``, ``eventbridge``, ``celery-crontab``, ``interval``,
    #: ``github-cron``), which carries its translation and its oracle
    dialect: str
    text: str  # as the source writes it: '0 9 1 * MON', 'cron(0 9 * * ? *)', 'every 30 s'
    seconds: int | None = None  # interval only


@dataclass(frozen=True)
class SecretRef:
    """A value that must not be written into a file: where it lives in the source, and the
    Secrets Manager name the job will read it from (the team creates it; the report says so)."""

    secret_name: str
    came_from: str  # 'Kubernetes secret db-credentials, key password', 'crontab variable STRIPE_KEY'


@dataclass(frozen=True)
class Command:
    """What runs. ``argv`` is an exec vector; a cron line is a shell string (``shell_text``),
    run by ``shell`` as cron does (``/bin/sh -c``, or its SHELL variable), and ``stdin`` is what
    cron's ``%`` rule feeds it."""

    argv: tuple[str, ...] = ()
    shell_text: str | None = None
    shell: str = "/bin/sh"
    stdin: str | None = None
    celery_task: str | None = None  # a Celery beat entry runs a registered task, not a process
    celery_args: tuple[object, ...] = ()
    celery_kwargs: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class Entry:
    origin: Origin
    name_hint: str
    schedules: tuple[SourceSchedule, ...]
    command: Command
    timezone: str | None = None  # None: the source does not say (a host's local time)
    timezone_default: str | None = None  # what the source's own default is, when it has one (Celery: UTC)
    enabled: bool = True
    concurrency: Literal["allow", "forbid", "replace"] = "allow"
    description: str = ""
    env: tuple[tuple[str, str], ...] = ()
    secrets: tuple[tuple[str, SecretRef], ...] = ()
    timeout_seconds: int | None = None
    attempts: int | None = None  # total attempts (Kubernetes: backoffLimit + 1)
    #: What the entry needs that the source does not say: the job is refused with these.
    blockers: tuple[str, ...] = ()
    #: What the report tells the person about this entry (dropped MAILTO, the entrypoint, ...).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """An entry that is read but not imported by design. ``counts``: the source ran something
    jobplane will not (``@reboot``, a Celery ``solar``): not imported, exit 1. Otherwise there was
    nothing to schedule (a ServiceAccount beside a CronJob, an event-pattern rule, a workflow
    without a schedule): reported as skipped, and the import can still succeed."""

    origin: Origin
    reason: str
    counts: bool = True


@dataclass(frozen=True)
class InputProblem:
    """Input that cannot be read as its format (a bad crontab line, invalid YAML): nothing is
    written while any exists (exit 2)."""

    origin: Origin
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


@dataclass
class Reading:
    """What one source file gave."""

    entries: list[Entry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)

    def extend(self, other: Reading) -> None:
        self.entries.extend(other.entries)
        self.skipped.extend(other.skipped)
        self.problems.extend(other.problems)
