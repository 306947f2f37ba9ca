"""The ``jobplane`` command line: one group, its commands from :mod:`jobplane.cli.definitions`
(read definitions) and :mod:`jobplane.cli.local` (run or talk to a platform)."""

from __future__ import annotations

import click

from jobplane import __version__
from jobplane.cli import definitions, local, operate
from jobplane.cli.common import Context


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--root", default=".", show_default=True, envvar="JOBPLANE_ROOT",
              help="Repository root (holds jobplane.toml and jobs/).")
@click.version_option(__version__, prog_name="jobplane")
@click.pass_context
def main(ctx: click.Context, root: str) -> None:
    """Scheduled workflows on AWS, defined in Jsonnet.

    Typical flow: write jobs/<team>/<job>.jsonnet, then `jobplane validate`, `jobplane plan`
    and `jobplane compile`; `jobplane next JOB` shows when it will fire. `jobplane dev` runs
    the whole platform locally; `jobplane run`, `status`, `logs`, `stop`, `pause`, `resume` and
    `ack` talk to it, or with --deployment to the platform on AWS.
    """
    ctx.obj = Context(root)


for command in (definitions.validate, definitions.compile_command, definitions.plan, definitions.next_command,
                definitions.schema, definitions.init, local.dev, operate.run, operate.status, operate.logs, operate.stop,
                operate.pause, operate.resume, operate.ack, local.portal):
    main.add_command(command)
