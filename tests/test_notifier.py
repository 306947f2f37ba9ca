"""The Slack notifier against a real local HTTP receiver standing in for the incoming webhook."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

import pytest
from slack_sdk.models.blocks import Block

from jobplane.contract.notifications import NotificationMessage, Outcome
from jobplane.platform.notifier import DeadLetterStore, Routing, SlackNotifier

from slack_receiver import Receiver


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    r = Receiver(getattr(request, "param", []))
    yield r
    r.close()


def message(**overrides: object) -> NotificationMessage:
    base = dict(version=1, event="FAILED", job="daily-sales-report", team="billing", execution="exec-42",
                execution_arn="arn:aws:states:us-east-1:123456789012:execution:jobplane-daily-sales-report:exec-42",
                trigger="schedule", scheduled_time="2026-12-01T17:00:00Z", requested_by="scheduler",
                started_at="2026-12-01T17:00:01.204Z", outcome=Outcome(status="FAILED", step="extract-orders"),
                channels=[], runbook={"impact": "Finance dashboard is a day late.", "workaround": "",
                                      "recovery": "Re-run from the failed step."})
    return NotificationMessage(**(base | overrides))


ROUTING = Routing({"billing": "#billing-alerts"}, "#jobplane-alerts")


def test_failure_reaches_slack_once_with_the_execution_link(receiver: Receiver, tmp_path: Path) -> None:
    notifier = SlackNotifier(receiver.url, ROUTING, "http://localhost:8080", DeadLetterStore(tmp_path))
    assert notifier.notify(message()) == ["sent"]
    assert len(receiver.posts) == 1
    payload = receiver.posts[0]
    parsed = [Block.parse(b) for b in payload["blocks"]]
    assert [type(b).__name__ for b in parsed][:2] == ["HeaderBlock", "SectionBlock"]
    text = json.dumps(payload)
    assert "http://localhost:8080/executions/exec-42" in text
    assert "extract-orders" in text and "Re-run from the failed step." in text
    assert payload["text"].startswith("#billing-alerts:")  # routed by team
    assert not DeadLetterStore(tmp_path).entries()


@pytest.mark.parametrize("receiver", [[500, 500]], indirect=True)
def test_server_errors_are_retried_and_delivered_once(receiver: Receiver, tmp_path: Path) -> None:
    notifier = SlackNotifier(receiver.url, ROUTING, "http://localhost:8080", DeadLetterStore(tmp_path))
    assert notifier.notify(message()) == ["sent"]
    assert len(receiver.posts) == 3  # 500, 500, then 200: one message delivered
    assert not DeadLetterStore(tmp_path).entries()


@pytest.mark.parametrize("receiver", [["hang"] * 10], indirect=True)
def test_a_receiver_that_never_answers_leaves_the_message_in_the_dead_letter_store(receiver: Receiver,
                                                                                   tmp_path: Path) -> None:
    notifier = SlackNotifier(receiver.url, ROUTING, "", DeadLetterStore(tmp_path), timeout=1, retries=1)
    assert notifier.notify(message()) == ["dead-lettered"]
    (kept,) = DeadLetterStore(tmp_path).entries()
    assert kept["message"]["execution"] == "exec-42" and kept["channel"] == "#billing-alerts"
    assert "Timeout" in kept["reason"] or "timed out" in kept["reason"]


def test_routing_prefers_the_jobs_channels_then_team_then_platform() -> None:
    assert ROUTING.channels(message(channels=["#a", "#b"])) == ["#a", "#b"]
    assert ROUTING.channels(message()) == ["#billing-alerts"]
    assert ROUTING.channels(message(team="growth")) == ["#jobplane-alerts"]


def test_unsubscribed_events_are_not_posted_and_no_webhook_logs(receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    notifier = SlackNotifier(receiver.url, ROUTING)
    assert notifier.notify(message(event="SKIPPED", outcome=Outcome(status="SKIPPED"))) == ["not subscribed"]
    assert notifier.notify(message(event="SKIPPED", outcome=Outcome(status="SKIPPED"), events=["SKIPPED"])) == ["sent"]
    assert len(receiver.posts) == 1
    console = SlackNotifier(None, ROUTING)
    with caplog.at_level("WARNING"):
        assert console.notify(message()) == ["logged"]
    assert "daily-sales-report (billing): FAILED at step extract-orders" in caplog.text


def test_injected_mrkdwn_is_shown_as_text_not_acted_on(receiver: Receiver, tmp_path: Path) -> None:
    """Issue 10, item 6: an error (from a run's param), a stop reason and a runbook try to ping the
    channel, close the code block and disguise a link."""
    attack = "bad input ``` <!channel> *urgent* <https://evil.example/login|open the portal> & more"
    notifier = SlackNotifier(receiver.url, ROUTING, "http://localhost:8080", DeadLetterStore(tmp_path))
    notifier.notify(message(error=attack, requested_by="<!here>", trigger="manual",
                            runbook={"impact": "<!everyone>", "workaround": "<https://evil.example|docs>",
                                     "recovery": "``` <!channel>"}))
    payload = receiver.posts[0]
    texts = [payload["text"]] + [json.dumps(b) for b in payload["blocks"]]
    for text in texts:
        for live in ("<!channel>", "<!here>", "<!everyone>", "<https://evil.example"):
            assert live not in text, (live, text)
    error_block = next(b for b in payload["blocks"] if b.get("text", {}).get("text", "").startswith("*Error*"))
    body = error_block["text"]["text"]
    assert body.startswith("*Error*\n```") and body.endswith("```")
    assert body[len("*Error*\n```"):-3].count("```") == 0  # nothing inside closes the block
    assert "&lt;!channel&gt;" in body and "&amp; more" in body


@pytest.mark.parametrize("receiver", [[500, 500, 200]], indirect=True)
def test_the_webhook_url_never_reaches_the_logs(receiver: Receiver, tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    notifier = SlackNotifier(receiver.url, ROUTING, "http://localhost:8080", DeadLetterStore(tmp_path))
    assert notifier.notify(message()) == ["sent"]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "retry" in logged.lower()  # slack_sdk did log its retries...
    assert "/services/T000/B000/XXXX" not in logged  # ...without the URL


# -- issue 41 item 8: every routed channel gets its alert -----------------------------------------
MULTI = Routing({"billing": "#billing-alerts", "growth": "#growth-alerts"}, "#jobplane-alerts")


def test_a_bot_token_posts_each_alert_to_its_own_channels(receiver: Receiver, tmp_path: Path) -> None:
    """One webhook could reach one channel only (Slack: a webhook cannot override its channel),
    so every team's alert went to the same one. With a bot token each goes by chat.postMessage
    to the channel it is routed to: the job's own channels, else its team's, else the default."""
    from slack_receiver import BOT_TOKEN

    notifier = SlackNotifier(None, MULTI, "http://localhost:8080", DeadLetterStore(tmp_path), bot_token=BOT_TOKEN,
                             api_url=receiver.api_url)
    assert notifier.notify(message(team="billing")) == ["sent"]
    assert notifier.notify(message(team="growth", job="weekly-cohort-export")) == ["sent"]
    assert notifier.notify(message(team="platform")) == ["sent"]  # no team channel: the default
    assert notifier.notify(message(channels=["#close-war-room", "#finance"])) == ["sent", "sent"]
    got = [(path, body["channel"], body["text"]) for path, body in receiver.requests]
    assert [(p, c) for p, c, _ in got] == [("/api/chat.postMessage", c) for c in (
        "#billing-alerts", "#growth-alerts", "#jobplane-alerts", "#close-war-room", "#finance")]
    assert got[1][2].startswith("weekly-cohort-export FAILED")  # the text says the job, not another channel
    assert all(Block.parse(b) for _, body in receiver.requests for b in body["blocks"])
    assert not DeadLetterStore(tmp_path).entries()


def test_a_channel_the_app_cannot_post_to_is_dead_lettered_with_slacks_reason(tmp_path: Path) -> None:
    from slack_receiver import BOT_TOKEN

    receiver = Receiver([], missing_channels=("#growth-alerts",))
    try:
        notifier = SlackNotifier(None, MULTI, "", DeadLetterStore(tmp_path), bot_token=BOT_TOKEN, api_url=receiver.api_url)
        assert notifier.notify(message(channels=["#billing-alerts", "#growth-alerts"])) == ["sent", "dead-lettered"]
        [kept] = DeadLetterStore(tmp_path).entries()
        assert kept["channel"] == "#growth-alerts" and kept["reason"] == "Slack API error: channel_not_found"
        wrong = SlackNotifier(None, MULTI, "", DeadLetterStore(tmp_path / "wrong"), bot_token="xoxb-not-ours",
                              api_url=receiver.api_url)
        assert wrong.notify(message()) == ["dead-lettered"]
        assert DeadLetterStore(tmp_path / "wrong").entries()[0]["reason"] == "Slack API error: invalid_auth"
    finally:
        receiver.close()


@pytest.mark.parametrize("receiver", [[429, 503]], indirect=True)
def test_chat_post_message_is_retried_on_rate_limits_and_server_errors(receiver: Receiver, tmp_path: Path) -> None:
    from slack_receiver import BOT_TOKEN

    notifier = SlackNotifier(None, MULTI, "", DeadLetterStore(tmp_path), bot_token=BOT_TOKEN, api_url=receiver.api_url)
    assert notifier.notify(message()) == ["sent"]
    assert len(receiver.requests) == 3 and not DeadLetterStore(tmp_path).entries()


def test_webhooks_per_channel_each_get_their_channels_alerts(receiver: Receiver, tmp_path: Path) -> None:
    """The simple option, one incoming webhook per channel: a JSON object of channel -> URL.
    A channel with no webhook of its own goes to "*" when there is one, named in the text;
    else it is dead-lettered, never posted to another team's channel."""
    hooks = {"#billing-alerts": receiver.webhook("billing"), "#growth-alerts": receiver.webhook("growth")}
    notifier = SlackNotifier(json.dumps(hooks), MULTI, "", DeadLetterStore(tmp_path))
    assert notifier.notify(message(team="billing")) == ["sent"]
    assert notifier.notify(message(team="growth")) == ["sent"]
    assert notifier.notify(message(team="platform")) == ["dead-lettered"]  # #jobplane-alerts has none
    assert [(path, body["text"].split(":")[0]) for path, body in receiver.requests] == [
        ("/services/T000/billing/XXXX", "daily-sales-report FAILED"), ("/services/T000/growth/XXXX", "daily-sales-report FAILED")]
    assert DeadLetterStore(tmp_path).entries()[0]["reason"].startswith("no incoming webhook for #jobplane-alerts")
    fallback = SlackNotifier(json.dumps({**hooks, "*": receiver.webhook("ops")}), MULTI, "", DeadLetterStore(tmp_path / "f"))
    assert fallback.notify(message(team="platform")) == ["sent"]
    assert receiver.requests[-1][0] == "/services/T000/ops/XXXX"
    assert receiver.requests[-1][1]["text"].startswith("#jobplane-alerts: ")


@pytest.mark.parametrize("setting, token, says", [
    ("xoxb-123", None, "an https:// URL or a JSON object"),  # a token in the webhook setting
    ('{"#a": "not-a-url"}', None, "JSON object of channel -> webhook URL"),
    (None, "https://hooks.slack.com/services/T/B/C", "bot user token, xoxb-"),
])
def test_a_misplaced_slack_setting_is_refused_not_sent_somewhere(setting: str | None, token: str | None, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        SlackNotifier(setting, MULTI, bot_token=token)


def test_the_dsl_offers_every_notification_event() -> None:
    """``jp.events`` is the Event enum: DEADLINE was accepted as a string but missing there, so
    ``jp.events.DEADLINE`` failed in Jsonnet (found by a docs-against-code review)."""
    from conftest import library_enum
    from jobplane.contract.statuses import Event

    pairs = library_enum("events")
    assert all(k == v for k, v in pairs)
    assert [k for k, _ in pairs] == [e.value for e in Event]
