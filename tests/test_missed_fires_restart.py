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
from slack_receiver import Receiver, serving

from jobplane.contract import execution_input
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform


@pytest.fixture
def slack() -> Iterator[Receiver]:
    yield from serving()  # a real local HTTP server standing in for Slack


def test_dev_stopped_across_five_fires_and_started_again_alerts_once_counting_them(tmp_path: Path,
                                                                                   slack: Receiver) -> None:
    """`jobplane dev` itself stopped: its scheduler fires a minutely job, its ledger accounts
    for the fires, the platform stops (its state saved), its clock moves on six minutes, and it
    starts again from the saved state. Its catch-up accounts at once: the five fires past their
    grace (missed_after: 1m) are MISSED, one alert counts them, each can still be run as that
    fire. The platform's clock is the scheduler's, the ledger's and the schedules' creation
    time; it only moves forward."""
    repo = make_repo(tmp_path / "repo")
    repo.write("jobs/billing/heartbeat.jsonnet", textwrap.dedent(MINUTELY % {
        "name": "heartbeat", "zone": "UTC", "enabled": "true", "policy": "ALWAYS_RUN"}).replace(
        "notify:", "missed_after: '1m',\n  notify:"))
    clock = FakeClock(datetime.now(timezone.utc))
    data = tmp_path / "data"

    def start() -> DevPlatform:
        return DevPlatform(load_config(repo.path), data, 0, 0, clock=clock, run_services=False,
                           snapshot_interval=3600, catch_up_interval=0.2, webhook_url=slack.url).start()

    def ran(platform: DevPlatform, fire: datetime) -> bool:
        return any(r.status == "SUCCEEDED" and r.scheduled_time == execution_input.iso(fire)
                   for r in platform.control.repo.executions("heartbeat").items)

    def hang_guard(condition, what: str) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 300
        while not condition():
            assert time.monotonic() < deadline, f"{what}\n{_diagnosis(first, clock)}"
            time.sleep(0.2)

    first = start()
    try:
        fired = (clock.now + timedelta(minutes=1)).replace(second=0, microsecond=0)
        for fire in (fired, fired + timedelta(minutes=1)):  # the scheduler's next tick fires each
            clock.now = fire + timedelta(seconds=2)
            hang_guard(lambda f=fire: ran(first, f), f"the scheduler did not fire {fire}")
        # the ledger's pass (every 0.2 s here) has accounted for the first, past its grace
        hang_guard(lambda: (first.control.repo.job_state("heartbeat").missed_count == 0
                            and first.control.ddb.get_item(TableName=first.deployment.table, Key={
                                "pk": {"S": "JOB#heartbeat"}, "sk": {"S": "STATE"}})["Item"].get(
                                "fires_checked_until", {}).get("S", "") >= execution_input.iso(fired)),
                   "the ledger did not look")
        assert missed_records(first, "heartbeat") == []
    finally:
        first.stop()

    clock.now += timedelta(minutes=6)  # down across six fires
    again = start()
    try:
        missed = [execution_input.iso(fired + timedelta(minutes=i)) for i in range(2, 7)]  # the 7th: in grace
        wait_until(lambda: len(alerts(slack, "heartbeat")) == 1)
        assert sorted(r.scheduled_time for r in missed_records(again, "heartbeat")) == missed
        assert f"5 scheduled fires missed since {missed[0]}" in json.dumps(alerts(slack, "heartbeat")[0]["blocks"])
        entry = again.control.entry("heartbeat")
        plan = again.backfills.plan_window(entry, parse_time(missed[0]), parse_time(missed[-1]))
        assert [(p.at, p.runs) for p in plan] == [(f, True) for f in missed]  # each can run as that fire
        time.sleep(1)  # the catch-up's passes since found nothing new to alert
        assert len(alerts(slack, "heartbeat")) == 1
    finally:
        again.stop()


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _diagnosis(platform: DevPlatform, clock: FakeClock) -> str:
    """What a hang guard that gave up says besides its question (it failed once, in a loaded
    full run, and passed alone and under CPU load): the job's ledger state, the clock, and where
    the catch-up thread (which runs the ledger's passes) is."""
    import sys
    import threading
    import traceback

    state = platform.control.ddb.get_item(TableName=platform.deployment.table, Key={
        "pk": {"S": "JOB#heartbeat"}, "sk": {"S": "STATE"}}).get("Item")
    threads = {t.ident: t.name for t in threading.enumerate()}
    stacks = ["".join(traceback.format_stack(frame)) for ident, frame in sys._current_frames().items()
              if threads.get(ident) == "catch-up"]
    return f"clock {clock.now.isoformat()}; state {state}; catch-up thread:\n" + ("\n".join(stacks) or "none")

