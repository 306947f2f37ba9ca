"""``jobplane report``: a job's month for a team's monthly review (platform/monthly_report.py),
from the records of the running `jobplane dev` or, with --deployment, of a deployment on AWS:
the same figures the portal's report page and ``/api/jobs/{job}/report`` show."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import click

from jobplane.cli.common import Context, control_error, data_dir_option, deployment_option, target


@click.command()
@click.argument("job")
@click.option("--month", default=None, metavar="YYYY-MM",
              help="The month, in the job's timezone (default: the last whole month).")
@data_dir_option
@deployment_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def report(obj: Context, job: str, month: str | None, data_dir: Path | None, deployment: Path | None,
           as_json: bool) -> None:
    """JOB's month: runs by outcome, success rate, median and p95 duration, start delay, missed
    fires, the deadline kept and the failures, computed from the run records (exact)."""
    from jobplane.platform.monthly_report import BadMonth, job_month, last_month

    where = target(obj, data_dir, deployment)
    try:
        entry = where.control.entry(job)
        found = job_month(where.control.context, entry, month or last_month(entry.timezone, datetime.now(timezone.utc)))
    except BadMonth as e:
        raise click.BadParameter(str(e), param_hint="--month") from None
    except control_error() as e:
        raise click.ClickException(e.message) from None
    if as_json:
        click.echo(json.dumps(found.to_json(), indent=2))
        return
    click.echo("\n".join(found.lines()))
