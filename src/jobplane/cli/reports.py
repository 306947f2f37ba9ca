"""``jobplane report``: a job's (or a team's) month for a team's monthly review (platform/monthly_report.py),
from the records of the running `jobplane dev` or, with --deployment, of a deployment on AWS:
the same figures the portal's report page and ``/api/jobs/{job}/report`` show."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import click

from jobplane.cli.common import Context, control_error, data_dir_option, deployment_option, target

if TYPE_CHECKING:
    from jobplane.platform.monthly_report import MonthReport, TeamMonth


@click.command()
@click.argument("job", required=False)
@click.option("--team", default=None, help="A team's month instead: its totals and a line a job.")
@click.option("--month", default=None, metavar="YYYY-MM",
              help="The month, in each job's own timezone (default: the last whole month; with --team, "
                   "in the timezone most of the team's jobs use).")
@data_dir_option
@deployment_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def report(obj: Context, job: str | None, team: str | None, month: str | None, data_dir: Path | None,
           deployment: Path | None, as_json: bool) -> None:
    """JOB's month (or, with --team, every job of a team): runs by outcome, success rate, median
    and p95 duration, start delay, missed fires, the deadline kept and the failures, computed
    from the run records (exact)."""
    from jobplane.platform.monthly_report import BadMonth, job_month, last_month, team_last_month, team_month

    if (job is None) == (team is None):
        raise click.UsageError("name a JOB or a --team (one of them)")
    where = target(obj, data_dir, deployment)
    now = datetime.now(timezone.utc)
    found: MonthReport | TeamMonth
    try:
        if team is not None:
            entries = list(where.control.entries.values())
            if not any(e.team == team for e in entries):
                raise click.BadParameter(f"no job of team {team!r} is deployed", param_hint="--team")
            found = team_month(where.control.context, entries, team, month or team_last_month(entries, team, now))
        else:
            assert job is not None
            entry = where.control.entry(job)
            found = job_month(where.control.context, entry, month or last_month(entry.timezone, now))
    except BadMonth as e:
        raise click.BadParameter(str(e), param_hint="--month") from None
    except control_error() as e:
        raise click.ClickException(e.message) from None
    if as_json:
        click.echo(json.dumps(found.to_json(), indent=2))
        return
    click.echo("\n".join(found.lines()))
