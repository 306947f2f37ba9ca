"""``jobplane dev``: the whole platform on one machine.

Start order (stop is the reverse): compile jobs/ -> embedded local AWS (moto server, ECS agent,
reconciler) -> restore the saved state -> deploy every job -> re-apply pauses and close runs a
crash interrupted -> alert feed (SNS -> Slack notifier) -> dev services -> local scheduler ->
portal. Stopping stops the scheduler first, then the running executions (recorded ABORTED and
alerted, as on AWS), then saves the state, so a restart shows the same jobs, history and audit.

Everything lives under one data directory (``.jobplane/``): ``state.json`` (the table),
``logs/`` (one file per step attempt), ``dead-letters/`` (alerts Slack refused), ``examples/``
(what the example jobs write) and ``dev.json`` (how the CLI finds the running platform).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobplane.contract.config import PlatformConfig
from jobplane.platform.control import ControlPlane, Deployment
from jobplane.platform.local.engine import ACCOUNT, LocalAWS
from jobplane.platform.local.scheduler import Clock, LocalScheduler, system_clock
from jobplane.platform.local.snapshot import Snapshot

log = logging.getLogger("jobplane.dev")

RUNTIME_FILE = "dev.json"
SNAPSHOT_FILE = "state.json"


class DevError(RuntimeError):
    pass


def read_runtime(data_dir: Path) -> dict[str, Any]:
    """What a running ``jobplane dev`` wrote for the CLI; raises DevError if none is running."""
    path = Path(data_dir) / RUNTIME_FILE
    elsewhere = "if it runs with another data directory, pass --data-dir or set JOBPLANE_DATA_DIR"
    if not path.exists():
        raise DevError(f"jobplane dev is not running with data directory {Path(data_dir)} (no {RUNTIME_FILE} there); "
                       f"start it with `make dev` or `jobplane dev`; {elsewhere}")
    runtime = json.loads(path.read_text())
    try:
        os.kill(runtime["pid"], 0)
    except ProcessLookupError:
        raise DevError(f"jobplane dev (pid {runtime['pid']}, data directory {Path(data_dir)}) is not running any "
                       f"more; start it again") from None
    except PermissionError:
        pass
    return runtime


def control_for(data_dir: Path) -> ControlPlane:
    return ControlPlane(Deployment.from_json(read_runtime(data_dir)["deployment"]))


@dataclass
class DevPlatform:
    config: PlatformConfig
    data_dir: Path
    aws_port: int
    portal_port: int
    reset: bool = False
    clock: Clock = system_clock
    webhook_url: str | None = None
    run_scheduler: bool = True
    run_services: bool = True
    snapshot_interval: float = 5.0
    services: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    interrupted: list[str] = field(default_factory=list)

    # -- start ------------------------------------------------------------------------------
    def start(self) -> DevPlatform:
        from jobplane.compiler.output import compile_all, write_output

        self.data_dir = Path(self.data_dir).resolve()
        if self.reset and self.data_dir.exists():
            self._check_not_running()
            shutil.rmtree(self.data_dir)
        # Owner-only: the data directory holds the local AWS's key, every step's output and the
        # whole table. The umask covers what this process and its children (the runner) create.
        os.umask(0o077)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        _owner_only(self.data_dir)
        self._check_not_running()
        compiled = compile_all(self.config)  # raises DefinitionError before anything starts
        self.output_dir = self.data_dir / "compiled"
        write_output(compiled, self.output_dir)
        self._stop = threading.Event()
        # A port per service named by {port:NAME}: chosen now, so steps ([dev] env) and the
        # service agree on it, and a second instance gets its own.
        self.service_ports = {name: _free_port() for name in self.config.dev.port_names()}
        self.aws = LocalAWS(prefix=self.config.name_prefix, server_port=self.aws_port, log_dir=self.data_dir / "logs",
                            env=self.config.dev_env(self.data_dir, self.service_ports)).__enter__()
        try:
            self._start_rest()
        except BaseException:
            self.aws.__exit__(None, None, None)
            raise
        return self

    def _start_rest(self) -> None:
        self._bind_portal()
        snapshot = None if self.reset else Snapshot.load(self.data_dir / SNAPSHOT_FILE)
        if snapshot:
            n = snapshot.restore(self.aws.client("dynamodb"), self.aws.resources["table_name"])
            log.info("restored %d records from %s", n, self.data_dir / SNAPSHOT_FILE)
        self.jobs = self.aws.deploy_output(self.output_dir)
        self.deployment = Deployment(
            table=self.aws.resources["table_name"], topic_arn=self.aws.resources["topic_arn"],
            name_prefix=self.config.name_prefix, region=self.aws.region, account_id=ACCOUNT,
            endpoint_url=self.aws.endpoint_url, catalog_path=self.output_dir / "catalog.json",
            log_dir=self.data_dir / "logs", access_key_id=self.aws.credentials.access_key_id,
            secret_access_key=self.aws.credentials.secret_access_key)
        self.control = ControlPlane(self.deployment)
        paused = self.control.apply_pauses()
        if paused:
            log.info("kept paused: %s", ", ".join(paused))
        self._start_alerts()
        if snapshot and snapshot.running:
            self.interrupted = self._close_interrupted(snapshot.running)
        if self.run_services:
            self._start_services()
            threading.Thread(target=self._watch_services, name="dev-services", daemon=True).start()
        self.scheduler = LocalScheduler(self.aws.client("scheduler"), self.aws.client("stepfunctions"),
                                        self.config.name_prefix, clock=self.clock)
        from jobplane.platform.slow import SlowWatch

        self.slow = SlowWatch(self.control, self.aws.client("sns"), self.deployment.topic_arn)  # real time
        self._threads = [threading.Thread(target=self._save_loop, name="dev-snapshot", daemon=True),
                         threading.Thread(target=self.slow.run, args=(self._stop, 5.0), name="slow-watch", daemon=True)]
        if self.run_scheduler:
            self._threads.append(threading.Thread(target=self.scheduler.run, args=(self._stop,),
                                                  name="local-scheduler", daemon=True))
        for t in self._threads:
            t.start()
        self._start_portal()
        self._write_runtime()

    def _check_not_running(self) -> None:
        try:
            runtime = read_runtime(self.data_dir)
        except DevError:
            return
        if runtime["pid"] != os.getpid():
            raise DevError(f"jobplane dev is already running (pid {runtime['pid']}) with data in {self.data_dir}")

    def _start_alerts(self) -> None:
        from jobplane.platform.local.alerts import AlertFeed
        from jobplane.platform.logs import LocalLogStore
        from jobplane.platform.notifier import DeadLetterStore, Routing, SlackNotifier

        routing = Routing({n: t.channel for n, t in self.config.teams.items() if t.channel}, self.config.default_channel)
        self.dead_letters = DeadLetterStore(self.data_dir / "dead-letters")
        notifier = SlackNotifier(self.webhook_url, routing, self.portal_url, self.dead_letters)
        self.alerts = AlertFeed(self.aws.client("sns"), self.aws.client("sqs"), self.aws.resources["topic_arn"],
                                f"{self.config.name_prefix}-local-notifier", notifier,
                                LocalLogStore(self.data_dir / "logs"))
        self.alerts.start()

    def _close_interrupted(self, running: list[dict[str, Any]]) -> list[str]:
        """Runs that were executing when the last `jobplane dev` died without stopping them:
        record them ABORTED (with an alert) so their claims do not block the job forever."""
        from jobplane.platform.reconciler import Reconciler

        reconciler = Reconciler(self.control.repo, self.aws.client("sns"), self.deployment.topic_arn,
                                self.aws.client("stepfunctions"), self.config.name_prefix)
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

    def _start_services(self) -> None:
        from jobplane.contract.config import expand_ports

        env = dict(os.environ) | self.config.dev_env(self.data_dir, self.service_ports)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        log_dir = self.data_dir / "services"
        log_dir.mkdir(exist_ok=True)
        for name, command in self.config.dev.services.items():
            out = open(log_dir / f"{name}.log", "ab")
            try:
                argv = [expand_ports(arg, self.service_ports) for arg in command]
                self.services[name] = subprocess.Popen(argv, env=env, cwd=self.config.root, stdout=out,
                                                       stderr=subprocess.STDOUT, start_new_session=True,
                                                       preexec_fn=_die_with_parent)
                log.info("service %s started (pid %d), log %s", name, self.services[name].pid, log_dir / f"{name}.log")
            except OSError as e:
                log.error("service %s did not start: %s", name, e)
            finally:
                out.close()

    def _watch_services(self) -> None:
        """A service that dies is said once, with its status and log (not left a zombie)."""
        reported: set[str] = set()
        while not self._stop.wait(1.0):
            for name, process in self.services.items():
                code = process.poll()  # reaps it
                if code is not None and name not in reported and not self._stop.is_set():
                    reported.add(name)
                    log.error("service %s exited with status %s; jobs that need it will fail. Its log: %s",
                              name, code, self.data_dir / "services" / f"{name}.log")

    @property
    def portal_url(self) -> str:
        return f"http://127.0.0.1:{self.portal_port}"

    def _bind_portal(self) -> None:
        """Bound first, before anything is told the portal's URL (alert links, dev.json): port 0
        takes a free port with no race between parallel tests or two instances."""
        import socket

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self.portal_port))
        except OSError as e:
            sock.close()
            raise DevError(f"the portal cannot listen on 127.0.0.1:{self.portal_port}: {e.strerror} "
                           "(another jobplane dev? set [dev] portal_port or JOBPLANE_PORTAL_PORT)") from None
        self.portal_port = sock.getsockname()[1]
        self._portal_socket = sock

    def _start_portal(self) -> None:
        import uvicorn

        from jobplane.portal.app import create_app
        from jobplane.portal.settings import AuthSettings, PortalSettings

        settings = PortalSettings.from_config(self.config, self.deployment,
                                              AuthSettings(mode="dev", dev_user=self.config.dev.dev_user),
                                              base_url=self.portal_url)
        app = create_app(settings, self.control)
        self.portal = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.portal.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # the CLI owns signals
        self._portal_thread = threading.Thread(target=self.portal.run, kwargs={"sockets": [self._portal_socket]}, name="portal",
                                               daemon=True)
        self._portal_thread.start()
        deadline = time.monotonic() + 20
        while not self.portal.started:
            if not self._portal_thread.is_alive() or time.monotonic() > deadline:
                raise DevError(f"the portal did not start on {self.portal_url}")
            time.sleep(0.05)

    def _write_runtime(self) -> None:
        """dev.json holds the local AWS's key: created 0600, never readable by another user."""
        runtime = {"pid": os.getpid(), "portal_url": self.portal_url, "deployment": self.deployment.to_json(),
                   "data_dir": str(self.data_dir), "started_at": time.time(), "service_ports": self.service_ports}
        tmp = self.data_dir / (RUNTIME_FILE + ".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(runtime, indent=2))
        tmp.replace(self.data_dir / RUNTIME_FILE)

    # -- running ----------------------------------------------------------------------------
    def save(self) -> None:
        Snapshot.capture(self.aws.client("dynamodb"), self.aws.resources["table_name"], self.aws.client("stepfunctions"),
                         list(self.aws.state_machines.values())).save(self.data_dir / SNAPSHOT_FILE)

    def _save_loop(self) -> None:
        while not self._stop.wait(self.snapshot_interval):
            try:
                self.save()
            except Exception:
                log.exception("saving local state failed (will retry)")

    def banner(self) -> str:
        webhook = "Slack webhook" if self.webhook_url else "this console (set JOBPLANE_SLACK_WEBHOOK_URL for Slack)"
        lines = [
            "",
            f"jobplane dev is ready: {len(self.jobs)} jobs deployed on the embedded local AWS.",
            f"  portal      {self.portal_url}/   (signed in as {self.config.dev.dev_user})",
            f"  health      {self.portal_url}/healthz",
            f"  local AWS   {self.aws.endpoint_url}   (boto3 endpoint_url; its access key is in {self.data_dir / RUNTIME_FILE})",
            f"  step logs   {self.data_dir / 'logs'}   (jobplane logs EXECUTION); engine details in {self.data_dir / 'engine.log'}",
            f"  alerts      {webhook}; undeliverable ones kept in {self.data_dir / 'dead-letters'}",
            f"  state       {self.data_dir}   (kept across restarts; --reset starts empty)",
            *(f"  service     {name} on 127.0.0.1:{port}" for name, port in sorted(self.service_ports.items())
              if name in self.services),
            "  run a job   jobplane run daily-sales-report      status: jobplane status",
            "Jobs fire on their schedules. Ctrl-C stops everything.",
        ]
        if self.interrupted:
            lines.insert(2, f"  note: {len(self.interrupted)} executions interrupted by the last shutdown were recorded ABORTED.")
        return "\n".join(lines)

    # -- stop -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Each phase runs even if an earlier one failed: a half-stopped platform must still end
        its subprocesses and free its ports."""
        self._stop.set()
        for t in getattr(self, "_threads", []):
            t.join(timeout=10)
        _phase("stop running executions", self._stop_executions)
        _phase("deliver queued alerts", self.alerts.stop)
        _phase("save local state", self.save)
        if getattr(self, "portal", None) is not None:
            self.portal.should_exit = True
            self._portal_thread.join(timeout=10)
        for name, process in self.services.items():
            _phase(f"stop service {name}", lambda p=process, n=name: _terminate(p, n))
        _phase("stop the local AWS", lambda: self.aws.__exit__(None, None, None))
        runtime = self.data_dir / RUNTIME_FILE
        if runtime.exists() and json.loads(runtime.read_text()).get("pid") == os.getpid():
            runtime.unlink()

    def _stop_executions(self) -> None:
        """Stopped like on AWS: each recorded ABORTED, its claim released, its alert published."""
        arns = []
        sfn = self.aws.client("stepfunctions")
        for arn in list(self.aws.state_machines.values()):
            for ex in sfn.list_executions(stateMachineArn=arn, statusFilter="RUNNING").get("executions", []):
                sfn.stop_execution(executionArn=ex["executionArn"], error="jobplane.dev.Stopped",
                                   cause="jobplane dev was stopped")
                arns.append(ex["executionArn"])
        for arn in arns:
            try:
                self.aws.wait_reconciled(arn, timeout=30)
            except TimeoutError:
                log.error("%s was not reconciled before shutdown; it is closed on the next start", arn)

    def __enter__(self) -> DevPlatform:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port() -> int:
    """A port the kernel says is free now, for a service that binds it a moment later."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _owner_only(directory: Path) -> None:
    """Tighten a data directory made by an earlier version (0755 with 0644 files); one this
    version made is 0700 already, and its files are not walked again at every start."""
    import stat

    if not stat.S_IMODE(directory.stat().st_mode) & 0o077:
        return
    directory.chmod(0o700)
    for path in directory.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)


def _die_with_parent() -> None:
    """Linux: the service gets SIGTERM if `jobplane dev` dies without stopping it (kill -9)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _phase(what: str, action: Any) -> None:
    try:
        action()
    except Exception:
        log.exception("while stopping: could not %s", what)


def _terminate(process: subprocess.Popen[bytes], name: str) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
    except ProcessLookupError:
        pass
    log.info("service %s stopped", name)
