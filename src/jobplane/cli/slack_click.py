"""``jobplane dev-slack-click``: click an alert's button as Slack would, against the running
``jobplane dev`` (its portal's /slack/interactions), signed with the app's signing secret
(JOBPLANE_SLACK_SIGNING_SECRET, as the start was given): the buttons are tried end to end without
Slack. The click opens the modal (a views.open to the configured Slack API); unless --click-only,
the modal's submission with --reason follows, which performs the action."""

from __future__ import annotations

from pathlib import Path

import click

from jobplane.cli.common import Context, data_dir_option, resolve_data_dir


@click.command(name="dev-slack-click")
@click.argument("execution")
@click.option("--action", required=True, help="rerun_from_failed_step, rerun, rerun_failed_items, acknowledge, "
                                              "snooze_1d or backfill (platform/slack_actions/registry.py)")
@click.option("--user", "user", required=True, help="the Slack user id who clicks (U0123ABCD)")
@click.option("--reason", default="", help="what the modal is submitted with")
@click.option("--alert", default=None, help="the alert's id (default: the run's newest alert with buttons)")
@click.option("--click-only", is_flag=True, help="only the click (the modal opens); no submission")
@data_dir_option
@click.pass_obj
def dev_slack_click(obj: Context, execution: str, action: str, user: str, reason: str, alert: str | None,
                    click_only: bool, data_dir: Path | None) -> None:
    """Click an alert's Slack button as Slack would (signed with JOBPLANE_SLACK_SIGNING_SECRET), on the
    running `jobplane dev`: the buttons tried without Slack.

    The click opens the modal (views.open to the configured Slack API); then, unless
    --click-only, the modal's submission with --reason performs the action."""
    from jobplane.contract.environment import RuntimeEnvironment
    from jobplane.contract.slack_interactivity import SIGNING_SECRET
    from jobplane.devserver.runtime import DevError, control_for, read_runtime
    from jobplane.platform.slack_actions import clicks
    from jobplane.platform.slack_actions.store import AlertButtons

    secret = RuntimeEnvironment.from_environment().optional(SIGNING_SECRET)
    if not secret:
        raise click.ClickException(f"set {SIGNING_SECRET} as the running jobplane dev was given it")
    try:
        data = resolve_data_dir(obj, data_dir)
        runtime, control = read_runtime(data), control_for(data)
    except DevError as e:
        raise click.ClickException(str(e)) from None
    store = AlertButtons(control.context.ddb, control.context.deployment.table)
    alert = alert or next(iter(store.of_execution(execution)), None)
    record = store.get(alert) if alert else None
    if record is None:
        raise click.ClickException(f"no alert with buttons of {execution} (buttons need JOBPLANE_SLACK_BOT_TOKEN and "
                                   f"{SIGNING_SECRET} at the start)")
    if action not in record.actions:
        raise click.ClickException(f"alert {record.id} offers {', '.join(record.actions)}; not {action}")
    url = f"{runtime['portal_url']}/slack/interactions"
    status, text = clicks.send(url, secret, clicks.body_of(clicks.click(obj.config.slack, user, record, action)))
    click.echo(f"click: HTTP {status} {text}".rstrip())
    if click_only or status != 200:
        return
    if not reason:
        raise click.ClickException("--reason: the modal asks for one")
    status, text = clicks.send(url, secret, clicks.body_of(clicks.submission(obj.config.slack, user, record, action,
                                                                             reason)))
    click.echo(f"submission: HTTP {status} {text}".rstrip())
