"""What every ``jobplane`` command shares: the project context, exit codes, how definition
problems are printed, and the options and helpers of the commands that talk to a platform."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from jobplane.contract.config import ConfigError, PlatformConfig, load_config

if TYPE_CHECKING:  # the compiler, boto3 and the control plane load only in the commands that use them
    from jobplane.compiler.problems import DefinitionError
    from jobplane.platform.control import ControlPlane

# `jobplane --help` and every command pay only for what they run (issue 13: start-up), so the
# compiler (pydantic, go-jsonnet) and boto3 are imported inside the commands.

EXIT_INVALID = 2


class Context:
    def __init__(self, root: str):
        self.root = root
        self._config: PlatformConfig | None = None

    @property
    def config(self) -> PlatformConfig:
        if self._config is None:
            try:
                self._config = load_config(self.root)
            except ConfigError as e:
                click.echo(f"error: {e}", err=True)
                sys.exit(EXIT_INVALID)
        return self._config


def fail_definitions(err: DefinitionError) -> None:
    """One line per problem (file, job, field), then exit 2: nothing was written."""
    for problem in err.problems:
        click.echo(str(problem), err=True)
    n = len(err.problems)
    click.echo(f"{n} problem{'s' if n != 1 else ''} found; nothing was written.", err=True)
    sys.exit(EXIT_INVALID)


data_dir_option = click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                               envvar="JOBPLANE_DATA_DIR",
                               help="Local platform data directory (default: [dev] data_dir of jobplane.toml).")


def resolve_data_dir(obj: Context, given: Path | None) -> Path:
    return (given or obj.config.data_path).resolve()


def running_control(obj: Context, given: Path | None) -> ControlPlane:
    """The control plane of the running ``jobplane dev`` (found through its dev.json)."""
    from jobplane.devserver.runtime import DevError, control_for

    try:
        return control_for(resolve_data_dir(obj, given))
    except DevError as e:
        raise click.ClickException(str(e)) from None


def control_error() -> type[Exception]:
    from jobplane.platform.control import ControlError

    return ControlError


def parse_params(values: tuple[str, ...]) -> dict[str, Any]:
    from jobplane.contract.execution_input import parse_params as parse

    try:
        return parse(list(values))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--param") from None
