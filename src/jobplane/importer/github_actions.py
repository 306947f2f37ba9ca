"""GitHub Actions workflows (``.github/workflows/*.yml``) that run on a schedule: each job of a
workflow with ``on.schedule`` becomes a jobplane job that runs the job's ``run:`` steps.

What GitHub documents (https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#schedule):
``on.schedule`` is a list of ``cron:`` strings in POSIX cron syntax, five fields (minute 0-59,
hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6 or SUN-SAT) with the
operators ``* , - /``; they run in UTC unless the schedule names an IANA ``timezone``, and "during
DST spring-forward transitions, scheduled workflows in skipped hours advance to the next valid
time" (02:30 runs at 03:00); "the shortest interval you can run scheduled workflows is once every
5 minutes"; a run may start late at busy times (the start of every hour) or be dropped.

What runs (workflow syntax, ``jobs.<job_id>.steps[*].shell``): each ``run:`` step is a script
run by ``bash -e {0}`` when no shell is named, ``bash --noprofile --norc -eo pipefail {0}`` for
``shell: bash`` and ``sh -e {0}`` for ``shell: sh``; a failing step ends the job. A step that
``uses:`` an action runs code GitHub's runner fetches and hosts (``actions/checkout`` clones the
repository into the runner's workspace): a jobplane step runs a command in the team's runner
image, so a job with such a step is refused, naming the action. So is what only GitHub can
evaluate or provide: ``${{ ... }}`` in a script, ``if:`` conditions, matrices, ``needs``,
services and containers, and the runner's own variables (``$GITHUB_OUTPUT``, ``$RUNNER_TEMP``).
``env`` values are kept; ``${{ secrets.NAME }}`` becomes a jobplane secret the team creates.
A workflow without ``on.schedule`` (``workflow_dispatch`` only: run by hand) is reported as not
scheduled.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone
from typing import Literal, cast
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

from jobplane.contract.types import JsonObject, JsonValue
from jobplane.importer.dialects import CronOracle, Dialect, Oracle, Walker
from jobplane.importer.entries import Command, Entry, InputProblem, Origin, Reading, SecretRef, Skipped, SourceSchedule
from jobplane.importer.schedules import Translation, translate_unix
from jobplane.importer.sources import ReadContext, Source, SourceFormat
from jobplane.importer.yamldocs import YamlError, line_of

#: GitHub's limit: "The shortest interval you can run scheduled workflows is once every 5 minutes."
MIN_INTERVAL_MINUTES = 5
#: ``jobs.<job_id>.timeout-minutes`` when the job sets none (GitHub's workflow syntax: 360).
DEFAULT_TIMEOUT_MINUTES = 360
#: ``shell:`` -> the command GitHub runs the step's script file with (``{0}``), as argv before ``-c``.
SHELLS: dict[str | None, tuple[str, ...]] = {
    None: ("bash", "-e"),
    "bash": ("bash", "--noprofile", "--norc", "-eo", "pipefail"),
    "sh": ("sh", "-e"),
}
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_SECRET = re.compile(r"^\s*\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}\s*$")
_TOKEN = re.compile(r"^\s*\$\{\{\s*(?:secrets\.GITHUB_TOKEN|github\.token)\s*\}\}\s*$")
_RUNNER_VARIABLE = re.compile(r"\$\{?((?:GITHUB|RUNNER)_[A-Z_]+)")
_POSIX_FIELD = re.compile(r"^[0-9A-Za-z*,/-]+$")
_MONTHS = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
_DAYS = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}


# -- the schedule dialect ----------------------------------------------------------------------

def _cron_minutes(minute: str, hour: str) -> list[int]:
    """Minutes of the day the time fields match, by cronsim over one UTC day."""
    begin = datetime(2001, 1, 1, tzinfo=timezone.utc) - timedelta(seconds=1)
    out = []
    for t in CronSim(f"{minute} {hour} * * *", begin):
        if t.date() != date(2001, 1, 1):
            break
        out.append(t.hour * 60 + t.minute)
    return out


def _translate(schedule: SourceSchedule) -> Translation:
    fields = schedule.text.split()
    if len(fields) != 5:
        return Translation(refusal=f"{schedule.text!r}: GitHub's cron has five fields (minute hour day-of-month "
                                   "month day-of-week)")
    names = [set(re.findall(r"[A-Za-z]+", f.upper())) for f in fields]
    if not all(_POSIX_FIELD.fullmatch(f) for f in fields) or names[0] or names[1] or names[2] \
            or not names[3] <= _MONTHS or not names[4] <= _DAYS:
        return Translation(refusal=f"{schedule.text!r}: GitHub documents POSIX cron with * , - / only (no ?, L, W "
                                   "or #)")
    minute, hour, dom, _, dow = fields
    if re.search(r"(^|[,-])7($|[,-/])", dow):
        return Translation(refusal=f"{schedule.text!r}: GitHub documents day-of-week 0-6 (0 is Sunday); write "
                                   "Sunday as 0 or SUN")
    if (dom.startswith("*") and dom != "*" and dow != "*") or (dow.startswith("*") and dow != "*" and dom != "*"):
        return Translation(refusal=f"{schedule.text!r}: POSIX cron runs on days matching either day field when both "
                                   "are restricted, Vixie cron on days matching both when one starts with '*'; "
                                   "GitHub's docs do not say which its scheduler does, so the fires are not known: "
                                   "write the day field without '*' (e.g. 1-31/2)")
    try:
        minutes = _cron_minutes(minute, hour)
    except (CronSimError, ValueError) as e:
        return Translation(refusal=f"{schedule.text!r} is not a valid cron schedule: {e}")
    gaps = [(b - a, a, b) for a, b in zip(minutes, minutes[1:])]
    if minutes:
        gaps.append((minutes[0] + 1440 - minutes[-1], minutes[-1], minutes[0]))
    short = [g for g in gaps if g[0] < MIN_INTERVAL_MINUTES]
    if short:
        gap, a, b = short[0]
        return Translation(refusal=(
            f"{schedule.text!r} asks for runs {gap} minute{'s' if gap != 1 else ''} apart (at {a // 60:02d}:"
            f"{a % 60:02d} and {b // 60:02d}:{b % 60:02d}); GitHub runs a schedule at most once every "
            f"{MIN_INTERVAL_MINUTES} minutes, so which of these it ran is not known: write the schedule GitHub "
            "really kept (e.g. */5) and import again"))
    return translate_unix(SourceSchedule(UNIX_FIELDS, schedule.text))


#: The Unix dialect's name: GitHub's cron, once the cases where POSIX and Vixie cron differ are
#: refused, reads as Unix cron does.
UNIX_FIELDS = "unix-cron"


def _oracle(schedule: SourceSchedule) -> Oracle:
    return CronOracle(schedule.text, _walker(schedule.text))


def _walker(text: str) -> Walker:
    """GitHub's documented DST rule, fire by fire: a time the spring-forward skips runs at the
    next valid time (02:30 at 03:00); a time in the repeated hour of a fall-back, which GitHub's
    docs do not cover, is counted at both instants, so such a job is never reported the same."""
    minute, hour, dom, month, dow = text.split()
    times = sorted((m // 60, m % 60) for m in _cron_minutes(minute, hour))

    def matches(day: date) -> bool:
        probe = datetime.combine(day, time(0)) - timedelta(seconds=1)
        return next(CronSim(f"0 0 {dom} {month} {dow}", probe)).date() == day

    def walk(begin: datetime, zone: ZoneInfo) -> Iterator[datetime]:
        day = begin.astimezone(zone).date()
        while True:
            if matches(day):
                fires: set[datetime] = set()
                for h, m in times:
                    naive = datetime.combine(day, time(h, m))
                    fires |= _instants(naive, zone)
                yield from sorted(t for t in fires if t > begin)
            day += timedelta(days=1)

    return walk


def _instants(naive: datetime, zone: ZoneInfo) -> set[datetime]:
    first = naive.replace(tzinfo=zone, fold=0).astimezone(timezone.utc)
    second = naive.replace(tzinfo=zone, fold=1).astimezone(timezone.utc)
    if first.astimezone(zone).replace(tzinfo=None) == naive:  # exists (once, or twice in a fall-back)
        return {first, second} if second.astimezone(zone).replace(tzinfo=None) == naive else {first}
    later = naive  # skipped by a spring-forward: the next minute that exists
    while True:
        later += timedelta(minutes=1)
        instant = later.replace(tzinfo=zone).astimezone(timezone.utc)
        if instant.astimezone(zone).replace(tzinfo=None) == later:
            return {instant}


#: GitHub Actions' ``on.schedule.cron``: POSIX cron, UTC or the schedule's ``timezone``.
GITHUB_CRON = Dialect("github-cron", _translate, _oracle)


# -- the reader --------------------------------------------------------------------------------

def looks_like(source: Source) -> bool:
    if not source.is_yaml:
        return False
    if ".github/workflows/" in source.path.as_posix():
        return True
    docs = source.yaml_documents
    return docs is not None and len(docs) == 1 and isinstance(docs[0], dict) and "jobs" in docs[0] \
        and ("on" in docs[0] or True in docs[0])  # YAML 1.1 reads a bare `on:` key as true


def _read(source: Source, context: ReadContext) -> Reading:
    out = Reading()
    try:
        docs = source.documents()
    except YamlError as e:
        out.problems.append(InputProblem(Origin(source.name, e.line, "workflow"), str(e)))
        return out
    if len(docs) != 1 or not isinstance(docs[0], dict):
        out.problems.append(InputProblem(Origin(source.name, None, "workflow"), "a workflow is one YAML mapping"))
        return out
    workflow: JsonObject = docs[0]
    title = str(workflow.get("name") or source.path.stem)
    origin = Origin(source.name, line_of(workflow, 1), f"workflow {title!r}")
    # YAML 1.1 (PyYAML) reads a bare `on:` key as the boolean true
    triggers = workflow["on"] if "on" in workflow else cast("dict[object, JsonValue]", workflow).get(True)
    events = _events(triggers)
    if events is None:
        out.problems.append(InputProblem(origin, "on: missing or not an event, a list or a mapping of events"))
        return out
    if "schedule" not in events:
        reason = ("runs on workflow_dispatch only (started by hand): not scheduled, nothing to import; "
                  "`jobplane run` starts a job by hand" if set(events) == {"workflow_dispatch"} else
                  f"not scheduled (on: {', '.join(sorted(events))}): nothing to import")
        out.skipped.append(Skipped(origin, reason, counts=False))
        return out
    schedules, zones, problems = _schedules(events["schedule"])
    jobs = workflow.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        problems.append("jobs: missing")
    if problems:
        out.problems.extend(InputProblem(origin, p) for p in problems)
        return out
    assert isinstance(jobs, dict)
    others = sorted(set(events) - {"schedule"})
    for job_id, job in jobs.items():
        job_origin = Origin(source.name, line_of(job, origin.line), f"workflow {title!r}, job {job_id!r}")
        if not isinstance(job, dict):
            out.problems.append(InputProblem(job_origin, "a job is a mapping"))
            continue
        hint = title if len(jobs) == 1 else f"{title}-{job_id}"
        out.entries.append(_entry(job_origin, hint, str(job_id), job, workflow, jobs, schedules, zones, others,
                                  context.team))
    return out


def _events(triggers: JsonValue) -> dict[str, JsonValue] | None:
    if isinstance(triggers, str):
        return {triggers: None}
    if isinstance(triggers, list):
        return {str(t): None for t in triggers}
    if isinstance(triggers, dict):
        return {str(k): v for k, v in triggers.items()}
    return None


def _schedules(value: JsonValue) -> tuple[tuple[SourceSchedule, ...], set[str], list[str]]:
    if not isinstance(value, list) or not value:
        return (), set(), ["on.schedule: a list of `- cron: '<five fields>'`"]
    schedules, zones, problems = [], set(), []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("cron"), str):
            problems.append(f"on.schedule[{i}]: needs cron: '<five fields>'")
            continue
        schedules.append(SourceSchedule(GITHUB_CRON.name, item["cron"].strip()))
        zone = item.get("timezone")
        zones.add(zone if isinstance(zone, str) and zone else "UTC")
    return tuple(schedules), zones, problems


def _entry(origin: Origin, hint: str, job_id: str, job: JsonObject, workflow: JsonObject, jobs: JsonObject,
           schedules: tuple[SourceSchedule, ...], zones: set[str], others: list[str], team: str) -> Entry:
    blockers: list[str] = []
    notes: list[str] = []
    if len(zones) > 1:
        blockers.append(f"the schedules run in different timezones ({', '.join(sorted(zones))}); a jobplane job has "
                        "one: split the workflow by timezone")
    if others:
        notes.append(f"the workflow also ran on {', '.join(others)}: only its schedule is imported"
                     + ("; `jobplane run` starts the job by hand" if "workflow_dispatch" in others else ""))
    notes.append("GitHub may start a scheduled run late at busy times or drop it (its docs); jobplane starts it at "
                 "the scheduled minute")
    if job.get("uses"):
        blockers.append(f"job {job_id!r} calls the reusable workflow {job['uses']!r}: import that workflow's jobs")
    needed_by = [k for k, j in jobs.items() if isinstance(j, dict) and job_id in _names(j.get("needs"))]
    for key, why in (("needs", "runs after other jobs of the workflow"), ("strategy", "runs as a matrix"),
                     ("services", "has service containers"), ("container", "runs in its own container"),
                     ("if", "runs only when a GitHub expression is true"),
                     ("continue-on-error", "may fail without failing the workflow"),
                     ("environment", "uses a deployment environment (its protection rules and secrets)")):
        if job.get(key) is not None:
            blockers.append(f"job {job_id!r} {why} ({key}: {_short(job[key])}), which a jobplane job does not "
                            "model: write it by hand")
    if needed_by:
        blockers.append(f"jobs {', '.join(map(repr, needed_by))} run after this one (needs): import the workflow "
                        "by hand as one job with steps in order")
    concurrency = job.get("concurrency", workflow.get("concurrency"))
    policy: Literal["allow", "replace"] = "allow"
    if isinstance(concurrency, dict) and concurrency.get("cancel-in-progress") is True:
        policy = "replace"
    elif concurrency is not None:
        blockers.append("concurrency: GitHub queues a new run behind the running one (one pending, older pending "
                        "runs cancelled); jobplane skips or runs alongside instead: choose and write it by hand")
    runs_on = job.get("runs-on")
    if runs_on is not None:
        notes.append(f"ran on GitHub's {_short(runs_on)} runner with its preinstalled tools; the step runs in the "
                     "team's runner image, which must have the commands the script uses")
    defaults = _run_defaults(workflow, job)
    if defaults.get("working-directory") is not None:
        blockers.append("defaults.run.working-directory: a path in GitHub's workspace, which a jobplane step does "
                        "not have")
    env, secrets = _env({**_mapping(workflow.get("env")), **_mapping(job.get("env"))}, team, blockers)
    steps = job.get("steps")
    scripts: list[tuple[tuple[str, ...], str]] = []
    step_timeout: int | None = None
    if not isinstance(steps, list) or not steps:
        blockers.append(f"job {job_id!r} has no steps")
        steps = []
    run_steps = [s for s in steps if isinstance(s, dict) and "run" in s]
    for n, step in enumerate(steps, start=1):
        label = f"step {n}" + (f" ({step.get('name')!r})" if isinstance(step, dict) and step.get("name") else "")
        if not isinstance(step, dict):
            blockers.append(f"{label} is not a mapping")
            continue
        if step.get("uses"):
            action = str(step["uses"])
            what = ("build the repository's code into the runner image" if action.startswith("actions/checkout@")
                    else "do what it does with a command the runner image has")
            blockers.append(f"{label} uses the action {action!r}, which runs inside GitHub's runner, not in a "
                            f"jobplane step: {what}, remove the step and import again")
            continue
        script = step.get("run")
        if not isinstance(script, str):
            blockers.append(f"{label} has neither run: nor uses:")
            continue
        for key in ("if", "continue-on-error", "working-directory"):
            if step.get(key) is not None:
                blockers.append(f"{label} has {key}: {_short(step[key])}, which a jobplane step does not model")
        if step.get("env"):
            if len(run_steps) == 1:
                step_env, step_secrets = _env(_mapping(step["env"]), team, blockers)
                env = {**env, **step_env}
                secrets = {**secrets, **step_secrets}
            else:
                blockers.append(f"{label} sets its own env; with several run: steps jobplane runs them in one step: "
                                "move the variables to the job's env")
        if (found := _EXPRESSION.search(script)) is not None:
            blockers.append(f"{label}: the script uses ${{{{{found.group(1).strip()}}}}}, which GitHub substitutes "
                            "before the shell runs: put the value in env (a literal, or ${{ secrets.NAME }}) and "
                            "read it as $NAME")
        if (variable := _RUNNER_VARIABLE.search(script)) is not None:
            blockers.append(f"{label}: the script reads ${variable.group(1)}, which GitHub's runner sets and a "
                            "jobplane step does not")
        shell = step.get("shell", defaults.get("shell"))
        if not (shell is None or isinstance(shell, str)) or shell not in SHELLS:
            blockers.append(f"{label}: shell {shell!r}: jobplane imports bash and sh steps")
            continue
        if isinstance(step.get("timeout-minutes"), int) and len(run_steps) == 1:
            step_timeout = int(step["timeout-minutes"]) * 60
        scripts.append((SHELLS[shell], script))
    timeout = job.get("timeout-minutes")
    seconds = (int(timeout) if isinstance(timeout, int) and timeout > 0 else DEFAULT_TIMEOUT_MINUTES) * 60
    if not isinstance(timeout, int):
        notes.append(f"no timeout-minutes: GitHub stopped the job after {DEFAULT_TIMEOUT_MINUTES} minutes, so does "
                     "jobplane")
    if step_timeout:
        seconds = min(seconds, step_timeout)
    return Entry(
        origin=origin,
        name_hint=hint,
        schedules=schedules,
        command=Command(argv=_argv(scripts)),
        timezone=next(iter(zones)) if len(zones) == 1 else "UTC",
        concurrency=policy,
        description=str(job.get("name") or workflow.get("name") or ""),
        env=tuple(env.items()),
        secrets=tuple(secrets.items()),
        timeout_seconds=seconds,
        blockers=tuple(blockers),
        notes=tuple(notes),
    )


def _argv(scripts: list[tuple[tuple[str, ...], str]]) -> tuple[str, ...]:
    """One run: step as its shell runs it; several in order, each in its own shell as GitHub runs
    them (a ``cd`` or a variable does not carry over), stopping at the first that fails."""
    if not scripts:
        return ()
    if len(scripts) == 1:
        shell, script = scripts[0]
        return (*shell, "-c", script)
    lines = ["set -e"] + [" ".join([*shell, "-c", shlex.quote(script)]) for shell, script in scripts]
    return ("sh", "-c", "\n".join(lines) + "\n")


def _env(values: dict[str, JsonValue], team: str, blockers: list[str]) -> tuple[dict[str, str], dict[str, SecretRef]]:
    env: dict[str, str] = {}
    secrets: dict[str, SecretRef] = {}
    for name, value in values.items():
        text = _scalar(value)
        if _TOKEN.match(text):
            secrets[name] = SecretRef(f"{team}/github-token", "a GitHub token with the permissions the workflow's "
                                                              "GITHUB_TOKEN had (GitHub issued one per run)")
        elif m := _SECRET.match(text):
            secret = m.group(1)
            secrets[name] = SecretRef(f"{team}/{secret.lower().replace('_', '-')}",
                                      f"the GitHub secret {secret} (the repository's or organization's Actions "
                                      "secrets)")
        elif _EXPRESSION.search(text):
            blockers.append(f"env {name}: {text!r} is a GitHub expression, evaluated when the workflow runs: give its "
                            "value (or a secret)")
        else:
            env[name] = text
    return env, secrets


def _scalar(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _mapping(value: JsonValue) -> dict[str, JsonValue]:
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def _run_defaults(workflow: JsonObject, job: JsonObject) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {}
    for holder in (workflow, job):
        run = _mapping(_mapping(holder.get("defaults")).get("run"))
        out.update(run)
    return out


def _names(value: JsonValue) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value] if isinstance(value, list) else []


def _short(value: JsonValue) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


FORMAT = SourceFormat("github-actions", "a .yml/.yaml file under .github/workflows/, or with on: and jobs:",
                      looks_like, _read, (GITHUB_CRON,))
