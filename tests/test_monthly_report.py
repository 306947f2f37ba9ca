"""A job's month (issue 67 part 2): `jobplane report`, the API and the portal page compute the
same figures from the run records, in the job's own month (New York here: a fire at 23:30 on
the 30th is November's, though it is December 1st in UTC), over more records than one page."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from jobplane.cli.app import main
from jobplane.contract import execution_input
from jobplane.contract.attempts import Attempt
from jobplane.contract.clock import iso_millis, parse_iso
from jobplane.contract.records import ExecutionRecord
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.monthly_report import BadMonth, last_month, month_bounds
from portal_kit import READER, as_user, header_app

JOB = "other-team"  # the dev kit's job in America/New_York
NEW_YORK = ZoneInfo("America/New_York")
TEAM = "growth"


def _record(platform: DevPlatform, n: int, fire: datetime, status: str, took: float = 60.0, late: float = 5.0,
            job: str = JOB, team: str = TEAM, **extra: object) -> None:
    missed = status == "MISSED"  # as the fire ledger writes one: started "at" the fire, no trigger
    start = fire if missed else fire + timedelta(seconds=late)
    end = start + timedelta(seconds=took)
    record = ExecutionRecord(
        execution=f"report-{n:04d}", job=job, team=team, status=status,
        trigger=None if missed else str(extra.pop("trigger", "schedule")),
        scheduled_time=execution_input.iso(fire.astimezone(timezone.utc)),
        started_at=iso_millis(start.astimezone(timezone.utc)),
        finished_at=iso_millis(end.astimezone(timezone.utc)), given={}, transitions=5,
        timeline=() if missed else (Attempt("load", 1, iso_millis(start), iso_millis(end), status.lower()),),
        **extra)  # type: ignore[arg-type]
    platform.aws.client("dynamodb").put_item(TableName=platform.deployment.table, Item=record.to_item())


@pytest.fixture(scope="module")
def november(platform: DevPlatform) -> DevPlatform:
    """Eight records of November (New York), one just after it, one just before, and 120 of
    December: the month's are on the index's second page."""
    _record(platform, 1, datetime(2026, 11, 1, 0, 0, tzinfo=NEW_YORK), "SUCCEEDED", took=60, late=5)
    _record(platform, 2, datetime(2026, 11, 2, 0, 0, tzinfo=NEW_YORK), "SUCCEEDED", took=120, late=10)
    _record(platform, 3, datetime(2026, 11, 30, 23, 30, tzinfo=NEW_YORK), "SUCCEEDED", took=600, late=30)  # Dec 1 UTC
    _record(platform, 4, datetime(2026, 11, 3, 0, 0, tzinfo=NEW_YORK), "FAILED", failed_step="load",
            error="ConnectionError: ledger API answered 503")
    _record(platform, 5, datetime(2026, 11, 4, 0, 0, tzinfo=NEW_YORK), "SKIPPED", skip_reason="RUNNING")
    _record(platform, 6, datetime(2026, 11, 5, 0, 0, tzinfo=NEW_YORK), "MISSED", error="no run started")
    _record(platform, 7, datetime(2026, 11, 6, 0, 0, tzinfo=NEW_YORK), "ABORTED", abort_reason="REPLACED")
    _record(platform, 8, datetime(2026, 12, 1, 0, 0, tzinfo=NEW_YORK), "FAILED")  # December
    _record(platform, 9, datetime(2026, 10, 31, 23, 0, tzinfo=NEW_YORK), "FAILED")  # October
    _record(platform, 10, datetime(2026, 11, 7, 0, 0, tzinfo=NEW_YORK), "SUCCEEDED", took=30, trigger="manual",
            late=4000)  # a manual run: no start delay counted
    for i in range(120):
        _record(platform, 100 + i, datetime(2026, 12, 2, 0, 0, tzinfo=NEW_YORK) + timedelta(minutes=i), "SUCCEEDED")
    return platform


EXPECTED = {
    "counts": {"ABORTED": 1, "FAILED": 1, "MISSED": 1, "SKIPPED": 1, "SUCCEEDED": 4},
    "runs": 5, "replaced": 1, "success_rate": 4 / 5, "missed_fires": 1,  # a REPLACED abort is not a run
    "duration": {"count": 4, "median_seconds": 90.0, "p95_seconds": 600.0},
    "start_delay": {"count": 6, "median_seconds": 5.0, "p95_seconds": 30.0},  # the skip started too
}


def test_the_report_counts_the_jobs_own_month_from_its_records(november: DevPlatform, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--root", str(november.config.root), "report", JOB, "--month", "2026-11",
                                       "--data-dir", str(november.data_dir), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert (out["job"], out["month"], out["timezone"]) == (JOB, "2026-11", "America/New_York")
    assert {k: out[k] for k in EXPECTED} == EXPECTED
    assert [f["execution"] for f in out["failures"]] == ["report-0004"]  # not the REPLACED abort
    assert out["failures"][0]["step"] == "load" and "503" in out["failures"][0]["error"]
    text = CliRunner().invoke(main, ["--root", str(november.config.root), "report", JOB, "--month", "2026-11",
                                     "--data-dir", str(november.data_dir)], catch_exceptions=False).output
    assert "  success rate: 80.0%" in text and "  duration (succeeded): median 1 min 30 s, p95 10 min 0 s" in text
    assert "FAILED" in text and "report-0004 at load: ConnectionError" in text


def test_the_api_and_the_page_show_the_same_figures(november: DevPlatform) -> None:
    with TestClient(header_app(november)) as client:
        api = client.get(f"/api/jobs/{JOB}/report", params={"month": "2026-11"}, headers=as_user(READER)).json()
        assert {k: api[k] for k in EXPECTED} == EXPECTED
        page = client.get(f"/jobs/{JOB}/report", params={"month": "2026-11"}, headers=as_user(READER))
        assert page.status_code == 200
        assert '<td data-figure="success-rate">80.0%</td>' in page.text
        assert '<td data-figure="missed">1</td>' in page.text and 'href="/executions/report-0004"' in page.text
        bad = client.get(f"/api/jobs/{JOB}/report", params={"month": "2026-13"}, headers=as_user(READER))
        assert bad.status_code == 400 and "YYYY-MM" in bad.text
        assert client.get("/api/jobs/no-such-job/report", headers=as_user(READER)).status_code == 404


def test_a_teams_month_is_its_jobs_months_and_their_totals(november: DevPlatform) -> None:
    """`jobplane report --team`, the API and the page: each of the team's jobs in its own month,
    the totals over them; another team's job is not in it."""
    result = CliRunner().invoke(main, ["--root", str(november.config.root), "report", "--team", TEAM, "--month",
                                       "2026-11", "--data-dir", str(november.data_dir), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    growth = sorted(e.name for e in november.control.entries.values() if e.team == TEAM)
    assert [j["job"] for j in out["jobs"]] == growth and JOB in growth
    [mine] = [j for j in out["jobs"] if j["job"] == JOB]
    assert {k: mine[k] for k in EXPECTED} == EXPECTED  # the job's own month, as its own report says
    others = [j for j in out["jobs"] if j["job"] != JOB]
    assert (out["runs"], out["succeeded"], out["failures"], out["missed_fires"]) == (
        5 + sum(j["runs"] for j in others), 4 + sum(j["counts"].get("SUCCEEDED", 0) for j in others),
        1 + sum(len(j["failures"]) for j in others), 1 + sum(j["missed_fires"] for j in others))
    text = CliRunner().invoke(main, ["--root", str(november.config.root), "report", "--team", TEAM, "--month",
                                     "2026-11", "--data-dir", str(november.data_dir)], catch_exceptions=False).output
    assert text.startswith(f"team {TEAM}, 2026-11 (each job in its own timezone): {len(growth)} jobs")
    assert any(line.lstrip().startswith(JOB) and "success  80.0%" in line for line in text.splitlines()), text
    both = CliRunner().invoke(main, ["--root", str(november.config.root), "report", JOB, "--team", TEAM,
                                     "--data-dir", str(november.data_dir)])
    assert both.exit_code == 2 and "one of them" in both.output
    with TestClient(header_app(november)) as client:
        api = client.get(f"/api/teams/{TEAM}/report", params={"month": "2026-11"}, headers=as_user(READER)).json()
        assert api == out
        page = client.get(f"/teams/{TEAM}/report", params={"month": "2026-11"}, headers=as_user(READER))
        assert page.status_code == 200 and f'<td data-figure="runs">{out["runs"]}</td>' in page.text
        assert f'<tr data-job="{JOB}"><td><a href="/jobs/{JOB}/report?month=2026-11">' in page.text
        assert client.get("/api/teams/no-such-team/report", headers=as_user(READER)).status_code == 404
        bad = client.get(f"/api/teams/{TEAM}/report", params={"month": "2026-13"}, headers=as_user(READER))
        assert bad.status_code == 400 and "YYYY-MM" in bad.text



def test_a_team_of_many_jobs_sums_each_jobs_own_month(november: DevPlatform) -> None:
    """Team billing's jobs (read side by side): a UTC job's run at 23:30 on November 30th is
    November's, its run at 00:30 on December 1st is not; another job's failure counts once."""
    from jobplane.platform.monthly_report import team_month

    utc = timezone.utc
    _record(november, 501, datetime(2026, 11, 30, 23, 30, tzinfo=utc), "SUCCEEDED", job="flaky-load", team="billing")
    _record(november, 502, datetime(2026, 12, 1, 0, 30, tzinfo=utc), "FAILED", job="flaky-load", team="billing")
    _record(november, 503, datetime(2026, 11, 15, 6, 0, tzinfo=utc), "FAILED", job="slow-report", team="billing",
            failed_step="load", error="boom")
    entries = list(november.control.entries.values())
    billing = sorted(e.name for e in entries if e.team == "billing")
    found = team_month(november.control.context, entries, "billing", "2026-11")
    assert [r.job for r in found.jobs] == billing and len(billing) > 1
    by_job = {r.job: r for r in found.jobs}
    assert by_job["flaky-load"].counts == {"SUCCEEDED": 1} and by_job["slow-report"].counts == {"FAILED": 1}
    assert all(not r.counts for job, r in by_job.items() if job not in ("flaky-load", "slow-report"))
    assert (found.runs, found.succeeded, found.failures, found.success_rate) == (2, 1, 1, 0.5)
    assert {r.timezone for r in found.jobs} == {november.control.entries[j].timezone for j in billing}


def test_month_bounds_are_the_zones_wall_time() -> None:
    start, end = month_bounds("2026-11", "Asia/Tokyo")
    assert (start.isoformat(), end.isoformat()) == ("2026-10-31T15:00:00+00:00", "2026-11-30T15:00:00+00:00")
    start, end = month_bounds("2026-03", "America/New_York")  # across the clock change: 31 days less an hour
    assert end - start == timedelta(days=31, hours=-1)
    assert last_month("Asia/Tokyo", datetime(2026, 12, 31, 16, 0, tzinfo=timezone.utc)) == "2026-12"  # Jan 1 in Tokyo
    assert last_month("UTC", datetime(2026, 1, 15, tzinfo=timezone.utc)) == "2025-12"
    for bad in ("2026-1", "2026-00", "26-11", "2026-11-01"):
        with pytest.raises(BadMonth):
            month_bounds(bad, "UTC")


def test_metrics_is_openmetrics_a_scraper_reads(november: DevPlatform) -> None:
    """/metrics as Prometheus's own client library parses it (prometheus_client's OpenMetrics
    parser, strict about the format): one series a job, the last run's outcome a StateSet,
    behind the same sign-in as the API."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    control = november.control
    # a real run of the job: its state then says SUCCEEDED and when it ended
    ran = control.run_now("other-team", "root@example.com", {})
    november.aws.wait(november.deployment.execution_arn("other-team", ran), timeout=600)  # a hang guard
    november.aws.wait_reconciled(november.deployment.execution_arn("other-team", ran), timeout=600)
    ended = control.repo.execution(ran)
    assert ended is not None and ended.status == "SUCCEEDED" and ended.finished_at
    control.pause("other-team", "root@example.com", "a scrape shows it")
    try:
        with TestClient(header_app(november)) as client:
            assert client.get("/metrics").status_code == 401
            answer = client.get("/metrics", headers=as_user(READER))
    finally:
        control.resume("other-team", "root@example.com", "scraped")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
    families = {f.name: f for f in text_string_to_metric_families(answer.text)}
    jobs = sorted(e.name for e in control.entries.values())
    assert families["jobplane_jobs"].samples[0].value == len(jobs)
    paused = {s.labels["jobplane_job"]: s.value for s in families["jobplane_job_paused"].samples}
    assert sorted(paused) == jobs and paused["other-team"] == 1 and sum(paused.values()) == 1
    assert families["jobplane_job_last_status"].type == "stateset"
    states = {s.labels["jobplane_job_last_status"]: s.value for s in families["jobplane_job_last_status"].samples
              if s.labels["jobplane_job"] == "other-team"}
    assert set(states) >= {"SUCCEEDED", "FAILED", "MISSED"} and [k for k, v in states.items() if v == 1] == ["SUCCEEDED"]
    [finished] = [s for s in families["jobplane_job_last_finished_timestamp_seconds"].samples
                  if s.labels["jobplane_job"] == "other-team"]
    assert families["jobplane_job_last_finished_timestamp_seconds"].unit == "seconds"
    assert abs(finished.value - parse_iso(ended.finished_at).timestamp()) < 1
    # no label Prometheus sets itself (`job`), nor one per run
    assert all(set(s.labels) <= {"jobplane_job", "team", "jobplane_job_last_status"} for f in families.values()
               for s in f.samples)
