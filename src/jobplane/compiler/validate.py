"""Load every definition under jobs/, build the model, and collect every problem in one pass.

A developer fixing a pull request wants the whole list at once, each line naming the file, the
job and the field; so nothing here stops at the first error.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from collections.abc import Iterator
from typing import Sequence

from jobplane.compiler.fields import Invalid, Loc
from jobplane.compiler import kinds
from jobplane.compiler.jsonnet_eval import (ConfinedImporter, ImportRefused, evaluate, evaluate_together,  # noqa: F401
                                            outside_definitions, rel_to, resolved)
from jobplane.compiler.sandbox import Evaluated, evaluate_all
# re-exported: what these checks yield lives in checked.py (light, for a run whose results are kept)
from jobplane.compiler import checked
from jobplane.compiler.checked import (Checked as Checked, FileCache as FileCache, FileChecked as FileChecked,
                                       LoadedJob as LoadedJob, _after_problems as _after_problems,
                                       _derived_collisions as _derived_collisions, after_problems as after_problems,
                                       definition_files as definition_files)
from jobplane.compiler.model import NAME_RE, Job, duplicate_step_problem
from jobplane.compiler.approval_checks import approval_problems
from jobplane.contract import lambda_step
from jobplane.contract.step_kinds import Executor
from jobplane.compiler.overrides import params_budget
from jobplane.compiler import expect_days
from jobplane.compiler.param_fires import with_fire_defaults
from jobplane.compiler.params import schedule_problems as params_schedule_problems
from jobplane.compiler.credential_checks import credential_warnings
from jobplane.compiler.pool_checks import pool_problems
from jobplane.compiler.secret_scope import scope_problems
from jobplane.compiler.blackouts import blackout_problems
from jobplane.compiler.calendars import calendar_problems, deployed_schedule
from jobplane.compiler.calendars import names_unknown_country
from jobplane.compiler.executors import by_executor
from jobplane.compiler.problems import DefinitionError, Problem, rels
from jobplane.contract import names
from jobplane.contract import runner as rc
from jobplane.contract.config import TEAM_RE, PlatformConfig
from jobplane.contract.names import base_module_names, too_long
from jobplane.contract.quoting import closest, did_you_mean, quoted
from jobplane.contract.types import JsonObject, JsonValue

#: Longest message text taken from Jsonnet or a model check (each quotes values with ``quoted``).
MAX_MESSAGE = 400


#: The platform's own Jsonnet library (jobs/lib/), as a trace names it.
PLATFORM_LIBRARY = "jobplane.libsonnet"


def _jsonnet_problem(source: str, err: RuntimeError) -> Problem:
    text = str(err).strip()
    first = text.splitlines()[0] if text else "Jsonnet evaluation failed"
    runtime = first.startswith("RUNTIME ERROR")
    # Static errors start "file:3:9-10 message"; runtime errors carry "\tfile:3:9-12\t..." lines.
    loc = re.search(r"(?:^|\s)(\S+?\.(?:jsonnet|libsonnet)):(\d+):(\d+)", text)
    if loc and Path(loc.group(1)).name == PLATFORM_LIBRARY:
        # an error jobplane's own library raises (jp.daily('25:00')) is the author's call of it,
        # further down the trace; a team's own library keeps its own line
        loc = re.search(r"(?:^|\s)(\S+?\.jsonnet):(\d+):(\d+)", text) or loc
    where = f" (line {loc.group(2)}, column {loc.group(3)} of {Path(loc.group(1)).name})" if loc else ""
    message = re.sub(r"^(RUNTIME ERROR: |STATIC ERROR: )?(\S+?\.(jsonnet|libsonnet):[\d:-]+ )?", "", first)
    if len(message) > MAX_MESSAGE:  # e.g. error std.toString(something huge)
        message = message[:MAX_MESSAGE] + f"… ({len(message)} characters)"
    kind = "evaluation error" if runtime else "syntax error"
    return Problem(source, None, None, f"Jsonnet {kind}: {message}{where}")


#: jobs/lib/jobplane.libsonnet's fields: ``name::`` or ``name(...)::`` two spaces in (jp.*), and
#: the members of its ``policy`` and ``events`` objects four spaces in (jp.policy.*, jp.events.*)
_LIBRARY_FIELD = re.compile(r"^  (\w+)(?:\(.*?\))?::", re.M)
_LIBRARY_BLOCK = re.compile(r"^  (policy|events):: \{(.*?)^  \}", re.M | re.S)


def _with_library_hint(problem: Problem, path: Path, error: str, config: PlatformConfig) -> Problem:
    """A misspelt library name (``jp.pyhton``, ``jp.policy.SKIP_IF_RUNING``) is, to Jsonnet, a
    field that does not exist, with no job and no hint: a newcomer QA pass met exactly that. When
    the failing line reads ``jp.<name>`` (or ``jp.policy.<name>``, ``jp.events.<name>``), the
    closest name the library has is added."""
    missing = re.search(r"Field does not exist: (\w+)", error)
    loc = re.search(r"(?:^|\s)(\S+?\.jsonnet):(\d+):", error)
    if not missing or not loc or not path.as_posix().endswith(Path(loc.group(1)).as_posix().lstrip("./")):
        return problem  # not a line of this file (an imported helper's): nothing to read there
    name = missing.group(1)
    try:
        line = path.read_text(errors="replace").splitlines()[int(loc.group(2)) - 1]
        library = (config.library_path / PLATFORM_LIBRARY).read_text()
    except (OSError, IndexError):
        return problem
    used = re.search(rf"\bjp\.(?:(policy|events)\.)?{re.escape(name)}\b", line)
    if not used:
        return problem
    if used.group(1):
        block = next((b for b in _LIBRARY_BLOCK.finditer(library) if b.group(1) == used.group(1)), None)
        options = re.findall(r"^\s+(\w+):", block.group(2), re.M) if block else []
        prefix = f"jp.{used.group(1)}."
    else:
        options, prefix = _LIBRARY_FIELD.findall(library), "jp."
    close = closest(name, options)
    if close is None:
        return problem
    return replace(problem, message=f"{problem.message}: {prefix}{name} is not in the library "
                                    f"(did you mean {prefix}{close}?)")


def _loc_text(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


#: What jobs/lib/jobplane.libsonnet returns for a bad argument (``jp.daily('25:00')``) in place of
#: the value it would build: ``{'jobplane:refused': why, value: stand-in}``. An ``error`` there
#: stopped the whole file at its first bad call ("1 problem" for 25 bad jobs, issue 65 item 6).
LIBRARY_REFUSED = "jobplane:refused"


def library_refusals(value: JsonValue, loc: Loc = ()) -> tuple[JsonValue, list[tuple[Loc, str, bool]]]:
    """``value`` with each library refusal replaced by its stand-in (checked like any value,
    null when there is none), and each refusal's field, reason and whether it has no stand-in."""
    if isinstance(value, dict):
        if LIBRARY_REFUSED in value and set(value) <= {LIBRARY_REFUSED, "value"}:
            why = value[LIBRARY_REFUSED]
            inner, more = library_refusals(value.get("value"), loc)
            return inner, [(loc, str(why)[:MAX_MESSAGE], inner is None), *more]
        found: list[tuple[Loc, str, bool]] = []
        out: JsonObject = {}
        for key, v in value.items():
            out[key], more = library_refusals(v, loc + (key,))
            found.extend(more)
        return out, found
    if isinstance(value, list):
        pairs = [library_refusals(v, loc + (i,)) for i, v in enumerate(value)]
        return [v for v, _ in pairs], [f for _, more in pairs for f in more]
    return value, []


def _model_problems(source: str, job_name: str | None, err: Invalid, raw: JsonObject,
                    refusals: Sequence[Loc] = ()) -> list[Problem]:
    """The model's problems; none at or under a field the library refused with no stand-in (a
    null there is not the author's value: the refusal names what is wrong there)."""
    problems = []
    for loc, message in err.problems:
        if any(loc[:len(r)] == r for r in refusals):
            continue
        if loc[:2] == ("schedule", 0) and isinstance(raw.get("schedule"), str):
            loc = loc[:1] + loc[2:]  # one expression written alone: name the field as written, not [0]
        problems.append(Problem(source, job_name, _loc_text(loc) or None, message[:MAX_MESSAGE]))
    return problems


#: What a definition's file and directory names may hold (issue 40 item 9: a name closing the
#: PR comment's code fence wrote markdown of its own).
FILE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _inert(name: str) -> str:
    """A name as it can be printed anywhere: escapes for what is not printable ASCII, and for
    the backtick (it would close a markdown code block)."""
    return ascii(name)[1:-1].replace("`", "\\x60")


def load_jobs(config: PlatformConfig, files: list[Path] | None = None,
              cache: FileCache | None = None) -> list[LoadedJob]:
    """Every job under jobs/, validated; raises DefinitionError listing every problem.

    Two passes over each definition, so no problem hides another: the checks that need only a
    few fields (team, name lengths, name uniqueness across files, step names, Fargate sizes) run
    on the raw object whatever else is wrong with it; the model then checks every field. A
    problem both find is reported once. Each file is checked alone (:func:`check_files`, or its
    result taken from ``cache``), then the checks across files run over all of them."""
    checked = check_definitions(config, files, cache)
    if checked.problems:
        raise DefinitionError(checked.problems)
    return sorted((lj for f in checked.files for lj in f.loaded), key=lambda lj: lj.job.name)


def check_definitions(config: PlatformConfig, files: list[Path] | None = None,
                      cache: FileCache | None = None) -> Checked:
    """checked.check_definitions with this module's :func:`check_files` (`jobplane validate`
    calls that one itself, and imports this module only when a file's result is not kept)."""
    return checked.check_definitions(config, check_files, files, cache)


def check_files(paths: list[Path], config: PlatformConfig) -> dict[Path, FileChecked]:
    """Each file's own checks (:class:`FileChecked`); in forked workers for many files
    (compiler/check_pool.py)."""
    from jobplane.compiler import check_pool

    # Jsonnet runs in a child process within jobplane.toml's [evaluation] limits (sandbox.py);
    # only the files whose names pass the check below are evaluated
    odd = {p: found for p in paths if (found := _odd_parts(p, config))}
    plain = [p for p in paths if p not in odd]
    evaluated = evaluate_all(plain, config) if plain else []
    source = rels(paths, config.root)  # each file as problems name it (problems.rel), its directory resolved once
    results = check_pool.check_each(lambda i: _check_file(plain[i], source[plain[i]], evaluated[i], config), len(plain))
    done = dict(zip(plain, results))
    out: dict[Path, FileChecked] = {}
    for path in paths:
        if path in odd:  # a name is quoted in the pull request's comment and in logs: plain names only
            name = source[path]
            out[path] = FileChecked((Problem(_inert(name), None, None,
                                             f"file and directory names are letters, digits, '.', '_' and '-' "
                                             f"(starting with a letter or digit): rename '{_inert(odd[path][0])}'"),),
                                    (), (), name)
            continue
        out[path] = done[path]
    return out


def _check_file(path: Path, source: str, outcome: Evaluated, config: PlatformConfig) -> FileChecked:
    if outcome.refusals:
        return FileChecked(tuple(Problem(source, None, None, r) for r in outcome.refusals), (), (), source)
    if outcome.error is not None:
        problem = _jsonnet_problem(source, RuntimeError(outcome.error))
        return FileChecked((_with_library_hint(problem, path, outcome.error, config),), (), (), source)
    if outcome.limit is not None:
        return FileChecked((Problem(source, None, None, outcome.limit),), (), (), source, evaluation_limit=True)
    problems: list[Problem] = []
    loaded: list[LoadedJob] = []
    names: list[tuple[str | None, tuple[tuple[str, str], ...]]] = []
    value = outcome.value
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(Problem(source, None, None, f"item {i} is {_json_kind(item)}, expected a job object"))
            continue
        raw_name = item.get("name")
        name = raw_name if isinstance(raw_name, str) else f"#{i + 1}"
        text = _json_text(item)  # one serialisation tells most items have no refusal, no reserved text
        stood_in, refusals = library_refusals(item) if text is None or LIBRARY_REFUSED in text else (item, [])
        item = stood_in if isinstance(stood_in, dict) else item
        problems.extend(Problem(source, name, _loc_text(where) or None, why) for where, why, _ in refusals)
        own = raw_derived_names(config.name_prefix, name, item) \
            if isinstance(raw_name, str) and NAME_RE.fullmatch(name) else None
        derived = tuple(own) if own is not None else ()
        names.append((raw_name if isinstance(raw_name, str) else None, derived))
        problems.extend(raw_problems(source, name, item, config, own,
                                     reserved=None if refusals or text is None or RESERVED_TEXT in text else []))
        problems.extend(team_directory_problems(path, source, name, item, config))
        data = dict(item)
        data.setdefault("timezone", config.default_timezone)
        try:
            job = Job.from_definition(data)
        except Invalid as e:
            problems.extend(_model_problems(source, name, e, item, [where for where, _, null in refusals if null]))
            continue
        job = with_fire_defaults(job, config)  # its calendar's days, for the runner (compiler/params.py)
        problems.extend(Problem(source, job.name, "expect.when", m) for m in expect_days.problems(job, config))
        job = expect_days.with_expect_days(job, config)  # the days its expectations' `when` names
        budget = params_budget(job)
        loaded.append(LoadedJob(job, source, budget))
        problems.extend(Problem(source, job.name, where, message) for where, message in scope_problems(job, config))
        problems.extend(notify_problems(source, job, config))
        problems.extend(approval_problems(source, job, config))  # jp.approval's, against jobplane.toml
        problems.extend(Problem(source, job.name, where, message)  # what each place a step runs cannot run of the job
                        for executor, steps in by_executor(job.runnable_steps())
                        for where, message in executor.job_problems(job, steps))
        problems.extend(pool_problems(source, job, config))
        problems.extend(blackout_problems(source, job, config))
        problems.extend(found := calendar_problems(source, job, config))
        if job.calendar is not None and not found and names[-1][1] \
                and not names_unknown_country(config.calendars, job.calendar):  # told against jobplane.toml
            # a calendar job deploys its compiled crons (~12 a year), each a schedule name of its
            # own: those are the names the checks across files must hold, not its rules' count
            derived = tuple(raw_derived_names(config.name_prefix, job.name, item, len(deployed_schedule(job, config))))
            names[-1] = (names[-1][0], derived)
            long = too_long([d for d in derived if d[0] == "schedule"])
            if long and not too_long(raw_derived_names(config.name_prefix, job.name, item)):  # else named above
                problems.append(Problem(source, job.name, "name", f"too long: the schedule name {long[-1][1]!r} "
                                        f"(one of the {len(long)} its calendar's crons deploy beyond the first) would "
                                        f"be {len(long[-1][1])} (AWS allows {long[-1][2]})"))
        problems.extend(override_problems(source, job, budget))
        problems.extend(Problem(source, job.name, f"params.{where}", message) for where, message in  # typed params
                        params_schedule_problems(job.params, bool(job.schedule or job.after), job.calendar is not None))
    jobs = tuple((lj.job.name, lj.job.team, tuple(a.job for a in lj.job.after)) for lj in loaded)
    return FileChecked(tuple(problems), tuple(loaded), tuple(names), source, jobs=jobs,
                       warnings=tuple(credential_warnings([(source, lj.job) for lj in loaded])))


def notify_problems(source: str, job: Job, config: PlatformConfig) -> list[Problem]:
    """A job alerts its team's channel and the channels jobplane.toml lets the team name
    (``[teams.<team>] notify_channels``), no other (issue 48 item 6: a job could page another
    team's channel)."""
    team = config.teams.get(job.team)
    if team is None:
        return []  # no teams declared (nothing to check against), or an unknown team, named elsewhere
    allowed = [c for c in (team.channel, *team.notify_channels) if c]
    return [Problem(source, job.name, f"notify.channels[{i}]",
                    f"team {quoted(job.team)} may not alert {quoted(channel)}: its jobs alert "
                    f"{', '.join(map(quoted, allowed)) or 'its default channel only'}; another channel is added to "
                    f"[teams.{job.team}] notify_channels in jobplane.toml (its code owners review that)")
            for i, channel in enumerate(job.notify.channels) if not team.may_notify(channel)]


def _odd_parts(path: Path, config: PlatformConfig) -> list[str]:
    """The parts of a definition's path under jobs/ that are not plain names."""
    return [part for part in _under_jobs(path, config) if not FILE_NAME_RE.fullmatch(part)]


def _under_jobs(path: Path, config: PlatformConfig) -> tuple[str, ...]:
    """The parts of ``path`` under jobs/ (none when it is not under it), from the paths' text
    when both are absolute (pathlib's relative_to parsed each path again: ~0.1 s at 5,000 jobs)."""
    jobs = config.jobs_path
    if not (path.is_absolute() and jobs.is_absolute()):
        return path.relative_to(jobs).parts if path.is_relative_to(jobs) else ()
    text, top = str(path), str(jobs).rstrip("/") + "/"  # both normalised by pathlib: no '//', no '/./'
    return tuple(text[len(top):].split("/")) if text.startswith(top) else ()


def team_directory_problems(path: Path, source: str, job: str, item: JsonObject,
                            config: PlatformConfig) -> list[Problem]:
    """A job's team is the directory its file sits in, ``<jobs_dir>/<team>/`` (issue 48 item 2).

    Code owners are assigned per directory (docs/deploy.md: CODEOWNERS): a file in jobs/growth/
    declaring ``team: 'billing'`` was reviewed by growth's owners and compiled into billing's
    root, with a grant on billing's secrets. The declared team must name the directory too, so a
    directory's reviewers approve every job that runs with its team's rights."""
    team = item.get("team")
    if not isinstance(team, str) or (config.teams and team not in config.teams) or not TEAM_RE.fullmatch(team):
        return []  # the model names a missing team, raw_problems an unknown or odd one
    parts = _under_jobs(path, config)
    directory = parts[0] if len(parts) > 1 else None
    if directory == team:
        return []
    where = f"{config.jobs_dir}/{directory}/" if directory else f"{config.jobs_dir}/ itself"
    return [Problem(source, job, "team", f"the job declares team {quoted(team)} but its file is in {where}: a job's "
                    f"file sits under {config.jobs_dir}/<its team>/ (whose code owners review it); move it to "
                    f"{config.jobs_dir}/{_inert(team)}/ or declare team {quoted(directory or '')}")]


def _json_kind(value: JsonValue) -> str:
    """What a JSON value is, in the words of the definition's author (not Python's type names)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {int: "a number", float: "a number", str: "a string", list: "an array"}.get(type(value), "a value")


def override_problems(source: str, job: Job, budget: int) -> list[Problem]:
    """A step's container override (its command and environment, with the run's params) must
    fit ECS's 8,192 characters, or RunTask fails at run time: check the fixed part now, with the
    job's default params (what a scheduled run sends)."""
    needed = rc.params_in_override(job.param_defaults)
    if needed <= budget:
        return []
    return [Problem(source, job.name, "steps" if budget < 0 else "params",
                    f"the steps' container overrides would exceed ECS's {rc.OVERRIDES_LIMIT} characters: "
                    f"{max(budget, 0)} are left for params, the default params take {needed}; "
                    "shorten env values, kwargs or params")]


RESERVED_TEXT = "<<jobplane:"  # contract/bindings.py: the tokens in compiled ASL


def _json_text(value: JsonValue) -> str | None:
    """``value`` as JSON text, to tell in one C call that no key or string holds a text (neither
    LIBRARY_REFUSED nor RESERVED_TEXT has a character JSON escapes or a quote, so each is in the
    text exactly when a key or a string holds it); None when it does not serialise. The two
    walks over every value (library_refusals, _reserved_text) were ~0.3 s at 5,000 jobs."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return None


def _reserved_text(value: JsonValue, path: str = "") -> list[str]:
    """The field paths of a definition whose keys or strings hold the binding token's prefix."""
    if isinstance(value, str):
        return [path or "(definition)"] if RESERVED_TEXT in value else []
    if isinstance(value, dict):
        found = [f"{path}.{k}".lstrip(".") for k in value if isinstance(k, str) and RESERVED_TEXT in k]
        return found + [p for k, v in value.items() for p in _reserved_text(v, f"{path}.{k}".lstrip("."))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _reserved_text(v, f"{path}[{i}]")]
    return []


def raw_problems(source: str, job: str, item: JsonObject, config: PlatformConfig,
                 derived: list[tuple[str, str]] | None = None, reserved: list[str] | None = None) -> list[Problem]:
    """The checks that need only a few fields, on the definition as Jsonnet produced it.
    ``derived``: raw_derived_names of ``job`` and ``item`` when already made; ``reserved``:
    _reserved_text of ``item`` when already known (each walked every value of the job again)."""
    problems = []
    team = item.get("team")
    if isinstance(team, str) and config.teams and team not in config.teams:
        hint = did_you_mean(team, list(config.teams)) or (
            f" (it has {', '.join(sorted(config.teams))}" + (f"; a new team is a [teams.{team}] table there)"
                                                            if TEAM_RE.fullmatch(team) else ")"))
        problems.append(Problem(source, job, "team", f"unknown team {quoted(team)}; teams are declared in jobplane.toml"
                                + hint))
    elif isinstance(team, str) and not TEAM_RE.fullmatch(team):
        problems.append(Problem(source, job, "team", f"team {quoted(team)} is not 1-40 lower-case letters, digits and "
                                "'-' (it names the team's Terraform root directory)"))
    for where in _reserved_text(item) if reserved is None else reserved:
        problems.append(Problem(source, job, where, f"{quoted(RESERVED_TEXT)} is reserved: the compiler marks "
                                "where deployment values (table, cluster, ...) go with it, and would bind this text too"))
    name = item.get("name")
    if isinstance(name, str) and NAME_RE.fullmatch(name):
        order = ["state machine", "schedule", "IAM role", "task definition family"]
        if derived is None or name != job:
            derived = raw_derived_names(config.name_prefix, name, item)
        long = sorted(too_long(derived), key=lambda x: order.index(x[0]))
        taken = sorted({n for _, n in derived}
                       & base_module_names(config.name_prefix))
        if taken:
            problems.append(Problem(source, job, "name", f"{quoted(name)} would name {', '.join(map(repr, taken))}, "
                                                         "which the base module already uses; choose another job name"))
        if long:  # one problem, however many derived names it makes too long
            kind, first, limit = long[0]
            more = "".join(f"; the {k} name {n!r} would be {len(n)} (AWS allows {lim})" for k, n, lim in long[1:])
            problems.append(Problem(source, job, "name", f"too long: the {kind} name {first!r} would be {len(first)} "
                                                         f"characters (AWS allows {limit}){more}; shorten the job name"))
    steps = item.get("steps")
    if isinstance(steps, list):
        named: list[tuple[JsonValue, list[tuple[str, JsonValue]]]] = []
        for i, step in enumerate(steps):
            if not isinstance(step, dict):
                continue
            walked = list(_raw_steps(step, f"steps[{i}]"))
            named.append((step.get("name"), [(w[len(f"steps[{i}]."):], m.get("name")) for w, m in walked[1:]]))
            for where, s in walked:
                given = [k for k in kinds.REGISTRY if s.get(k.name) is not None]
                if len(given) == 1 and given[0].info.executor is not Executor.GROUP:
                    problems.extend(Problem(source, job, where, p) for p in given[0].executor.raw_problems(s))
        if all(isinstance(n, str) and all(isinstance(m, str) for _, m in ms) for n, ms in named):
            duplicate = duplicate_step_problem(named)  # every name a str, just checked
            if duplicate:
                problems.append(Problem(source, job, "steps", duplicate))
    return problems


#: how deep the raw checks walk into groups: the model refuses any nesting (a group or a map
#: inside a group or a map) and says so; a hostile definition cannot make the walk deeper
_RAW_DEPTH = 4


def _raw_steps(step: JsonObject, where: str, depth: int = 0) -> Iterator[tuple[str, JsonObject]]:
    """``step`` and, walking into it, every step of a definition that may not validate, each with
    its field path: a parallel group's members, a map's items and each steps, and groups inside
    those (the step kinds say where their members are: StepKind.raw_members)."""
    yield where, step
    given = [k for k in kinds.REGISTRY if step.get(k.name) is not None]
    if len(given) != 1 or depth >= _RAW_DEPTH:
        return
    for below, member in given[0].raw_members(step):
        if isinstance(member, dict):
            yield from _raw_steps(member, f"{where}.{below}", depth + 1)


def raw_derived_names(prefix: str, name: str, item: JsonObject, schedules: int | None = None) -> list[tuple[str, str]]:
    """names.derived_names for a definition that may not validate: from its name, how many
    schedules it lists (or ``schedules``: a calendar job's compiled count) and whether any step
    has secrets."""
    schedule = item.get("schedule")
    count = 1 if isinstance(schedule, str) else len(schedule) if isinstance(schedule, list) else 0
    count = count if schedules is None else schedules
    steps = [s for s in item.get("steps") or [] if isinstance(s, dict)] if isinstance(item.get("steps"), list) else []
    runnable = [s for top in steps for _, s in _raw_steps(top, "")]  # a map's members too: an each step's secrets
    return derived_names(prefix, name, count, bool(isinstance(item.get("after"), list) and item["after"]),
                         any(s.get("secrets") for s in runnable), any(s.get("lambda") is not None for s in runnable))


def derived_names(prefix: str, name: str, schedules: int, after: bool, secrets: bool,
                  lambda_steps: bool = False) -> list[tuple[str, str]]:
    """(kind, name) of every AWS name a job with ``schedules`` schedules, ``after`` rules and
    steps with secrets or not derives from its name (``jobplane import`` names jobs with it too).
    No IAM role: a job's roles are its team's, named by team and grant (compiler/shared_roles.py,
    which bounds those names itself), so a job name no longer names a role."""
    out = [("state machine", names.state_machine_name(prefix, name))]
    out.extend(("schedule", names.schedule_name(prefix, name, i)) for i in range(schedules))
    if secrets:
        out.append(("task definition family", names.task_family(prefix, name)))
    if lambda_steps:
        out.append(("Lambda function", lambda_step.function_name(prefix, name)))
    return out
