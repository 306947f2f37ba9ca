"""Spread start times (issue 69 part 5): ``spread: '30m'`` moves a job's fires by a stable offset
from its name, resolved when the job is read, so what is deployed, the catalog every reader of
fires uses, and ``jobplane next`` agree. Proved against the job written without a spread: each
fire is the written one plus the offset, through the catalog and through the schedules deployed
on the local engine (evaluated as EventBridge Scheduler does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import Repo
from jobplane.contract import names, spread
from jobplane.contract.catalog import Catalog
from jobplane.contract.job_fires import JobSchedule, job_fires
from jobplane.platform.local.engine import LocalAWS

ROOT = Path(__file__).resolve().parents[1]
START = datetime(2027, 1, 1, tzinfo=timezone.utc)
END = datetime(2027, 12, 31, 23, 59, tzinfo=timezone.utc)

JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%(name)s',
  team: 'billing',
  timezone: '%(zone)s',
  schedule: %(schedule)s,
  steps: [jp.python('run', 'examples.noop:run')],
} + %(extra)s
"""

#: name -> (schedule as Jsonnet, timezone): every-day, several times a day, weekdays, monthly, an
#: hourly cron whose minutes carry into the next hour, a job with two expressions
WRITTEN = {
    "nightly-ledger": ("jp.daily('00:00')", "Asia/Tokyo"),
    "twice-daily-sync": ("'cron(0,30 2,14 * * ? *)'", "UTC"),
    "weekday-export": ("'cron(0 9 ? * MON-FRI *)'", "America/New_York"),  # across both clock changes
    "month-start-report": ("'cron(15 6 1 * ? *)'", "Europe/London"),
    "quarter-hour-poll": ("'cron(0/15 * * * ? *)'", "UTC"),
    "two-schedules": ("['cron(0 3 * * ? *)', 'cron(0 12 ? * SAT *)']", "Asia/Tokyo"),
}


def write_jobs(repo: Repo, spread_window: str | None) -> None:
    for name, (schedule, zone) in WRITTEN.items():
        extra = json.dumps({"spread": spread_window} if spread_window else {})
        repo.write(f"jobs/billing/{name}.jsonnet", JOB % {"name": name, "zone": zone, "schedule": schedule,
                                                         "extra": extra})


def new_repo(path: Path) -> Repo:
    path.mkdir()
    return Repo(path)


def catalog_of(repo: Repo) -> Catalog:
    result = repo.cli("compile")
    assert result.exit_code == 0, result.output
    return Catalog.load(repo.out)


def test_each_fire_is_the_written_one_moved_by_the_jobs_own_stable_offset(tmp_path: Path) -> None:
    written, spread_repo = new_repo(tmp_path / "written"), new_repo(tmp_path / "spread")
    write_jobs(written, None)
    write_jobs(spread_repo, "45m")
    before, after = catalog_of(written), catalog_of(spread_repo)
    offsets = set()
    for name in WRITTEN:
        offset = spread.offset_minutes(45 * 60, name)
        offsets.add(offset)
        assert 0 <= offset < 45
        old, new = before.job(name), after.job(name)
        moved = [f.at for f in job_fires(JobSchedule(tuple(new.schedule), new.timezone), START, END)]
        expected = [f.at + timedelta(minutes=offset)
                    for f in job_fires(JobSchedule(tuple(old.schedule), old.timezone), START - timedelta(minutes=offset),
                                       END - timedelta(minutes=offset))]
        assert moved == expected, (name, offset, new.schedule)
        assert moved, name
    assert len(offsets) > 1, "every job got the same offset: no spread"


def test_the_offset_is_the_same_in_every_process_and_spreads_a_fleet(tmp_path: Path) -> None:
    """sha256 of the name, not Python's per-process hash: another interpreter with another hash
    seed gives the same offsets; and 600 jobs written for 00:00 land on most of the window's minutes."""
    names = [f"job-{i}" for i in range(600)]
    here = [spread.offset_minutes(1800, n) for n in names]
    code = ("import json, sys; from jobplane.contract.spread import offset_minutes; "
            "print(json.dumps([offset_minutes(1800, n) for n in json.loads(sys.argv[1])]))")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, json.dumps(names)], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
        assert json.loads(out.stdout) == here
    per_minute = {m: here.count(m) for m in set(here)}
    assert len(per_minute) == 30 and max(per_minute.values()) < 60  # 600 at one minute before


def test_a_spread_seed_keeps_a_renamed_jobs_times(repo: Repo) -> None:
    repo.write("jobs/billing/old-name.jsonnet", JOB % {"name": "old-name", "zone": "UTC",
                                                        "schedule": "jp.daily('01:00')",
                                                        "extra": json.dumps({"spread": "1h"})})
    first = catalog_of(repo).job("old-name").schedule
    (repo.path / "jobs/billing/old-name.jsonnet").unlink()
    repo.write("jobs/billing/new-name.jsonnet", JOB % {"name": "new-name", "zone": "UTC",
                                                        "schedule": "jp.daily('01:00')",
                                                        "extra": json.dumps({"spread": "1h", "spread_seed": "old-name"})})
    assert catalog_of(repo).job("new-name").schedule == first
    assert first != ["cron(0 1 * * ? *)"] or spread.offset_minutes(3600, "old-name") == 0


def terraform_schedules(repo: Repo) -> dict[str, list[str]]:
    """Each job's schedule expressions as its compiled Terraform gives them to AWS."""
    out: dict[str, list[str]] = {}
    for path in sorted(repo.out.rglob("*.job.tf.json")):
        for spec in json.loads(path.read_text())["resource"].get("aws_scheduler_schedule", {}).values():
            out.setdefault(spec["description"].split(" (")[0], []).append(spec["schedule_expression"])
    return out


def test_the_schedules_deployed_on_the_local_engine_and_in_terraform_are_the_moved_ones(repo: Repo) -> None:
    write_jobs(repo, "30m")
    catalog = catalog_of(repo)
    compiled = terraform_schedules(repo)
    with LocalAWS() as aws:
        aws.deploy_output(repo.out)
        scheduler = aws.client("scheduler")
        for name in WRITTEN:
            schedule = catalog.job(name).schedule
            deployed = [scheduler.get_schedule(Name=names.schedule_name(aws.prefix, name, i),
                                               GroupName=aws.prefix)["ScheduleExpression"]
                        for i in range(len(schedule))]
            assert deployed == schedule == compiled[name] and schedule, name


def test_next_says_the_offset_and_shows_the_moved_times(repo: Repo) -> None:
    repo.write("jobs/billing/nightly-ledger.jsonnet", JOB % {
        "name": "nightly-ledger", "zone": "UTC", "schedule": "jp.daily('00:00')", "extra": json.dumps({"spread": "30m"})})
    offset = spread.offset_minutes(1800, "nightly-ledger")
    result = repo.cli("next", "nightly-ledger", "--after", "2027-03-01T00:00:00+00:00", "-n", "2")
    assert result.exit_code == 0, result.output
    assert f"every fire moved +{offset} min (from its name)" in result.output
    assert f"2027-03-01 Mon 00:{offset:02d} UTC" in result.output and f"2027-03-02 Tue 00:{offset:02d} UTC" in result.output


def test_a_business_day_rule_moves_its_time_and_keeps_its_days(tmp_path: Path) -> None:
    written, moved = new_repo(tmp_path / "a"), new_repo(tmp_path / "b")
    for r, extra in ((written, {}), (moved, {"spread": "2h"})):
        r.write("jobs/billing/close.jsonnet", JOB % {
            "name": "close", "zone": "Asia/Tokyo", "schedule": "jp.monthly(business_day=1, at='09:00')",
            "extra": json.dumps({"calendar": "jp-business", **extra})})
    old, new = catalog_of(written).job("close"), catalog_of(moved).job("close")
    offset = spread.offset_minutes(7200, "close")
    assert new.rules == [f"business(monthly business_day=1 at={9 + offset // 60:02d}:{offset % 60:02d})"]
    fires = [f.at for f in job_fires(new, START, END)]
    assert fires == [f.at + timedelta(minutes=offset) for f in job_fires(old, START, END)] and len(fires) == 12


def test_what_a_spread_cannot_move_is_refused_naming_file_job_and_field_all_at_once(repo: Repo) -> None:
    jobs = {
        # 23:50 on Mondays moved past midnight would fire on Tuesdays
        "late-weekly": ("'cron(50 23 ? * MON *)'", {"spread": "1d", "spread_seed": "x"}),
        "by-rate": ("'rate(1 hour)'", {"spread": "30m"}),
        "near-deadline": ("jp.daily('11:00')", {"spread": "12h", "deadline": "11:05"}),
        "odd-window": ("jp.daily('01:00')", {"spread": "90s"}),
        # 23:50 wrapped past midnight: a wall-time deadline of the fire's day would be a day away
        "wrapped": ("jp.daily('23:50')", {"spread": "1d", "spread_seed": "x", "deadline": "23:59"}),
        "by-hand": ("[]", {"spread": "10m"}),
    }
    for name, (schedule, extra) in jobs.items():
        repo.write(f"jobs/billing/{name}.jsonnet", JOB % {"name": name, "zone": "UTC", "schedule": schedule,
                                                          "extra": json.dumps(extra)})
    assert spread.offset_minutes(86400, "x") + 23 * 60 + 50 >= 24 * 60  # the seed chosen so the fire crosses
    assert spread.offset_minutes(12 * 3600, "near-deadline") >= 5
    result = repo.cli("validate")
    assert result.exit_code != 0
    out = result.output
    assert "late-weekly.jsonnet" in out and "past local midnight, onto a day its rule does not name" in out
    assert "by-rate" in out and "rate(1 hour) fires every interval from its deployment" in out
    assert "near-deadline" in out and "'11:05' is not after" in out
    assert "odd-window" in out and "spread (90s) must be whole minutes" in out
    assert "wrapped" in out and "past midnight, onto the next day" in out
    assert "by-hand" in out and "this job has no schedule" in out


@pytest.mark.parametrize("text,offset,calendar,expected", [
    ("cron(50 23 * * ? *)", 20, False, ["cron(10 0 * * ? *)"]),  # an every-day cron wraps
    ("cron(0,30 9 ? * MON-FRI *)", 45, False, ["cron(45 9 ? * MON-FRI *)", "cron(15 10 ? * MON-FRI *)"]),
    ("at(2027-05-01T23:30:00)", 45, False, ["at(2027-05-02T00:15:00)"]),
])
def test_how_one_expression_moves(text: str, offset: int, calendar: bool, expected: list[str]) -> None:
    assert spread.move(text, offset, calendar) == expected


def test_on_a_calendar_job_no_fire_crosses_midnight() -> None:
    with pytest.raises(spread.SpreadError, match="past local midnight"):
        spread.move("cron(50 23 * * ? *)", 20, calendar=True)
    with pytest.raises(spread.SpreadError, match="past local midnight"):
        spread.move("business(days at=23:30)", 45, calendar=True)


def test_plan_starts_shows_the_herd_its_pool_demand_and_that_spread_breaks_it_up(repo: Repo) -> None:
    """`jobplane plan --starts`: 24 jobs written for 00:00 UTC, 8 of them holding 2 slots of a
    pool of 3, are one minute of 24 starts asking 16 slots; spread over an hour, no minute holds
    more than a few, and the pool line follows the moved fires."""
    with (repo.path / "jobplane.toml").open("a") as toml:
        toml.write('\n[pools.billing-db]\nsize = 3\nteams = ["billing"]\n')

    def write(spread_window: str | None) -> None:
        for i in range(24):
            extra = {"spread": spread_window} if spread_window else {}
            if i < 8:
                extra["pool"] = {"name": "billing-db", "weight": 2}
            repo.write(f"jobs/billing/herd-{i}.jsonnet", JOB % {"name": f"herd-{i}", "zone": "UTC",
                                                                 "schedule": "jp.daily('00:00')",
                                                                 "extra": json.dumps(extra)})

    write(None)
    result = repo.cli("plan", "--starts")
    assert result.exit_code == 0, result.output
    assert "24 fires at 1 distinct minutes, of 24 scheduled jobs" in result.output
    herd = next(line for line in result.output.splitlines() if line.strip().endswith("#" * 40))
    assert " 00:00" in herd and "24 starts" in herd
    assert "billing-db (size 3): 00:00 16 (13 wait)" in result.output
    assert "24 of 24 fires share their minute with another job" in result.output

    write("1h")
    result = repo.cli("plan", "--starts")
    assert result.exit_code == 0, result.output
    per_minute: dict[int, int] = {}
    for i in range(24):
        m = spread.offset_minutes(3600, f"herd-{i}")
        per_minute[m] = per_minute.get(m, 0) + 1
    assert f"24 fires at {len(per_minute)} distinct minutes" in result.output and len(per_minute) > 12
    top = max(per_minute.values())
    assert f"{top} starts" in result.output and "24 starts" not in result.output


def test_a_move_into_a_clock_changes_gap_is_refused_where_the_written_time_fired(repo: Repo) -> None:
    """EventBridge skips a local time that does not exist: 01:30 moved 44 minutes in New York is
    02:14, which 2027-03-14 does not have, so the move would drop that day's fire. The same job in
    Tokyo (no clock change) is moved."""
    seed = next(f"s{i}" for i in range(1000) if 30 < spread.offset_minutes(3600, f"s{i}") < 60)
    offset = spread.offset_minutes(3600, seed)
    for name, zone in (("in-new-york", "America/New_York"), ("in-tokyo", "Asia/Tokyo")):
        repo.write(f"jobs/billing/{name}.jsonnet", JOB % {"name": name, "zone": zone, "schedule": "jp.daily('01:30')",
                                                          "extra": json.dumps({"spread": "1h", "spread_seed": seed})})
    result = repo.cli("validate")
    assert result.exit_code != 0
    line = next(line for line in result.output.splitlines() if "in-new-york" in line)
    assert f"to 02:{offset - 30:02d}, a time that does not exist on 2027-03-14 in America/New_York" in line
    assert "in-tokyo" not in result.output


def test_a_jobs_pool_demand_counts_a_groups_members_together_and_a_maps_items_at_their_concurrency() -> None:
    from jobplane.compiler.model import Job
    from jobplane.compiler.starts import pool_weights

    pool = {"name": "billing-db", "weight": 2}
    steps = [{"name": "prepare", "shell": ["true"], "pool": pool},  # 2, then
             {"name": "both", "parallel": [{"name": "a", "shell": ["true"], "pool": pool},
                                           {"name": "b", "shell": ["true"], "pool": pool}]},  # 4 at once, then
             {"name": "tenants", "map": {"items": {"name": "list", "python": "m:items"},
                                         "each": {"name": "one", "shell": ["true"], "pool": pool},
                                         "max_concurrency": 5}}]  # 10 at once

    def job(*chosen: dict) -> Job:  # type: ignore[type-arg]
        return Job.from_definition({"name": "close", "team": "billing", "timezone": "UTC", "steps": list(chosen)})

    assert pool_weights(job(*steps)) == {"billing-db": 10}
    assert pool_weights(job(*steps[:2])) == {"billing-db": 4}
    assert pool_weights(job(steps[0])) == {"billing-db": 2}
