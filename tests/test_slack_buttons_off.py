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


def test_slack_settings_are_checked_with_the_rest_of_jobplane_toml(tmp_path: Path) -> None:
    from jobplane.contract.config import ConfigError

    make_repo(tmp_path / "repo")
    toml = tmp_path / "repo" / "jobplane.toml"
    base = toml.read_text()
    toml.write_text(base + '\n[slack]\napp_id = "not-an-app"\nteam_id = "T0WORKSPACE"\nusers = { alice = "a b" }\n')
    with pytest.raises(ConfigError) as bad:
        load_config(tmp_path / "repo")
    assert bad.value.problems == [
        "jobplane.toml: [slack] app_id: the Slack app's id (A0123ABCD; the app's Basic Information page)",
        "jobplane.toml: [slack] users.alice: a Slack user id (U0123ABCD) = a person's e-mail address"]
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobplane/slack-signing-AbCdEf"
    toml.write_text(base + f'\n[deploy]\nslack_signing_secret_arn = "{arn}"\n')
    with pytest.raises(ConfigError) as bad:
        load_config(tmp_path / "repo")
    assert bad.value.problems == ["jobplane.toml: [deploy] slack_signing_secret_arn: Slack buttons need [slack] app_id "
                                  "and team_id (requests of another app or workspace are refused by them)"]


def test_the_base_root_passes_slack_buttons_settings_only_when_set(tmp_path: Path) -> None:
    """Set, the base root declares slack_interactivity, its tfvars hold the app, the workspace,
    the user map and the same people the portal judges by, and it outputs the Request URL;
    unset, the compiled base root is as it was."""
    from jobplane.compiler.terraform import base_root, base_tfvars

    make_repo(tmp_path / "repo")
    toml = tmp_path / "repo" / "jobplane.toml"
    plain = base_root(load_config(tmp_path / "repo"))
    assert "slack_interactivity" not in json.dumps(plain)
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobplane/slack-signing-AbCdEf"
    toml.write_text(toml.read_text() + f'\n[deploy]\nslack_signing_secret_arn = "{arn}"\n\n[slack]\napp_id = "A0JOBPLANE"\n'
                    'team_id = "T0WORKSPACE"\nusers = { U0BEN00001 = "ben@example.com" }\n')
    config = load_config(tmp_path / "repo")
    root = base_root(config)
    assert root["module"]["platform"]["slack_interactivity"] == "${var.slack_interactivity}"
    assert root["output"]["slack_interactivity_url"]["value"] == "${module.platform.slack_interactivity_url}"
    assert base_tfvars(config)["slack_interactivity"] == {
        "signing_secret_arn": arn, "app_id": "A0JOBPLANE", "team_id": "T0WORKSPACE",
        "users": {"U0BEN00001": "ben@example.com"}, "admins": ["root@example.com"],
        "team_members": {"billing": ["dev@localhost", "aiko@example.com"], "growth": ["ben@example.com"]}}


def test_a_slack_user_is_a_person_only_by_a_confirmed_email_of_the_workspace_or_the_map() -> None:
    from slack_sdk.web import WebClient

    from jobplane.contract.slack_interactivity import SlackApp
    from jobplane.platform.slack_actions.people import Unmapped, person_of
    from slack_app_receiver import SlackApi, person

    api = SlackApi({"U0AIKO0001": person("U0AIKO0001", "aiko@example.com", "T0WORKSPACE"),
                    "U0NEW00001": person("U0NEW00001", "root@example.com", "T0WORKSPACE", confirmed=False),
                    "U0GUEST001": person("U0GUEST001", "root@example.com", "T0ELSEWHERE"),
                    "U0BOT00001": {**person("U0BOT00001", "bot@example.com", "T0WORKSPACE"), "is_bot": True}})
    try:
        client = WebClient(token=BOT_TOKEN, base_url=api.api_url)
        app = SlackApp("A0JOBPLANE", "T0WORKSPACE", {"U0BEN00001": "ben@example.com"})
        assert person_of("U0AIKO0001", app, client) == "aiko@example.com"
        assert person_of("U0BEN00001", app, client) == "ben@example.com"  # the map; Slack not asked
        assert [u for m, b in api.calls if m == "users.info" for u in [b.get("user")]] == ["U0AIKO0001"]
        for user, why in (("U0NEW00001", "not confirmed"), ("U0GUEST001", "another workspace"),
                          ("U0BOT00001", "not a person")):
            with pytest.raises(Unmapped, match=why):
                person_of(user, app, client)
    finally:
        api.close()
