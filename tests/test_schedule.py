"""EventBridge Scheduler semantics, checked against vectors derived from the AWS documentation
("Schedule types on EventBridge Scheduler": cron fields, wildcards L, W, #, the year field, and
the daylight-saving behaviour) and, where Unix cron means the same thing, against cronsim."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from jobplane.contract.schedule import (CronExpression, ScheduleError, eb_weekday, next_fire_times, parse,
                                        translate_unix_cron, validate_timezone)

UTC = timezone.utc


def fires(expr: str, tz: str, after: str, n: int) -> list[str]:
    return [t.isoformat() for t in next_fire_times(expr, tz, datetime.fromisoformat(after), n)]


# -- the AWS documentation's examples (all in UTC) ---------------------------------------------
# Start: Wednesday 2026-07-01 00:00 UTC.
DOC_VECTORS = [
    ("cron(0 10 * * ? *)", ["2026-07-01T10:00:00+00:00", "2026-07-02T10:00:00+00:00"]),  # 10:00 every day
    ("cron(15 12 * * ? *)", ["2026-07-01T12:15:00+00:00", "2026-07-02T12:15:00+00:00"]),  # 12:15 every day
    # 18:00 Monday through Friday: Wed, Thu, Fri, then Monday
    ("cron(0 18 ? * MON-FRI *)", ["2026-07-01T18:00:00+00:00", "2026-07-02T18:00:00+00:00",
                                  "2026-07-03T18:00:00+00:00", "2026-07-06T18:00:00+00:00"]),
    ("cron(0 8 1 * ? *)", ["2026-07-01T08:00:00+00:00", "2026-08-01T08:00:00+00:00"]),  # 08:00 on the 1st
    ("cron(0/15 * * * ? *)", ["2026-07-01T00:15:00+00:00", "2026-07-01T00:30:00+00:00", "2026-07-01T00:45:00+00:00"]),
    ("cron(0/1 * * * ? *)", ["2026-07-01T00:01:00+00:00", "2026-07-01T00:02:00+00:00"]),  # every minute
    ("cron(50/1 23 * * ? *)", ["2026-07-01T23:50:00+00:00", "2026-07-01T23:51:00+00:00"]),
    # every 5 minutes Mon-Fri between 08:00 and 17:55
    ("cron(0/5 8-17 ? * MON-FRI *)", ["2026-07-01T08:00:00+00:00", "2026-07-01T08:05:00+00:00"]),
    ("cron(0 9 ? * 2#1 *)", ["2026-07-06T09:00:00+00:00", "2026-08-03T09:00:00+00:00"]),  # first Monday
    ("cron(0 0 L * ? *)", ["2026-07-31T00:00:00+00:00", "2026-08-31T00:00:00+00:00", "2026-09-30T00:00:00+00:00"]),
    ("cron(0 10 ? * 6L *)", ["2026-07-31T10:00:00+00:00", "2026-08-28T10:00:00+00:00"]),  # last Friday
    # nearest weekday to the 4th: Sat 2026-07-04 -> Fri 3rd; Tue 2026-08-04 -> 4th
    ("cron(0 0 4W * ? *)", ["2026-07-03T00:00:00+00:00", "2026-08-04T00:00:00+00:00"]),
    # 1st falls on a Saturday in Aug 2026: W never leaves the month, so Monday the 3rd
    ("cron(0 0 1W 8 ? *)", ["2026-08-03T00:00:00+00:00", "2027-08-02T00:00:00+00:00"]),
    ("cron(0 0 LW * ? *)", ["2026-07-31T00:00:00+00:00", "2026-08-31T00:00:00+00:00", "2026-09-30T00:00:00+00:00",
                            "2026-10-30T00:00:00+00:00"]),  # Oct 31 2026 is a Saturday
    ("cron(30 6 1 1 ? 2028-2029)", ["2028-01-01T06:30:00+00:00", "2029-01-01T06:30:00+00:00"]),  # year field
]


@pytest.mark.parametrize("expr,expected", DOC_VECTORS, ids=[v[0] for v in DOC_VECTORS])
def test_documented_examples(expr: str, expected: list[str]) -> None:
    assert fires(expr, "UTC", "2026-07-01T00:00:00+00:00", len(expected)) == expected


def test_year_range_ends() -> None:
    assert fires("cron(0 0 1 1 ? 2027)", "UTC", "2026-07-01T00:00:00+00:00", 5) == ["2027-01-01T00:00:00+00:00"]


def test_day_of_week_is_one_for_sunday() -> None:
    # EventBridge numbers SUN=1 ... SAT=7; Unix cron numbers SUN=0.
    sunday = datetime(2026, 7, 5, tzinfo=UTC)
    assert eb_weekday(sunday) == 1 and eb_weekday(sunday + timedelta(days=6)) == 7
    assert fires("cron(0 12 ? * 1 *)", "UTC", "2026-07-01T00:00:00+00:00", 1) == ["2026-07-05T12:00:00+00:00"]
    assert fires("cron(0 12 ? * SUN *)", "UTC", "2026-07-01T00:00:00+00:00", 1) == ["2026-07-05T12:00:00+00:00"]


# -- daylight saving time ----------------------------------------------------------------------
def test_new_york_spring_forward_skips_the_missing_time() -> None:
    # 2026-03-08 02:00 EST -> 03:00 EDT: 02:30 does not exist that day and does not fire.
    assert fires("cron(30 2 * * ? *)", "America/New_York", "2026-03-07T00:00:00-05:00", 3) == [
        "2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"]


def test_new_york_spring_forward_every_half_hour() -> None:
    assert fires("cron(0/30 * * * ? *)", "America/New_York", "2026-03-08T01:00:00-05:00", 3) == [
        "2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"]


def test_new_york_fall_back_fires_a_repeated_time_once() -> None:
    # 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 happens twice and fires only at the first.
    got = next_fire_times("cron(30 1 * * ? *)", "America/New_York", datetime(2026, 10, 31, 12, tzinfo=UTC), 3)
    assert [t.astimezone(UTC).isoformat() for t in got] == [
        "2026-11-01T05:30:00+00:00", "2026-11-02T06:30:00+00:00", "2026-11-03T06:30:00+00:00"]


def test_new_york_fall_back_repeated_hour_runs_once() -> None:
    got = next_fire_times("cron(0/30 * * * ? *)", "America/New_York", datetime(2026, 11, 1, 4, 15, tzinfo=UTC), 4)
    # 00:30 EDT, 01:00 EDT, 01:30 EDT, then 02:00 EST: the repeated 01:00-01:59 EST does not fire again.
    assert [t.astimezone(UTC).strftime("%H:%M") for t in got] == ["04:30", "05:00", "05:30", "07:00"]


@pytest.mark.parametrize("zone, start", [
    ("America/New_York", "2026-03-07T20:17:00"), ("America/New_York", "2026-10-31T21:03:00"),
    ("Australia/Lord_Howe", "2026-04-04T22:41:00"),  # a half-hour clock change
    ("America/Havana", "2026-03-07T21:30:00"),  # the clock changes at midnight
    ("Asia/Tokyo", "2026-03-07T20:59:00"), ("UTC", "2026-03-07T20:00:00"),
])
@pytest.mark.parametrize("expression, fields", [
    ("cron(0/7 * * * ? *)", (range(0, 60, 7), range(24))),
    ("cron(30 0,1,2,23 * * ? *)", ([30], [0, 1, 2, 23])),
])
def test_fires_are_every_instant_whose_first_wall_time_matches(zone: str, start: str, expression: str,
                                                                 fields: tuple) -> None:  # type: ignore[type-arg]
    """An oracle of its own for two days around a clock change: each UTC minute fires when its
    wall time in the zone matches the fields and it is that wall time's first occurrence (a
    repeated time fires once; a skipped one never). Starting mid-day, as the fire ledger asks."""
    tz = ZoneInfo(zone)
    after = datetime.fromisoformat(start).replace(tzinfo=tz)
    minutes, hours = fields
    t, expected = after.astimezone(UTC).replace(second=0) + timedelta(minutes=1), []
    while t < after + timedelta(days=2):
        local = t.astimezone(tz)
        if local.minute in minutes and local.hour in hours and local.fold == 0:
            expected.append(t)
        t += timedelta(minutes=1)
    got = next_fire_times(expression, tz, after, len(expected) + 1)
    assert [g.astimezone(UTC) for g in got[:-1]] == expected and got[-1] >= after + timedelta(days=2)


def test_tokyo_month_end_close() -> None:
    # Tokyo has no DST; the last day of the month at 23:30 JST, February in a leap year included.
    assert fires("cron(30 23 L * ? *)", "Asia/Tokyo", "2027-12-15T00:00:00+09:00", 4) == [
        "2027-12-31T23:30:00+09:00", "2028-01-31T23:30:00+09:00", "2028-02-29T23:30:00+09:00",
        "2028-03-31T23:30:00+09:00"]


def test_rate_counts_from_the_schedule_start() -> None:
    start = datetime(2026, 7, 1, 0, 7, tzinfo=UTC)
    got = next_fire_times("rate(15 minutes)", "Asia/Tokyo", datetime(2026, 7, 1, 1, 0, tzinfo=UTC), 2, anchor=start)
    assert [t.astimezone(UTC).strftime("%H:%M") for t in got] == ["01:07", "01:22"]


def test_at_fires_once_in_its_timezone() -> None:
    got = next_fire_times("at(2026-12-31T23:00:00)", "Asia/Tokyo", datetime(2026, 7, 1, tzinfo=UTC), 3)
    assert [t.isoformat() for t in got] == ["2026-12-31T23:00:00+09:00"]


# -- differential check against cronsim where Unix cron means the same ------------------------
def _random_expression(rng: random.Random) -> tuple[str, str]:
    minute = rng.choice(["0", "15", "*/10", "5-20/5", "0,30", "*/1", "45/1"])
    hour = rng.choice(["*", "2", "9-17", "0/6", "1,13"])
    month = rng.choice(["*", "1-6", "3,9", "JAN", "*/2"])
    if rng.random() < 0.5:
        dom = rng.choice(["1", "15", "1-7", "*/10", "28-31"])
        return f"cron({minute} {hour} {dom} {month} ? *)", f"{minute} {hour} {dom} {month} *"
    days = rng.sample(range(1, 8), rng.randint(1, 3))
    eb = ",".join(str(d) for d in sorted(days))
    unix = ",".join(str(d - 1) for d in sorted(days))
    return f"cron({minute} {hour} ? {month} {eb} *)", f"{minute} {hour} * {month} {unix}"


def test_agrees_with_cronsim_on_unix_compatible_expressions() -> None:
    rng = random.Random(7)
    start = datetime(2026, 1, 1, 0, 0)
    for _ in range(150):
        eb, unix = _random_expression(rng)
        ours = [t.replace(tzinfo=None) for t in next_fire_times(eb, "UTC", start.replace(tzinfo=UTC), 12)]
        it = CronSim(unix, start)
        theirs = [next(it) for _ in range(12)]
        assert ours == theirs, (eb, unix)


# -- errors a developer gets -------------------------------------------------------------------
@pytest.mark.parametrize("expr,fragment", [
    ("0 2 * * 1-5", "cron(0 2 ? * 2-6 *)"),
    ("cron(0 2 * * *)", "has 5 fields"),
    ("0 2 * * 0", "cron(0 2 ? * 1 *)"),
    ("@daily", "cron(0 0 * * ? *)"),
    ("0 2 1 * 1", "two schedules"),
    ("cron(0 2 * * * *)", "exactly one of day-of-month"),
    ("cron(0 2 ? * ? *)", "exactly one of day-of-month"),
    ("cron(61 2 * * ? *)", "minutes field: 61 is outside 0-59"),
    ("cron(0 2 ? * 8 *)", "day-of-week field: 8 is outside 1-7"),
    ("cron(0 2 ? * FRY *)", "not a number"),
    ("rate(1 minutes)", "rate(1 minute)"),
    ("rate(5 minute)", "rate(5 minutes)"),
    ("rate(5 weeks)", "minute(s), hour(s) or day(s)"),
    ("every day", "not an EventBridge expression"),
])
def test_invalid_expressions_say_what_to_write(expr: str, fragment: str) -> None:
    with pytest.raises(ScheduleError) as err:
        parse(expr)
    assert fragment in str(err.value)


def test_unix_translation_renumbers_days_exactly() -> None:
    assert translate_unix_cron("15 3 * * 5-7") == ["cron(15 3 ? * 1,6,7 *)"]
    assert translate_unix_cron("0 9 * * MON-FRI") == ["cron(0 9 ? * MON-FRI *)"]


def test_timezone_typo_gets_a_suggestion() -> None:
    with pytest.raises(ScheduleError, match="did you mean 'Asia/Tokyo'"):
        validate_timezone("Asia/Tokio")
    assert validate_timezone("Europe/Berlin") == ZoneInfo("Europe/Berlin")


# -- day-of-week L and /, as AWS's cron reference documents them --------------------------------
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-cron-expressions.html: day-of-week
# takes the wildcards , - * ? L # (no /), and "the L wildcard in the Day-of-month or Day-of-week
# fields specifies the last day of the month or week".

def test_a_bare_l_in_day_of_week_is_every_saturday() -> None:
    got = fires("cron(0 0 ? * L *)", "UTC", "2026-07-01T00:00:00+00:00", 5)
    assert got == ["2026-07-04T00:00:00+00:00", "2026-07-11T00:00:00+00:00", "2026-07-18T00:00:00+00:00",
                   "2026-07-25T00:00:00+00:00", "2026-08-01T00:00:00+00:00"]
    assert got == fires("cron(0 0 ? * SAT *)", "UTC", "2026-07-01T00:00:00+00:00", 5)
    assert {eb_weekday(datetime.fromisoformat(t).date()) for t in got} == {7}


def test_nl_stays_the_last_weekday_n_of_the_month() -> None:
    # 5L: the last Thursday; 7L and SATL: the last Saturday (not every Saturday)
    assert fires("cron(0 0 ? * 5L *)", "UTC", "2026-07-01T00:00:00+00:00", 2) == [
        "2026-07-30T00:00:00+00:00", "2026-08-27T00:00:00+00:00"]
    last_saturdays = ["2026-07-25T00:00:00+00:00", "2026-08-29T00:00:00+00:00"]
    assert fires("cron(0 0 ? * 7L *)", "UTC", "2026-07-01T00:00:00+00:00", 2) == last_saturdays
    assert fires("cron(0 0 ? * SATL *)", "UTC", "2026-07-01T00:00:00+00:00", 2) == last_saturdays


@pytest.mark.parametrize("expr", ["cron(0 0 ? * MON/2 *)", "cron(0 0 ? * */2 *)", "cron(0 0 ? * 2-6/2 *)",
                                  "cron(0 0 ? * MON,WED/2 *)"])
def test_day_of_week_takes_no_step(expr: str) -> None:
    with pytest.raises(ScheduleError) as err:
        parse(expr)
    assert "day-of-week field" in str(err.value) and "no '/' step" in str(err.value)
    assert "eb-cron-expressions.html" in str(err.value)


def test_day_of_month_still_takes_a_step() -> None:
    assert fires("cron(0 0 1/10 * ? *)", "UTC", "2026-06-30T23:00:00+00:00", 4) == [
        "2026-07-01T00:00:00+00:00", "2026-07-11T00:00:00+00:00", "2026-07-21T00:00:00+00:00",
        "2026-07-31T00:00:00+00:00"]


def test_a_unix_day_of_week_step_translates_to_a_list() -> None:
    # EventBridge's day-of-week has no step: the days are listed (Unix 1-5/2 = MON,WED,FRI = 2,4,6)
    assert translate_unix_cron("0 9 * * 1-5/2") == ["cron(0 9 ? * 2,4,6 *)"]
    assert translate_unix_cron("0 9 * * */3") == ["cron(0 9 ? * 1,4,7 *)"]
    for unix in ("0 9 * * 1-5/2", "0 9 * * */3", "0 9 * * MON-FRI/2"):
        (eb,) = translate_unix_cron(unix) or [""]
        start = datetime(2026, 1, 1)
        ours = [t.replace(tzinfo=None) for t in next_fire_times(eb, "UTC", start.replace(tzinfo=UTC), 20)]
        it = CronSim(unix, start)
        assert ours == [next(it) for _ in range(20)], unix


@pytest.mark.parametrize("expr,ever", [
    ("cron(59 23 31 2 ? *)", False),  # February has no 31st
    ("cron(0 0 30 2 ? *)", False),
    ("cron(0 0 31 4,6,9,11 ? *)", False),
    ("cron(0 0 ? 2 FRI#5 2027)", False),  # February 2027 has four Fridays
    ("cron(0 0 29 2 ? 2100)", False),  # 2100 is no leap year
    ("cron(0 0 29 2 ? *)", True),
    ("cron(0 0 ? 2 SUN#5 *)", True),  # February 2032 has five Sundays
    ("cron(0 0 31 1-2 ? *)", True),
    ("cron(0 0 ? * L *)", True),
])
def test_whether_a_cron_ever_fires(expr: str, ever: bool) -> None:
    cron = parse(expr)
    assert isinstance(cron, CronExpression)
    assert cron.ever_fires() is ever
    assert bool(next_fire_times(cron, "UTC", datetime(1999, 12, 31, tzinfo=UTC), 1)) is ever or cron.years
