"""Blackout windows (issue 69 part 3): declared once in jobplane.toml, named by jobs (or their
team's defaults), resolved at compile time into concrete occurrences that the catalog, the
state machine and `jobplane next` share; unknown names refused naming file, job and field."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from conftest import Repo
from jobplane.contract.blackouts import WindowDef, blackout_of, occurrences, parse_blackouts
from jobplane.contract.catalog import Catalog
from jobplane.contract.config import ConfigError, load_config

TOKYO = ZoneInfo("Asia/Tokyo")
WINDOWS = """
[blackouts.db-maint]
cron = "cron(0 2 ? * SUN *)"
duration = "3h"

[blackouts.year-end]
dates = ["12-29..01-03"]
action = "defer"
freeze = true

[blackouts.golden-week]
calendar = "jp-holidays"
"""
JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%(name)s',
  team: 'billing',
  schedule: 'cron(0 * * * ? *)',
  steps: [jp.python('run', 'examples.noop:run')],
} + %(extra)s
"""


def with_windows(repo: Repo, extra: str = "") -> Repo:
    """The repository's jobplane.toml with these windows in place of the example's."""
    toml = repo.path / "jobplane.toml"
    toml.write_text(re.sub(r"\[blackouts\.db-maint\]\n(?:[^\[\n#][^\n]*\n)*", "", toml.read_text()) + WINDOWS + extra)
    return repo


def write_job(repo: Repo, name: str, **extra: object) -> None:
    repo.write(f"jobs/billing/{name}.jsonnet", JOB % {"name": name, "extra": json.dumps(extra)})


def tokyo(y: int, mo: int, d: int, h: int = 0, mi: int = 0) -> datetime:
    return datetime(y, mo, d, h, mi, tzinfo=TOKYO).astimezone(timezone.utc)


def test_a_cron_window_occurs_at_its_times_for_its_duration_in_its_zone() -> None:
    window = WindowDef("db-maint", cron="cron(0 2 ? * SUN *)", duration=3 * 3600)
    found = occurrences(window, "Asia/Tokyo", (2027, 2027))
    assert len(found) == 52  # every Sunday of 2027
    assert found[0] == (tokyo(2027, 1, 3, 2), tokyo(2027, 1, 3, 5))
    assert all(s.astimezone(TOKYO).weekday() == 6 and (e - s).total_seconds() == 3 * 3600 for s, e in found)


def test_a_dates_window_is_whole_days_and_a_range_may_wrap_the_year() -> None:
    window = WindowDef("year-end", dates=("12-29..01-03", "2027-05-06"))
    found = occurrences(window, "Asia/Tokyo", (2027, 2027))
    # 01-01..01-03 (the closure begun in 2026), 05-06, 12-29..12-31 (going on into 2028)
    assert found == [(tokyo(2027, 1, 1), tokyo(2027, 1, 4)), (tokyo(2027, 5, 6), tokyo(2027, 5, 7)),
                     (tokyo(2027, 12, 29), tokyo(2028, 1, 1))]


def test_a_calendar_window_is_its_closed_days(repo: Repo) -> None:
    config = load_config(with_windows(repo).path)
    from jobplane.compiler.blackouts import _closed

    days = _closed(config.blackouts.windows["golden-week"], config)
    assert date(2027, 5, 3) in days and date(2027, 5, 5) in days and date(2027, 5, 6) not in days


def test_a_fire_is_inside_from_the_start_up_to_not_including_the_end() -> None:
    from jobplane.contract.blackouts import JobWindow

    w = JobWindow("db-maint", "skip", False, ((tokyo(2027, 1, 3, 2), tokyo(2027, 1, 3, 5)),))
    assert blackout_of([w], tokyo(2027, 1, 3, 1, 59)) is None
    assert blackout_of([w], tokyo(2027, 1, 3, 2)) is not None
    assert blackout_of([w], tokyo(2027, 1, 3, 4, 59)) is not None
    assert blackout_of([w], tokyo(2027, 1, 3, 5)) is None


def test_jobplane_toml_problems_name_the_file_and_the_field() -> None:
    raw = {"bad-both": {"cron": "cron(0 2 ? * SUN *)", "dates": ["12-31"], "duration": "3h"},
           "no-duration": {"cron": "cron(0 2 ? * SUN *)"},
           "odd": {"dates": ["13-01"], "action": "later", "freeze": "yes", "colour": "red"},
           "cal": {"calendar": "nope"}}
    _, problems = parse_blackouts("jobplane.toml", raw, {"billing"}, {"jp-business"})
    text = "\n".join(problems)
    for expected in ("jobplane.toml: blackouts.bad-both: says when with exactly one of cron",
                     "jobplane.toml: blackouts.no-duration.duration: a cron window needs how long",
                     "jobplane.toml: blackouts.odd.dates:", "jobplane.toml: blackouts.odd.action:",
                     "jobplane.toml: blackouts.odd.freeze:", "jobplane.toml: blackouts.odd.colour: unknown key",
                     "jobplane.toml: blackouts.cal.calendar: 'nope' is no calendar"):
        assert expected in text, text


def test_a_teams_default_window_must_exist(repo: Repo) -> None:
    with_windows(repo)
    text = (repo.path / "jobplane.toml").read_text().replace(
        '[teams.growth]\n', '[teams.growth]\nblackout = ["db-maint", "dbmaint"]\n')
    (repo.path / "jobplane.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(repo.path)
    assert "jobplane.toml: teams.growth.blackout[1]: 'dbmaint' is no window of [blackouts]" in str(e.value)


def test_an_unknown_window_is_refused_naming_file_job_and_field(repo: Repo) -> None:
    with_windows(repo)
    write_job(repo, "nightly", blackout=["db-maint", "db-maintenance"])
    result = repo.cli("validate")
    assert result.exit_code != 0
    assert "jobs/billing/nightly.jsonnet" in result.output and "nightly" in result.output
    assert "blackout[1]" in result.output and "no window 'db-maintenance' in jobplane.toml's [blackouts]" in result.output


def test_the_catalog_and_the_state_machine_carry_the_same_occurrences(repo: Repo) -> None:
    with_windows(repo)
    write_job(repo, "nightly", blackout=["db-maint"])
    write_job(repo, "plain")
    result = repo.cli("compile")
    assert result.exit_code == 0, result.output
    catalog = Catalog.load(repo.out)
    entry = next(j for j in catalog.jobs if j.name == "nightly")
    (window,) = entry.windows
    assert window.name == "db-maint" and window.action == "skip" and len(window.intervals) == 157  # 2026-2028
    assert next(j for j in catalog.jobs if j.name == "plain").blackouts == []
    module = json.loads((repo.out / "teams" / "billing" / "nightly.job.tf.json").read_text())
    definition = json.loads(module["resource"]["aws_sfn_state_machine"]["nightly"]["definition"])
    assert definition["StartAt"] == "Blackout"
    rule = definition["States"]["Blackout"]["Choices"][0]
    bounds = [(r["And"][0]["TimestampGreaterThanEquals"], r["And"][1]["TimestampLessThan"])
              for r in rule["And"][-1]["Or"]]
    assert bounds == [(s.strftime("%Y-%m-%dT%H:%M:%SZ"), e.strftime("%Y-%m-%dT%H:%M:%SZ")) for s, e in window.intervals]
    plain = json.loads((repo.out / "teams" / "billing" / "plain.job.tf.json").read_text())
    assert "Blackout" not in plain["resource"]["aws_sfn_state_machine"]["plain"]["definition"]


def test_a_teams_default_windows_apply_to_its_jobs(repo: Repo) -> None:
    with_windows(repo)
    text = (repo.path / "jobplane.toml").read_text().replace(
        '[teams.billing]\n', '[teams.billing]\nblackout = ["year-end"]\n')
    (repo.path / "jobplane.toml").write_text(text)
    write_job(repo, "nightly", blackout=["db-maint"])
    assert repo.cli("compile").exit_code == 0
    entry = next(j for j in Catalog.load(repo.out).jobs if j.name == "nightly")
    assert [(w.name, w.action, w.freeze) for w in entry.windows] == [("db-maint", "skip", False),
                                                                     ("year-end", "defer", True)]


def test_next_marks_the_fires_inside_a_window(repo: Repo) -> None:
    with_windows(repo)
    write_job(repo, "nightly", blackout=["db-maint", "year-end"])
    result = repo.cli("next", "nightly", "--after", "2027-03-07T00:30:00+09:00", "-n", "6")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "2027-03-07 Sun" in line]
    assert [("BLACKED OUT by db-maint (skipped" in line) for line in lines] == [False, True, True, True, False, False]
    result = repo.cli("next", "nightly", "--after", "2027-12-31T22:30:00+09:00", "-n", "2")
    assert "BLACKED OUT by year-end (deferred: runs once when the window ends" in result.output


def test_a_job_without_a_schedule_names_no_window(repo: Repo) -> None:
    with_windows(repo)
    repo.write("jobs/billing/manual.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'manual', team: 'billing', blackout: ['db-maint'], steps: [jp.python('run', 'examples.noop:run')] }
    """)
    result = repo.cli("validate")
    assert result.exit_code != 0 and "this job has no schedule" in result.output


def test_without_a_horizon_a_window_is_refused(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    text = (repo.path / "jobplane.toml").read_text()
    text = text[:text.index("[calendars]")]  # no [calendars] years either
    (repo.path / "jobplane.toml").write_text(text + '[blackouts.nightly-maint]\ncron = "cron(0 2 * * ? *)"\nduration = "1h"\n')
    with pytest.raises(ConfigError) as e:
        load_config(repo.path)
    assert "jobplane.toml: blackouts.years: [first, last]" in str(e.value)


def test_plan_warns_months_before_the_compiled_occurrences_end(repo: Repo) -> None:
    from jobplane.compiler.freeze import horizon_lines

    with_windows(repo)
    write_job(repo, "nightly", blackout=["db-maint"])
    assert repo.cli("compile").exit_code == 0
    jobs = Catalog.load(repo.out).jobs
    assert horizon_lines(jobs, datetime(2027, 6, 1, tzinfo=timezone.utc)) == []
    (line,) = horizon_lines(jobs, datetime(2028, 11, 1, tzinfo=timezone.utc))
    assert line.startswith("WARNING: blackout window db-maint's compiled occurrences end 2028-12-30T20:00:00Z:")  # Sun 12-31 05:00 JST
    assert "extend [blackouts] years" in line and line.endswith(": nightly")
