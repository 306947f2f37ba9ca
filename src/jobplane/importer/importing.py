"""``jobplane import``: read the sources, map each entry to a job file, validate them all with
the repository's own jobs exactly as ``jobplane validate`` would, prove each job's fires against
its source, and only then write, all at once.

An entry becomes a job or a refusal with its reason, never a guess: a schedule EventBridge
cannot say, a fire that would move, a value the source does not hold, a file that exists. Input
that cannot be read at all (a bad crontab line, invalid YAML) stops the whole import before
anything is mapped (exit 2), every problem named with its ``file:line``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from jobplane.compiler.problems import DefinitionError, Problem
from jobplane.compiler.validate import LoadedJob, load_jobs
from jobplane.contract.config import CONFIG_FILE, TEAM_RE, PlatformConfig
from jobplane.contract.schedule import ScheduleError, validate_timezone
from jobplane.contract.schedule_kinds import kind_of
from jobplane.importer import formats
from jobplane.importer.entries import Entry, InputProblem, Origin, Reading, Skipped
from jobplane.importer.naming import Namer, kebab
from jobplane.importer.render import JobFile, render
from jobplane.importer.sources import ReadContext, Source
from jobplane.contract import credentials
from jobplane.importer.steps import SecretTodo, name_from_command, step_for
from jobplane.importer.verify import WINDOW_DAYS, Verdict, verify
from jobplane.contract.types import JsonObject

#: ``auto`` or the name of a format in :data:`jobplane.importer.formats.FORMATS` (checked by
#: :func:`run_import`; the CLI's choices are the same list).
Format = str
#: A step's timeout when the source sets none: cron and EventBridge never stop a command, so the
#: step may run as long as the job (jobplane's job default, 24 h), not jobplane's step default (1 h).
NO_LIMIT = 86400
MAX_ATTEMPTS = 10
#: Limits on input before anything is mapped (every input is hostile): a schedule file is kilobytes.
MAX_INPUT_BYTES = 1024 * 1024
MAX_ARGV = 256
MAX_ENV = 256
MAX_VALUE_CHARS = 32 * 1024
#: A job that fires this often or more may overlap itself: the report suggests SKIP_IF_RUNNING.
FREQUENT_PER_DAY = 24


class UnreadableInput(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Options:
    team: str
    timezone: str | None = None
    force: bool = False
    verify: bool = True
    dry_run: bool = False
    accept_dst: bool = False
    replace_as: str | None = None
    source_format: Format = "auto"
    start: datetime | None = None  # the verification window starts the day after (default: now)


@dataclass
class Outcome:
    """One source entry's fate, as the terminal table and ``--report`` show it."""

    origin: Origin
    source_schedule: str
    job: str | None = None
    file: str | None = None
    schedules: tuple[str, ...] = ()
    timezone: str | None = None
    policy: str | None = None
    enabled: bool = True
    verdict: Verdict | None = None
    refused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    todos: list[SecretTodo] = field(default_factory=list)
    rendered: str | None = None

    @property
    def imported(self) -> bool:
        return not self.refused and self.rendered is not None

    @property
    def written(self) -> tuple[str, str, str]:
        """(job, file, rendered definition) of an outcome that has them (it was rendered)."""
        if self.job is None or self.file is None or self.rendered is None:
            raise ValueError(f"{self.source_schedule!r} was not rendered")
        return self.job, self.file, self.rendered

    def as_json(self) -> JsonObject:
        verdict = None
        if self.verdict is not None:
            verdict = {"status": self.verdict.status, "fires": self.verdict.fires,
                       "window_days": self.verdict.days,
                       "window_start": self.verdict.start.isoformat() if self.verdict.start else None,
                       "first_difference": str(self.verdict.first) if self.verdict.first else None,
                       "differences": len(self.verdict.differences), "dst_only": self.verdict.dst_only,
                       "summary": self.verdict.summary()}
        return {"source": {"file": self.origin.file, "line": self.origin.line, "entry": self.origin.label,
                           "schedule": self.source_schedule},
                "imported": self.imported, "job": self.job, "file": self.file, "schedule": list(self.schedules),
                "timezone": self.timezone, "policy": self.policy, "enabled": self.enabled, "verified": verdict,
                "refused": self.refused, "notes": self.notes, "todo": [str(t) for t in self.todos]}


@dataclass
class Result:
    outcomes: list[Outcome]
    skipped: list[Skipped]
    written: list[str]
    dry_run: bool

    @property
    def exit_code(self) -> int:
        return 1 if self.not_imported or any(not o.imported for o in self.outcomes) else 0

    @property
    def not_imported(self) -> list[Skipped]:
        """What the source ran and jobplane will not (``@reboot``): each counts as not imported."""
        return [s for s in self.skipped if s.counts]

    @property
    def nothing_to_schedule(self) -> list[Skipped]:
        return [s for s in self.skipped if not s.counts]

    def as_json(self) -> JsonObject:
        return {"imported": sum(o.imported for o in self.outcomes),
                "refused": sum(not o.imported for o in self.outcomes) + len(self.not_imported),
                "written": self.written, "dry_run": self.dry_run,
                "jobs": [o.as_json() for o in self.outcomes],
                "not_imported": [{"source": {"file": s.origin.file, "line": s.origin.line, "entry": s.origin.label},
                                  "reason": s.reason} for s in self.not_imported],
                "skipped": [{"source": {"file": s.origin.file, "line": s.origin.line, "entry": s.origin.label},
                             "reason": s.reason} for s in self.nothing_to_schedule]}


# -- reading --------------------------------------------------------------------------------

def read_sources(paths: list[Path], options: Options, team: str) -> Reading:
    """Each file by its format (as given, else the first of :data:`formats.FORMATS` that
    recognises it), every problem of every file collected."""
    reading = Reading()
    sources: list[Source] = []
    for path in paths:
        try:
            if path.stat().st_size > MAX_INPUT_BYTES:
                reading.problems.append(InputProblem(Origin(str(path), None, "file"), (
                    f"larger than {MAX_INPUT_BYTES // 1024} KiB: not read (a schedule file is far smaller; split it)")))
                continue
            sources.append(Source(path, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as e:
            reading.problems.append(InputProblem(Origin(str(path), None, "file"), f"cannot be read: {e}"))
    detected = options.source_format == formats.AUTO
    kinds = [formats.detect(s) if detected else formats.by_name(options.source_format) for s in sources]
    for source, kind in zip(sources, kinds):
        if detected and (why := formats.unsupported(source)):
            reading.problems.append(InputProblem(Origin(source.name, None, "file"), why))
            continue
        siblings = tuple(s for s, k in zip(sources, kinds) if k is kind)
        try:
            reading.extend(kind.read(source, ReadContext(team, siblings, detected)))
        except (RecursionError, OverflowError, MemoryError) as e:  # hostile input, named, never a traceback
            reading.problems.append(InputProblem(Origin(source.name, None, kind.name),
                                                 f"not read: {type(e).__name__} ({e or 'nested too deep'})"))
    return reading


# -- mapping --------------------------------------------------------------------------------

def _plan(entry: Entry, options: Options, config: PlatformConfig, namer: Namer) -> Outcome:
    source_schedule = "; ".join(s.text for s in entry.schedules)
    out = Outcome(entry.origin, source_schedule, enabled=entry.enabled, notes=list(entry.notes))
    out.refused.extend(entry.blockers)
    zone = entry.timezone or options.timezone or entry.timezone_default
    if options.timezone and entry.timezone and options.timezone != entry.timezone:
        out.notes.append(f"the source says {entry.timezone}: --timezone {options.timezone} is not used for it")
    if zone is None:
        out.refused.append("the source does not say its timezone (a crontab runs in its host's): give "
                           "--timezone, e.g. --timezone Asia/Tokyo; jobplane does not assume UTC")
    else:
        try:
            validate_timezone(zone)
        except ScheduleError as e:
            out.refused.append(f"timezone: {e}")
            zone = None
    out.timezone = zone
    expressions: list[str] = []
    for schedule in entry.schedules:
        t = formats.translate(schedule)
        if t.refusal:
            out.refused.append(t.refusal)
        expressions.extend(t.expressions)
    out.schedules = tuple(expressions)
    # Replace (Kubernetes concurrencyPolicy, GitHub cancel-in-progress) is the REPLACE policy:
    # a new fire stops the running execution and runs (docs/dsl.md, Policies)
    policy = {"allow": "ALWAYS_RUN", "forbid": "SKIP_IF_RUNNING", "replace": "REPLACE"}.get(entry.concurrency)
    if entry.concurrency == "replace" and options.replace_as:
        policy = options.replace_as
        out.notes.append(f"concurrency Replace (stop the running job, start the new one) imported as {policy}, "
                         "as --replace-as says")
    out.policy = policy
    attempts = entry.attempts
    if attempts and attempts > MAX_ATTEMPTS:
        out.notes.append(f"backoffLimit allowed {attempts} attempts; jobplane allows {MAX_ATTEMPTS}")
        attempts = MAX_ATTEMPTS
    if attempts and attempts > 1:
        out.notes.append(f"{attempts} attempts: Kubernetes retried any failure, jobplane retries retryable exits "
                         "only (docs/runner-contract.md)")
    step, todos, credential_refusals = step_for(entry, options.team)
    out.refused.extend(credential_refusals)
    description = entry.description[:500]
    if found := credentials.in_shell(description):  # a comment above a crontab line is written too
        out.notes.append(f"the comment above the entry holds {found[0]}: not written as the job's description")
        description = ""
    hint = entry.name_hint or name_from_command(entry.command, step)
    name = namer.name(hint, f"cron-line-{entry.origin.line or 1}", len(expressions), bool(step.secrets))
    if hint and name != _simple(hint):
        out.notes.append(f"named {name!r} (from {hint!r})")
    out.notes.extend(step.notes)
    out.todos = todos
    out.job = name
    out.file = f"{config.jobs_dir}/{options.team}/{name}.jsonnet"
    if policy == "ALWAYS_RUN" and _frequent(expressions):
        out.notes.append("fires often and ran ALWAYS_RUN (its scheduler's behaviour): consider SKIP_IF_RUNNING so "
                         "runs never overlap")
    if out.refused or zone is None or policy is None:
        return out
    header = [f"Imported by `jobplane import` from {entry.origin} ({entry.origin.label}): {source_schedule}"]
    header += [f"TODO: {t}" for t in todos]
    try:
        out.rendered = render(JobFile(
            name=name, team=options.team, description=description, schedules=tuple(expressions),
            timezone=zone, policy=policy, enabled=entry.enabled, timeout=entry.timeout_seconds,
            step=step, step_timeout=entry.timeout_seconds or NO_LIMIT, attempts=attempts, header=tuple(header)))
    except ValueError as e:
        out.refused.append(f"a value cannot be written as JSON: {e}")
    if entry.timeout_seconds is None:
        out.notes.append("no time limit in the source: the step may run 24h (jobplane's job timeout)")
    return out


def _planned(entry: Entry, options: Options, config: PlatformConfig, namer: Namer) -> Outcome:
    """An entry's outcome; an entry whose values are too large, or that fails to map, is refused
    naming why, and the other entries go on."""
    too_big = _oversized(entry)
    if too_big:
        return Outcome(entry.origin, "; ".join(s.text[:80] for s in entry.schedules), refused=[too_big])
    try:
        return _plan(entry, options, config, namer)
    except (ValueError, OverflowError, RecursionError) as e:
        return Outcome(entry.origin, "; ".join(s.text[:80] for s in entry.schedules),
                       refused=[f"cannot be mapped: {type(e).__name__}: {str(e)[:200]}"])


def _oversized(entry: Entry) -> str | None:
    c = entry.command
    texts = [*c.argv, c.shell_text or "", c.stdin or "", *(v for _, v in entry.env), *(n for n, _ in entry.env),
             entry.name_hint, *(s.text for s in entry.schedules)]
    if len(c.argv) > MAX_ARGV or len(entry.env) > MAX_ENV:
        return (f"{len(c.argv)} arguments and {len(entry.env)} environment variables: more than jobplane imports "
                f"({MAX_ARGV} and {MAX_ENV})")
    if any(len(t) > MAX_VALUE_CHARS for t in texts):
        return f"a command, argument or value longer than {MAX_VALUE_CHARS} characters: not imported"
    return None


def _simple(hint: str) -> str:
    return kebab(hint, "")


def _frequent(expressions: list[str]) -> bool:
    return any(kind_of(e).most_per_day(e) >= FREQUENT_PER_DAY for e in expressions)


# -- the import -----------------------------------------------------------------------------

def run_import(config: PlatformConfig, paths: list[Path], options: Options) -> Result:
    if not TEAM_RE.fullmatch(options.team) or options.team == config.library_path.name:
        raise UnreadableInput([f"--team {options.team!r}: a team is one directory under {config.jobs_dir}/, named "
                               f"by 1-40 lower-case letters, digits and '-' (not {config.library_path.name!r})"])
    target = (config.jobs_path / options.team).resolve()
    if target.parent != config.jobs_path.resolve():
        raise UnreadableInput([f"--team {options.team!r}: its files would be written outside {config.jobs_dir}/"])
    if config.teams and options.team not in config.teams:
        raise UnreadableInput([f"--team {options.team!r} is not declared in {CONFIG_FILE} "
                               f"(teams: {', '.join(sorted(config.teams))})"])
    if options.source_format != formats.AUTO and options.source_format not in formats.names():
        raise UnreadableInput([f"--format {options.source_format!r}: not a format jobplane reads "
                               f"({', '.join([formats.AUTO, *formats.names()])})"])
    if options.timezone:
        try:
            validate_timezone(options.timezone)
        except ScheduleError as e:
            raise UnreadableInput([f"--timezone: {e}"]) from None
    reading = read_sources(paths, options, options.team)
    if reading.problems:
        raise UnreadableInput([str(p) for p in reading.problems])
    try:
        existing = load_jobs(config)
    except DefinitionError as e:
        raise UnreadableInput(["the repository's jobs do not validate; fix them first (`jobplane validate`):"]
                              + [str(p) for p in e.problems]) from None
    target_dir = config.jobs_path / options.team
    # a job in the very file an entry would be written to is that entry's earlier import (or a
    # job of the same name): the entry takes the same name and file, which --force overwrites,
    # rather than a new name beside it
    overwritable = {lj.job.name for lj in existing
                    if (config.root / lj.source).resolve().parent == target_dir.resolve()
                    and (config.root / lj.source).stem == lj.job.name}
    namer = Namer(config.name_prefix, {lj.job.name: (len(lj.job.schedule), _has_secrets(lj)) for lj in existing},
                  overwritable)
    outcomes = [_planned(entry, options, config, namer) for entry in reading.entries]
    for o in outcomes:
        if o.imported and (config.root / o.written[1]).exists() and not options.force:
            o.refused.append(f"{o.file} exists: pass --force to overwrite it (or rename the job there)")
    staged = _validated(config, outcomes)
    start = options.start or datetime.now().astimezone()
    for entry, o in zip(reading.entries, outcomes):
        if not o.imported or not options.verify:
            continue
        job = staged[o.written[0]].job
        o.verdict = verify(entry.schedules, list(job.schedule), job.timezone or config.default_timezone, start,
                           WINDOW_DAYS)
        if o.verdict.status == "differs":
            if o.verdict.dst_only and options.accept_dst:
                o.notes.append(f"fires differ on daylight-saving change days, accepted by --accept-dst: "
                               f"{'; '.join(str(d) for d in o.verdict.differences[:4])}")
            else:
                o.refused.append(f"the fires would change: {o.verdict.summary()}" + (
                    "; cron and EventBridge treat a daylight-saving change differently (docs/import.md): "
                    "pass --accept-dst to take EventBridge's rule" if o.verdict.dst_only else ""))
    written: list[str] = []
    if not options.dry_run:
        written = _write(config, [o for o in outcomes if o.imported])
    return Result(outcomes, reading.skipped, written, options.dry_run)


def _has_secrets(lj: LoadedJob) -> bool:
    return any(s.secrets for step in lj.job.steps for s in [step, *(step.parallel or [])])


def _validated(config: PlatformConfig, outcomes: list[Outcome]) -> dict[str, LoadedJob]:
    """Validate the repository with the imported files in place, in a copy of it: a file with a
    problem is refused with it and the rest validated again, until what is left is clean."""
    for _ in range(len(outcomes) + 1):
        candidates = [o for o in outcomes if o.imported]
        with tempfile.TemporaryDirectory(prefix="jobplane-import-") as tmp:
            root = Path(tmp)
            if (config.root / CONFIG_FILE).exists():
                shutil.copy(config.root / CONFIG_FILE, root / CONFIG_FILE)
            shutil.copytree(config.jobs_path, root / config.jobs_dir, symlinks=True, dirs_exist_ok=True)
            for o in candidates:
                _, file, rendered = o.written
                target = root / file
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(rendered)
            try:
                loaded = load_jobs(replace(config, root=root))
            except DefinitionError as e:
                by_file: dict[str, list[Problem]] = {}
                for p in e.problems:
                    by_file.setdefault(p.file, []).append(p)
                refused = [o for o in candidates if o.file in by_file]
                if not refused:
                    raise UnreadableInput(["the import would make the repository invalid:"]
                                          + [str(p) for p in e.problems]) from None
                for o in refused:
                    o.refused.extend(f"jobplane validate: {p.field + ': ' if p.field else ''}{p.message}"
                                     for p in by_file[o.written[1]])
                continue
            return {lj.job.name: lj for lj in loaded}
    raise AssertionError("each pass refuses at least one file")


def _write(config: PlatformConfig, outcomes: list[Outcome]) -> list[str]:
    """Every file or none: each is written beside its target and renamed over it once all are."""
    pending: list[tuple[Path, Path]] = []
    try:
        for o in outcomes:
            _, file, rendered = o.written
            target = config.root / file
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(rendered)
            pending.append((Path(tmp_name), target))
    except OSError:
        for tmp, _ in pending:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, target in pending:
        os.replace(tmp, target)
    return [o.file for o in outcomes if o.file]
