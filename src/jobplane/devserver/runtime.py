"""The data directory's ``dev.json``: how the CLI finds a running ``jobplane dev`` (its pid,
portal URL and deployment, including the local AWS's per-start key), and the directory's
owner-only permissions."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from jobplane.platform.control import ControlPlane, Deployment
from jobplane.contract.types import JsonObject

RUNTIME_FILE = "dev.json"
SNAPSHOT_FILE = "state.json"
COMPILED_STAMP = "compiled.json"  # what the kept compiled/ was compiled from (compiler/inputs.py)


class DevError(RuntimeError):
    pass


def read_runtime(data_dir: Path) -> JsonObject:
    """What a running ``jobplane dev`` wrote for the CLI; raises DevError if none is running."""
    path = Path(data_dir) / RUNTIME_FILE
    elsewhere = "if it runs with another data directory, pass --data-dir or set JOBPLANE_DATA_DIR"
    if not path.exists():
        raise DevError(f"jobplane dev is not running with data directory {Path(data_dir)} (no {RUNTIME_FILE} there); "
                       f"start it with `make dev` or `jobplane dev`; {elsewhere}")
    runtime: JsonObject = json.loads(path.read_text())
    try:
        os.kill(runtime["pid"], 0)
    except ProcessLookupError:
        raise DevError(f"jobplane dev (pid {runtime['pid']}, data directory {Path(data_dir)}) is not running any "
                       f"more; start it again") from None
    except PermissionError:
        pass
    return runtime


def control_for(data_dir: Path) -> ControlPlane:
    """The running platform's control plane, for one command: its catalog is read when first
    needed, and a run's start reads only its job's entry (``jobplane run``'s start-up)."""
    return ControlPlane(Deployment.from_json(read_runtime(data_dir)["deployment"]), load=False)


def write_runtime(data_dir: Path, portal_url: str, deployment: Deployment, service_ports: dict[str, int],
                  portal_login_url: str, portal_login_secret: str, portal_browser_url: str | None = None) -> Path:
    """dev.json holds the local AWS's key, the portal's first sign-in link and the secret that
    mints more (``jobplane dev-login``; each link is good once): created 0600, never readable by
    another user."""
    runtime = {"pid": os.getpid(), "portal_url": portal_url, "portal_login_url": portal_login_url,
               "portal_login_secret": portal_login_secret,
               # the start's own host name (portal/auth.py per_start_host): where `dev-login` links go
               **({"portal_browser_url": portal_browser_url} if portal_browser_url else {}),
               "deployment": deployment.to_json(),
               "data_dir": str(data_dir), "started_at": time.time(), "service_ports": service_ports}
    tmp = data_dir / (RUNTIME_FILE + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(runtime, indent=2))
    return tmp.replace(data_dir / RUNTIME_FILE)


def remove_runtime(data_dir: Path) -> None:
    """Remove dev.json if this process wrote it (never another instance's)."""
    runtime = data_dir / RUNTIME_FILE
    if runtime.exists() and json.loads(runtime.read_text()).get("pid") == os.getpid():
        runtime.unlink()


def owner_only(directory: Path) -> None:
    """Tighten a data directory made by an earlier version (0755 with 0644 files); one this
    version made is 0700 already, and its files are not walked again at every start."""
    if not stat.S_IMODE(directory.stat().st_mode) & 0o077:
        return
    directory.chmod(0o700)
    for path in directory.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)
