"""A calendar job under `jobplane dev` across Golden Week 2026 (issue 53): the local scheduler,
driven by a moved clock as the fire-ledger tests move it, starts the job on the business days
only; the closed days leave no run, no skip and no alert; the fire ledger finds nothing missed
on a closed day and one MISSED fire for a business day that did not run."""

from __future__ import annotations

import textwrap
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator
from zoneinfo import ZoneInfo

import pytest

from devkit import make_repo
from ledger_kit import alerts, missed_records, wait_until
from slack_receiver import Receiver, serving

from jobplane.contract import execution_input
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.local.scheduler import LocalScheduler
from jobplane.platform.missed import MissedFires

TOKYO = ZoneInfo("Asia/Tokyo")
CALENDARS = """
[calendars]
years = [2026, 2028]

[calendars.jp-business]
holidays = "JP"
closed = ["12-29..01-03"]
"""
JOB = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: 'gw-report',
      team: 'billing',
      schedule: jp.businessDays('09:00'),
      calendar: 'jp-business',
      timezone: 'Asia/Tokyo',
      policy: jp.policy.ALWAYS_RUN,
      params: { mode: 'ok', marker: null, seconds: 0, release: null },
      steps: [jp.python('work', 'sample_apps.functions:behave')],
      notify: jp.slack('#billing-alerts'),
    }
"""
# Golden Week 2026 (the Cabinet Office's list): Wed 04-29 Showa Day; Sat 05-02; Sun-Wed 05-03..06
# Constitution, Greenery and Children's Days and the substitute holiday. Business days: 04-28,
# 04-30, 05-01, 05-07, 05-08. (Past days: a run's record is found by when it started, which is
# now, after its fire, as it always is.)
BUSINESS = [date(2026, 4, 28), date(2026, 4, 30), date(2026, 5, 1), date(2026, 5, 7), date(2026, 5, 8)]


def tokyo(d: date, h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(d.year, d.month, d.day, h, m, s, tzinfo=TOKYO).astimezone(timezone.utc)


@pytest.fixture(scope="module")
def slack() -> Iterator[Receiver]:
    yield from serving()  # a real local HTTP server standing in for Slack


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, slack: Receiver) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("calendar-dev")
    repo = make_repo(tmp / "repo")
    for other in (repo.path / "jobs").glob("*/*.jsonnet"):  # only this job's schedules fire
        other.unlink()
    with open(repo.path / "jobplane.toml", "a") as f:
        f.write(CALENDARS)
    repo.write("jobs/billing/gw-report.jsonnet", textwrap.dedent(JOB))
    p = DevPlatform(load_config(repo.path), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600, catch_up_interval=3600, webhook_url=slack.url).start()
    yield p
    p.stop()


def test_golden_week_starts_nothing_on_closed_days_and_misses_nothing(platform: DevPlatform, slack: Receiver) -> None:
    aws = platform.aws
    now = [tokyo(date(2026, 4, 27), 12)]
    scheduler = LocalScheduler(aws.client("scheduler"), aws.client("stepfunctions"), platform.deployment.name_prefix,
                               clock=lambda: now[0])
    scheduler.start()
    fired = []
    day = date(2026, 4, 28)
    while day <= date(2026, 5, 8):  # the clock moves day by day, just past 09:00 Tokyo
        now[0] = tokyo(day, 9, 0, 30)
        fired += scheduler.tick()
        day += timedelta(days=1)
    assert [(f.schedule.startswith("jp-gw-report"), f.scheduled_time) for f in fired] == [
        (True, tokyo(d, 9)) for d in BUSINESS]
    for f in fired:
        assert aws.wait(f.execution_arn, timeout=300).status == "SUCCEEDED"
    runs = platform.control.repo.executions("gw-report", limit=100).items
    assert sorted((r.scheduled_time, r.status) for r in runs) == [
        (execution_input.iso(tokyo(d, 9)), "SUCCEEDED") for d in BUSINESS]  # no SKIPPED, no run on a closed day
    # the fire ledger over the same days, its clock moved to Friday noon: nothing missed
    ledger = MissedFires(platform.control.runs, aws.client("sns"), platform.deployment.topic_arn, aws.client("sqs"),
                         clock=lambda: tokyo(date(2026, 5, 8), 12), grace=timedelta(seconds=30))
    _watermark(platform, tokyo(date(2026, 4, 27), 12))
    for _ in range(40):  # a pass accounts for at most 12 hours of one job
        ledger.check({"gw-report"})
    assert missed_records(platform, "gw-report") == []
    # the next business day, Monday 05-11, does not run (the weekend before it is closed): one MISSED
    monday = MissedFires(platform.control.runs, aws.client("sns"), platform.deployment.topic_arn, aws.client("sqs"),
                         clock=lambda: tokyo(date(2026, 5, 11), 12), grace=timedelta(seconds=30))
    for _ in range(40):
        monday.check({"gw-report"})
    assert [r.scheduled_time for r in missed_records(platform, "gw-report")] == [
        execution_input.iso(tokyo(date(2026, 5, 11), 9))]
    wait_until(lambda: len(alerts(slack, "gw-report")) == 1)
    time.sleep(0.5)  # the feed has delivered what it had: no alert but that one
    assert len(alerts(slack, "gw-report")) == 1
    assert not [p for p in list(slack.posts) if "gw-report" in p.get("text", "") and "SKIPPED" in p.get("text", "")]


def _watermark(platform: DevPlatform, at: datetime) -> None:
    from jobplane.contract import datamodel as dm
    from jobplane.contract.clock import iso_millis

    platform.aws.client("dynamodb").update_item(
        TableName=platform.deployment.table, Key={"pk": {"S": dm.job_partition("gw-report")}, "sk": {"S": dm.STATE_SK}},
        UpdateExpression=f"SET {dm.ATTR_FIRES_CHECKED} = :t, job = :j, team = :team, gsi1pk = :p, gsi1sk = :j "
                         f"REMOVE {dm.ATTR_FIRES_CLAIMS}",
        ExpressionAttributeValues={":t": {"S": iso_millis(at)}, ":j": {"S": "gw-report"}, ":team": {"S": "billing"},
                                   ":p": {"S": dm.JOBS_PARTITION}})


def test_the_job_page_lists_the_next_ten_fires_on_business_days(platform: DevPlatform) -> None:
    import re

    from devkit import signed_in

    with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/jobs/gw-report", timeout=60) as r:
        page = r.read().decode()
    assert "every business day at 09:00" in page and "on jp-business business days" in page
    fires = re.findall(r'class="calendar-fire">(\d{4}-\d\d-\d\d) \w{3} 09:00 JST', page)
    assert len(fires) == 10
    official = {line.split(",")[0] for line in (Path(__file__).parent / "fixtures" / "calendars" /
                                                 "jp_national_holidays_2026_2028.csv").read_text().splitlines()}
    for day in map(date.fromisoformat, fires):  # each a business day by the Cabinet Office's list
        assert day.weekday() < 5 and day.isoformat() not in official and not (
            (day.month, day.day) >= (12, 29) or (day.month, day.day) <= (1, 3))
    skipped = re.findall(r'class="calendar-skip muted">(\d{4}-\d\d-\d\d)', page)
    assert all(fires[0] < d < fires[-1] for d in skipped)  # the closed weekdays among them, said why


def test_the_job_page_of_a_calendar_job_computes_its_fires_once_a_view(platform: DevPlatform,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 66 item 3: the page's fire lines and the job's next fires were two computations of
    the calendar's fires (~half the page at its p95, bench/portal.py); now one, and the page
    still lists the ten. Counted where both took them (the real function, each call counted)."""
    import re

    from devkit import signed_in
    from jobplane.contract import business_fires, job_fires

    real, calls = business_fires.next_calendar_fires, []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(business_fires, "next_calendar_fires", counted)
    monkeypatch.setattr(job_fires, "next_calendar_fires", counted)  # every reader's way in (issue 63 item 1)
    browser = signed_in(platform.portal_login_url)  # lands on the jobs page, which lists the job's fires too
    calls.clear()
    with browser.open(f"{platform.portal_url}/jobs/gw-report", timeout=60) as r:
        page = r.read().decode()
    assert len(re.findall(r'class="calendar-fire">', page)) == 10
    assert len(calls) == 1, calls


def test_the_job_page_of_a_calendar_job_reads_its_schedules_again_only_once_changed(platform: DevPlatform) -> None:
    """Issue 66 item 3: a calendar job deploys one schedule per cron its calendar compiles to,
    and the page read each with GetSchedule on every view; now one ListSchedules a view, and
    GetSchedule only for a schedule changed since (platform/schedule_health.py)."""
    from collections import Counter

    from devkit import signed_in

    schedules = len(platform.control.entry("gw-report").schedule)
    assert schedules > 2  # the calendar's crons: more than a job of few schedules, read directly
    calls: Counter[str] = Counter()
    scheduler = platform.control.context.scheduler  # the portal's, as it shares the dev platform's plane
    scheduler.meta.events.register("before-call.scheduler.*", lambda model, **_: calls.update([model.name]),
                                   unique_id="schedule-reads")
    try:
        browser = signed_in(platform.portal_login_url)
        views = []
        for _ in range(2):
            calls.clear()
            with browser.open(f"{platform.portal_url}/jobs/gw-report", timeout=60) as r:
                views.append(r.read().decode())
            views.append(dict(calls))
    finally:
        scheduler.meta.events.unregister("before-call.scheduler.*", unique_id="schedule-reads")
    first, second = views[1], views[3]
    assert first["ListSchedules"] == 1 and first.get("GetSchedule", 0) <= schedules
    assert second == {"ListSchedules": 1}, second  # nothing changed: nothing read again
    assert "DISABLED outside jobplane" not in views[2] and "every business day at 09:00" in views[2]
