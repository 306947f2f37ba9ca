"""The local scheduler fires deployed schedules on time by an injected clock, with the input a
real schedule sends, and runs the job's steps for real."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract.catalog import CatalogJob
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.scheduler import LocalScheduler

HERE = Path(__file__).resolve().parent


class FakeClock:
    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(scope="module")
def aws():
    with LocalAWS(prefix="jpsched", env={"PYTHONPATH": str(HERE)}) as local:
        yield local


@pytest.fixture(autouse=True)
def no_schedules_from_other_tests(aws: LocalAWS) -> None:
    scheduler = aws.client("scheduler")
    for s in scheduler.list_schedules(GroupName=aws.prefix).get("Schedules", []):
        scheduler.delete_schedule(Name=s["Name"], GroupName=aws.prefix)


def deploy(aws: LocalAWS, expression: str, enabled: bool = True, tz: str = "UTC") -> str:
    name = f"job-{uuid.uuid4().hex[:8]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": tz, "schedule": [expression],
                              "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]})
    arn = aws.deploy(name, asl.compile_job(job, aws.prefix))
    aws.deploy_schedules(CatalogJob(name=name, team="billing", schedule=job.schedule, timezone=tz, enabled=enabled,
                                    params={"mode": "ok"}, policy=job.policy, timeout=job.timeout, steps=[],
                                    state_machine=f"{aws.prefix}-{name}", asl="", states=0), arn)
    return name


def test_every_minute_fires_on_time_once_and_runs(aws: LocalAWS) -> None:
    job = deploy(aws, "cron(0/1 * * * ? *)")
    paused = deploy(aws, "cron(0/1 * * * ? *)", enabled=False)
    clock = FakeClock(datetime(2027, 3, 1, 10, 0, 30, tzinfo=timezone.utc))
    scheduler = LocalScheduler(aws.client("scheduler"), aws.client("stepfunctions"), aws.prefix, clock)
    scheduler.start()
    assert scheduler.tick() == []  # nothing due yet
    clock.now += timedelta(seconds=40)  # 10:01:10
    fires = [f for f in scheduler.tick() if f.schedule.endswith(job)]
    assert [f.scheduled_time.isoformat() for f in fires] == ["2027-03-01T10:01:00+00:00"]
    assert not [f for f in scheduler.fired if f.schedule.endswith(paused)]
    clock.now += timedelta(seconds=20)  # 10:01:30: the same minute never fires twice
    assert not [f for f in scheduler.tick() if f.schedule.endswith(job)]
    ex = aws.wait(fires[0].execution_arn)
    aws.wait_reconciled(fires[0].execution_arn)
    record = aws.repository().execution(fires[0].execution_arn.rsplit(":", 1)[1])
    assert ex.status == "SUCCEEDED" and record.status == "SUCCEEDED"
    assert record.trigger == "schedule" and record.scheduled_time == "2027-03-01T10:01:00Z"
    assert json.loads(aws.client("stepfunctions").describe_execution(executionArn=ex.arn)["input"])["params"] == {"mode": "ok"}


def test_missed_fires_are_not_replayed_after_downtime(aws: LocalAWS, caplog: pytest.LogCaptureFixture) -> None:
    job = deploy(aws, "cron(0/1 * * * ? *)")
    clock = FakeClock(datetime(2027, 3, 2, 10, 0, 30, tzinfo=timezone.utc))
    scheduler = LocalScheduler(aws.client("scheduler"), aws.client("stepfunctions"), aws.prefix, clock)
    scheduler.start()
    clock.now += timedelta(minutes=5)  # the scheduler was down for 10:01 ... 10:05
    with caplog.at_level(logging.WARNING):
        scheduler.start()
    assert "not replaying fires" in caplog.text
    clock.now += timedelta(seconds=40)  # 10:06:10
    fires = [f for f in scheduler.tick() if f.schedule.endswith(job)]
    assert [f.scheduled_time.strftime("%H:%M") for f in fires] == ["10:06"]
    for f in scheduler.fired:
        aws.wait(f.execution_arn)


def test_fires_older_than_the_retry_window_are_not_replayed(aws: LocalAWS) -> None:
    job = deploy(aws, "cron(0/1 * * * ? *)")
    clock = FakeClock(datetime(2027, 3, 3, 10, 0, 30, tzinfo=timezone.utc))
    scheduler = LocalScheduler(aws.client("scheduler"), aws.client("stepfunctions"), aws.prefix, clock,
                               max_event_age=timedelta(minutes=2))
    scheduler.start()
    clock.now += timedelta(minutes=10)  # e.g. the laptop slept: only the last two minutes are delivered late
    fires = [f.scheduled_time.strftime("%H:%M") for f in scheduler.tick() if f.schedule.endswith(job)]
    assert fires == ["10:09", "10:10"]
    for f in scheduler.fired:
        aws.wait(f.execution_arn)


def test_fires_in_the_schedules_timezone_across_dst(aws: LocalAWS) -> None:
    job = deploy(aws, "cron(30 2 * * ? *)", tz="America/New_York")
    clock = FakeClock(datetime(2026, 3, 7, 12, 0, tzinfo=timezone.utc))
    scheduler = LocalScheduler(aws.client("scheduler"), aws.client("stepfunctions"), aws.prefix, clock)
    scheduler.start()
    fires = []
    for _ in range(96):  # two days, a tick every half hour, through the spring-forward night
        clock.now += timedelta(minutes=30)
        fires += [f for f in scheduler.tick() if f.schedule.endswith(job)]
    assert [f.scheduled_time.astimezone(timezone.utc).isoformat() for f in fires] == ["2026-03-09T06:30:00+00:00"]
    for f in scheduler.fired:
        aws.wait(f.execution_arn)
