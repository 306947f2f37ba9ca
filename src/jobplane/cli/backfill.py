"""``jobplane backfill``: run a job for the fires of a past window (platform/backfill.py), on the
running ``jobplane dev`` or, with ``--deployment``, on AWS, and follow it to the end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from jobplane.cli.common import (Context, Target, control_error, data_dir_option, deployment_option, interruptible,
                                 typed_params,
                                 target)

if TYPE_CHECKING:  # imported by the command itself (the CLI's start-up)
    from jobplane.platform.backfill import Backfills
    from jobplane.platform.backfill_model import Backfill



@click.command()
@click.argument("job_or_backfill", metavar="JOB|BACKFILL")
@click.option("--from", "start", metavar="TIME", help="First time of the window (ISO 8601; without an offset: "
                                                      "in the job's timezone).")
@click.option("--to", "end", metavar="TIME", help="Last time of the window, included (not in the future).")
@click.option("--only-missed/--all", "only_missed", default=True, show_default=True,
              help="Only fires with no record (not run, not skipped, not in flight), or every fire again.")
@click.option("--max-concurrent", default=1, show_default=True, type=click.IntRange(1, 20),
              help="Runs at once (a SKIP_IF_RUNNING job: always 1, in order).")
@click.option("--param", "-p", "params", multiple=True, metavar="KEY=VALUE", help="A param for every run (repeatable).")
@click.option("--reason", default=None, help="Why (the audit log keeps it); required to start, cancel or resume.")
@click.option("--dry-run", is_flag=True, help="List the fires and what covers each; start nothing.")
@click.option("--detach", is_flag=True, help="Start it and return: the portal or `jobplane dev` drives it.")
@click.option("--cancel", is_flag=True, help="BACKFILL: start no further fire (runs in flight finish).")
@click.option("--resume", is_flag=True, help="BACKFILL: go on after a halt or a cancel.")
@data_dir_option
@deployment_option
@click.pass_obj
def backfill(obj: Context, job_or_backfill: str, start: str | None, end: str | None, only_missed: bool,
             max_concurrent: int, params: tuple[str, ...], reason: str | None, dry_run: bool, detach: bool,
             cancel: bool, resume: bool, data_dir: Path | None, deployment: Path | None) -> None:
    """Run JOB for the fires of a past window, exactly once each: by default only those with no
    record. With a BACKFILL id instead: follow it, or --cancel / --resume it.

    Fire times come from the job's schedules and timezone (as `jobplane next` lists them); each run
    has trigger `backfill` and its fire as scheduled_time. The backfill is kept by the platform:
    after Ctrl-C the portal or `jobplane dev` drives it on (on AWS without a portal, nothing
    does until `jobplane backfill BACKFILL` follows it again). Exits 0 when every run it started
    succeeded, 1 otherwise.
    """
    from jobplane.platform.backfill import BACKFILL_ID, Backfills

    where = target(obj, data_dir, deployment)
    backfills = Backfills(where.control.runs)
    try:
        if BACKFILL_ID.fullmatch(job_or_backfill) and start is None:
            if cancel or resume:
                if not reason:
                    raise click.UsageError("--reason is required to cancel or resume a backfill")
                act = backfills.cancel if cancel else backfills.resume
                bf = act(job_or_backfill, where.actor, reason)
                click.echo(f"{bf.id}: {bf.status.value} ({where.where}, as {where.as_whom})")
                if cancel or detach:
                    return
            bf = backfills.get(job_or_backfill)
            _follow(backfills, bf.id, where)
            return
        if start is None or end is None:
            raise click.UsageError("give --from and --to (or a backfill id to follow)")
        mode = "only-missed" if only_missed else "all"
        planned = backfills.preview(job_or_backfill, start, end, mode)
        runs = [p for p in planned if p.runs]
        entry = where.control.entry(job_or_backfill)
        click.echo(f"{entry.name} ({entry.timezone}): {len(planned)} fires in the window, {len(runs)} to run ({mode})")
        for p in planned:
            state = "runs" if p.runs else "has a record"
            by = f"  ({p.covered_by})" if p.covered_by else ""
            click.echo(f"  {p.local.strftime('%Y-%m-%d %a %H:%M %Z')}  {p.at}  {state}{by}")
        if dry_run:
            click.echo("dry run: nothing started")
            return
        if not runs:  # every fire already has a record: nothing to start, nothing to give a reason for
            click.echo("nothing to run: every fire in the window has a record (--all runs them again)"
                       if planned else "nothing to run: no fire in the window")
            return
        if not reason:
            raise click.UsageError("--reason is required to start a backfill (the audit log keeps it)")
        bf = backfills.create(job_or_backfill, where.actor, start, end, mode=mode, max_concurrent=max_concurrent,
                              params=typed_params(where.control, job_or_backfill, params), reason=reason)
        click.echo(f"started {bf.id}: {len(bf.fires)} runs, {bf.max_concurrent} at a time ({where.where}, as {where.as_whom})")
        if detach:
            click.echo(f"  follow it: jobplane backfill {bf.id}")
            return
        _follow(backfills, bf.id, where)
    except control_error() as e:
        raise click.ClickException(e.message) from None


def _follow(backfills: Backfills, backfill_id: str, where: Target) -> None:
    seen: dict[str, tuple[str, str | None]] = {}

    def show(bf: Backfill) -> None:
        for f in bf.fires:
            now = (f.state.value, f.status)
            if seen.get(f.at) != now:
                if f.at in seen or f.state.value != "pending":
                    what = f.status or f.state.value
                    link = where.link(f.execution) if f.execution else ""
                    click.echo(f"  {f.at}  {what:<10} {f.execution or ''}" + (f"  {f.note}" if f.note else "")
                               + (f"\n    {link}" if link and f.status else ""))
                seen[f.at] = now

    try:
        with interruptible():
            bf = backfills.follow(backfill_id, show)
    except KeyboardInterrupt:
        click.echo(f"\ninterrupted: {backfill_id} goes on where the portal or `jobplane dev` drives it; "
                   f"`jobplane backfill {backfill_id}` follows (and drives) it again, --cancel stops it")
        sys.exit(130)
    counts = bf.counts()
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n and k not in ("pending", "running", "done"))
    click.echo(f"{bf.id}: {bf.status.value}" + (f" ({summary})" if summary else "") + (f": {bf.note}" if bf.note else ""))
    ran = [f for f in bf.fires if f.status]
    sys.exit(0 if bf.status.value == "COMPLETED" and all(f.status == "SUCCEEDED" for f in ran) else 1)
