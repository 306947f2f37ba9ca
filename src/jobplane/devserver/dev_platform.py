"""``jobplane dev``: the whole platform on one machine.

Start order: compile jobs/ -> embedded local AWS (moto server, ECS agent, reconciler) -> restore
the saved state -> deploy every job -> re-apply pauses and close runs a crash interrupted ->
alert feed (SNS -> Slack notifier) -> dev services -> local scheduler, slow-run check, catch-up
of lost status events -> portal. Each part registers its own stop on one ``ExitStack`` as it
starts, so a failed start undoes exactly what had started, and a stop runs in reverse: portal,
scheduler, then the running executions (recorded ABORTED and alerted, as on AWS), services,
queued alerts, a last save of the state, the local AWS. Each stop step runs even if an earlier
one failed.

Everything lives under one data directory (``.jobplane/``): ``state.json`` (the table, and the
alerts Slack refused: the events dead-letter queue's messages), ``logs/`` (one file per step attempt), ``examples/``
(what the example jobs write), ``scheduler.json`` (how far the local scheduler fired: a start
after a stop knows the outage), ``dev.json`` (how the CLI finds the running platform),
``deployed.json`` (what the last start deployed: deploy_record.py) and ``definitions.json`` (every
definition the starts recorded, put back into the local S3 at each start: definition_archive.py).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
from contextlib import ExitStack
from datetime import datetime, timezone
import errno
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from jobplane.contract.config import PlatformConfig, expand_ports
from jobplane.contract.output_files import OutputFiles
from jobplane.devserver import services as svc
from jobplane.devserver.runtime import (COMPILED_STAMP, RUNTIME_FILE, SNAPSHOT_FILE, DevError, owner_only,
                                        read_runtime, remove_runtime, write_runtime)
from jobplane.devserver.definition_archive import ARCHIVE_FILE as DEFINITIONS_FILE, DefinitionArchive
from jobplane.compiler.gc_pause import gc_paused
from jobplane.devserver.deploy_record import RECORD_FILE as DEPLOY_RECORD, DeployRecord
from jobplane.devserver.snapshot import Snapshot
from jobplane.devserver.write_behind import WriteBehind
from jobplane.platform.catchup import WINDOW as CATCHUP_WINDOW
from jobplane.platform.control import ControlPlane, Deployment
from jobplane.platform.local.ecs_agent import container_env
from jobplane.platform.local.engine import ACCOUNT, LocalAWS
from jobplane.platform.local.faults import Faults
from jobplane.platform.local.front import PortInUse
from jobplane.platform.local.scheduler import Clock, LocalScheduler, system_clock
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:  # imported when the platform starts them (the CLI's start-up)
    import uvicorn

    from jobplane.compiler.rendered_jobs import RenderedJob

    from jobplane.platform.backfill import Backfills
    from jobplane.platform.local.alerts import AlertFeed
    from jobplane.platform.dead_letters import EventsDeadLetters
    from jobplane.platform.slack_actions.feed import QueueFeed
    from jobplane.platform.slack_actions.ingress import Ingress

log = logging.getLogger("jobplane.dev")

#: How long an ended execution stays in the local AWS (DescribeExecution, its history): beyond
#: the catch-up's window, which asks about runs that ended up to that long ago (catchup.WINDOW).
ENDED_KEPT_FOR = 2 * CATCHUP_WINDOW
FORGET_EVERY = 3600.0  # seconds between two passes
SCHEDULER_RECORD = "scheduler.json"
VALIDATE_CACHE = "cache"  # the compile's evaluation cache (compiler/validate_cache.py)


__all__ = ["DevError", "DevPlatform", "RUNTIME_FILE", "SNAPSHOT_FILE"]


class DevPlatform:
    """Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(self, config: PlatformConfig, data_dir: Path, aws_port: int, portal_port: int, *,
                 reset: bool = False, clock: Clock = system_clock, webhook_url: str | None = None,
                 slack_bot_token: str | None = None, slack_api_url: str | None = None,
                 channel_settings: dict[str, str] | None = None, run_scheduler: bool = True, run_services: bool = True, snapshot_interval: float = 5.0,
                 catch_up_interval: float = 60.0, faults: str | Faults = "none", faults_seed: int = 0,
                 slack_signing_secret: str | None = None):
        self.config = config
        self.data_dir = Path(data_dir).resolve()
        self.output_dir = self.data_dir / "compiled"
        self.aws_port = aws_port
        self.portal_port = portal_port
        # the portal's sign-in secret, new at every start (portal/settings.AuthSettings, dev mode)
        self._login_token = secrets.token_urlsafe(32)
        from jobplane.portal.auth import per_start_host

        self.portal_host = per_start_host()  # the browser's name of this start's portal (its banner link)
        self.reset = reset
        self.clock = clock
        self.webhook_url = webhook_url
        self.slack_bot_token = slack_bot_token
        self.slack_api_url = slack_api_url
        #: Slack interactivity (buttons on the alert, issue 68 part 2): on with the app's signing
        #: secret, which then also needs the bot token and [slack] app_id and team_id
        self.slack_signing_secret = slack_signing_secret
        self.slack_ingress: Ingress | None = None  # the portal's /slack/interactions
        self.slack_actions: QueueFeed | None = None  # the worker, draining the local queue
        #: the other channels' settings by their variable (JOBPLANE_WEBHOOKS: contract/channels.py)
        self.channel_settings = dict(channel_settings or {})
        self.run_scheduler = run_scheduler
        self.run_services = run_services
        self.snapshot_interval = snapshot_interval
        self.catch_up_interval = catch_up_interval  # the catch-up checks run at start, then this often
        # the local AWS's fault profile (platform/local/faults.py), seeded by faults_seed; or an
        # injector of the caller's own (a test's, with its own settings)
        self.faults = faults if isinstance(faults, str) else faults.profile
        self.faults_seed = faults_seed if isinstance(faults, str) else (faults.seed or 0)
        self._injector = None if isinstance(faults, str) else faults
        # Set while starting (None until then): what the rest of the process and the tests use.
        self.aws: LocalAWS | None = None
        self.deployment: Deployment | None = None
        self.control: ControlPlane | None = None
        self.scheduler: LocalScheduler | None = None
        self.backfills: Backfills | None = None  # over the control plane
        self.alerts: AlertFeed | None = None  # SNS -> SQS -> the Slack notifier
        self.dead_letters: EventsDeadLetters | None = None  # alerts Slack refused, in the events dead-letter queue
        self.portal: uvicorn.Server | None = None
        self.jobs: list[str] = []
        self.compile_reused = False  # this start kept the last start's compiled output
        self.evaluated = 0  # definition files this start's compile evaluated (0: compile kept)
        self.evaluations_reused = 0  # files whose kept result it reused (unchanged, imports too)
        self.builds_reused = 0  # jobs whose built document it reused (their file unchanged), or not needed (root kept)
        self.roots_kept: list[str] = []  # team roots whose files this compile kept (compiler/root_memo.py)
        self.roots_compiled: list[str] = []  # and those it compiled
        self.job_files_rendered = 0  # job files it rendered (in those, the others were on disk as rendered)
        self.digests: dict[str, str] = {}  # compiled file -> SHA-256 (what deployed it: deploy_record.py)
        self.outputs_hashed: list[str] = []  # kept compiled files read to tell they are unchanged
        self.deploy_kept: list[str] = []  # jobs deployed from the deploy record (files unchanged)
        self.deploy_read: list[str] = []  # jobs deployed from their files (new or changed)
        self.deploy_handed: list[str] = []  # jobs deployed from what this start's compile rendered
        #: job -> what the local deploy takes from its file, for each job file this start's
        #: compile rendered (compiler/rendered_jobs.py); handed to the deploy, then dropped
        self.rendered_jobs: dict[str, RenderedJob] = {}
        #: the compiled output as the deploy reads it: while the start writes it behind (compile's
        #: write_behind), with the texts being written
        self.output = OutputFiles(self.output_dir)
        self._written: WriteBehind | None = None
        self.interrupted: list[str] = []  # executions the last shutdown left running, now ABORTED
        self.services: dict[str, subprocess.Popen[bytes]] = {}
        self.service_ports: dict[str, int] = {}
        self._stop = threading.Event()
        self._stack = ExitStack()

    def __enter__(self) -> DevPlatform:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- start ------------------------------------------------------------------------------
    def _faults(self) -> Faults | None:
        if self._injector is not None:
            return self._injector
        return None if self.faults == "none" else Faults(self.faults, seed=self.faults_seed)

    # The whole start with the cyclic collector paused, as its compile already was (compiler/
    # gc_pause.py): the deploy keeps millions of objects (moto's resources, the catalog) and frees
    # the compile's, and each full collection walked all of them, the compile's included, ~5
    # collections of ~0.5-1 s each at 5,000 jobs (gc callbacks, /work timeline, session 38), while
    # the write behind's child (write_behind.py) shared those pages with this process: a
    # collection's writes to every object's header copied them (copy on write) for nothing.
    @gc_paused
    def start(self) -> DevPlatform:
        if self.reset and self.data_dir.exists():
            self._check_not_running()
            shutil.rmtree(self.data_dir)
        # Owner-only: the data directory holds the local AWS's key, every step's output and the
        # whole table. The umask covers what this process and its children (the runner) create.
        os.umask(0o077)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        owner_only(self.data_dir)
        self._check_not_running()
        self.compile(write_behind=True)  # raises DefinitionError before anything starts
        try:
            # A port per service named by {port:NAME}: chosen now, so steps ([dev] env) and the
            # service agree on it, and a second instance gets its own.
            self.service_ports = {name: svc.free_port() for name in self.config.dev.port_names()}
            with ExitStack() as stack:
                self._start_all(stack)
                self._stack = stack.pop_all()  # started: from here on stop() undoes it
        except BaseException:
            self._compile_kept(failed=True)  # never left writing behind a start that failed
            raise
        return self

    # paused as each compiler pass is (compiler/gc_pause.py), the output's stamp, the roots'
    # memory and the steps between the passes with them: a one-job edit at 5,000 jobs took
    # 1.1-1.4 s with their collections, 0.9-1.0 s without (bench/dev_scale.py's compile_only,
    # alternated in one run, session 36)
    @gc_paused
    def compile(self, write_behind: bool = False) -> None:
        """Compile into the data directory, unless what it holds is the output of these very
        inputs (compiler/inputs.py) and unchanged since: then a restart skips the compile.

        ``write_behind`` (the start's): the compiled files, the caches and the stamp are written
        while the start goes on (devserver/write_behind.py: in a forked child), and
        ``self.output`` reads the directory as that write leaves it (contract/output_files.py);
        the start waits for the files (:meth:`_output_written`) before anything else reads the
        directory, and for the caches written after them (only the next compile reads them)
        when it stops.

        A compile evaluates and checks only the definitions whose result can differ from the
        last one's (compiler/validate_cache.py: keyed by each file's bytes and its imports', so
        a library edit re-evaluates exactly the files that import it, and this installation's
        code and jobplane.toml); the cache lives in the data directory (owner-only), so
        ``--reset`` empties it. Either way ``self.digests`` ends as each compiled file's
        SHA-256, which the deploy record is keyed by (deploy_record.py), and each job file
        compiled now hands the deploy its ASL and schedule role (compiler/rendered_jobs.py), so
        the deploy reads none of them back."""
        from jobplane.compiler import inputs
        from jobplane.compiler.output import write_output
        from jobplane.compiler.problems import DefinitionError
        from jobplane.compiler.root_memo import ROOTS_FILE, RootMemo, compile_roots
        from jobplane.compiler.validate import check_definitions
        from jobplane.compiler.validate_cache import ValidateCache
        from jobplane.devserver.compiled_stamp import CompiledStamp

        stamp = CompiledStamp(self.data_dir / COMPILED_STAMP, self.output_dir)
        from jobplane.platform.local.runner_identity import local_runner_image

        image = local_runner_image()  # each definition's "image": a changed runner is a new one
        # the inputs' stat table beside the evaluation cache: --reset empties both
        wanted = hashlib.sha256(f"{inputs.digest(self.config, table=self.data_dir / VALIDATE_CACHE)}\n{image}"
                                .encode()).hexdigest()
        self.rendered_jobs = {}
        self.output = OutputFiles(self.output_dir)
        on_disk = stamp.unchanged(wanted)  # only files whose size or time changed are read
        self.outputs_hashed = stamp.hashed
        if on_disk is not None:
            self.compile_reused = True
            self.digests = on_disk
            log.info("job definitions unchanged since the last start: compiled output kept")
            return
        cache = ValidateCache(self.config, self.data_dir / VALIDATE_CACHE)
        try:
            checked = check_definitions(self.config, cache=cache)
            if checked.problems:
                raise DefinitionError(checked.problems)
        except BaseException:
            cache.save()  # the files' own results, also when another file has a problem
            raise
        self.evaluated, self.evaluations_reused = cache.misses, cache.hits
        on_disk = stamp.on_disk()  # what is there now, without reading what the stamp vouches for
        # each root whose jobs, jobplane.toml, code and image are unchanged kept as it is on disk
        # (compiler/root_memo.py); in the others each job built only if its file changed
        memo = RootMemo(self.data_dir / VALIDATE_CACHE / ROOTS_FILE)
        try:
            out, memory = compile_roots(self.config, checked, cache, memo, on_disk, image)
        except BaseException:
            cache.save()
            raise
        self.builds_reused = cache.built_hits + out.kept_jobs
        self.roots_kept, self.roots_compiled = out.kept_roots, out.compiled_roots
        self.job_files_rendered = out.rendered
        self.digests = out.digests
        self.rendered_jobs = out.rendered_jobs
        self.compile_reused = False

        def write() -> None:
            stamp.remove()  # an output being rewritten is never taken for a kept one
            write_output(out.compiled, self.output_dir, digests=(on_disk, self.digests))
            stamp.write(wanted, self.digests)

        def keep() -> None:  # what only the next compile reads
            cache.save()
            memo.save(*memory)  # once its files are written (a kept root is checked against them anyway)

        if not write_behind:
            write()
            keep()
            return
        self.output = OutputFiles(self.output_dir, out.compiled.files, self.digests)
        self._written = WriteBehind(write, keep)  # in a forked child (write_behind.py)

    def _output_written(self) -> None:
        """Wait until the compile's files are written behind (:meth:`compile`), raising what
        the write raised; the caches it writes next are waited for by :meth:`_compile_kept`."""
        self.output = OutputFiles(self.output_dir)
        if self._written is not None:
            self._written.wait()

    def _compile_kept(self, failed: bool = False) -> None:
        """Wait until the write behind ended, its caches written (``failed``: the start failed,
        maybe before it waited for the files: the write's own error is then logged)."""
        written, self._written = self._written, None
        if written is None:
            return
        if failed:
            try:
                written.wait()
            except BaseException:  # noqa: BLE001 - the start's own error is the one told
                log.exception("writing the compiled output failed too")
        written.close()

    def _start_all(self, stack: ExitStack) -> None:
        def on_stop(what: str, action: Callable[[], object]) -> None:
            stack.callback(_phase, what, action)

        try:
            aws = self.aws = stack.enter_context(LocalAWS(
                prefix=self.config.name_prefix, server_port=self.aws_port, log_dir=self.data_dir / "logs",
                env=self.config.dev_env(self.data_dir, self.service_ports), clock=self.clock,
                faults=self._faults(), metrics_file=self.data_dir / "metrics.jsonl"))
        except PortInUse as e:
            who = "another jobplane dev? " if e.errno == errno.EADDRINUSE else ""
            raise DevError(f"the local AWS cannot listen on {e}: {who}set [dev] aws_port or "
                           "JOBPLANE_AWS_PORT (0: any free port), or --aws-port") from None
        portal_socket = self._bind_portal()
        on_stop("close the portal's socket", portal_socket.close)
        snapshot = None if self.reset else Snapshot.load(self.data_dir / SNAPSHOT_FILE)
        if snapshot:
            n = snapshot.restore(aws.client("dynamodb"), aws.resources["table_name"])
            log.info("restored %d records from %s", n, self.data_dir / SNAPSHOT_FILE)
        record = DeployRecord(self.data_dir / DEPLOY_RECORD, self.digests, self.rendered_jobs)
        self.rendered_jobs = {}  # the record's now: each ASL freed as its job is deployed
        # the definitions earlier starts recorded, put back into the local S3 (moto keeps none)
        definitions = DefinitionArchive(self.data_dir / DEFINITIONS_FILE)
        self.jobs = aws.deploy_output(self.output, source=record.source, checked=record.checked,
                                      definitions=definitions, shape_checked=record.shape_checked,
                                      documents=record.document)
        self._output_written()  # on disk before anything reads the output directory
        on_stop("let the compile's caches be written", self._compile_kept)
        # What the deploy did, kept for the next start: the deploy record's ASL texts and the
        # definitions' archive, synced to disk (its bodies before the index that names them),
        # ~550 MB at a 5,000-job first start: 0.65-2 s, the disk busy with the compiled output's
        # write (write_behind.py). Nothing reads them before the next start, so they are saved
        # beside the running platform and waited for at the stop; each file is one write, and
        # the sync one call, each giving the GIL up once (a thread doing a write per job, and
        # one joined before the start ended, made the start slower: session 38).
        records = threading.Thread(target=_save_records, args=(record, definitions), name="dev-deploy-records")
        records.start()
        on_stop("keep the deploy's records", records.join)
        self.deploy_kept, self.deploy_read, self.deploy_handed = record.kept, record.read, record.handed
        log.info("deployed %d jobs: %d unchanged since the last start, %d as this start compiled them, "
                 "%d read from their files", len(self.jobs), len(record.kept), len(record.handed), len(record.read))
        self.deployment = Deployment(
            table=aws.resources["table_name"], topic_arn=aws.resources["topic_arn"],
            name_prefix=self.config.name_prefix, region=aws.region, account_id=ACCOUNT,
            endpoint_url=aws.endpoint_url, catalog_path=self.output_dir,
            log_group=aws.log_group, access_key_id=aws.credentials.access_key_id,
            secret_access_key=aws.credentials.secret_access_key)
        self.control = ControlPlane(self.deployment, aws.catalog)  # the catalog just deployed, not read again
        paused = self.control.apply_pauses()
        if paused:
            log.info("kept paused: %s", ", ".join(paused))
        on_stop("save local state", self.save)  # the last word on the state, once all else stopped
        if self.slack_signing_secret:  # before the alerts: they carry the buttons
            on_stop("stop the Slack actions worker", self._start_slack_actions())
        alerts = self.alerts = self._alert_feed()
        if snapshot and snapshot.dead_letters and self.dead_letters is not None:
            log.info("restored %d dead-lettered alerts", self.dead_letters.restore(snapshot.dead_letters))
        alerts.start()
        on_stop("deliver queued alerts", alerts.stop)
        if snapshot and snapshot.running:
            self.interrupted = self._close_interrupted(snapshot.running)
        if self.run_services:
            self._start_services(on_stop)
        on_stop("stop running executions", self._stop_executions)
        # the scheduler's record of how far it fired: a start after a stop knows the outage
        self.scheduler = LocalScheduler(aws.client("scheduler"), aws.client("stepfunctions"),
                                        self.config.name_prefix, clock=self.clock, sqs_client=aws.client("sqs"),
                                        record=self.data_dir / SCHEDULER_RECORD if self.run_scheduler else None)
        scheduler = self.scheduler
        from jobplane.platform.slow import SlowWatch

        slow = SlowWatch(self.control.reads, aws.client("sns"), self.deployment.topic_arn)  # real time
        from jobplane.platform import catchup

        # what a lost status event would have done (the local engine loses none while it runs;
        # a crash of `jobplane dev` can, as AWS can)
        from jobplane.platform.blackouts import DeferredRuns
        from jobplane.platform.deadlines import DeadlineWatch
        from jobplane.platform.missed import MissedFires
        from jobplane.platform.pool_slots import PoolSweep
        from jobplane.platform.renotify import Renotify
        from jobplane.platform.snooze import SnoozeEnds
        from jobplane.contract.environment import DEFAULT_RETENTION_DAYS
        from jobplane.platform.sfn_versions import VersionPruning
        from jobplane.platform.stalls import StallWatch
        from jobplane.platform.approvals import ApprovalReminders

        # and every expected fire is accounted for: a missed one is recorded and alerted
        checks = [catchup.LostEndings(self.control.context, aws.reconciler()).check,
                  catchup.UpstreamCatchUp(self.control.runs).check,
                  DeferredRuns(self.control.runs, clock=self.clock).check,  # defer windows that ended
                  MissedFires(self.control.runs, aws.client("sns"), self.deployment.topic_arn, aws.client("sqs"),
                              clock=self.clock, workers=1,  # the scheduler's time; threads only contend
                              outages=lambda: scheduler.outages, metrics=aws.metric_sink()).check,
                  # pool slots of runs that ended without giving them back (docs/pools.md)
                  PoolSweep(aws.client("dynamodb"), aws.resources["table_name"], aws.client("stepfunctions")).check,
                  # and each fire of a job with a deadline met it, or is alerted once
                  DeadlineWatch(self.control.reads, aws.client("sns"), self.deployment.topic_arn, clock=self.clock,
                                metrics=aws.metric_sink()).check,
                  # a failure nobody acknowledged is announced once more (notify.renotify_after)
                  Renotify(self.control.reads, aws.client("sns"), self.deployment.topic_arn, clock=self.clock).check,
                  # a snooze that ended sends what it held, once (real time: a snooze's end is an
                  # operator's wall-clock time, as the notifier that holds alerts reads it)
                  SnoozeEnds(self.control.reads, aws.client("sns"), self.deployment.topic_arn).check,
                  # a running step whose progress stopped moving past its stall_after, once a stall
                  StallWatch(self.control.reads, aws.client("sns"), self.deployment.topic_arn).check,
                  # a run waiting for a person: its request, then a reminder each `remind` (jp.approval)
                  ApprovalReminders(self.control, aws.client("sns"), self.deployment.topic_arn).check,
                  # published versions pruned before the 1,000 a state machine may hold
                  # (platform/sfn_versions.py), as the periodic Lambda does
                  VersionPruning(aws.client("stepfunctions"), lambda: list(aws.state_machines.values()),
                                 DEFAULT_RETENTION_DAYS).check]
        from jobplane.platform.backfill import BackfillDriver, Backfills

        self.backfills = Backfills(self.control.runs)  # backfills left running by the last start go on
        threads = [threading.Thread(target=self._save_loop, name="dev-snapshot", daemon=True),
                   threading.Thread(target=slow.run, args=(self._stop, 5.0), name="slow-watch", daemon=True),
                   threading.Thread(target=catchup.run, args=(self._stop, checks, self.catch_up_interval),
                                    name="catch-up", daemon=True),
                   threading.Thread(target=BackfillDriver(self.backfills).run, args=(self._stop,),
                                    name="backfill-driver", daemon=True)]
        if self.run_scheduler:
            threads.append(threading.Thread(target=self.scheduler.run, args=(self._stop,), name="local-scheduler",
                                            daemon=True))
        if self.services:
            threads.append(threading.Thread(target=svc.watch_services, name="dev-services", daemon=True,
                                            args=(self.services, self.data_dir / "services", self._stop)))
        for t in threads:
            t.start()
        on_stop("stop the scheduler, slow-run check, catch-up and saver", lambda: self._join(threads))
        on_stop("stop the portal", self._start_portal(portal_socket))
        write_runtime(self.data_dir, self.portal_url, self.deployment, self.service_ports, self.portal_login_url,
                      self._login_token, f"http://{self.portal_host}:{self.portal_port}")
        on_stop(f"remove {RUNTIME_FILE}", lambda: remove_runtime(self.data_dir))

    def _check_not_running(self) -> None:
        try:
            runtime = read_runtime(self.data_dir)
        except DevError:
            return
        if runtime["pid"] != os.getpid():
            raise DevError(f"jobplane dev is already running (pid {runtime['pid']}) with data in {self.data_dir}")

    def _alert_feed(self) -> AlertFeed:
        from jobplane.platform.local.alerts import AlertFeed
        from jobplane.platform.dead_letters import EventsDeadLetters
        from jobplane.contract import environment as E
        from jobplane.contract.environment import RuntimeEnvironment
        from jobplane.platform.channels import Notifiers, Settings

        assert self.aws is not None
        # as on AWS: the events dead-letter queue (platform/dead_letters.py), read by `jobplane dead-letters`
        self.dead_letters = EventsDeadLetters(self.aws.client("sqs"), self.config.name_prefix)
        # every channel of the registry (contract/channels.py), its settings named as on AWS
        values = {E.SLACK_WEBHOOK_URL: self.webhook_url, E.SLACK_BOT_TOKEN: self.slack_bot_token,
                  E.SLACK_API_URL: self.slack_api_url, **self.channel_settings}
        buttons = None
        if self.slack_actions is not None:
            from jobplane.platform.slack_actions.store import AlertButtons

            buttons = AlertButtons(self.aws.client("dynamodb"), self.aws.resources["table_name"])
        settings = Settings(RuntimeEnvironment({k: v for k, v in values.items() if v}), self.portal_url,
                            {n: t.channel for n, t in self.config.teams.items() if t.channel}, self.config.default_channel,
                            self.dead_letters, alert_buttons=buttons)
        try:
            notifier = Notifiers.build(settings)
        except ValueError as e:  # JOBPLANE_SLACK_WEBHOOK_URL / JOBPLANE_SLACK_BOT_TOKEN / JOBPLANE_WEBHOOKS as given
            raise DevError(f"{'Slack alerts' if 'Slack' in str(e) else 'Webhook alerts'}: {e}") from None
        return AlertFeed(self.aws.client("sns"), self.aws.client("sqs"), self.aws.resources["topic_arn"],
                         f"{self.config.name_prefix}-local-notifier", notifier, self.aws.client("stepfunctions"),
                         self.aws.step_logs(), self.aws.client("dynamodb"), self.aws.resources["table_name"])

    def _start_slack_actions(self) -> Callable[[], None]:
        """Slack interactivity as on AWS: the ingress (served by the portal's
        /slack/interactions) verifies and enqueues to a local queue, a worker thread drains it.
        Refused at start when a setting it needs is missing: never a route that accepts
        unverifiable requests, never buttons nothing can answer."""
        from slack_sdk.web import WebClient

        from jobplane.platform.channels.slack import SLACK_API_URL
        from jobplane.platform.control.access import Access
        from jobplane.platform.slack_actions.feed import QueueFeed
        from jobplane.platform.slack_actions.ingress import Ingress
        from jobplane.platform.slack_actions.store import AlertButtons
        from jobplane.platform.slack_actions.worker import Worker

        assert self.aws is not None and self.control is not None
        if not self.slack_bot_token:
            raise DevError("Slack buttons (JOBPLANE_SLACK_SIGNING_SECRET) need the app's bot token too "
                           "(JOBPLANE_SLACK_BOT_TOKEN): the modal and the update are Web API calls")
        sqs = self.aws.client("sqs")
        queue = sqs.create_queue(QueueName=f"{self.config.name_prefix}-slack-actions")["QueueUrl"]
        try:
            self.slack_ingress = Ingress(self.slack_signing_secret, self.config.slack,
                                         lambda text: sqs.send_message(QueueUrl=queue, MessageBody=text))
        except ValueError as e:
            raise DevError(f"Slack buttons: {e}") from None
        worker = Worker(self.control, AlertButtons(self.aws.client("dynamodb"), self.aws.resources["table_name"]),
                        WebClient(token=self.slack_bot_token, base_url=self.slack_api_url or SLACK_API_URL),
                        self.config.slack, Access.from_config(self.config))
        self.slack_actions = QueueFeed(sqs, queue, worker)
        self.slack_actions.start()
        return self.slack_actions.stop

    def _close_interrupted(self, running: list[JsonObject]) -> list[str]:
        """Runs that were executing when the last `jobplane dev` died without stopping them:
        record them ABORTED (with an alert) so their claims do not block the job forever."""
        from jobplane.platform.reconciler import Reconciler

        assert self.aws is not None and self.control is not None and self.deployment is not None
        reconciler = Reconciler(self.control.context.repo, self.aws.client("sns"), self.deployment.topic_arn,
                                self.aws.client("stepfunctions"), self.config.name_prefix, job_brief=self.aws.job_brief)
        closed = []
        for r in running:
            job = reconciler.job_of(r["execution_arn"])
            if job is None:
                continue
            if reconciler.record_lost(job, r["name"], r["execution_arn"], r["input"], r["started_at"],
                                      "jobplane dev stopped while this execution was running"):
                closed.append(r["name"])
        if closed:
            log.warning("recorded %d executions interrupted by the last shutdown as ABORTED", len(closed))
        return closed

    def _start_services(self, on_stop: Callable[[str, Callable[[], object]], None]) -> None:
        # what a step gets: the OS basics and [dev] env, never the rest of the developer's
        # environment (AWS keys, JOBPLANE_SLACK_WEBHOOK_URL, tokens): a service is the project's
        # code, and its log a file anyone debugging reads
        env = container_env(self.config.dev_env(self.data_dir, self.service_ports))
        log_dir = self.data_dir / "services"
        log_dir.mkdir(exist_ok=True)
        for name, command in self.config.dev.services.items():
            argv = [expand_ports(arg, self.service_ports) for arg in command]
            process = svc.start_service(name, argv, env, self.config.root, log_dir / f"{name}.log")
            if process is not None:
                self.services[name] = process
                on_stop(f"stop service {name}", functools.partial(svc.terminate, process, name))

    @property
    def portal_url(self) -> str:
        return f"http://127.0.0.1:{self.portal_port}"

    @property
    def portal_login_url(self) -> str:
        """A link that signs a browser in to this start's portal (``/login``): the one not taken
        yet, good once and for 15 minutes (portal/auth.py: DevLogins); each fresh browser asks
        again, and ``jobplane dev-login`` mints another from dev.json."""
        from jobplane.portal.auth import dev_logins

        return f"{self.portal_url}/login?token={dev_logins(self._login_token).current()}"

    @property
    def browser_login_url(self) -> str:
        """The sign-in link the banner shows: on this start's own host name (portal/auth.py
        per_start_host), so the session cookie it sets reaches no other loopback port."""
        from jobplane.portal.auth import dev_logins

        return f"http://{self.portal_host}:{self.portal_port}/login?token={dev_logins(self._login_token).current()}"

    def _bind_portal(self) -> socket.socket:
        """Bound first, before anything is told the portal's URL (alert links, dev.json): port 0
        takes a free port with no race between parallel tests or two instances."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self.portal_port))
        except OSError as e:
            sock.close()
            raise DevError(f"the portal cannot listen on 127.0.0.1:{self.portal_port}: {e.strerror} "
                           "(another jobplane dev? set [dev] portal_port or JOBPLANE_PORTAL_PORT (0: any free port), or --portal-port)") from None
        self.portal_port = sock.getsockname()[1]
        return sock

    def _start_portal(self, sock: socket.socket) -> Callable[[], None]:
        """Serve the portal on the bound socket; returns how to stop it."""
        import uvicorn

        from jobplane.portal.app import create_app
        from jobplane.portal.settings import AuthSettings, PortalSettings

        assert self.deployment is not None
        settings = PortalSettings.from_config(self.config, self.deployment,
                                              AuthSettings(mode="dev", dev_user=self.config.dev.dev_user,
                                                           dev_login=self._login_token, dev_host=self.portal_host),
                                              base_url=self.portal_url)
        app = create_app(settings, self.control)
        app.state.slack_ingress = self.slack_ingress  # /slack/interactions (None: it refuses)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.portal = server
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="portal", daemon=True)
        thread.start()

        def stop() -> None:
            server.should_exit = True
            thread.join(timeout=10)

        deadline = time.monotonic() + 20
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                stop()
                raise DevError(f"the portal did not start on {self.portal_url}")
            time.sleep(0.05)
        return stop

    # -- running ----------------------------------------------------------------------------
    def save(self) -> None:
        assert self.aws is not None
        snapshot = Snapshot.capture(self.aws.client("dynamodb"), self.aws.resources["table_name"],
                                    self.aws.client("stepfunctions"), self.aws.running_executions())
        if self.dead_letters is not None and self.dead_letters.count():  # listed only when there are some
            snapshot.dead_letters = self.dead_letters.export()
        snapshot.save(self.data_dir / SNAPSHOT_FILE)

    def _save_loop(self) -> None:
        forgotten_at = time.monotonic()
        while not self._stop.wait(self.snapshot_interval):
            try:
                self.save()
            except Exception:
                log.exception("saving local state failed (will retry)")
            if time.monotonic() - forgotten_at >= FORGET_EVERY:
                forgotten_at = time.monotonic()
                self.forget_ended_executions()

    def forget_ended_executions(self) -> int:
        """Bound the local AWS's memory on a long run: executions that ended more than
        ENDED_KEPT_FOR ago leave moto (their records, timelines and logs stay)."""
        assert self.aws is not None
        try:
            n = self.aws.forget_ended_executions(datetime.now(timezone.utc) - ENDED_KEPT_FOR)
        except Exception:
            log.exception("forgetting old executions failed (will retry)")
            return 0
        if n:
            log.info("forgot %d executions that ended more than %s ago", n, ENDED_KEPT_FOR)
        return n

    def banner(self) -> str:
        assert self.aws is not None
        webhook = ("Slack (bot token: chat.postMessage to each routed channel)" if self.slack_bot_token else
                   "Slack webhook" if self.webhook_url else
                   "this console (set JOBPLANE_SLACK_BOT_TOKEN or JOBPLANE_SLACK_WEBHOOK_URL for Slack)")
        if self.channel_settings:  # the other channels of contract/channels.py (signed webhooks)
            webhook += "; signed webhooks (JOBPLANE_WEBHOOKS)"
        command = cli_command()
        # one of this project's jobs to try: a scheduled one, as a first run is of such a job
        deployed = self.aws.catalog.jobs if self.aws.catalog is not None else []
        example = next((j.name for j in sorted(deployed, key=lambda j: (j.team, j.name)) if j.schedule),
                       self.jobs[0] if self.jobs else None)
        lines = [
            "",
            f"jobplane dev is ready: {len(self.jobs)} jobs deployed on the embedded local AWS.",
            f"  portal      {self.browser_login_url}",
            f"              (this start's sign-in link, as {self.config.dev.dev_user}, good once; on this start's own "
            f"host name, so no other local port is sent its session; only you can read it, also in {RUNTIME_FILE})",
            f"              a browser that does not resolve *.localhost (Safari): {self.portal_login_url}",
            f"              (its session cookie is sent to every loopback port that browser visits: docs/dev.md)",
            f"  health      {self.portal_url}/healthz",
            f"  local AWS   {self.aws.endpoint_url}   (boto3 endpoint_url; sign with the access key and secret in {self.data_dir / RUNTIME_FILE})",
            f"  step logs   CloudWatch Logs {self.aws.log_group} (jobplane logs EXECUTION), cached in {self.data_dir / 'logs'}; "
            f"engine details in {self.data_dir / 'engine.log'}",
            f"  alerts      {webhook}; undeliverable ones kept in the queue "
            f"{self.config.name_prefix}-events-dlq (jobplane dead-letters)",
            f"  state       {self.data_dir}   (kept across restarts; --reset starts empty)",
            f"  AWS faults  {self.faults}" + (f" (seed {self.faults_seed}): AWS's documented throttles and failures injected"
                                            if self.faults != "none" else ": none injected (--faults aws-typical|storm)")
            + "; AWS's limits enforced (docs/local-engine.md)",
            *(f"  service     {name} on 127.0.0.1:{port}" for name, port in sorted(self.service_ports.items())
              if name in self.services),
            *([f"  run a job   {command} run {example}      status: {command} status"] if example else []),
            "Jobs fire on their schedules. Ctrl-C stops everything.",
        ]
        if self.interrupted:
            lines.insert(2, f"  note: {len(self.interrupted)} executions interrupted by the last shutdown were recorded ABORTED.")
        return "\n".join(lines)

    # -- stop -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Undo whatever started, newest first (a second call does nothing)."""
        self._stop.set()
        self._stack.close()

    def _join(self, threads: list[threading.Thread]) -> None:
        self._stop.set()
        for t in threads:
            t.join(timeout=10)

    def _stop_executions(self) -> None:
        """Stopped like on AWS: each recorded ABORTED, its claim released, its alert published."""
        assert self.aws is not None
        arns = []
        sfn = self.aws.client("stepfunctions")
        for arn in self.aws.running_executions():
            sfn.stop_execution(executionArn=arn, error="jobplane.dev.Stopped", cause="jobplane dev was stopped")
            arns.append(arn)
        for arn in arns:
            try:
                self.aws.wait_reconciled(arn, timeout=30)
            except TimeoutError:
                log.error("%s was not reconciled before shutdown; it is closed on the next start", arn)


def freeze_started_heap() -> None:
    """Exempt what a started platform holds from the cyclic garbage collector's full passes.

    The process that serves the local AWS and the portal keeps millions of long-lived objects:
    the compiled jobs, moto's deployed resources, every record restored from the snapshot. Each
    full collection walked all of them: with 1,000 jobs and 20,000 records, five pauses of up to
    0.9 s in 40 portal requests (bench/portal.py, gc callbacks), the jobs page's p95. Objects that
    exist once the platform is up stay until it stops, so they are moved to the permanent
    generation (``gc.freeze``, meant for this); what is created afterwards is collected as
    before. Called by the `jobplane dev` process, not by every DevPlatform start: a test process
    starts many platforms and must collect each one's objects after it stops.
    """
    import gc

    gc.collect()  # the start's garbage goes first, so only what lives on is frozen
    gc.freeze()


def _save_records(record: DeployRecord, definitions: DefinitionArchive) -> None:
    try:
        record.save()  # each logs what it cannot write: the next start reads those files again
        definitions.save()  # and records those definitions again
    except Exception:  # noqa: BLE001 - a thread's error would otherwise go unseen
        log.exception("saving the deploy's records failed")


def _phase(what: str, action: Callable[[], object]) -> None:
    try:
        action()
    except Exception:
        log.exception("while stopping: could not %s", what)


def cli_command() -> str:
    """How to type the `jobplane` command beside this interpreter: ``jobplane`` when the shell
    finds that one, else its path (``.venv/bin/jobplane`` after `make dev`: the banner said
    ``jobplane run``, which a new user's shell did not find)."""
    import shutil

    here = Path(sys.executable).parent / "jobplane"
    found = shutil.which("jobplane")
    if found and Path(found).resolve() == here.resolve():
        return "jobplane"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)
