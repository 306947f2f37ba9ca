"""A running local platform for the portal tests (one per test module and worker), and a
portal app over it with any auth settings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from devkit import make_repo
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.portal.app import create_app
from jobplane.portal.settings import AuthSettings, PortalSettings

BILLING = "aiko@example.com"  # member of billing
GROWTH = "ben@example.com"  # member of growth only
ADMIN = "root@example.com"
READER = "someone@example.com"  # no team
PROXY_SECRET = "proxy-secret-for-tests-0123456789"  # what the authenticating proxy adds to each request


def start_platform(tmp: Path, webhook_url: str | None = None) -> DevPlatform:
    make_repo(tmp / "repo")
    return DevPlatform(load_config(tmp / "repo"), tmp / "data", 0, 0, run_scheduler=False,
                       run_services=False, snapshot_interval=3600, webhook_url=webhook_url).start()


def header_app(platform: DevPlatform, **overrides):  # type: ignore[no-untyped-def]
    """The portal behind an authenticating proxy that sets X-Forwarded-Email and proves itself
    with a shared secret (as_user() sends both); served under TestClient's name and loopback."""
    settings = PortalSettings.from_config(platform.config, platform.deployment,
                                          AuthSettings(mode="trusted-header", header="X-Forwarded-Email",
                                                       proxy_secret=PROXY_SECRET),
                                          base_url="http://testserver")
    settings = replace(settings, allowed_hosts=frozenset({"testserver", "127.0.0.1"}))
    if overrides:
        settings = replace(settings, **overrides)
    return create_app(settings, platform.control)


def as_user(name: str) -> dict[str, str]:
    return {"X-Forwarded-Email": name, "X-Jobplane-Proxy-Secret": PROXY_SECRET}


class Served:
    """An ASGI app served over real HTTP by uvicorn in a thread (for schemathesis and the browser)."""

    def __init__(self, app):  # type: ignore[no-untyped-def]
        import threading
        import time

        import uvicorn

        import socket

        sock = socket.socket()  # bound here on a free port: no race with other tests
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
