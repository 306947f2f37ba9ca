"""The Slack notifier against a real local HTTP receiver standing in for the incoming webhook."""

from __future__ import annotations

import json
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
