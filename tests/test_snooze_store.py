"""How a snooze keeps what it held (platform/snooze.py, repository's snooze writes), on the local
engine's DynamoDB: bounded on the job's state item (every refused claim reads it into state
data capped at 256 KiB), the same alert delivered twice held once, two checkers summarising once,
and a summary whose send fails taken over later, never lost. The notifier holds only what the job
would be sent."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest

from devkit import make_repo
from jobplane.contract import datamodel as dm
from jobplane.contract.config import load_config
from jobplane.contract.clock import iso_millis, now_iso
from jobplane.contract.notifications import NotificationMessage, Outcome
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.notifier import _snoozed
from jobplane.platform.snooze import CLAIM_STALE, SnoozeEnds


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    """The example platform with its periodic checks run once, at start: each test takes the
    snooze checks itself (a background pass would race the test's own claims)."""
    tmp = tmp_path_factory.mktemp("snooze-store")
    make_repo(tmp / "repo")
    p = DevPlatform(load_config(tmp / "repo"), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600, catch_up_interval=3600).start()
    yield p
    p.stop()


def snooze(platform: DevPlatform, job: str, minutes: int = 60) -> str:
    platform.control.snooze(job, "dev@localhost", datetime.now(timezone.utc) + timedelta(minutes=minutes), "testing")
    state = platform.control.repo.job_state(job)
    assert state is not None and state.snoozed_until
    return state.snoozed_until


def message(job: str, event: str, execution: str, status: str | None = None) -> NotificationMessage:
    return NotificationMessage(version=1, event=event, job=job, team="billing", execution=execution,  # type: ignore[arg-type]
                               execution_arn="", outcome=Outcome(status=status or event), channels=[])


def test_what_a_snooze_holds_stays_small_and_the_same_alert_twice_is_held_once(platform: DevPlatform) -> None:
    repo = platform.control.repo
    snooze(platform, "long-wait")
    for i in range(dm.SNOOZE_NAMED + 15):
        assert repo.hold_in_snooze("long-wait", "FAILED", f"run-{i:03d}", now_iso())
    assert repo.hold_in_snooze("long-wait", "FAILED", "run-000", now_iso())  # SNS delivered it again
    assert repo.hold_in_snooze("long-wait", "MISSED recovered", "missed-x", now_iso())
    state = repo.job_state("long-wait")
    assert state is not None
    assert len(state.snooze_held) == dm.SNOOZE_NAMED and "FAILED run-000" in state.snooze_held
    assert state.snooze_counts == {"FAILED": dm.SNOOZE_NAMED + 15, "MISSED recovered": 1}
    item = platform.control.context.ddb.get_item(TableName=repo.table, Key={"pk": {"S": "JOB#long-wait"},
                                                                          "sk": {"S": "STATE"}})["Item"]
    assert len(json.dumps(item)) < 4096  # however many fires fail during the snooze
    platform.control.unsnooze("long-wait", "dev@localhost", "done")
    assert repo.hold_in_snooze("long-wait", "FAILED", "run-late", now_iso()) is None  # ended: delivered


def test_two_checkers_summarise_once_and_a_failed_send_is_taken_over_not_lost(platform: DevPlatform, faults) -> None:  # type: ignore[no-untyped-def]
    repo, reads = platform.control.repo, platform.control.reads
    sns, topic = platform.deployment.client("sns"), platform.deployment.topic_arn
    snooze(platform, "slow-report")
    assert repo.hold_in_snooze("slow-report", "FAILED", "run-a", now_iso())
    platform.control.unsnooze("slow-report", "dev@localhost", "done")
    state = repo.job_state("slow-report")
    assert state is not None and state.snoozed_until
    until, now = state.snoozed_until, iso_millis(datetime.now(timezone.utc) + timedelta(seconds=1))
    stale = iso_millis(datetime.now(timezone.utc) - CLAIM_STALE)
    # two checkers read the same end: one claims it
    first = repo.claim_snooze_summary("slow-report", until, now, stale)
    assert first is not None and first.snooze_counts == {"FAILED": 1}
    assert repo.claim_snooze_summary("slow-report", until, now, stale) is None
    # the claimer died before sending: within CLAIM_STALE nobody takes over, after it one does
    sent_before = len(platform.alerts.delivered) if platform.alerts else 0
    assert "slow-report" not in SnoozeEnds(reads, sns, topic).check()
    later = SnoozeEnds(reads, sns, topic, clock=lambda: datetime.now(timezone.utc) + CLAIM_STALE + timedelta(minutes=1))
    failing = [True]  # and its send fails too, through every retry the SDK makes
    faults.script("sns", "Publish", "Throttling", times=100, match=lambda params: failing[0])
    with pytest.raises(Exception, match="Throttling|Rate exceeded"):  # the Lambda fails, and is retried
        later.check()
    failing[0] = False
    assert (s := repo.job_state("slow-report")) is not None and s.snoozed_until == until  # kept, not lost
    even_later = SnoozeEnds(reads, sns, topic, clock=lambda: datetime.now(timezone.utc) + 2 * CLAIM_STALE
                            + timedelta(minutes=2))
    assert "slow-report" in even_later.check()
    assert (s := repo.job_state("slow-report")) is not None and s.snoozed_until is None
    assert faults.count("sns", "Publish", "Throttling") >= 1
    assert platform.alerts is not None
    platform.alerts.drain()
    summaries = [r for e, r in platform.alerts.delivered[sent_before:] if e == "run-a"]
    assert len(summaries) == 1


def test_the_notifier_holds_only_what_the_job_would_be_sent(platform: DevPlatform) -> None:
    """slow-report subscribes to FAILED and SLOW only: its ABORTED alert is not held (the notifier
    drops it as ever); a MISSED recovery note is held as such, not as a breach."""
    ddb, table = platform.control.context.ddb, platform.control.repo.table
    snooze(platform, "every-minute")
    assert _snoozed(message("every-minute", "FAILED", "f-1"), ddb, table)
    recovered = message("every-minute", "MISSED", "missed-every-minute-1", status="RECOVERED")
    assert _snoozed(recovered, ddb, table)
    quiet = message("every-minute", "SKIPPED", "s-1").model_copy(update={"events": ["FAILED"]})
    assert _snoozed(quiet, ddb, table) is None
    state = platform.control.repo.job_state("every-minute")
    assert state is not None and state.snooze_counts == {"FAILED": 1, "MISSED recovered": 1}
    platform.control.unsnooze("every-minute", "dev@localhost", "done")
