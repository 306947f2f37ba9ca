"""Alerts without noise (issue 69 part 4). `after_failures`: a job's failure alerts wait for N
failed runs in a row, and the RECOVERED note of a streak nobody was told of is held too.
`renotify_after`: a failure nobody acknowledged is announced once more, never more. Under
`jobplane dev`'s platform with real runner subprocesses and Slack a real local HTTP receiver:
the decisions are the notifier's and the periodic check's, as on AWS."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Iterator

import pytest

from devkit import FakeClock, make_repo, utc
from jobplane.contract.config import load_config
from jobplane.contract.clock import parse_iso
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.renotify import Renotify
from slack_receiver import Receiver
from test_dev_platform import finished, wait_for

STREAKY = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'streaky',
  team: 'billing',
  schedule: jp.manual,
  policy: jp.policy.%(policy)s,
  params: { mode: 'fail' },
  notify: { events: ['FAILED', 'TIMED_OUT', 'ABORTED', 'RECOVERED'], after_failures: %(after)s%(renotify)s },
  steps: [jp.python('load', 'sample_apps.functions:behave')],
}
"""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver([])
    yield r
    r.close()


def test_failures_alert_from_the_nth_in_a_row_and_only_an_announced_streak_recovers(
        tmp_path: Path, receiver: Receiver) -> None:
    root = tmp_path / "repo"
    make_repo(root)
    (root / "jobs/billing/streaky.jsonnet").write_text(STREAKY % {"policy": "SKIP_IF_RUNNING", "after": 2,
                                                                           "renotify": ""})
    platform = DevPlatform(load_config(root), tmp_path / "data", 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                           webhook_url=receiver.url, run_scheduler=False, run_services=False,
                           snapshot_interval=3600).start()
    assert platform.alerts is not None
    alerts = platform.alerts

    def run(mode: str, status: str) -> tuple[str, list[str]]:
        """One run to its end, and what the notifier did with its alert (if it had one)."""
        name = platform.control.run_now("streaky", "dev@localhost", {"mode": mode})
        assert finished(platform, name, "streaky").status == status
        if status == "SUCCEEDED" and not platform.control.repo.execution(name):
            return name, []
        delivered = wait_for(lambda: [r for e, r in alerts.delivered if e == name], what=f"{name}'s alert")
        return name, delivered[0]

    def posted(name: str) -> list[str]:
        return [str(p) for p in receiver.posts if name in str(p)]

    try:
        first, results = run("fail", "FAILED")
        assert results == ["held: failure 1 in a row of the 2 after which this job alerts (after_failures)"]
        assert posted(first) == []
        second, results = run("fail", "FAILED")
        assert results == ["sent"] and len(posted(second)) == 1 and "FAILED" in posted(second)[0]
        recovered, results = run("ok", "SUCCEEDED")
        assert results == ["sent"] and "RECOVERED" in posted(recovered)[0]
        # a single failure, then a success: neither is told (the success's note would recover
        # from a failure the channel never saw)
        lone, results = run("fail", "FAILED")
        assert results[0].startswith("held: failure 1 in a row") and posted(lone) == []
        quiet, results = run("ok", "SUCCEEDED")
        assert results == ["held: the 1 failure this run ends were never announced (after_failures 2)"]
        assert posted(quiet) == []
        assert len(receiver.posts) == 2  # the second failure and its recovery, nothing else
    finally:
        platform.stop()


@pytest.mark.parametrize("policy,after,says", [
    ("SKIP_IF_FAILED", 2, "after_failures 2: the policy SKIP_IF_FAILED blocks the job's next fires at each failure"),
    ("SKIP_IF_RUNNING", 11, "after_failures"),
    ("SKIP_IF_RUNNING", 0, "after_failures"),
])
def test_a_streak_a_policy_cannot_wait_for_is_refused_naming_the_field(tmp_path: Path, policy: str, after: int,
                                                                       says: str) -> None:
    from click.testing import CliRunner

    from jobplane.cli import main

    root = tmp_path / "repo"
    make_repo(root)
    (root / "jobs/billing/streaky.jsonnet").write_text(STREAKY % {"policy": policy, "after": after, "renotify": ""})
    result = CliRunner().invoke(main, ["--root", str(root), "validate"])
    assert result.exit_code != 0
    line = next(line for line in result.output.splitlines() if "streaky" in line and "notify" in line)
    assert "streaky.jsonnet" in line and says in line, result.output


def test_an_unacknowledged_failure_is_announced_once_more_and_an_acknowledged_one_is_not(
        tmp_path: Path, receiver: Receiver) -> None:
    root = tmp_path / "repo"
    make_repo(root)
    (root / "jobs/billing/streaky.jsonnet").write_text(STREAKY % {
        "policy": "SKIP_IF_FAILED", "after": 1, "renotify": ", renotify_after: '1h'"})
    platform = DevPlatform(load_config(root), tmp_path / "data", 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                           webhook_url=receiver.url, run_scheduler=False, run_services=False,
                           snapshot_interval=3600, catch_up_interval=3600).start()
    assert platform.alerts is not None
    alerts = platform.alerts
    sns, topic = platform.deployment.client("sns"), platform.deployment.topic_arn

    def watch_at(at):  # type: ignore[no-untyped-def]
        return Renotify(platform.control.reads, sns, topic, clock=lambda: at).check()

    try:
        name = platform.control.run_now("streaky", "dev@localhost")
        record = finished(platform, name, "streaky").record
        assert record.status == "FAILED"
        wait_for(lambda: (name, ["sent"]) in alerts.delivered, what="the first announcement")
        ended = parse_iso(record.finished_at)
        assert watch_at(ended + timedelta(minutes=59)) == []  # not yet
        assert watch_at(ended + timedelta(minutes=61)) == [name]
        wait_for(lambda: alerts.delivered.count((name, ["sent"])) == 2, what="the reminder's delivery")
        reminder = [str(p) for p in receiver.posts if name in str(p)][-1]
        assert "still failed, unacknowledged for 1h 1m" in reminder and "load" in reminder
        # once, never more: a later look, or another watcher, posts nothing
        assert watch_at(ended + timedelta(hours=5)) == []
        assert len([p for p in receiver.posts if name in str(p)]) == 2

        # a failure someone acknowledged is not announced again
        platform.control.acknowledge("streaky", "dev@localhost", "looking at it")  # unblocks the next run
        second = platform.control.run_now("streaky", "dev@localhost")
        again = finished(platform, second, "streaky").record
        wait_for(lambda: (second, ["sent"]) in alerts.delivered, what="the second failure's announcement")
        platform.control.acknowledge("streaky", "dev@localhost", "known: partner outage")
        assert watch_at(parse_iso(again.finished_at) + timedelta(hours=2)) == []
        assert len([p for p in receiver.posts if second in str(p)]) == 1
    finally:
        platform.stop()


def test_a_renotify_window_outside_15m_to_7d_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jobplane.cli import main

    root = tmp_path / "repo"
    make_repo(root)
    (root / "jobs/billing/streaky.jsonnet").write_text(STREAKY % {
        "policy": "SKIP_IF_RUNNING", "after": 1, "renotify": ", renotify_after: '5m'"})
    result = CliRunner().invoke(main, ["--root", str(root), "validate"])
    assert result.exit_code != 0 and "renotify_after (300s) must be 15m to 7d" in result.output, result.output


def test_a_snoozed_jobs_alerts_are_held_shown_everywhere_and_summarised_once_when_it_ends(
        tmp_path: Path, receiver: Receiver) -> None:
    """Snoozed from the CLI, shown by `jobplane status`, the API and the jobs and job pages, its
    failure held (not posted), ended from the portal's form by another member, audited both ways,
    and summarised once: the summary names the held failure; a failure after the end is posted."""
    import re

    from click.testing import CliRunner
    from fastapi.testclient import TestClient

    from jobplane.cli import main
    from jobplane.platform.snooze import SnoozeEnds
    from portal_kit import BILLING, GROWTH, as_user, header_app

    root = tmp_path / "repo"
    make_repo(root)
    (root / "jobs/billing/streaky.jsonnet").write_text(STREAKY % {"policy": "SKIP_IF_RUNNING", "after": 1,
                                                                   "renotify": ""})
    platform = DevPlatform(load_config(root), tmp_path / "data", 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                           webhook_url=receiver.url, run_scheduler=False, run_services=False,
                           snapshot_interval=3600, catch_up_interval=3600).start()
    assert platform.alerts is not None
    alerts = platform.alerts
    cli = CliRunner()
    base = ["--root", str(root)]
    data = ["--data-dir", str(tmp_path / "data")]
    try:
        snoozed = cli.invoke(main, [*base, "snooze", "streaky", "--for", "2h", "--reason", "partner maintenance", *data])
        assert snoozed.exit_code == 0 and "streaky's alerts snoozed until" in snoozed.output, snoozed.output
        name = platform.control.run_now("streaky", "dev@localhost")
        assert finished(platform, name, "streaky").status == "FAILED"
        (results,) = wait_for(lambda: [r for e, r in alerts.delivered if e == name], what="the held alert")
        assert results[0].startswith("held: snoozed until ") and not [p for p in receiver.posts if name in str(p)]

        status = cli.invoke(main, [*base, "status", *data])
        assert "Alerts snoozed" in status.output and "streaky: until" in status.output
        assert "partner maintenance (1 held so far)" in status.output, status.output
        client = TestClient(header_app(platform), follow_redirects=False)
        job = client.get("/api/jobs/streaky", headers=as_user(BILLING)).json()
        assert job["snoozed_until"] and job["snooze_reason"] == "partner maintenance"
        assert "alerts snoozed until" in client.get("/?team=billing", headers=as_user(BILLING)).text
        page = client.get("/jobs/streaky", headers=as_user(BILLING)).text
        assert "Alerts snoozed until" in page and "1 held so far" in page
        # another team's member may not end it; a member of billing ends it from the form
        token = re.search(r'name="csrf-token" content="([^"]+)"', page)
        assert token is not None
        other = client.post("/api/jobs/streaky/unsnooze", json={"reason": "mine now"}, headers=as_user(GROWTH))
        assert other.status_code == 403
        ended = client.post("/jobs/streaky/unsnooze", data={"csrf_token": token.group(1), "reason": "maintenance over"},
                            headers=as_user(BILLING))
        assert ended.status_code == 303 and "notice=unsnooze" in ended.headers["location"]
        assert not client.get("/api/jobs/streaky", headers=as_user(BILLING)).json()["snoozed_until"]

        sns, topic = platform.deployment.client("sns"), platform.deployment.topic_arn
        # two checkers (two Lambda invocations, or dev's loop beside one): one finishes it, once
        checks = [SnoozeEnds(platform.control.reads, sns, topic).check for _ in range(2)]
        done = checks[0]() + checks[1]()
        summary = wait_for(lambda: [str(p) for p in receiver.posts if "alerts held while snoozed" in str(p)],
                           what="the summary")
        assert len(summary) == 1 and "1 FAILED" in summary[0] and name in summary[0]
        assert "partner maintenance" in summary[0] and done == ["streaky"]
        actions = [(a.action, a.reason) for a in platform.control.audit(10) if a.job == "streaky"]
        assert ("snooze", "partner maintenance") in actions and ("unsnooze", "maintenance over") in actions

        after = platform.control.run_now("streaky", "dev@localhost")
        assert finished(platform, after, "streaky").status == "FAILED"
        wait_for(lambda: (after, ["sent"]) in alerts.delivered, what="the alert after the snooze")
    finally:
        platform.stop()


@pytest.mark.parametrize("args,says", [
    (["--for", "8d"], "within 7 days"),
    (["--until", "2020-01-01T00:00:00+00:00"], "after now"),
    ([], "give --for DURATION or --until ISO-TIME"),
])
def test_a_snooze_outside_now_to_7_days_is_refused(tmp_path: Path, args: list[str], says: str) -> None:
    from click.testing import CliRunner

    from jobplane.cli import main
    from portal_kit import start_platform

    platform = start_platform(tmp_path)
    try:
        result = CliRunner().invoke(main, ["--root", str(tmp_path / "repo"), "snooze", "flaky-load", *args,
                                           "--reason", "r", "--data-dir", str(tmp_path / "data")])
        assert result.exit_code != 0 and says in result.output, result.output
    finally:
        platform.stop()
