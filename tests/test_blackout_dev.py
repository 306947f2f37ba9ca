"""Blackout windows at run time (issue 69 part 3) under `jobplane dev`: the compiled state
machine on the local engine with the real runner. A scheduled fire inside a window is recorded
BLACKED_OUT (naming the window), its step never runs, nothing is alerted; the fire ledger does
not count it MISSED and its deadline is suspended, while a fire outside the window is held to
both; a defer window's fires run once when it ends, however many passes ask."""

from __future__ import annotations

import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator
from zoneinfo import ZoneInfo

import pytest

from devkit import make_repo
from ledger_kit import missed_records
from slack_receiver import Receiver, serving

from jobplane.contract import datamodel as dm
from jobplane.contract import execution_input
from jobplane.contract.clock import iso_millis
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.blackouts import DeferredRuns, deferred_name
from jobplane.platform.control import ControlPlane
from jobplane.platform.deadlines import DeadlineWatch
from jobplane.platform.missed import MissedFires

TOKYO = ZoneInfo("Asia/Tokyo")
WINDOWS = """
[blackouts]
years = [2026, 2028]

[blackouts.db-maint]               # all of 2027-03-01, Tokyo time
dates = ["2027-03-01"]
timezone = "Asia/Tokyo"

[blackouts.month-close]            # 2027-03-05 09:00-12:00 Tokyo: its fires run once at 12:00
cron = "cron(0 9 5 3 ? 2027)"
duration = "3h"
timezone = "Asia/Tokyo"
action = "defer"
"""
JOB = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: '%(name)s',
      team: 'billing',
      schedule: '%(schedule)s',
      timezone: 'Asia/Tokyo',
      policy: jp.policy.ALWAYS_RUN,
      deadline: '30m',
      blackout: ['db-maint', 'month-close'],
      params: { mode: 'ok', marker: '%(marker)s', seconds: 0, release: null },
      steps: [jp.python('work', 'sample_apps.functions:behave')],
      notify: jp.slack('#billing-alerts'),
    }
"""


def tokyo(d: int, h: int, m: int = 0, month: int = 3) -> datetime:
    return datetime(2027, month, d, h, m, tzinfo=TOKYO).astimezone(timezone.utc)


PARAMS: dict[str, object] = {}


@pytest.fixture(scope="module")
def slack() -> Iterator[Receiver]:
    yield from serving()


@pytest.fixture(scope="module")
def marker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("markers") / "ran"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, slack: Receiver, marker: Path) -> Iterator[DevPlatform]:
    PARAMS.update(mode="ok", marker=str(marker), seconds=0, release=None)  # what each schedule sends: the job's
    tmp = tmp_path_factory.mktemp("blackout-dev")
    repo = make_repo(tmp / "repo")
    for other in (repo.path / "jobs").glob("*/*.jsonnet"):
        other.unlink()
    with open(repo.path / "jobplane.toml", "a") as f:
        f.write(WINDOWS)
    repo.write("jobs/billing/hourly.jsonnet", textwrap.dedent(JOB % {
        "name": "hourly", "schedule": "cron(0 * * * ? *)", "marker": marker}))
    repo.write("jobs/billing/ten-minutes.jsonnet", textwrap.dedent(JOB % {
        "name": "ten-minutes", "schedule": "cron(0/10 * * * ? *)", "marker": marker}))
    p = DevPlatform(load_config(repo.path), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600, catch_up_interval=3600, webhook_url=slack.url).start()
    yield p
    p.stop()


def fire(platform: DevPlatform, job: str, at: datetime) -> str:
    """Start ``job`` as its schedule does for the fire ``at``; its execution name once handled."""
    arn = platform.aws.start(job, execution_input.scheduled(at, PARAMS))
    platform.aws.wait(arn, timeout=300)
    platform.aws.wait_reconciled(arn, timeout=300)
    return arn.rsplit(":", 1)[1]


def runs_of(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def watermark(platform: DevPlatform, job: str, at: datetime) -> None:
    """The job's fire ledger starts after ``at`` (as a job deployed then)."""
    platform.aws.client("dynamodb").update_item(
        TableName=platform.deployment.table, Key={"pk": {"S": dm.job_partition(job)}, "sk": {"S": dm.STATE_SK}},
        UpdateExpression=f"SET {dm.ATTR_FIRES_CHECKED} = :t, job = :j, team = :team, gsi1pk = :p, gsi1sk = :j "
                         f"REMOVE {dm.ATTR_FIRES_CLAIMS}",
        ExpressionAttributeValues={":t": {"S": iso_millis(at)}, ":j": {"S": job}, ":team": {"S": "billing"},
                                   ":p": {"S": dm.JOBS_PARTITION}})


def test_a_fire_inside_a_window_is_recorded_blacked_out_and_never_runs(platform: DevPlatform, marker: Path,
                                                                       slack: Receiver) -> None:
    before = runs_of(marker)
    name = fire(platform, "hourly", tokyo(1, 10))  # inside db-maint
    record = platform.control.repo.execution(name)
    assert record is not None
    assert (record.status, record.blackout, record.blackout_action) == ("BLACKED_OUT", "db-maint", "skip")
    assert record.scheduled_time == execution_input.iso(tokyo(1, 10)) and record.trigger == "schedule"
    assert runs_of(marker) == before  # the runner never started the step
    # the job's state was not claimed: its last status is not the blackout
    state = platform.control.repo.job_state("hourly")
    assert state is None or state.last_status != "BLACKED_OUT"
    # a fire after the window's end runs
    ran = platform.control.repo.execution(fire(platform, "hourly", tokyo(2, 0)))
    assert ran is not None and ran.status == "SUCCEEDED" and runs_of(marker) == before + 1
    time.sleep(0.5)  # the feed delivers what it has: nothing about the blackout
    assert not [p for p in list(slack.posts) if "hourly" in p.get("text", "")]


def test_a_manual_run_inside_a_window_runs(platform: DevPlatform, marker: Path) -> None:
    before = runs_of(marker)
    given = execution_input.manual("aiko@example.com", PARAMS)
    arn = platform.aws.start("hourly", given)  # now is outside the windows; a manual run is never refused anyway
    platform.aws.wait(arn, timeout=300)
    assert runs_of(marker) == before + 1


def test_the_fire_ledger_counts_no_fire_inside_a_window_missed(platform: DevPlatform) -> None:
    """Nothing ran on 2027-03-01 (the whole day blacked out, nothing even started): no MISSED.
    The next day's 00:00 fire, outside the window, did not run either: MISSED (the ledger looks)."""
    ledger = MissedFires(platform.control.runs, platform.aws.client("sns"), platform.deployment.topic_arn,
                         platform.aws.client("sqs"), clock=lambda: tokyo(1, 23, 30), grace=timedelta(seconds=30))
    watermark(platform, "ten-minutes", tokyo(28, 23, 55, month=2))
    for _ in range(4):
        ledger.check({"ten-minutes"})
    assert missed_records(platform, "ten-minutes") == []
    later = MissedFires(platform.control.runs, platform.aws.client("sns"), platform.deployment.topic_arn,
                        platform.aws.client("sqs"), clock=lambda: tokyo(2, 0, 5), grace=timedelta(seconds=30))
    for _ in range(4):
        later.check({"ten-minutes"})
    assert [r.scheduled_time for r in missed_records(platform, "ten-minutes")] == [
        execution_input.iso(tokyo(2, 0))]


def test_a_fire_inside_a_window_has_no_deadline(platform: DevPlatform) -> None:
    """hourly's fires of 2027-03-01 (blacked out, or never started) are past their 30m deadline:
    none is decided; the fires either side of the window are."""
    control = ControlPlane(platform.deployment)
    watch = DeadlineWatch(control.reads, platform.deployment.client("sns"), platform.deployment.topic_arn,
                          clock=lambda: tokyo(1, 23, 59))
    watch.check({"hourly"})
    decided = {o.fire: o.outcome for o in watch.outcomes("hourly", execution_input.iso(tokyo(27, 0, month=2)))}
    # the day before the window (the checker looks back 24 hours): breached, nothing ran them
    assert decided and set(decided.values()) == {"BREACHED"}
    assert max(decided) == execution_input.iso(tokyo(28, 23, month=2))  # none of 2027-03-01
    after = DeadlineWatch(control.reads, platform.deployment.client("sns"), platform.deployment.topic_arn,
                          clock=lambda: tokyo(2, 1, 45))
    after.check({"hourly"})
    # after the window: decided again (the 01:00 fire nothing ran, breached); still none of 2027-03-01
    later = {o.fire: o.outcome for o in after.outcomes("hourly", execution_input.iso(tokyo(1, 0)))}
    assert later.get(execution_input.iso(tokyo(2, 1))) == "BREACHED"
    assert min(later) == execution_input.iso(tokyo(2, 0))


def test_a_defer_windows_fires_run_once_when_it_ends(platform: DevPlatform, marker: Path) -> None:
    """month-close (09:00-12:00): the 09:00, 10:00, 11:00 fires are recorded BLACKED_OUT (defer);
    at its end one run starts, as the 11:00 fire, however many passes and checkers ask."""
    for h in (9, 10, 11):
        record = platform.control.repo.execution(fire(platform, "hourly", tokyo(5, h)))
        assert record is not None and (record.status, record.blackout_action) == ("BLACKED_OUT", "defer")
    during = DeferredRuns(platform.control.runs, clock=lambda: tokyo(5, 11, 59))
    assert during.check({"hourly"}) == []  # not over yet: nothing owed
    before = runs_of(marker)
    passes = [DeferredRuns(ControlPlane(platform.deployment).runs, clock=lambda: tokyo(5, 12, 3)) for _ in range(3)]
    started = [name for p in passes for name in p.check({"hourly"})]
    expected = deferred_name("hourly", "month-close", tokyo(5, 12))
    assert started == [expected]  # once, by the first pass; the others found it started
    arn = platform.deployment.execution_arn("hourly", expected)
    platform.aws.wait(arn, timeout=300)
    platform.aws.wait_reconciled(arn, timeout=300)
    record = platform.control.repo.execution(expected)
    assert record is not None and record.status == "SUCCEEDED"
    assert record.scheduled_time == execution_input.iso(tokyo(5, 11)) and record.trigger == "schedule"
    assert record.requested_by == "blackout month-close (deferred)"
    assert runs_of(marker) == before + 1
    entries = [e for e in platform.control.repo.audit_log(500)
               if e.action == "blackout-deferred-run" and e.job == "hourly"]
    assert len(entries) == 1 and entries[0].execution == expected


def test_the_portal_shows_the_window_and_the_blacked_out_fire(platform: DevPlatform) -> None:
    from devkit import signed_in

    name = fire(platform, "hourly", tokyo(1, 13))
    browser = signed_in(platform.portal_login_url)
    with browser.open(f"{platform.portal_url}/jobs/hourly", timeout=60) as r:
        page = r.read().decode()
    assert "Blackout windows" in page
    assert "db-maint: fires inside are skipped; next 2027-03-01 00:00 to 2027-03-02 00:00 JST" in page
    assert "month-close: fires inside run once when it ends" in page
    assert f'data-execution="{name}"' in page and 'data-status="BLACKED_OUT"' in page and "window db-maint" in page
    with browser.open(f"{platform.portal_url}/executions/{name}", timeout=60) as r:
        run = r.read().decode()
    assert "a fire inside blackout window db-maint: skipped" in run
