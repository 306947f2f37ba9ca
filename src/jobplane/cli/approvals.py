"""``jobplane approve|reject EXECUTION --reason`` and ``jobplane approvals``: decide a run's
approval step (jp.approval) or list the pending ones, on the running ``jobplane dev`` (as its
``[dev] dev_user``) or with ``--deployment`` on AWS (as the caller's AWS identity), through the
one platform function every way in uses (platform/approvals.py ``Approvals.decide``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from jobplane.cli.common import Context, control_error, data_dir_option, deployment_option, target


def _decide(obj: Context, execution: str, decision: str, reason: str, step: str | None, data_dir: Path | None,
            deployment: Path | None) -> None:
    from jobplane.platform.approvals import Approvals

    where = target(obj, data_dir, deployment)
    try:
        decided = Approvals(where.control).decide(execution, where.actor, decision, reason, via="cli", step=step)
    except control_error() as e:
        raise click.ClickException(e.message) from None
    click.echo(f"{decided.step} of {execution} ({decided.job}): {decided.status.lower()} "
               f"({where.where}, as {where.as_whom})")


_step_option = click.option("--step", default=None, help="Which approval step, when the run waits on several.")


@click.command()
@click.argument("execution")
@click.option("--reason", default="", help="Why (shown in the audit log and the portal).")
@_step_option
@data_dir_option
@deployment_option
@click.pass_obj
def approve(obj: Context, execution: str, reason: str, step: str | None, data_dir: Path | None,
            deployment: Path | None) -> None:
    """Approve the approval step EXECUTION waits on: the run goes on to its next step."""
    _decide(obj, execution, "approve", reason, step, data_dir, deployment)


@click.command()
@click.argument("execution")
@click.option("--reason", required=True, help="Why (shown in the audit log and the portal).")
@_step_option
@data_dir_option
@deployment_option
@click.pass_obj
def reject(obj: Context, execution: str, reason: str, step: str | None, data_dir: Path | None,
           deployment: Path | None) -> None:
    """Reject the approval step EXECUTION waits on: the run ends REJECTED (no failure alert)."""
    _decide(obj, execution, "reject", reason, step, data_dir, deployment)


@click.command()
@click.option("--mine", is_flag=True, help="Only those you may decide.")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@data_dir_option
@deployment_option
@click.pass_obj
def approvals(obj: Context, mine: bool, as_json: bool, data_dir: Path | None, deployment: Path | None) -> None:
    """The runs waiting for an approval, oldest first: job, execution, step, the prompt (with the
    metrics it shows), who may decide and when it times out."""
    from jobplane.platform.approvals import Approvals

    where = target(obj, data_dir, deployment)
    try:
        found = Approvals(where.control).pending(where.actor if mine else None)
    except control_error() as e:
        raise click.ClickException(e.message) from None
    if as_json:
        click.echo(json.dumps([a.as_json() for a in found], indent=2))
        return
    if not found:
        click.echo("No run waits for an approval.")
        return
    for a in found:
        who = ", ".join(a.approvers) or f"team {a.team}"
        click.echo(f"{a.job}: {a.execution} {a.step}: waiting since {a.asked_at} for {who}"
                   f"{' (four eyes: not ' + a.started_by + ')' if a.four_eyes else ''}; "
                   f"at {a.timeout_at.isoformat()} {a.on_timeout}")
        if a.prompt:
            click.echo(f"  {a.shown_prompt()}")
