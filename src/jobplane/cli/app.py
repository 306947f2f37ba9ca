"""The ``jobplane`` command line: one group whose commands live in :mod:`jobplane.cli.definitions`
(read definitions), :mod:`jobplane.cli.local` and :mod:`jobplane.cli.operate` (run or talk to a
platform).

The group imports a command's module only when that command runs: ``jobplane --help`` lists
every command from :data:`COMMANDS` alone, so it costs Click and nothing of the compiler, pydantic
or boto3 (bench/cli_start.py). ``tests/test_cli.py`` checks the table against the commands.
"""

from __future__ import annotations

import importlib

import click

from jobplane import __version__

#: name -> (module, attribute, the first paragraph of its help): what ``--help`` shows of each
#: command, without importing it. Click shortens it as it would the command's own help.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "validate": ("jobplane.cli.definitions", "validate",
                 "Check every definition under jobs/ and report all problems at once (exit 2 if any)."),
    "compile": ("jobplane.cli.definitions", "compile_command",
                "Compile jobs/ into Terraform roots: base/ (the base module) and teams/<team>/ (each job's "
                "state machine, schedules and roles; the team's catalog)."),
    "plan": ("jobplane.cli.definitions", "plan",
             "Say in words what compiling now would change: jobs added, removed and changed, which "
             "Terraform roots (the base, one per team) that touches, and any AWS quota the deployment "
             "nears (80%: a warning) or exceeds (exit 2: the apply would fail)."),
    "next": ("jobplane.cli.definitions", "next_command",
             "Upcoming fire times of JOB_NAME in its timezone, with EventBridge Scheduler semantics."),
    "schema": ("jobplane.cli.definitions", "schema",
               "JSON Schema of a resolved job definition, for editor completion and checks."),
    "init": ("jobplane.cli.definitions", "init",
             "Create jobs/TEAM/JOB.jsonnet from a commented template (never overwrites)."),
    "import": ("jobplane.cli.importing", "import_command",
               "Turn existing schedules into job files under jobs/TEAM/, one per job, each validated and proved "
               "to fire at the same instants as its source (docs/import.md)."),
    "dev": ("jobplane.cli.local", "dev", "Run the whole platform on this machine until Ctrl-C."),
    "dev-login": ("jobplane.cli.local", "dev_login",
                  "Print a new sign-in link of the running `jobplane dev`'s portal (each link is good once, "
                  "for 15 minutes), minted from its dev.json."),
    "dev-slack-click": ("jobplane.cli.slack_click", "dev_slack_click",
                        "Click an alert's Slack button as Slack would (signed with JOBPLANE_SLACK_SIGNING_SECRET), on the "
                        "running `jobplane dev`: the buttons tried without Slack."),
    "run": ("jobplane.cli.operate", "run",
            "Start JOB now (on the running `jobplane dev`, or with --deployment on AWS), and follow it to the end."),
    "rerun": ("jobplane.cli.operate", "rerun",
              "Re-run EXECUTION from its failed step (or --whole, or only its --failed-items) with its params, as "
              "the portal's re-run buttons do; prints the new execution's name and does not wait for it."),
    "status": ("jobplane.cli.operate", "status",
               "Jobs: last status, running executions, next fire time (of `jobplane dev`, or with --deployment "
               "on AWS). While `jobplane dev` is not running, its last saved state, with the next fires of cron "
               "schedules and the open episodes of missed fires."),
    "report": ("jobplane.cli.reports", "report",
               "JOB's month (or, with --team, every job of a team): runs by outcome, success rate, median and p95 "
               "duration, start delay, missed fires, the deadline kept and the failures, computed from the run "
               "records (exact)."),
    "logs": ("jobplane.cli.operate", "logs",
             "Print the step logs of EXECUTION (every attempt, in the order they ran), read from CloudWatch "
             "Logs (of `jobplane dev`, or with --deployment on AWS); while `jobplane dev` is stopped, from its "
             "cache in the data directory."),
    "stop": ("jobplane.cli.operate", "stop",
             "Stop a running EXECUTION: its step's task is stopped, the run is recorded ABORTED and its claim "
             "released."),
    "pause": ("jobplane.cli.operate", "pause",
              "Pause JOB's schedules: no scheduled run starts until `jobplane resume` (manual runs still can)."),
    "resume": ("jobplane.cli.operate", "resume", "Resume JOB's schedules after `jobplane pause`."),
    "snooze": ("jobplane.cli.operate", "snooze",
               "Hold JOB's alerts until a time: its runs are recorded and shown as always, and one summary of the "
               "alerts held is sent when the snooze ends (by itself, or `jobplane unsnooze`)."),
    "unsnooze": ("jobplane.cli.operate", "unsnooze",
                 "End JOB's snooze now: its alerts are delivered again, and the summary of those held is sent."),
    "repair-pauses": ("jobplane.cli.operate", "repair_pauses",
                      "Disable again every paused job's schedule found ENABLED (the pipeline runs it after each "
                      "apply, which writes the compiled state)."),
    "index-statuses": ("jobplane.cli.operate", "index_statuses",
                       "File every job in the status index under its last status (once, after the upgrade that "
                       "added the index: docs/deploy.md); safe to run again."),
    "ack": ("jobplane.cli.operate", "ack",
            "Acknowledge JOB's last failure: a SKIP_IF_FAILED job's scheduled runs start again (the next "
            "success still announces RECOVERED)."),
    "approve": ("jobplane.cli.approvals", "approve",
                "Approve the approval step EXECUTION waits on: the run goes on to its next step."),
    "reject": ("jobplane.cli.approvals", "reject",
               "Reject the approval step EXECUTION waits on: the run ends REJECTED (no failure alert)."),
    "approvals": ("jobplane.cli.approvals", "approvals",
                  "The runs waiting for an approval, oldest first: job, execution, step, the prompt (with the "
                  "metrics it shows), who may decide and when it times out."),
    "backfill": ("jobplane.cli.backfill", "backfill",
                 "Run JOB for the fires of a past window, exactly once each: by default only those with no record. "
                 "With a BACKFILL id instead: follow it, or --cancel / --resume it."),
    "dead-letters": ("jobplane.cli.dead_letters", "dead_letters",
                     "List what the platform could not deliver (the <prefix>-events-dlq queue: alerts Slack refused, "
                     "status events nobody took), or --resend the alerts; of `jobplane dev`, or with --deployment on AWS."),
    "diff": ("jobplane.cli.versions", "diff",
             "Print what changed in the job's definition from RUN_A to RUN_B (steps, schedule, policy, secrets, "
             "params), from the definitions each run was stamped with (of `jobplane dev`, or with --deployment on "
             "AWS)."),
    "record-definitions": ("jobplane.cli.versions", "record_definitions",
                           "Keep every compiled job's definition under its digest in the catalog bucket, never "
                           "overwriting one (the pipeline runs it after each apply; `jobplane dev` records by itself)."),
    "portal": ("jobplane.cli.local", "portal",
               "Serve the portal against real AWS (production). Configured by the environment: see "
               "docs/portal.md (JOBPLANE_TABLE, JOBPLANE_TOPIC_ARN, JOBPLANE_CATALOG, JOBPLANE_AUTH_MODE ...). "
               "Locally, `jobplane dev` already serves it."),
}


class LazyGroup(click.Group):
    """A group that imports a command on first use (the pattern of Click's own documentation,
    "Lazily Loading Subcommands"), and lists commands from :data:`COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command) and command.name == cmd_name, (cmd_name, command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        # Shortened as each command's own get_short_help_str would (click.utils'
        # make_default_short_help is deprecated in Click 8.2 and goes in 9.0).
        rows = [(name, click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--root", default=".", show_default=True, envvar="JOBPLANE_ROOT",
              help="Repository root (holds jobplane.toml and jobs/).")
@click.version_option(__version__, prog_name="jobplane")
@click.pass_context
def main(ctx: click.Context, root: str) -> None:
    """Scheduled workflows on AWS, defined in Jsonnet.

    Typical flow: write jobs/<team>/<job>.jsonnet, then `jobplane validate`, `jobplane plan`
    and `jobplane compile`; `jobplane next JOB` shows when it will fire. `jobplane dev` runs
    the whole platform locally; `jobplane run`, `rerun`, `status`, `logs`, `stop`, `pause`,
    `resume`, `ack` and `backfill` talk to it, or with --deployment to the platform on AWS.
    """
    from jobplane.cli.common import Context
    from jobplane.cli.terminal import install

    install()  # everything printed from here on goes through the one escaper (cli/terminal.py)
    ctx.obj = Context(root)
