"""Slack buttons switched off, or misconfigured (issue 68 part 2): without the app's signing
secret no alert carries buttons and /slack/interactions refuses every request; a signing secret
without the app and workspace pinned refuses to start. Its own module: two `jobplane dev`
platforms in one process share the embedded AWS, so these do not run beside
test_slack_buttons.py's module-wide one."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from devkit import FakeClock, make_repo, utc
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevError, DevPlatform
from jobplane.platform.slack_actions import clicks
from slack_app_receiver import BOT_TOKEN

SECRET = "8f14e45fceea167a5a36dedd4bea2543"


def wait_for(predicate, timeout: float = 90.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_without_a_signing_secret_there_are_no_buttons_and_the_route_refuses(tmp_path: Path) -> None:
    from slack_app_receiver import serving

    make_repo(tmp_path / "repo")
    api_iter = serving({})
    api = next(api_iter)
    p = DevPlatform(load_config(tmp_path / "repo"), tmp_path / "data", 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                    slack_bot_token=BOT_TOKEN, slack_api_url=api.api_url, run_scheduler=False, run_services=False,
                    snapshot_interval=3600).start()
    try:
        assert p.control is not None
        name = p.control.run_now("flaky-load", "dev@localhost")
        post = wait_for(lambda: api.of("chat.postMessage"), what="the alert")[0]
        assert "jobplane_buttons" not in json.dumps(post["blocks"]) and name in json.dumps(post["blocks"])
        status, text = clicks.send(f"{p.portal_url}/slack/interactions", SECRET, b"payload=%7B%7D")
        assert (status, text) == (404, "Slack interactivity is not configured on this platform")
    finally:
        p.stop()
        api_iter.close()


def test_a_signing_secret_without_the_app_and_workspace_pinned_refuses_to_start(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    p = DevPlatform(load_config(tmp_path / "repo"), tmp_path / "data", 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                    slack_bot_token=BOT_TOKEN, slack_api_url="http://127.0.0.1:9/api/", slack_signing_secret=SECRET,
                    run_scheduler=False, run_services=False, snapshot_interval=3600)
    with pytest.raises(DevError, match=r"\[slack\] app_id and team_id"):
        p.start()
