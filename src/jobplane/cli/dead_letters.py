"""``jobplane dead-letters``: what the platform could not deliver (alerts Slack refused, status
events nobody took), and re-sending the alerts once the cause is fixed (platform/dead_letters.py,
docs/operate.md "Undelivered alerts")."""

from __future__ import annotations

from pathlib import Path

import click

from jobplane.cli.common import Context, aws_target, control_error, data_dir_option, deployment_option, target


@click.command(name="dead-letters")
@click.option("--resend", is_flag=True, help="Publish the dead-lettered alerts again (audited, per job); "
                                             "fix the cause first (a Slack token, a channel), or they come back.")
@click.option("--execution", default=None, help="With --resend: only the alerts of this execution.")
@click.option("--reason", default=None, help="With --resend: why (shown in the audit log and the portal).")
@click.option("-n", "limit", default=100, show_default=True, help="At most this many messages.")
@data_dir_option
@deployment_option
@click.pass_obj
def dead_letters(obj: Context, resend: bool, execution: str | None, reason: str | None, limit: int,
                 data_dir: Path | None, deployment: Path | None) -> None:
    """List what the platform could not deliver (the <prefix>-events-dlq queue: alerts Slack
    refused, status events nobody took), or --resend the alerts; of `jobplane dev`, or with
    --deployment on AWS."""
    if not 1 <= limit <= 1000:
        raise click.UsageError("-n: 1 to 1000")
    if not resend:
        if execution or reason:
            raise click.UsageError("--execution and --reason go with --resend")
        from jobplane.cli.common import running_control

        control = aws_target(deployment, identify=False).control if deployment else running_control(obj, data_dir)
        letters, name = control.dead_letters(limit), control.events_dead_letters().name
        if not letters:
            click.echo(f"Nothing undelivered in {name}.")
            return
        click.echo(f"{len(letters)} undelivered in {name} (oldest first):")
        for letter in letters:
            click.echo(f"  {letter.line()}")
        if any(letter.kind == "alert" for letter in letters):
            click.echo("Fix the cause (the error above), then: jobplane dead-letters --resend --reason '...'")
        return
    if not reason:
        raise click.UsageError("--resend needs --reason (shown in the audit log)")
    where = target(obj, data_dir, deployment)
    try:
        done = where.control.resend_alerts(where.actor, reason, execution, limit)
    except control_error() as e:
        raise click.ClickException(e.message) from None
    for letter in done.resent:
        click.echo(f"resent: {letter.summary}")
    for letter, why in done.left:
        click.echo(f"left:   {letter.summary}: {why}")
    click.echo(f"{len(done.resent)} alert{'s' if len(done.resent) != 1 else ''} published again "
               f"({where.where}, as {where.as_whom})")
