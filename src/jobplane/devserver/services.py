"""The project's own dev services (``[dev.services]``: a Celery worker, a local API...) as child
processes of ``jobplane dev``: started in their own session, watched, stopped with their group."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

log = logging.getLogger("jobplane.dev")

# Linux: the service gets SIGTERM if `jobplane dev` dies without stopping it (kill -9). Set by a
# small interpreter that then execs the service, because a preexec_fn would run in the forked
# child of a process whose other threads (the local AWS, the portal) may hold locks.
_ORPHAN_GUARD = ("import ctypes, os, signal, sys\n"
                 "ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG\n"
                 "if os.getppid() != int(sys.argv[1]): sys.exit(1)  # the parent died before prctl\n"
                 "os.execvp(sys.argv[2], sys.argv[2:])\n")


def free_port() -> int:
    """A port the kernel says is free now, for a service that binds it a moment later."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_service(name: str, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> subprocess.Popen[bytes] | None:
    if sys.platform.startswith("linux"):
        argv = [sys.executable, "-c", _ORPHAN_GUARD, str(os.getpid()), *argv]
    with open(log_path, "ab") as out:
        try:
            process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        except OSError as e:
            log.error("service %s did not start: %s", name, e)
            return None
    log.info("service %s started (pid %d), log %s", name, process.pid, log_path)
    return process


def watch_services(services: dict[str, subprocess.Popen[bytes]], log_dir: Path, stop: threading.Event) -> None:
    """A service that dies is said once, with its status and log (not left a zombie)."""
    reported: set[str] = set()
    while not stop.wait(1.0):
        for name, process in services.items():
            code = process.poll()  # reaps it
            if code is not None and name not in reported and not stop.is_set():
                reported.add(name)
                log.error("service %s exited with status %s; jobs that need it will fail. Its log: %s",
                          name, code, log_dir / f"{name}.log")


def terminate(process: subprocess.Popen[bytes], name: str) -> None:
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
