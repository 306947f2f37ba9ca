"""The ``jobplane`` commands that read definitions: ``validate``, ``compile``, ``plan``, ``next``,
``schema`` and ``init``.

They exit 2 on invalid input (one line per problem, naming file, job and field) and write
nothing; ``plan --exit-code`` exits 2 when something would change.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable
from zoneinfo import ZoneInfo

import click

from jobplane.cli.common import EXIT_INVALID, Context, aware_time, fail_definitions
from jobplane.compiler.problems import DefinitionError

if TYPE_CHECKING:
    from jobplane.compiler.checked import FileChecked
    from jobplane.contract.config import PlatformConfig
    from jobplane.contract.business_fires import CalendarSchedule


@click.command()
@click.option("--no-cache", is_flag=True,
              help="Evaluate and check every file afresh (by default a file whose result cannot differ from the "
                   "last run's, its content, imports, jobplane.toml and jobplane unchanged, is not evaluated again).")
@click.pass_obj
def validate(obj: Context, no_cache: bool) -> None:
    """Check every definition under jobs/ and report all problems at once (exit 2 if any)."""
    from jobplane.compiler.checked import check_definitions

    cache = None
    if not no_cache:
        from jobplane.compiler.validate_cache import ValidateCache

        cache = ValidateCache(obj.config)
    try:
        checked = check_definitions(obj.config, _check_files, cache=cache)
    except DefinitionError as e:  # a repository-level refusal (jobs/ leading outside it)
        fail_definitions(e)
    if cache is not None:
        cache.save()
    for line in (w for f in checked.files for w in f.warnings):
        click.echo(line, err=True)  # a credential written in a step (issue 65): warned, not refused
    if checked.problems:
        fail_definitions(DefinitionError(checked.problems))
    jobs = [job for f in checked.files for job in f.jobs]
    teams = sorted({team for _, team, _ in jobs})
    click.echo(f"{len(jobs)} jobs valid ({', '.join(teams)}).")


def _check_files(paths: list[Path], config: PlatformConfig) -> dict[Path, FileChecked]:
    """validate.check_files, imported only when a file's result is not kept (the model, pydantic
    and Jsonnet's parent side are most of a run that finds every result kept)."""
    from jobplane.compiler.validate import check_files

    return check_files(paths, config)


@click.command(name="compile")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output directory (default: output_dir of jobplane.toml).")
@click.pass_obj
def compile_command(obj: Context, out: Path | None) -> None:
    """Compile jobs/ into Terraform roots: base/ (the base module) and teams/<team>/ (each
    job's state machine, schedules and roles; the team's catalog).

    Writes nothing unless every definition is valid.
    """
    from jobplane.compiler.output import compile_all, write_output

    try:
        compiled = compile_all(obj.config)
    except DefinitionError as e:
        fail_definitions(e)
    target = out or obj.config.output_path
    changed = write_output(compiled, target)
    click.echo(f"Compiled {len(compiled.jobs)} jobs into {target} "
               f"({len(changed)} file{'s' if len(changed) != 1 else ''} changed).")
    for path in changed:
        click.echo(f"  {path}")


@click.command()
@click.option("--against", "against_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Earlier compiler output to compare with (default: output_dir of jobplane.toml).")
@click.option("--against-ref", default=None, metavar="REF",
              help="Compare with the definitions at this git ref instead (e.g. origin/main).")
@click.option("--exit-code", is_flag=True, help="Exit 2 when anything would change (for CI).")
@click.option("--roots", "roots_only", is_flag=True,
              help="Print only the Terraform roots the change touches, one path per line, base first (for CI).")
@click.option("--image-changed", is_flag=True,
              help="With --roots: the runner image changes too, so add the roots whose task definitions carry "
                   "it (the base, and teams with jobs that have secrets).")
@click.option("--quotas", "all_quotas", is_flag=True,
              help="List every AWS quota the deployment counts against, not only those at 80% or more.")
@click.option("--starts", is_flag=True,
              help="Also print the fleet's starts per minute over the next 24 hours (the busiest minutes) and what "
                   "the jobs starting then ask of each pool against its size.")
@click.option("--break-glass", "break_glass", is_flag=True,
              help="Change jobs during their own freeze window (a [blackouts] window with freeze = true); needs "
                   "--reason, and is written to the deployment's audit log.")
@click.option("--reason", default=None, help="Why a --break-glass change cannot wait for the freeze to end.")
@click.option("--deployment", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="With --break-glass: the `jobplane` Terraform output of the deployment whose audit log records "
                   "it (default: the running `jobplane dev`).")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --break-glass: the running `jobplane dev`'s data directory.")
@click.pass_obj
def plan(obj: Context, against_dir: Path | None, against_ref: str | None, exit_code: bool, roots_only: bool,
         image_changed: bool, all_quotas: bool, starts: bool, break_glass: bool = False, reason: str | None = None,
         deployment: Path | None = None, data_dir: Path | None = None) -> None:
    """Say in words what compiling now would change: jobs added, removed and changed, which
    Terraform roots (the base, one per team) that touches, and any AWS quota the deployment
    nears (80%: a warning) or exceeds (exit 2: the apply would fail)."""
    import posixpath

    from jobplane.compiler.output import changed_roots, compile_all, image_roots, read_output
    from jobplane.compiler.plan import config_changes, config_text_at_ref, describe_plan, previous_from_ref, quota_lines
    from jobplane.contract.layout import apply_order

    if image_changed and not roots_only:
        raise click.UsageError("--image-changed goes with --roots")

    try:
        compiled = compile_all(obj.config)
    except DefinitionError as e:
        fail_definitions(e)
    settings: list[str] = []
    if against_ref:
        try:
            previous = previous_from_ref(obj.config, against_ref)
            current = obj.config.root / "jobplane.toml"
            settings = config_changes(config_text_at_ref(obj.config, against_ref),
                                      current.read_text() if current.exists() else None)
        except DefinitionError as e:
            click.echo(f"the definitions at {against_ref} do not compile:", err=True)
            fail_definitions(e)
        except RuntimeError as e:
            raise click.ClickException(str(e)) from None
    else:
        previous = read_output(against_dir or obj.config.output_path)
    _freeze(obj, previous, compiled.files, break_glass, reason, deployment, data_dir)
    if roots_only:
        roots = set(changed_roots(previous, compiled.files)) | (image_roots(compiled.files) if image_changed else set())
        for root in apply_order(roots):
            click.echo(posixpath.join(obj.config.output_dir, root))
        if exit_code and roots:
            sys.exit(EXIT_INVALID)
        return
    text, changes = describe_plan(previous, compiled.files, now=datetime.now(timezone.utc), settings=settings)
    click.echo(text)
    from jobplane.compiler.freeze import horizon_lines
    from jobplane.compiler.plan import catalog_jobs as _catalog_jobs

    for line in horizon_lines(list(_catalog_jobs(compiled.files).values()), datetime.now(timezone.utc)):
        click.echo(line)
    quotas, over = quota_lines(compiled.files, obj.config, all_quotas, [lj.job for lj in compiled.jobs])
    if quotas:
        click.echo("\n" + "\n".join(quotas))
    if starts:
        from jobplane.compiler.plan import catalog_jobs
        from jobplane.compiler.starts import starts_lines

        now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
        click.echo("\n" + "\n".join(starts_lines(list(catalog_jobs(compiled.files).values()),
                                                  [lj.job for lj in compiled.jobs], obj.config.pools, now)))
    if over:
        click.echo("An apply would fail on an AWS quota, or a job runs more at once than one allows (above): "
                   "raise it, or change the jobs.", err=True)
        sys.exit(EXIT_INVALID)
    if exit_code and changes:
        sys.exit(EXIT_INVALID)


def _freeze(obj: Context, previous: dict[str, str], files: dict[str, str], break_glass: bool, reason: str | None,
            deployment: Path | None, data_dir: Path | None) -> None:
    """Refuse a change to a job during its own freeze window (compiler/freeze.py), unless
    ``--break-glass`` with a reason, which writes an audit entry per job before the plan goes on."""
    from jobplane.compiler.freeze import frozen_changes

    if break_glass and not (reason or "").strip():
        raise click.UsageError("--break-glass needs --reason \"...\": why the change cannot wait for the freeze to end")
    frozen = frozen_changes(previous, files, datetime.now(timezone.utc))
    if not frozen:
        return
    if not break_glass:
        for f in frozen:
            click.echo(f.line(), err=True)
        sys.exit(EXIT_INVALID)
    from jobplane.cli.common import target
    from jobplane.contract import audit

    where = target(obj, data_dir, deployment)
    for f in frozen:
        event = audit.BreakGlass(f.job, f.window, f.change)
        where.control.runs.audited(where.actor, event, str(reason), lambda: None)
        click.echo(f"BREAK GLASS: {f.job} ({f.change}) during freeze {f.window}, by {where.as_whom}: {reason} "
                   f"(audited in {where.where})", err=True)


@click.command(name="next")
@click.argument("job_name")
@click.option("-n", "count", default=5, show_default=True, help="How many fire times per schedule.")
@click.option("--after", default=None, metavar="ISO-TIME",
              help="Start from this time (ISO 8601 with offset; default now).")
@click.pass_obj
def next_command(obj: Context, job_name: str, count: int, after: str | None) -> None:
    """Upcoming fire times of JOB_NAME in its timezone, with EventBridge Scheduler semantics.

    Day-of-week 1-7 is SUN-SAT; a local time skipped by a daylight-saving change does not fire
    and a repeated local time fires once.
    """
    from jobplane.contract.job_fires import JobSchedule, next_job_fires
    from jobplane.contract.schedule import validate_timezone
    from jobplane.contract.schedule_kinds import kind_of

    try:
        from jobplane.compiler.validate import load_jobs

        jobs = {lj.job.name: lj.job for lj in load_jobs(obj.config)}
    except DefinitionError as e:
        fail_definitions(e)
    if job_name not in jobs:
        from jobplane.contract.quoting import did_you_mean

        raise click.ClickException(f"no job named {job_name!r}{did_you_mean(job_name, list(jobs))}")
    job = jobs[job_name]
    start = aware_time(after, "--after") if after else datetime.now(timezone.utc)
    after = ", ".join(f"{a.job} ({a.on})" for a in job.after)
    if not job.schedule:
        click.echo(f"{job.name} has no schedule: it runs " + (f"after {after}, or " if after else "only ")
                   + "when started by hand.")
        return
    if after:
        click.echo(f"{job.name} also runs after {after}.")
    state = "" if job.enabled else " (schedule DISABLED: these times will not fire until it is enabled)"
    click.echo(f"{job.name} ({job.timezone}){state}")
    if (offset := job.spread_offset()) is not None:
        click.echo(f"  spread {job.spread // 60 if job.spread else 0} min: every fire moved +{offset} min "
                   f"(from {'its spread_seed' if job.spread_seed else 'its name'}); the times below are the moved ones")
    from jobplane.compiler.blackouts import job_windows, mark
    from jobplane.compiler.calendars import calendar_schedule

    windows = job_windows(job, obj.config)
    for w in windows:
        click.echo(f"  blackout {w.name}: {w.action}" + (", freeze" if w.freeze else "")
                   + f" ({len(w.intervals)} occurrences compiled, the last ending "
                     f"{w.intervals[-1][1].astimezone(ZoneInfo(job.timezone or obj.config.default_timezone)).strftime('%Y-%m-%d') if w.intervals else 'never'}: "
                     "extend [blackouts] years before then)")
    if (cs := calendar_schedule(job, obj.config)) is not None:
        _next_with_calendar(cs, start, count, lambda t: mark(windows, t, cs.timezone))
        return
    zone = job.timezone or obj.config.default_timezone
    for expr in job.schedule:  # each schedule's own next fires: the job's fires of that schedule alone
        click.echo(f"  {expr}")
        if kind_of(expr).counts_from_deployment:
            click.echo("    (rate schedules count from when the schedule is created; shown from the start time)")
        tz = validate_timezone(zone)
        times = [f.at.astimezone(tz) for f in next_job_fires(JobSchedule((expr,), zone), start, count).fires]
        for t in times:
            utc = f"  ({t.astimezone(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')})" if t.utcoffset() else ""
            click.echo(f"    {t.strftime('%Y-%m-%d %a %H:%M %Z')}{utc}{mark(windows, t, zone)}")
        if not times:  # an at() or a cron's last year gone by: said, not an empty list
            click.echo(f"    never fires after {start.isoformat(timespec='minutes')}")


def _next_with_calendar(cs: CalendarSchedule, start: datetime, count: int,
                        marked: Callable[[datetime], str] = lambda t: "") -> None:
    """A calendar job's next fires (``count`` in all), each moved one saying from where and why,
    and the closed days skipped among them saying why (contract/business_fires.py)."""
    from jobplane.compiler.calendar_plan import rule_words
    from jobplane.contract.job_fires import JobSchedule, next_job_fires

    cal = cs.calendar
    click.echo(f"  calendar {cal.name} ({cal.source or 'no public holidays'}; compiled for {cal.first_year}-"
               f"{cal.last_year}), a fire on a closed day: {cs.on_closed_day}")
    for expr in cs.schedule:
        click.echo(f"  {expr}" + (f": {rule_words(expr)}" if rule_words(expr) != expr else ""))
    window = next_job_fires(JobSchedule(cs.schedule, cs.timezone, cs), start, count)
    zone = ZoneInfo(cs.timezone)
    lines = [(f.at.astimezone(zone).replace(tzinfo=None), f"    {f.at.astimezone(zone).strftime('%Y-%m-%d %a %H:%M %Z')}"
              + (f"  ({f.note})" if f.note else "") + marked(f.at)) for f in window.fires]
    lines += [(s.at.replace(tzinfo=None), f"    {s.at.strftime('%Y-%m-%d %a %H:%M')}  skipped: closed ({s.reason})")
              for s in window.skipped]
    for _, line in sorted(lines, key=lambda x: x[0]):
        click.echo(line)


@click.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file instead of standard output.")
def schema(out: Path | None) -> None:
    """JSON Schema of a resolved job definition, for editor completion and checks."""
    from jobplane.compiler.fields import json_schema
    from jobplane.compiler.model import Job

    doc = json_schema(Job, "jobplane job")
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if out:
        out.write_text(text)
        click.echo(f"Wrote {out}")
    else:
        click.echo(text, nl=False)


@click.command()
@click.argument("path", metavar="TEAM/JOB")
@click.pass_obj
def init(obj: Context, path: str) -> None:
    """Create jobs/TEAM/JOB.jsonnet from a commented template (never overwrites)."""
    from jobplane.compiler.model import NAME_RE

    team, _, job = path.partition("/")
    if not team or not NAME_RE.fullmatch(job or ""):
        raise click.BadParameter("give TEAM/JOB with a kebab-case job name, e.g. billing/daily-report")
    target = obj.config.jobs_path / team / f"{job}.jsonnet"
    if target.exists():
        raise click.ClickException(f"{target} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    declared = obj.config.teams.get(team)
    channel = declared.channel if declared and declared.channel else f"#{team}-alerts"  # notify may name its own
    from jobplane.compiler.job_template import TEMPLATE

    target.write_text(TEMPLATE.format(job=job, team=team, channel=channel))
    click.echo(f"Created {target}. Edit it, then run `jobplane validate` and `jobplane plan`.")
