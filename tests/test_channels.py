"""Notification channels as a registry (issue 68 part 1): contract/channels.py ``CHANNELS`` and
what derives from it or is held to it (the DSL helper, address checks, [deploy] keys, the
compiled base root, the base module's variable, IAM statement and notifier environment), and
the signed webhook channel delivering to a real local HTTP receiver that checks each signature
with its own code (tests/webhook_receiver.py)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

import base_module as bm
from jobplane.compiler import terraform
from jobplane.compiler.model import Job
from jobplane.compiler.fields import Invalid
from jobplane.contract import channels as C
from jobplane.contract import environment as E
from jobplane.contract.config import load_config
from jobplane.contract.deploy_settings import check_deploy
from jobplane.contract.notifications import NotificationMessage, Outcome
from jobplane.platform.channels import Notifiers, Settings, module_of
from jobplane.platform.channels.webhook import SCHEMA, WebhookNotifier, targets_of
from jobplane.platform.notifier import DeadLetterStore, Routing, SlackNotifier
from webhook_receiver import SIGNING_SECRET, WebhookReceiver

ROOT = Path(__file__).resolve().parents[1]
ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobplane/webhooks-AbC123"


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[WebhookReceiver]:
    r = WebhookReceiver(list(getattr(request, "param", [])))
    yield r
    r.close()


def message(**overrides: object) -> NotificationMessage:
    base = dict(version=1, event="FAILED", job="month-end-close", team="billing", execution="exec-7",
                execution_arn="arn:aws:states:us-east-1:123456789012:execution:jobplane-month-end-close:exec-7",
                trigger="schedule", scheduled_time="2027-01-31T15:00:00Z", requested_by="scheduler",
                started_at="2027-01-31T15:00:01Z", finished_at="2027-01-31T15:04:00Z",
                outcome=Outcome(status="FAILED", step="post-ledger"), channels=["webhook:oncall"],
                error="ValueError: totals do not balance",
                runbook={"impact": "Invoices wait.", "workaround": "", "recovery": "Re-run from the failed step."})
    return NotificationMessage(**(base | overrides))


# -- the registry and what is held to it ---------------------------------------------------------

def test_every_channel_is_one_entry_its_runtime_module_its_helper_and_its_base_module_settings() -> None:
    """What an added channel must bring, read from the places it must be: its runtime module
    (platform/channels/<name>.py with build), its jp.<helper>, and per secret the base module's
    variable, the notifier role's statement reading it and the notifier's environment."""
    assert [c.name for c in C.CHANNELS] == ["slack", "webhook"]
    assert len({c.name for c in C.CHANNELS}) == len({c.helper for c in C.CHANNELS}) == len(C.CHANNELS)
    library = (ROOT / "jobs" / "lib" / "jobplane.libsonnet").read_text()
    variables = (bm.MODULE / "variables.tf").read_text()
    functions = (bm.MODULE / "functions.tf").read_text()
    notifier_env = set(re.findall(r"(JOBPLANE_[A-Z_]+)\s*=\s*var\.(\w+)", functions))
    for channel in C.CHANNELS:
        assert callable(module_of(channel).build), channel.name
        assert re.search(rf"^  {channel.helper}\(", library, re.M), f"jp.{channel.helper} is not in the library"
        assert isinstance(channel.supports_actions, bool)
        for secret in channel.secrets:
            assert f'variable "{secret.key}"' in variables, secret.key
            assert re.search(rf'for_each = var\.{secret.key} == "" \? \[\] : \[var\.{secret.key}\]\s+content \{{\s+'
                             rf'sid\s+= "{secret.sid}"\s+actions\s+= \["secretsmanager:GetSecretValue"\]', functions), secret.sid
            assert (secret.arn_env, secret.key) in notifier_env, secret.arn_env
    # the notifier Lambda gets exactly the channels' secrets besides its own settings
    # (and whether Slack's alerts carry buttons: terraform/platform/slack_actions.tf, issue 68 part 2)
    own = {E.PORTAL_URL, E.TEAM_CHANNELS, E.DEFAULT_CHANNEL, E.LOG_GROUP, E.TABLE, E.SLACK_INTERACTIVE}
    assert E.FUNCTIONS["jobplane.platform.notifier.handler"] == own | {s.arn_env for s in C.secrets()}


def test_a_notify_address_is_checked_by_its_channel() -> None:
    assert C.channel_of("#billing-alerts") is C.SLACK and C.channel_of("webhook:oncall") is C.WEBHOOK
    assert C.address_problem("#billing-alerts") is None and C.address_problem("webhook:pager-duty.1") is None
    assert C.address_problem("webhook:") == C.WEBHOOK.address_words
    assert C.address_problem("webhook:On Call") == C.WEBHOOK.address_words
    assert C.address_problem("Billing") == C.SLACK.address_words
    job = {"name": "x", "team": "billing", "schedule": "cron(0 1 * * ? *)", "timezone": "UTC",
           "steps": [{"name": "a", "python": "m:f"}]}
    assert Job.from_definition({**job, "notify": {"channels": ["#a", "webhook:oncall"]}}).notify.channels == [
        "#a", "webhook:oncall"]
    with pytest.raises(Invalid) as e:
        Job.from_definition({**job, "notify": {"channels": ["webhook:https://evil.example/x"]}})
    assert "notify.channels" in str(e.value) and "is not a webhook target such as 'webhook:oncall'" in str(e.value)


def test_jp_webhook_adds_its_addresses_to_jp_slacks(tmp_path: Path) -> None:
    import _gojsonnet

    out = json.loads(_gojsonnet.evaluate_snippet(
        "snippet", "local jp = import 'jobplane.libsonnet'; { a: jp.webhook('oncall'), "
        "b: jp.slack('#billing-alerts', events=['FAILED']) + jp.webhook(['oncall', 'pagerduty']) }",
        jpathdir=[str(ROOT / "jobs" / "lib")]))
    assert out == {"a": {"channels": ["webhook:oncall"]},
                   "b": {"channels": ["#billing-alerts", "webhook:oncall", "webhook:pagerduty"], "events": ["FAILED"]}}


TOML = """\
[platform]
name_prefix = "jobplane"
default_timezone = "UTC"
default_channel = "#platform-default"

[teams.billing]
channel = "#billing-alerts"
notify_channels = ["webhook:oncall"]
"""


def test_the_webhook_secret_is_a_deploy_setting_and_a_base_root_variable_only_when_set(tmp_path: Path) -> None:
    """Slack's variables are declared as ever; the webhook's only when [deploy] sets it, so a
    deployment without webhooks compiles byte-identical to before the registry."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobplane.toml").write_text(TOML)
    plain = terraform.base_root(load_config(tmp_path))
    assert "webhook_secret_arn" not in plain["variable"] and "webhook_secret_arn" not in plain["module"]["platform"]
    assert {"slack_webhook_secret_arn", "slack_bot_token_secret_arn"} <= set(plain["variable"])
    (tmp_path / "jobplane.toml").write_text(TOML + f'\n[deploy]\nwebhook_secret_arn = "{ARN}"\n')
    config = load_config(tmp_path)
    root = terraform.base_root(config)
    assert root["variable"]["webhook_secret_arn"]["default"] == ""
    assert root["module"]["platform"]["webhook_secret_arn"] == "${var.webhook_secret_arn}"
    assert terraform.base_tfvars(config)["webhook_secret_arn"] == ARN
    assert config.teams["billing"].may_notify("webhook:oncall")
    _, problems = check_deploy({"webhook_secret_arn": "https://hooks.example.com/x"})
    assert problems == ["[deploy] webhook_secret_arn: the full ARN of the Secrets Manager secret holding the webhook "
                        "targets (a JSON object of name -> {url, signing_secret}) "
                        "(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf)"]


def test_the_notifier_role_reads_the_webhook_secret_only_when_it_is_set() -> None:
    with_it = bm.policy_statements("notifier", {"webhook_secret_arn": ARN})
    (statement,) = [s for s in with_it if s.get("sid") == "WebhookTargets"]
    assert statement["actions"] == ["secretsmanager:GetSecretValue"] and statement["resources"] == [ARN]
    assert not [s for s in bm.policy_statements("notifier", {}) if s.get("sid") == "WebhookTargets"]


def test_the_webhook_setting_is_refused_when_it_is_not_of_its_shape() -> None:
    good = {"url": "https://relay.example.com/jobplane", "signing_secret": SIGNING_SECRET}
    assert targets_of(json.dumps({"oncall": good}))["oncall"].url == good["url"]
    for bad, says in ((json.dumps({"oncall": {**good, "url": "http://relay.example.com/x"}}), "https://"),
                      (json.dumps({"oncall": {**good, "signing_secret": "short"}}), "at least 16"),
                      (json.dumps({"On Call": good}), "a name of"),
                      ("https://relay.example.com/x", "JSON object")):
        with pytest.raises(ValueError, match=says):
            targets_of(bad)


# -- delivery to a real receiver -----------------------------------------------------------------

def test_the_alert_arrives_signed_as_the_documented_json(receiver: WebhookReceiver, tmp_path: Path) -> None:
    notifier = WebhookNotifier(targets_of(receiver.targets()), "https://jobs.example.com", DeadLetterStore(tmp_path))
    assert notifier.notify(message()) == ["sent"]
    (got,) = receiver.received
    assert got.verified, got.headers
    assert got.headers["Content-Type"] == "application/json"
    body = got.body
    assert body["schema"] == SCHEMA == "jobplane.notification/v1"
    assert (body["kind"], body["job"], body["team"], body["status"], body["step"], body["recovery"]) == (
        "FAILED", "month-end-close", "billing", "FAILED", "post-ledger", False)
    assert body["error"] == "ValueError: totals do not balance" and body["address"] == "webhook:oncall"
    assert body["execution"]["name"] == "exec-7" and body["execution"]["trigger"] == "schedule"
    assert body["links"]["execution"] == "https://jobs.example.com/executions/exec-7"
    assert body["timestamps"]["scheduled"] == "2027-01-31T15:00:00Z" and body["timestamps"]["sent"].endswith("Z")
    assert body["runbook"]["recovery"] == "Re-run from the failed step."
    assert got.headers["X-Jobplane-Delivery"] == body["id"]
    # a body changed in transit, or signed with another key, is refused by the receiver's check
    from webhook_receiver import verified

    raw = json.dumps(body).encode()
    assert not verified(SIGNING_SECRET, got.headers, raw.replace(b"FAILED", b"SUCCEEDED"), 0.0 + int(
        got.headers["X-Jobplane-Timestamp"]))
    assert tmp_path.exists() and not list(tmp_path.glob("*.json"))  # nothing dead-lettered


@pytest.mark.parametrize("receiver", [[(503, {"Retry-After": "7"}), (429, {}), (200, {})]], indirect=True)
def test_a_5xx_and_a_429_are_retried_honouring_retry_after_each_attempt_signed_afresh(
        receiver: WebhookReceiver, tmp_path: Path) -> None:
    waits: list[float] = []
    notifier = WebhookNotifier(targets_of(receiver.targets()), dead_letters=DeadLetterStore(tmp_path), retries=3,
                               backoff=0.5, sleep=waits.append)
    assert notifier.notify(message()) == ["sent"]
    assert len(receiver.received) == 3 and all(r.verified for r in receiver.received)
    assert waits == [7.0, 1.0]  # Retry-After, then the backoff's second step (0.5 * 2)
    assert len({r.headers["X-Jobplane-Delivery"] for r in receiver.received}) == 1  # one delivery, retried
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize("receiver", [[(400, {})]], indirect=True)
def test_a_refused_request_is_not_retried_and_is_kept_as_a_dead_letter(receiver: WebhookReceiver,
                                                                      tmp_path: Path) -> None:
    waits: list[float] = []
    notifier = WebhookNotifier(targets_of(receiver.targets()), dead_letters=DeadLetterStore(tmp_path),
                               sleep=waits.append)
    assert notifier.notify(message()) == ["dead-lettered"]
    assert len(receiver.received) == 1 and waits == []
    (kept,) = DeadLetterStore(tmp_path).entries()
    assert kept["channel"] == "webhook:oncall" and kept["reason"].startswith("HTTP 400")
    assert kept["message"]["execution"] == "exec-7"


def test_an_unreachable_target_is_retried_then_dead_lettered_and_without_a_store_it_raises(tmp_path: Path) -> None:
    closed = WebhookReceiver()
    targets = targets_of(closed.targets())
    closed.close()  # nothing listens on its port now
    waits: list[float] = []
    notifier = WebhookNotifier(targets, dead_letters=DeadLetterStore(tmp_path), retries=2, backoff=0.25,
                               sleep=waits.append)
    assert notifier.notify(message()) == ["dead-lettered"]
    assert waits == [0.25, 0.5]
    (kept,) = DeadLetterStore(tmp_path).entries()
    assert "after 3 attempts" in kept["reason"]
    with pytest.raises(RuntimeError, match="webhook delivery failed for exec-7"):
        WebhookNotifier(targets, retries=0).notify(message())


def test_every_channel_gets_its_own_addresses_and_slack_its_default(receiver: WebhookReceiver, tmp_path: Path) -> None:
    """A job naming only a webhook still alerts its team's Slack channel (Slack's default), and
    a Slack address is never posted to a webhook."""
    from slack_receiver import Receiver

    slack = Receiver([])
    try:
        settings = Settings(E.RuntimeEnvironment({E.SLACK_WEBHOOK_URL: slack.url, E.WEBHOOKS: receiver.targets()}),
                            "", {"billing": "#billing-alerts"}, None, DeadLetterStore(tmp_path))
        notifiers = Notifiers.build(settings)
        assert [type(m) for m in notifiers.members] == [SlackNotifier, WebhookNotifier]
        assert notifiers.notify(message()) == ["sent", "sent"]
        assert len(slack.posts) == 1 and len(receiver.received) == 1
        assert notifiers.notify(message(channels=["#accounting"])) == ["sent"]
        assert len(receiver.received) == 1  # no webhook address: nothing posted to it
        assert notifiers.notify(message(event="SLOW", outcome=Outcome(status="RUNNING"))) == ["not subscribed"]
    finally:
        slack.close()
    assert Routing({"billing": "#b"}, None).channels(message(channels=["webhook:oncall"])) == ["#b"]


def test_the_dev_platform_keeps_a_refused_webhook_alert_and_resends_it(tmp_path: Path) -> None:
    """`jobplane dev` end to end: a failed run's alert to a webhook that refuses it is kept in the
    events dead-letter queue as Slack's are (with which channel refused it), listed by
    `jobplane dead-letters`, and `--resend` delivers it, signed, once the receiver accepts."""
    import time

    from click.testing import CliRunner

    from devkit import FakeClock, make_repo, utc
    from jobplane.cli import main
    from jobplane.devserver.dev_platform import DevPlatform

    repo = make_repo(tmp_path / "repo")
    toml = (tmp_path / "repo" / "jobplane.toml")
    toml.write_text(toml.read_text().replace('channel = "#billing-alerts"\n',
                                             'channel = "#billing-alerts"\nnotify_channels = ["webhook:oncall"]\n'))
    repo.write("jobs/billing/paged-load.jsonnet", textwrap.dedent("""\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'paged-load',
          team: 'billing',
          description: 'Fails, and pages the on-call relay.',
          schedule: jp.manual,
          notify: jp.webhook('oncall'),
          params: { mode: 'fail', marker: null },
          steps: [jp.python('load', 'sample_apps.functions:behave')],
        }
    """))
    receiver = WebhookReceiver([(400, {})])

    def wait_for(predicate, what: str):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def start() -> DevPlatform:
        return DevPlatform(load_config(tmp_path / "repo"), tmp_path / "data", 0, 0,
                           clock=FakeClock(utc("2027-03-01T10:00:30")), run_scheduler=False, run_services=False,
                           snapshot_interval=3600, channel_settings={E.WEBHOOKS: receiver.targets()}).start()

    platform = start()
    try:
        name = platform.control.run_now("paged-load", "dev@localhost")
        (kept,) = wait_for(platform.dead_letters.peek, "a dead letter")
        assert kept.kind == "alert" and kept.alert is not None and kept.alert.execution == name
        assert "Webhook delivery to webhook:oncall failed: HTTP 400" in kept.error
        # Slack (not configured here) logged it for the team's channel; the webhook refused it
        assert (name, ["logged", "dead-lettered"]) in platform.alerts.delivered
        cli = CliRunner()
        args = ["--root", str(tmp_path / "repo"), "dead-letters", "--data-dir", str(tmp_path / "data")]
        listed = cli.invoke(main, args)
        assert listed.exit_code == 0 and f"FAILED alert of paged-load ({name})" in listed.output, listed.output
        resent = cli.invoke(main, [*args, "--resend", "--reason", "relay fixed"])
        assert resent.exit_code == 0 and "1 alert published again" in resent.output, resent.output
        wait_for(lambda: (name, ["logged", "sent"]) in platform.alerts.delivered, "the re-sent alert's delivery")
        assert [r.verified for r in receiver.received] == [True, True]
        assert receiver.received[0].body["id"] == receiver.received[1].body["id"]  # the same alert, again
        assert receiver.received[1].body["execution"]["name"] == name
        assert platform.dead_letters.peek() == []
        assert [a.reason for a in platform.control.audit(10) if a.action == "resend_alert"] == ["relay fixed"]
    finally:
        platform.stop()
        receiver.close()
