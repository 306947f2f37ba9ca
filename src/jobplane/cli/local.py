"""The ``jobplane`` commands that run a platform: ``dev`` (the whole platform on this machine)
and ``portal`` (the portal against AWS). The commands that talk to a running platform, local or
on AWS, are in :mod:`jobplane.cli.operate`."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import click

from jobplane.cli.common import Context, data_dir_option, fail_definitions, resolve_data_dir
from jobplane.contract.limits import FAULT_PROFILES

ENGINE_LOG = "engine.log"
#: The loggers whose lines go to engine.log, not the console.
ENGINE_LOGGERS = ("moto", "urllib3.connectionpool")


def engine_log_to_file(data_dir: Path) -> None:
    """moto logs every failed state as a multi-KB ERROR line of interpreter internals: useful
    when debugging the engine, noise for an operator. They go to <data dir>/engine.log; the
    console keeps one line per event (alerts, services, start and stop). So do the HTTP client's
    "Connection pool is full, discarding connection" warnings: many runs at once (100 concurrent
    starts) open more connections to the local AWS than a client pools, and the extra one is
    closed after its request, which is all the warning says."""
    data_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(data_dir / ENGINE_LOG)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ENGINE_LOGGERS:
        engine = logging.getLogger(name)
        engine.setLevel(logging.WARNING)
        engine.addHandler(handler)
        engine.propagate = False


@click.command()
@click.option("--reset", is_flag=True, help="Start empty: delete the saved state, logs and dead letters first.")
@data_dir_option
@click.option("--aws-port", type=int, default=None, envvar="JOBPLANE_AWS_PORT",
              help="Port of the embedded AWS endpoint (default: [dev] aws_port; 0: any free port).")
@click.option("--portal-port", type=int, default=None, envvar="JOBPLANE_PORTAL_PORT",
              help="Port of the portal (default: [dev] portal_port; 0: any free port).")
@click.option("--no-services", is_flag=True, help="Do not start the [dev.services] processes.")
@click.option("--faults", type=click.Choice(FAULT_PROFILES), default=None, envvar="JOBPLANE_FAULTS",
              help="Inject AWS's documented faults (throttles, capacity failures, idle Lambda functions): "
                   "none, aws-typical (rare, as on AWS) or storm (often). Default: [dev] faults, else none.")
@click.option("--faults-seed", type=int, default=0, show_default=True,
              help="Seed of the fault profile's random draws (the same seed draws the same faults).")
@click.pass_obj
def dev(obj: Context, reset: bool, data_dir: Path | None, aws_port: int | None, portal_port: int | None,
        no_services: bool, faults: str | None, faults_seed: int) -> None:
    """Run the whole platform on this machine until Ctrl-C.

    Compiles jobs/, starts the embedded local AWS (moto) with every job deployed, the local
    scheduler (jobs fire on their real schedules), the local ECS agent (steps run the real
    jobplane-runner as subprocesses), Slack alerts (JOBPLANE_SLACK_BOT_TOKEN: chat.postMessage to
    each routed channel; or JOBPLANE_SLACK_WEBHOOK_URL: one URL, or a JSON object of channel ->
    URL; else the console), signed webhooks (JOBPLANE_WEBHOOKS: the targets' JSON, docs/notifications.md)
    and the portal. State is kept in the data directory across restarts.
    AWS's documented limits are enforced; its faults are injected on request (--faults).
    """
    from jobplane.compiler.problems import DefinitionError
    from jobplane.contract import environment as E
    from jobplane.contract.channels import SLACK
    from jobplane.contract.channels import secrets as channel_secrets
    from jobplane.contract.environment import RuntimeEnvironment
    from jobplane.contract.slack_interactivity import SIGNING_SECRET
    from jobplane.devserver.dev_platform import DevError, DevPlatform, freeze_started_heap

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    for noisy in ("botocore", "urllib3", "werkzeug", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    config = obj.config
    data = resolve_data_dir(obj, data_dir)
    engine_log_to_file(data)
    env = RuntimeEnvironment.from_environment()  # the developer's Slack settings, named as on AWS
    platform = DevPlatform(config, data, config.dev.aws_port if aws_port is None else aws_port,
                           config.dev.portal_port if portal_port is None else portal_port, reset=reset,
                           webhook_url=env.optional(E.SLACK_WEBHOOK_URL), slack_bot_token=env.optional(E.SLACK_BOT_TOKEN),
                           slack_api_url=env.optional(E.SLACK_API_URL),
                           channel_settings={s.value_env: v for s in channel_secrets() if s not in SLACK.secrets
                                             and (v := env.optional(s.value_env))},
                           run_services=not no_services, faults=faults or config.dev.faults, faults_seed=faults_seed,
                           slack_signing_secret=env.optional(SIGNING_SECRET))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        platform.start()
    except DefinitionError as e:
        fail_definitions(e)
    except (DevError, OSError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(platform.banner(), err=False)
    sys.stdout.flush()
    # after the banner: a full collection over what the start made (~1 M objects, ~0.4 s at
    # 5,000 jobs) is nothing the developer waits for; everything is already serving
    freeze_started_heap()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        click.echo("\nstopping: portal, scheduler, running executions (recorded ABORTED), services, alerts, state saved ...")
        platform.stop()
        click.echo("jobplane dev stopped.")


@click.command(name="dev-login")
@data_dir_option
@click.option("--loopback", is_flag=True,
              help="A link on 127.0.0.1 (a browser that does not resolve *.localhost; its session reaches every "
                   "loopback port that browser visits: docs/dev.md).")
@click.pass_obj
def dev_login(obj: Context, data_dir: Path | None, loopback: bool) -> None:
    """Print a new sign-in link of the running `jobplane dev`'s portal (each link is good once,
    for 15 minutes), minted from its dev.json.

    The link is on the start's own jp-<random>.localhost name, whose session cookie no other
    loopback port is sent (--loopback: on 127.0.0.1)."""
    from jobplane.devserver.runtime import DevError, read_runtime
    from jobplane.portal.auth import mint_login_token

    try:
        runtime = read_runtime(resolve_data_dir(obj, data_dir))
    except DevError as e:
        raise click.ClickException(str(e)) from None
    secret = runtime.get("portal_login_secret")
    if not isinstance(secret, str):
        raise click.ClickException("this jobplane dev start wrote no login secret to dev.json (an older version): "
                                   "restart it")
    base = runtime["portal_url"] if loopback else runtime.get("portal_browser_url") or runtime["portal_url"]
    click.echo(f"{base}/login?token={mint_login_token(secret)}")


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True)
def portal(host: str, port: int) -> None:
    """Serve the portal against real AWS (production). Configured by the environment: see
    docs/portal.md (JOBPLANE_TABLE, JOBPLANE_TOPIC_ARN, JOBPLANE_CATALOG, JOBPLANE_AUTH_MODE ...).
    Locally, `jobplane dev` already serves it."""
    import uvicorn

    import threading

    from jobplane.platform.backfill import BackfillDriver
    from jobplane.portal.app import create_app
    from jobplane.portal.settings import PortalSettings, server_options

    try:
        settings = PortalSettings.from_env()
    except (KeyError, ValueError) as e:
        raise click.ClickException(f"portal configuration incomplete: {e}") from None
    app = create_app(settings)
    # Backfills created here (or left by an interrupted CLI) are moved on by the portal's process.
    driver = BackfillDriver(app.state.portal.backfills)
    threading.Thread(target=driver.run, args=(threading.Event(),), name="backfill-driver", daemon=True).start()
    uvicorn.run(app, host=host, port=port, **server_options(settings))
