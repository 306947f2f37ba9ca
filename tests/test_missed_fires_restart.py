"""`jobplane dev` stopped and started again (platform/missed.py, devserver/dev_platform.py): the
fires nobody ran meanwhile are accounted for as soon as it is back. In a module of its own: a
platform of its own starts and stops twice (the local AWS is one per process)."""

from __future__ import annotations

import json
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest

from devkit import FakeClock, make_repo
from ledger_kit import MINUTELY, alerts, missed_records, wait_until
from slack_receiver import Receiver

from jobplane.contract import execution_input
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform


@pytest.fixture
def slack() -> Iterator[Receiver]:
    receiver = Receiver([])
    yield receiver
    receiver.server.shutdown()


def test_dev_stopped_across_five_fires_and_started_again_alerts_once_counting_them(tmp_path: Path,
                                                                                   slack: Receiver) -> None:
    """`jobplane dev` itself stopped: its scheduler fires a minutely job once, the platform
    stops (its state saved), its clock moves on six minutes, and it starts again from the
    saved state. Its catch-up accounts at once: the five fires past their grace (missed_after:
    1m) are MISSED, one alert counts them, each can still be run as that fire. The platform's
    clock is the scheduler's and the ledger's; it starts at the real time (when moto stamps
    the schedules' creation) and only moves forward."""
    repo = make_repo(tmp_path / "repo")
    repo.write("jobs/billing/heartbeat.jsonnet", textwrap.dedent(MINUTELY % {
        "name": "heartbeat", "zone": "UTC", "enabled": "true", "policy": "ALWAYS_RUN"}).replace(
        "notify:", "missed_after: '1m',\n  notify:"))
    clock = FakeClock(datetime.now(timezone.utc))
    data = tmp_path / "data"

    def start() -> DevPlatform:
        return DevPlatform(load_config(repo.path), data, 0, 0, clock=clock, run_services=False,
                           snapshot_interval=3600, webhook_url=slack.url).start()

    first = start()
    try:
        fired = (clock.now + timedelta(minutes=1)).replace(second=0, microsecond=0)
        clock.now = fired + timedelta(seconds=1)  # the scheduler's next tick fires `fired`
        deadline = time.monotonic() + 300  # a hang guard
        while not [r for r in first.control.repo.executions("heartbeat").items if r.status == "SUCCEEDED"]:
            assert time.monotonic() < deadline, "the scheduler did not fire the job"
            time.sleep(0.2)
        assert missed_records(first, "heartbeat") == []
    finally:
        first.stop()

    clock.now = fired + timedelta(minutes=6, seconds=10)  # down across six fires
    again = start()
    try:
        missed = [execution_input.iso(fired + timedelta(minutes=i)) for i in range(1, 6)]  # the sixth: in grace
        wait_until(lambda: len(alerts(slack, "heartbeat")) == 1)
        assert sorted(r.scheduled_time for r in missed_records(again, "heartbeat")) == missed
        assert f"5 scheduled fires missed since {missed[0]}" in json.dumps(alerts(slack, "heartbeat")[0]["blocks"])
        entry = again.control.entry("heartbeat")
        plan = again.backfills.plan_window(entry, parse_time(missed[0]), parse_time(missed[-1]))
        assert [(p.at, p.runs) for p in plan] == [(f, True) for f in missed]  # each can run as that fire
        time.sleep(1)
        assert len(alerts(slack, "heartbeat")) == 1
    finally:
        again.stop()


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
