"""What every ``jobplane`` command shares: the project context, exit codes, how definition
problems are printed, and the options and helpers of the commands that talk to a platform."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from jobplane.contract.config import ConfigError, PlatformConfig, load_config
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:  # the compiler, boto3 and the control plane load only in the commands that use them
    from datetime import datetime

    from jobplane.compiler.problems import DefinitionError
    from jobplane.platform.control import Actor, ControlError, ControlPlane

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
            except ConfigError as e:  # one line per problem, as a definition's are
                for problem in e.problems:
                    click.echo(problem, err=True)
                n = len(e.problems)
                click.echo(f"{n} problem{'s' if n != 1 else ''} found in jobplane.toml; nothing was done.", err=True)
                sys.exit(EXIT_INVALID)
        return self._config


@contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt inside, however the command was started. Python
    installs its handler only when SIGINT is not ignored at start-up, and a process started in
    the background (``nohup``, ``&``, some CI launchers) inherits it ignored: `jobplane backfill`
    then ran to the end through a Ctrl-C (issue 65 item 10). As `jobplane dev` does, a command
    that says what an interruption leaves behind installs its own handler while it waits."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


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


def control_error() -> type[ControlError]:
    from jobplane.platform.control import ControlError

    return ControlError


def parse_params(values: tuple[str, ...]) -> JsonObject:
    from jobplane.contract.execution_input import parse_params as parse

    try:
        return parse(list(values))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--param") from None


def typed_params(control: ControlPlane, job: str, values: tuple[str, ...]) -> JsonObject:
    """``-p`` values as the job's typed parameters take them (contract/params.py): a string
    parameter gets the text typed, a number or bool its JSON; plain params as ``parse_params``."""
    parsed = parse_params(values)
    try:
        param_set = control.brief(job).param_set()
    except Exception:  # an unknown job or no catalog: the control plane says which when it runs
        return parsed
    try:
        return dict(param_set.from_items(list(values)))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--param") from None


deployment_option = click.option(
    "--deployment", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
    envvar="JOBPLANE_DEPLOYMENT",
    help="Talk to a deployed platform on AWS: the JSON of `terraform output -json` in terraform/jobs "
         "(its `jobplane` output), with boto3's usual credentials and region. Default: the running "
         "`jobplane dev`.")


class Target:
    """The platform a command talks to: the running ``jobplane dev`` or a deployment on AWS.
    Both are reached through the same control plane and boto3 calls; only where the names come
    from (dev.json, or the base module's outputs) and who the actor is differ: on ``jobplane
    dev``, ``[dev] dev_user`` as a person, judged by jobplane.toml's teams and admins as the
    portal judges them; with ``--deployment``, the caller's AWS identity as an operator
    (platform/control/access.py, docs/operate.md)."""

    def __init__(self, control: ControlPlane, actor: Actor, portal_url: str, where: str):
        self.control = control
        self.actor = actor
        self.portal_url = portal_url.rstrip("/")
        self.where = where

    @property
    def as_whom(self) -> str:
        """Who the command acts as, for its output: the name, and an operator's kind."""
        return f"{self.actor.name} (operator)" if self.actor.kind == "operator" else self.actor.name

    def link(self, execution: str) -> str:
        from urllib.parse import quote

        return f"{self.portal_url}/executions/{quote(execution, safe='')}" if self.portal_url else ""


def aws_target(deployment_file: Path, identify: bool = True) -> Target:
    """A deployment from the compiled root's ``jobplane`` output; the actor is the caller's AWS
    identity (what CloudTrail also records for the calls), an operator: IAM's operator policy
    decides what it may do. ``identify`` False: a command that only reads acts as nobody, and
    skips the STS call that would name the caller."""
    import json

    from jobplane.platform.control import Actor, ControlPlane, Deployment

    try:
        data = json.loads(deployment_file.read_text())
        values = data["jobplane"]["value"] if "jobplane" in data else data
        deployment = Deployment(
            table=values["table"], topic_arn=values["topic_arn"], name_prefix=values["name_prefix"],
            region=values["region"], account_id=values["account_id"], catalog_path=values["catalog_uri"],
            log_group=values["log_group"])
    except (ValueError, KeyError, TypeError) as e:
        raise click.ClickException(f"{deployment_file}: not the `jobplane` output of terraform/jobs "
                                   f"(`terraform output -json > {deployment_file.name}`): {e!r}") from None
    try:
        actor = Actor.operator(deployment.client("sts").get_caller_identity()["Arn"] if identify else "")
        control = ControlPlane(deployment)
    except Exception as e:  # noqa: BLE001 - credentials, network, a missing catalog: say which
        raise click.ClickException(f"cannot reach the platform of {deployment_file}: {e}") from None
    return Target(control, actor, str(values.get("portal_url") or ""), f"AWS ({deployment.region})")


def target(obj: Context, data_dir: Path | None, deployment: Path | None) -> Target:
    from jobplane.cli.process import started

    with started():  # the console script's own process collects none of it (cli/process.py)
        if deployment is not None:
            return aws_target(deployment)
        import json

        from jobplane.platform.control import Access

        control = running_control(obj, data_dir)
        runtime = json.loads((resolve_data_dir(obj, data_dir) / "dev.json").read_text())
        actor = Access.from_config(obj.config).person(obj.config.dev.dev_user)
        return Target(control, actor, runtime.get("portal_url", ""), "jobplane dev")


def undeployed(obj: Context, job: str) -> str:
    """What to add when the running `jobplane dev` has no ``job`` but the project defines it:
    it deploys the definitions it finds at its start, so a job written since needs a restart
    (a newcomer's first `jobplane init` then `jobplane run` met a bare "no job named")."""
    from jobplane.compiler.problems import rel
    from jobplane.compiler.validate import definition_files

    try:  # the files validate reads (the library's left out), compared by name: never a path built from ``job``
        found = [f for f in definition_files(obj.config) if f.stem == job]
    except OSError:  # an unreadable folder: no hint rather than a traceback
        return ""
    if not found:
        return ""
    return (f"\n{rel(found[0], obj.config.root)} defines it, but the running jobplane dev deployed the definitions "
            "it found when it started: restart it (Ctrl-C, then `make dev` or `jobplane dev`) to deploy this one")


def aware_time(text: str, param_hint: str) -> "datetime":
    """An ISO 8601 time with its offset, as an option takes it (a time without one is refused:
    which zone it meant is the question the option answers)."""
    from datetime import datetime, timezone

    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 time", param_hint=param_hint) from None
    if t.tzinfo is None:
        raise click.BadParameter("give an offset, e.g. 2026-03-08T00:00:00-05:00 or ...Z", param_hint=param_hint)
    try:
        utc = t.astimezone(timezone.utc)
    except OverflowError:
        utc = None
    if utc is None or not datetime(1970, 1, 1, tzinfo=timezone.utc) <= utc < datetime(9999, 1, 1, tzinfo=timezone.utc):
        # the calendar's ends overflow the fire arithmetic (a traceback, issue 40 item 11)
        raise click.BadParameter(f"{text!r} is outside 1970-9998", param_hint=param_hint)
    return t
