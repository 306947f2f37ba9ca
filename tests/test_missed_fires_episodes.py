"""An episode of missed fires closes (issue 47, items 1 and 3): `jobplane dev` stopped across
fires and started again opens one (one MISSED alert, its cause the platform not running), the
fires that run again close it (one RECOVERED note, `jobplane status` clear), and the next outage
opens a new episode with its own alert. In a module of its own: one platform starts three times
(the local AWS is one per process); its clock (the scheduler's, the ledger's) only moves forward."""

from __future__ import annotations

import json
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterator

import pytest
from click.testing import CliRunner

from devkit import FakeClock, make_repo
from ledger_kit import MINUTELY, alerts, missed_records, wait_until
from slack_receiver import Receiver, serving

from jobplane.cli.app import main
from jobplane.contract import execution_input
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform


@pytest.fixture
def slack() -> Iterator[Receiver]:
    yield from serving()  # a real local HTTP server standing in for Slack


def hang_guard(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 300
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_an_outage_opens_an_episode_fires_that_run_close_it_and_the_next_outage_alerts_again(
        tmp_path: Path, slack: Receiver) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.write("jobs/billing/heartbeat.jsonnet", textwrap.dedent(MINUTELY % {
        "name": "heartbeat", "zone": "UTC", "enabled": "true", "policy": "ALWAYS_RUN"}).replace(
        "notify:", "missed_after: '1m',\n  notify:"))
    # behind the wall clock, which the runs' records keep (the ledger reads a fire's runs from
    # its time on): the test moves it on 15 minutes in all
    clock = FakeClock((datetime.now(timezone.utc) - timedelta(minutes=20)).replace(second=30, microsecond=0))
    data = tmp_path / "data"

    def start() -> DevPlatform:
        return DevPlatform(load_config(repo.path), data, 0, 0, clock=clock, run_services=False,
                           snapshot_interval=3600, catch_up_interval=0.2, webhook_url=slack.url).start()

    def ran(platform: DevPlatform, fire: datetime) -> bool:
        return any(r.status == "SUCCEEDED" and r.scheduled_time == execution_input.iso(fire)
                   for r in platform.control.repo.executions("heartbeat", limit=100).items)

    def run_fires(platform: DevPlatform, n: int) -> datetime:
        """The scheduler fires the next ``n`` fires, each run to the end; the last one's time."""
        fire = clock.now
        for _ in range(n):
            fire = (clock.now + timedelta(minutes=1)).replace(second=0, microsecond=0)
            clock.now = fire + timedelta(seconds=2)
            hang_guard(lambda f=fire: ran(platform, f), f"the scheduler did not fire {fire}")
        return fire

    def status(platform: DevPlatform) -> str:
        result = CliRunner().invoke(main, ["--root", str(repo.path), "status", "--data-dir", str(platform.data_dir)])
        assert result.exit_code == 0, result.output
        return result.output

    def open_episode(platform: DevPlatform) -> str | None:
        state = platform.control.repo.job_state("heartbeat")
        return state.missed_since if state else None

    def outage(minutes: int) -> list[str]:
        """Stopped for ``minutes``: the fires past their grace (missed_after: 1m) when it is back."""
        down_from = clock.now
        clock.now += timedelta(minutes=minutes)
        first = (down_from + timedelta(minutes=1)).replace(second=0, microsecond=0)
        return [execution_input.iso(first + timedelta(minutes=i)) for i in range(minutes)
                if first + timedelta(minutes=i) <= clock.now - timedelta(minutes=1)]

    platform = start()
    try:
        last = run_fires(platform, 2)
        # the ledger has accounted for the first of them (the second is within its grace)
        first = execution_input.iso(last - timedelta(minutes=1))
        hang_guard(lambda: (platform.control.repo.job_state("heartbeat").fires_checked_until or "") >= first,
                   "the ledger did not look")
        assert missed_records(platform, "heartbeat") == []
    finally:
        platform.stop()
    first_outage = outage(3)

    platform = start()
    try:
        wait_until(lambda: len(alerts(slack, "heartbeat")) == 1)
        missed = sorted(r.scheduled_time for r in missed_records(platform, "heartbeat"))
        assert missed == first_outage and len(missed) >= 2
        records = missed_records(platform, "heartbeat")
        assert all("jobplane dev was not running" in r.error for r in records), [r.error for r in records]
        alert = json.dumps(alerts(slack, "heartbeat")[0]["blocks"])
        assert f"{len(missed)} scheduled fires missed since {missed[0]}" in alert
        assert "jobplane dev was not running" in alert
        assert f"heartbeat: {len(missed)} since {missed[0]}" in status(platform)
        # fires run again: the episode closes, once, and status no longer counts it
        run_fires(platform, 3)
        hang_guard(lambda: open_episode(platform) is None, "the episode did not close")
        wait_until(lambda: len(alerts(slack, "heartbeat", "RECOVERED")) == 1)
        assert "Missed fires" not in status(platform)
        run_fires(platform, 2)
        time.sleep(1)  # the ledger's passes since: nothing new to say
        assert len(alerts(slack, "heartbeat", "RECOVERED")) == 1 and len(alerts(slack, "heartbeat")) == 1
    finally:
        platform.stop()
    second_outage = outage(4)

    platform = start()
    try:  # a new episode: its own alert, counting only its own fires
        wait_until(lambda: len(alerts(slack, "heartbeat")) == 2)
        alert = json.dumps(alerts(slack, "heartbeat")[1]["blocks"])
        assert f"{len(second_outage)} scheduled fires missed since {second_outage[0]}" in alert
        assert open_episode(platform) == second_outage[0]
        run_fires(platform, 2)
        wait_until(lambda: len(alerts(slack, "heartbeat", "RECOVERED")) == 2)
        assert open_episode(platform) is None
    finally:
        platform.stop()
