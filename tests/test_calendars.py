"""Business-day calendars (issue 53): each business-day rule, and plain schedules filtered by a
calendar, give for 2026-2028 exactly the fires of an independent computation from the Cabinet
Office's list of national holidays (tests/fixtures/calendars/, transcribed by hand; not the
`holidays` package the compiler reads). Proved twice: through the catalog's calendar (what the
fire ledger, backfills, `jobplane next` and the portal compute) and through the cron expressions
deployed (evaluated as EventBridge Scheduler does)."""

from __future__ import annotations

import calendar as months
import textwrap
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from conftest import Repo
from jobplane.contract.business_fires import CalendarSchedule, calendar_fires, expand, next_calendar_fires
from jobplane.contract.catalog import Catalog
from jobplane.contract.config import ConfigError, load_config
from jobplane.platform.backfill_model import plan_fires

FIXTURE = Path(__file__).parent / "fixtures" / "calendars" / "jp_national_holidays_2026_2028.csv"
TOKYO = ZoneInfo("Asia/Tokyo")
NEW_YORK = ZoneInfo("America/New_York")
START = datetime(2026, 1, 1, tzinfo=TOKYO)
END = datetime(2028, 12, 31, 23, 59, tzinfo=TOKYO)


def official_holidays() -> set[date]:
    return {date.fromisoformat(line.split(",")[0]) for line in FIXTURE.read_text(encoding="utf-8").splitlines()
            if line[:2] == "20"}


HOLIDAYS = official_holidays()
EXTRA_CLOSED = date(2027, 4, 30)  # the team calendar's one-off closed day (a Friday)
EXTRA_OPEN = date(2026, 12, 29)  # its one-off business day inside the year-end closure


def closed(d: date, team: bool = False) -> bool:
    """jp-business by hand: weekends, the official holidays, 12-29..01-03 (and the team's days)."""
    if team and d == EXTRA_OPEN:
        return False
    if team and d == EXTRA_CLOSED:
        return True
    return d.weekday() >= 5 or d in HOLIDAYS or (d.month, d.day) >= (12, 29) or (d.month, d.day) <= (1, 3)


def days() -> list[date]:
    d, out = date(2026, 1, 1), []
    while d.year <= 2028:
        out.append(d)
        d += timedelta(days=1)
    return out


def at(d: date, h: int, m: int = 0, zone: ZoneInfo = TOKYO) -> datetime:
    return datetime(d.year, d.month, d.day, h, m, tzinfo=zone).astimezone(timezone.utc)


def month_list() -> list[tuple[int, int]]:
    return [(y, m) for y in (2026, 2027, 2028) for m in range(1, 13)]


def open_days(y: int, m: int, team: bool = False) -> list[date]:
    return [date(y, m, i) for i in range(1, months.monthrange(y, m)[1] + 1) if not closed(date(y, m, i), team)]


def step_while_closed(d: date, direction: int) -> date:
    while closed(d):
        d += timedelta(days=direction)
    return d


EXPECTED = {
    "every-business-day": [at(d, 9) for d in days() if not closed(d)],
    "third-business-day": [at(open_days(y, m)[2], 9) for y, m in month_list()],
    "last-business-day": [at(open_days(y, m)[-1], 0) for y, m in month_list()],
    "payday": [at(step_while_closed(date(y, m, 25), -1), 9) for y, m in month_list()],
    "mondays-skip": [at(d, 8, 30) for d in days() if d.weekday() == 0 and not closed(d)],
    "mondays-next": sorted({at(step_while_closed(d, 1), 8, 30) for d in days() if d.weekday() == 0}),
    "mondays-previous": sorted({at(step_while_closed(d, -1), 8, 30) for d in days() if d.weekday() == 0}),
    "team-closure": [at(d, 18) for d in days() if not closed(d, team=True)],
}

JOBS = {
    "every-business-day": "schedule: jp.businessDays('09:00'),",
    "third-business-day": "schedule: jp.monthly(business_day=3, at='09:00'),",
    "last-business-day": "schedule: jp.monthly(business_day=-1),",
    "payday": "schedule: jp.monthly(day=25, shift='previous', at='09:00'),",
    "mondays-skip": "schedule: jp.weekly('MON', '08:30'),",
    "mondays-next": "schedule: jp.weekly('MON', '08:30'), on_closed_day: 'next',",
    "mondays-previous": "schedule: jp.weekly('MON', '08:30'), on_closed_day: 'previous',",
    "team-closure": "schedule: jp.businessDays('18:00'), calendar: 'billing-close',",
}

TEAM_CALENDAR = """
[calendars.billing-close]
include = ["jp-business"]
closed_dates = ["2027-04-30"]
open_dates = ["2026-12-29"]
team = "billing"
"""


def job_text(name: str, body: str, zone: str = "Asia/Tokyo", cal: str = "jp-business") -> str:
    calendar = "" if "calendar:" in body else f"calendar: '{cal}',"
    return textwrap.dedent(f"""\
        local jp = import 'jobplane.libsonnet';
        {{
          name: '{name}', team: 'billing', timezone: '{zone}', {calendar}
          {body}
          steps: [jp.python('work', 'examples.noop:run')],
        }}
    """)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    repo = Repo(tmp_path_factory.mktemp("calendars"))
    with open(repo.path / "jobplane.toml", "a") as f:
        f.write(TEAM_CALENDAR)
    for name, body in JOBS.items():
        repo.write(f"jobs/billing/{name}.jsonnet", job_text(name, body))
    result = repo.cli("compile")
    assert result.exit_code == 0, result.output
    return Catalog.load(repo.out)


@pytest.mark.parametrize("job", sorted(JOBS))
def test_each_rule_fires_exactly_on_the_official_business_days_2026_2028(compiled: Catalog, job: str) -> None:
    entry = compiled.job(job)
    assert entry is not None and entry.calendar_schedule is not None
    expected = EXPECTED[job]
    assert len(expected) >= 36
    # the runtime's computation: the ledger, backfills, next and the portal call plan_fires / calendar_fires
    got = plan_fires(entry.schedule, entry.timezone, START, END, calendar=entry.calendar_schedule)
    assert got == expected
    # what is deployed: the explicit crons, evaluated as EventBridge Scheduler does (no calendar read)
    assert plan_fires(entry.schedule, entry.timezone, START, END) == expected
    # and nothing on a closed day, whatever the rule
    team = job == "team-closure"
    assert not [t for t in got if closed(t.astimezone(TOKYO).date(), team)]


def test_the_holidays_package_agrees_with_the_official_list() -> None:
    """The compiler reads `holidays`; a version that disagrees with the Cabinet Office's list fails here."""
    import holidays

    assert set(holidays.country_holidays("JP", years=range(2026, 2029))) == HOLIDAYS


def test_moved_and_skipped_fires_say_why(compiled: Catalog) -> None:
    payday = compiled.job("payday")
    assert payday is not None and payday.calendar_schedule is not None
    # 2026-01-25 is a Sunday: payday is Friday the 23rd, and says so
    window = next_calendar_fires(payday.calendar_schedule, datetime(2026, 1, 1, tzinfo=timezone.utc), 1)
    assert window.fires[0].at == at(date(2026, 1, 23), 9)
    assert window.fires[0].note == "moved from Sun 2026-01-25 (Sunday) to the previous business day"
    daily = compiled.job("every-business-day")
    assert daily is not None and daily.calendar_schedule is not None
    gw = calendar_fires(daily.calendar_schedule, at(date(2026, 5, 1), 0), at(date(2026, 5, 7), 0))
    assert [f.at for f in gw.fires] == [at(date(2026, 5, 1), 9)]
    assert [(s.at.date().isoformat(), s.reason) for s in gw.skipped] == [
        ("2026-05-02", "Saturday"), ("2026-05-03", "Constitution Day"), ("2026-05-04", "Greenery Day"),
        ("2026-05-05", "Children's Day"), ("2026-05-06", "Substitute Holiday")]
    year_end = calendar_fires(daily.calendar_schedule, at(date(2026, 12, 30), 0), at(date(2026, 12, 31), 0))
    assert [s.reason for s in year_end.skipped] == ["closed 12-29..01-03 (jp-business)"]


def test_the_calendar_is_compiled_into_the_catalog_as_dates(compiled: Catalog) -> None:
    """The runtime reads dates, never a holiday library: the catalog carries the calendar."""
    entry = compiled.job("team-closure")
    assert entry is not None and entry.calendar is not None
    cal = entry.calendar
    assert (cal.first_year, cal.last_year, cal.weekend) == (2026, 2028, [5, 6])
    assert {date.fromisoformat(d) for d in cal.closed} >= HOLIDAYS
    assert cal.closed["2027-04-30"] == "closed (billing-close)" and cal.open == ["2026-12-29"]
    assert cal.source.startswith("holidays ")
    assert entry.rules == ["business(days at=18:00)"]
    assert all(e.startswith("cron(") and e.endswith(("2026)", "2027)", "2028)")) for e in entry.schedule)
    assert len(entry.schedule) == 36  # one a month: the cost of a job that runs every business day


def test_dst_zones_with_a_calendar() -> None:
    """New York, 2026: a calendar without weekends, closed Saturday 03-07 (moved to the next
    business day: Sunday 03-08, the spring-forward day, whose 02:30 does not exist: no fire, as
    EventBridge skips it); fall back on 11-01: 01:30 fires once, at its first occurrence (EDT)."""
    from jobplane.contract.calendars import CatalogCalendar

    cal = CatalogCalendar(name="ny", first_year=2026, last_year=2026, weekend=[], closed={"2026-03-07": "closed"})
    moved = CalendarSchedule(("cron(30 2 * * ? *)",), cal, "next", "America/New_York")
    window = calendar_fires(moved, at(date(2026, 3, 5), 0, zone=NEW_YORK), at(date(2026, 3, 11), 0, zone=NEW_YORK))
    expected = [at(date(2026, 3, d), 2, 30, NEW_YORK) for d in (5, 6, 9, 10)]
    assert window.times == expected
    assert expected[2] - expected[1] == timedelta(days=3, hours=-1)  # EST to EDT
    fall = CalendarSchedule(("business(days at=01:30)",), cal, "skip", "America/New_York")
    got = calendar_fires(fall, datetime(2026, 10, 31, tzinfo=timezone.utc), datetime(2026, 11, 3, tzinfo=timezone.utc))
    assert got.times == [datetime(2026, 10, 31, 5, 30, tzinfo=timezone.utc), datetime(2026, 11, 1, 5, 30, tzinfo=timezone.utc),
                         datetime(2026, 11, 2, 6, 30, tzinfo=timezone.utc)]
    # the deployed crons fire the same instants over the whole year, both changes included
    for cs in (moved, fall):
        year = (datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2027, 1, 1, 6, tzinfo=timezone.utc))
        assert plan_fires(expand(cs), cs.timezone, *year) == calendar_fires(cs, *year).times


def test_calendar_config_problems_name_the_file_and_field_all_at_once(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    with open(repo.path / "jobplane.toml", "a") as f:
        f.write(textwrap.dedent("""
            [calendars.bad]
            holidays = "Japan"
            closed = ["12-32", "12-29..01-03"]
            open_dates = ["2026/12/29"]
            include = ["nowhere"]
            weekend = ["SATURDAY"]
            team = "nobody"
            colour = "red"
        """))
    with pytest.raises(ConfigError) as e:
        load_config(repo.path)
    text = str(e.value)
    for field in ("calendars.bad.holidays", "calendars.bad.closed[0]", "calendars.bad.open_dates[0]",
                  "calendars.bad.include[0]", "calendars.bad.weekend", "calendars.bad.team", "calendars.bad.colour"):
        assert f"jobplane.toml: {field}:" in text, field
    assert "calendars.bad.closed[1]" not in text


def test_definition_problems_of_calendars(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    with open(repo.path / "jobplane.toml", "a") as f:
        f.write(TEAM_CALENDAR.replace('team = "billing"', 'team = "growth"'))
    repo.write("jobs/billing/no-calendar.jsonnet", job_text("no-calendar", "schedule: jp.businessDays('09:00'),")
               .replace("calendar: 'jp-business',", ""))
    repo.write("jobs/billing/unknown.jsonnet", job_text("unknown", "schedule: jp.daily('09:00'),", cal="jp-busines"))
    repo.write("jobs/billing/rate.jsonnet", job_text("rate", "schedule: jp.rate(2, 'hour'),"))
    repo.write("jobs/billing/other-team.jsonnet", job_text("other-team", "schedule: jp.daily('09:00'),",
                                                           cal="billing-close"))
    repo.write("jobs/billing/bad-rule.jsonnet", job_text("bad-rule", "schedule: 'business(monthly business_day=0)',"))
    result = repo.cli("validate")
    assert result.exit_code != 0
    out = result.output
    assert "no-calendar" in out and "schedule" in out and "needs a calendar" in out
    assert "no calendar 'jp-busines'" in out and "did you mean 'jp-business'" in out
    assert "rate() counts from its start" in out
    assert "calendar 'billing-close' belongs to team 'growth'" in out
    assert "business_day is 1-23" in out


def test_any_window_holds_the_same_fires_as_the_whole_years(compiled: Catalog) -> None:
    """The ledger and backfills ask for short windows (minutes to hours), `jobplane next` from
    now: each is the slice of the three years' fires, whatever its edges (a fire moved into it
    from a closed day outside it included)."""
    import random

    rng = random.Random(53)
    for name in sorted(JOBS):
        entry = compiled.job(name)
        assert entry is not None and entry.calendar_schedule is not None
        for _ in range(25):
            a = START + timedelta(minutes=rng.randrange(0, 3 * 365 * 1440 - 20000))
            b = a + timedelta(minutes=rng.choice([1, 30, 600, 1440, 10 * 1440]))
            got = plan_fires([], entry.timezone, a, b, calendar=entry.calendar_schedule)
            assert got == [t for t in EXPECTED[name] if a <= t <= b], (name, a, b)


def test_a_minutely_job_on_business_days_compiles_to_one_cron_a_month() -> None:
    from jobplane.contract.calendars import CatalogCalendar

    cal = CatalogCalendar(name="jp", first_year=2026, last_year=2026,
                          closed={d.isoformat(): "holiday" for d in HOLIDAYS if d.year == 2026})
    cs = CalendarSchedule(("cron(0/1 * * * ? *)",), cal, "skip", "Asia/Tokyo")
    crons = expand(cs)
    assert len(crons) == 12 and all(len(e) <= 256 for e in crons)
    assert crons[0] == "cron(0-59 0-23 2,5-9,13-16,19-23,26-30 1 ? 2026)"
    gw = (datetime(2026, 5, 1, 23, tzinfo=TOKYO), datetime(2026, 5, 7, 1, tzinfo=TOKYO))
    assert plan_fires(crons, "Asia/Tokyo", *gw) == calendar_fires(cs, *gw).times
    # Friday 05-01's last hour, then nothing until Thursday 05-07 00:00-01:00 (both ends included)
    assert len(calendar_fires(cs, *gw).times) == 60 + 61


def test_short_windows_across_clock_changes_are_slices_of_the_year() -> None:
    """The ledger's windows are minutes long: across New York's changes (a minutely job moved
    to the next business day, and twice-hourly rules) each is the slice of the year's fires."""
    import random

    from jobplane.contract.calendars import CatalogCalendar

    cal = CatalogCalendar(name="ny", first_year=2026, last_year=2026, weekend=[5],
                          closed={"2026-03-07": "closed", "2026-10-31": "closed"})
    rng = random.Random(8)
    for cs in (CalendarSchedule(("cron(0/1 0-3 * * ? *)",), cal, "next", "America/New_York"),
               CalendarSchedule(("business(days at=01:00,01:30,02:30)",), cal, "skip", "America/New_York")):
        year = calendar_fires(cs, datetime(2026, 3, 1, tzinfo=timezone.utc), datetime(2026, 11, 10, tzinfo=timezone.utc))
        for centre in (datetime(2026, 3, 8, 7, tzinfo=timezone.utc), datetime(2026, 11, 1, 6, tzinfo=timezone.utc)):
            for _ in range(60):
                a = centre + timedelta(minutes=rng.randrange(-300, 300))
                b = a + timedelta(minutes=rng.choice([1, 5, 30, 90, 240]))
                assert calendar_fires(cs, a, b).times == [t for t in year.times if a <= t <= b], (a, b)


def test_next_and_plan_say_what_the_calendar_does(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("jobs/billing/mondays-next.jsonnet", job_text("mondays-next", JOBS["mondays-next"]))
    repo.write("jobs/billing/payday.jsonnet", job_text("payday", JOBS["payday"]))
    shown = repo.cli("next", "mondays-next", "-n", "4", "--after", "2026-12-20T00:00:00+09:00")
    assert shown.exit_code == 0, shown.output
    assert "calendar jp-business (holidays " in shown.output and "a fire on a closed day: next" in shown.output
    assert ("2027-01-12 Tue 08:30 JST  (moved from Mon 2027-01-11 (Coming of Age Day) to the next business day)"
            in shown.output)
    payday = repo.cli("next", "payday", "-n", "1", "--after", "2027-01-01T00:00:00+09:00")
    assert "day 25 of each month (or the business day before) at 09:00" in payday.output
    assert "2027-01-25 Mon 09:00 JST" in payday.output
    assert repo.cli("compile").exit_code == 0
    # plan looks 90 days from now: close the first open Monday two weeks on
    monday = date.today() + timedelta(days=14)
    while monday.weekday() != 0 or closed(monday):
        monday += timedelta(days=1)
    if monday.year > 2028:
        pytest.skip("the fixture's years are past: extend [calendars] years and the fixture")
    toml = (repo.path / "jobplane.toml").read_text()
    (repo.path / "jobplane.toml").write_text(toml.replace(
        'closed = ["12-29..01-03"]', f'closed = ["12-29..01-03"]\nclosed_dates = ["{monday.isoformat()}"]', 1))
    plan = repo.cli("plan")
    assert plan.exit_code == 0, plan.output
    out = plan.output
    moved_to = monday + timedelta(days=1)
    while closed(moved_to):
        moved_to += timedelta(days=1)
    assert "~ mondays-next" in out and "fires added/removed by this calendar change (next 90 days): 1 added, 1 removed" in out
    assert (f"+ {moved_to:%Y-%m-%d %a} 08:30 JST (moved from {monday:%a %Y-%m-%d} (closed (jp-business)) to the next "
            "business day)") in out
    assert f"- {monday:%Y-%m-%d %a} 08:30 JST" in out


def test_job_fires_is_one_function_for_every_job(compiled: Catalog) -> None:
    """What the deadline check and other readers call: a calendar job's fires with their notes,
    any other job's from its schedules."""
    from jobplane.contract.catalog import CatalogJob
    from jobplane.contract.job_fires import job_fires

    payday = compiled.job("payday")
    assert payday is not None
    fires = job_fires(payday, START, END)
    assert [f.at for f in fires] == EXPECTED["payday"]
    assert fires[0].note == "moved from Sun 2026-01-25 (Sunday) to the previous business day"
    plain = CatalogJob(name="plain", team="billing", schedule=["cron(0 9 ? * MON *)", "cron(0 9 ? * MON,TUE *)"],
                       timezone="Asia/Tokyo", policy="ALWAYS_RUN", timeout=60, steps=[], state_machine="x", asl="",
                       states=0)
    got = job_fires(plain, START, datetime(2026, 1, 14, tzinfo=TOKYO))
    assert [(f.at, f.note) for f in got] == [(at(date(2026, 1, d), 9), None) for d in (5, 6, 12, 13)]


def test_plan_warns_before_the_calendar_years_run_out(compiled: Catalog, tmp_path: Path) -> None:
    """Past ``[calendars] years`` no schedule is deployed: every plan names the calendar and its
    jobs from 90 days before the last year ends, and after it has ended; none before."""
    from jobplane.compiler.calendar_plan import years_ending_lines

    jobs = compiled.jobs
    assert years_ending_lines(jobs, datetime(2028, 9, 1, tzinfo=timezone.utc)) == []
    soon = years_ending_lines(jobs, datetime(2028, 11, 1, tzinfo=timezone.utc))
    calendar_jobs = sorted(j.name for j in jobs if j.calendar is not None and j.calendar.name == "jp-business")
    line = next(w for w in soon if "calendar jp-business's" in w)
    assert "compiled years end in 61 days (last: 2028)" in line and "extend [calendars] years" in line
    assert line.endswith(": " + ", ".join(calendar_jobs))
    assert all(j.name not in " ".join(soon) for j in jobs if j.calendar is None)
    ended = years_ending_lines(jobs, datetime(2029, 1, 5, tzinfo=timezone.utc))
    assert any("compiled years ended 4 days ago (last: 2028)" in w for w in ended)
    # and the plan prints it with nothing else to say
    from jobplane.compiler.output import read_output
    from jobplane.compiler.plan import describe_plan

    repo = Repo(tmp_path)
    repo.write("jobs/billing/payday.jsonnet", job_text("payday", JOBS["payday"]))
    assert repo.cli("compile").exit_code == 0
    files = read_output(repo.out)
    text, changes = describe_plan(files, files, now=datetime(2028, 12, 1, tzinfo=timezone.utc))
    assert changes == 0 and text.startswith("No changes.")
    assert "WARNING: calendar jp-business's compiled years end in 31 days (last: 2028)" in text and "payday" in text


def test_a_calendar_jobs_deployed_schedules_count_in_the_name_checks(tmp_path: Path) -> None:
    """payday deploys one schedule per cron its calendar compiles to (payday, payday-2, ...):
    a job named payday-3 would take the name of one of them, though payday lists one rule."""
    repo = Repo(tmp_path)
    repo.write("jobs/billing/payday.jsonnet", job_text("payday", JOBS["payday"]))
    repo.write("jobs/billing/payday-3.jsonnet", job_text("payday-3", "schedule: jp.cron('0 9 * * ? *'),", cal="")
               .replace("calendar: '',", ""))
    result = repo.cli("validate")
    assert result.exit_code != 0
    assert ("jobs/billing/payday.jsonnet: job 'payday': name: its schedule name 'jobplane-payday-3' is also one that "
            "job 'payday-3' (jobs/billing/payday-3.jsonnet) derives; rename one of them") in result.output
    (tmp_path / "fine").mkdir()
    other = Repo(tmp_path / "fine")  # the same jobs without the calendar job's crons in the way
    other.write("jobs/billing/payday.jsonnet", job_text("payday", JOBS["payday"]))
    other.write("jobs/billing/payday-x.jsonnet", job_text("payday-x", "schedule: jp.cron('0 9 * * ? *'),", cal="")
                .replace("calendar: '',", ""))
    assert other.cli("validate").exit_code == 0
