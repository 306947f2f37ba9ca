"""``jobplane import``: existing schedules (crontab, Kubernetes CronJobs, EventBridge,
ecschedule, Celery beat, GitHub Actions) into validated job files, each proved to fire when its
source did. The formats, ``--format``'s choices and its help come from
:data:`jobplane.importer.formats.FORMATS` (this module is imported only when the command runs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from jobplane.cli.common import Context, aware_time
from jobplane.contract.quoting import inert  # the one escaper of terminal controls
from jobplane.importer import formats

if TYPE_CHECKING:  # the command imports the importer only when it runs (cli/app.py: --help stays cheap)
    from jobplane.importer.importing import Result

EXIT_REFUSED = 1
EXIT_UNREADABLE = 2


@click.command(name="import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--team", required=True, help="The owning team (declared in jobplane.toml): files go to jobs/TEAM/.")
@click.option("--timezone", default=None, metavar="IANA",
              help="The zone of a source that does not say its own (a crontab runs in its host's). Required for "
                   "those: never assumed.")
@click.option("--format", "source_format", default=formats.AUTO, show_default=True,
              type=click.Choice([formats.AUTO, *formats.names()]),
              help=f"The sources' format (auto, the first that fits: {formats.detection_help()}).")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Prove each job's fires over the next 366 days against its source; a job whose fires differ "
                   "is not written.")
@click.option("--accept-dst", is_flag=True,
              help="Write jobs whose fires differ only on daylight-saving change days (cron and EventBridge treat "
                   "those differently), listing the instants.")
@click.option("--replace-as", type=click.Choice(["SKIP_IF_RUNNING", "ALWAYS_RUN"]), default=None,
              help="Import Kubernetes concurrencyPolicy: Replace (and GitHub cancel-in-progress) as this policy "
                   "instead of REPLACE (which stops the running execution).")
@click.option("--force", is_flag=True, help="Overwrite existing job files of the same name.")
@click.option("--dry-run", is_flag=True, help="Validate, verify and report, but write nothing.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the report as JSON to this file.")
@click.option("--from", "start", default=None, metavar="ISO-TIME",
              help="Start the verification window the day after this time (default now).")
@click.pass_obj
def import_command(obj: Context, sources: tuple[Path, ...], team: str, timezone: str | None, source_format: str,
                   verify: bool, accept_dst: bool, replace_as: str | None, force: bool, dry_run: bool,
                   report_path: Path | None, start: str | None) -> None:
    """Turn existing schedules into job files under jobs/TEAM/, one per job, each validated and
    proved to fire at the same instants as its source (docs/import.md).

    Exit 0: every entry imported; 1: some were refused or not imported (each named, with why);
    2: an input could not be read (nothing written).
    """
    from jobplane.importer.importing import Options, UnreadableInput, run_import

    options = Options(team=team, timezone=timezone, force=force, verify=verify, dry_run=dry_run,
                      accept_dst=accept_dst, replace_as=replace_as, source_format=source_format,
                      start=aware_time(start, "--from") if start else None)
    try:
        result = run_import(obj.config, list(sources), options)
    except UnreadableInput as e:
        for line in e.problems:
            click.echo(inert(line), err=True)
        click.echo("Nothing was written.", err=True)
        sys.exit(EXIT_UNREADABLE)
    click.echo(_table(result), nl=False)
    if report_path:
        report_path.write_text(json.dumps(result.as_json(), indent=2) + "\n")
        click.echo(f"Report: {report_path}")
    sys.exit(result.exit_code)


def _table(result: Result) -> str:
    rows = [("source", "job file", "schedule", "policy", "same fires")]
    for o in result.outcomes:
        if not o.imported:
            continue
        verified = o.verdict.summary() if o.verdict else "not verified (--no-verify)"
        state = "" if o.enabled else " (disabled)"
        rows.append((str(o.origin), o.file or "", ", ".join(o.schedules) + f" {o.timezone}{state}", o.policy or "",
                     verified))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows] if len(rows) > 1 else []
    refused = [o for o in result.outcomes if not o.imported]
    if refused or result.not_imported:
        lines.append("")
        lines.append("Not imported:")
        rows_out = [(o.origin, "; ".join(o.refused)) for o in refused] + [(s.origin, s.reason) for s in result.not_imported]
        for origin, why in sorted(rows_out, key=lambda r: (r[0].file, r[0].line or 0)):
            lines.append(f"  {origin} ({origin.label}): {why}")
    notes = [(o, n) for o in result.outcomes if o.imported for n in o.notes]
    todos = [(o, t) for o in result.outcomes if o.imported for t in o.todos]
    if notes:
        lines += ["", "Notes:"] + [f"  {o.job}: {n}" for o, n in notes]
    if todos:
        needed: dict[str, list[str]] = {}
        for o, t in todos:
            needed.setdefault(str(t), []).append(o.job or "")
        lines += ["", "To do before the first run:"] + [f"  {t} (used by {', '.join(jobs)})" for t, jobs in needed.items()]
    imported = sum(o.imported for o in result.outcomes)
    if result.nothing_to_schedule:
        lines += ["", "Skipped (nothing to schedule):"] + [f"  {s.origin} ({s.origin.label}): {s.reason}"
                                                          for s in result.nothing_to_schedule]
    not_imported = len(refused) + len(result.not_imported)
    verb = "Would write" if result.dry_run else "Wrote"
    lines += ["", f"{verb} {imported} job file{'s' if imported != 1 else ''}; {not_imported} not imported."]
    return "\n".join(inert(line) for line in lines) + "\n"

