"""Schedule kinds (contract/schedule_kinds.py) and the one enumerator of fires
(contract/job_fires.py): every reader of a job's fires, the fire ledger, backfills, deadlines,
``jobplane next``/the portal's next fires and ``jobplane plan``, gives the same fires for the same
job over a year, for every kind of schedule (cron, rate, at, business-day rules with a calendar,
a cron filtered by one, manual)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from jobplane.compiler import calendar_plan
from jobplane.contract.calendars import CatalogCalendar
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.job_fires import job_fires, next_job_fires
from jobplane.contract.schedule import ScheduleError
from jobplane.contract.schedule_kinds import KINDS, by_name, kind_of
from jobplane.platform import deadlines
from jobplane.platform.backfill_model import plan_fires
from jobplane.platform.control.views import next_fires
from jobplane.platform.pass_fires import PassFires

UTC = timezone.utc
START = datetime(2026, 1, 1, tzinfo=UTC)
END = datetime(2026, 12, 31, 23, 59, 59, tzinfo=UTC)
ANCHOR = datetime(2025, 12, 31, 22, 0, 13, tzinfo=UTC)
CAL = CatalogCalendar(name="tokyo", first_year=2026, last_year=2027, weekend=[5, 6],
                      closed={"2026-01-12": "Coming of Age Day", "2026-05-04": "Greenery Day",
                              "2026-05-05": "Children's Day", "2026-12-31": "closure"})


def job(name: str, schedule: list[str], zone: str = "America/New_York", rules: list[str] | None = None,
        on_closed_day: str = "skip") -> CatalogJob:
    return CatalogJob(name=name, team="billing", schedule=schedule, timezone=zone, policy="ALWAYS_RUN", timeout=60,
                      steps=[], state_machine=f"jp-{name}", asl="", states=0, rules=rules or [],
                      calendar=CAL.model_copy(deep=True) if rules is not None else None, on_closed_day=on_closed_day)


def _expanded(rules: list[str], zone: str, on_closed_day: str = "skip") -> list[str]:
    """A calendar job's deployed crons, as the compiler writes them into its catalog entry."""
    from jobplane.contract.business_fires import CalendarSchedule, expand

    return expand(CalendarSchedule(tuple(rules), CAL, on_closed_day, zone))


KIND_JOBS: list[tuple[str, CatalogJob, tuple[datetime | None, ...]]] = [
    # both New York clock changes fall in the year; 02:30 is skipped on 03-08 and once on 11-01
    # the 1st of each month at 02:30 is two schedules at one instant: one fire
    ("cron", job("cron", ["cron(30 2 * * ? *)", "cron(0 9 ? * L *)", "cron(0 12 ? * 6L *)", "cron(30 2 1 * ? *)"]), ()),
    ("rate", job("rate", ["rate(10 hours)"], "UTC"), (ANCHOR,)),
    ("rate-unanchored", job("rate-unanchored", ["rate(10 hours)"], "UTC"), (None,)),
    ("at", job("at", ["at(2026-03-08T02:30:00)", "at(2026-11-01T01:30:00)", "at(2026-06-30T09:00:00)"]), ()),
    ("business", job("business", _expanded(["business(days at=09:00)", "business(monthly business_day=-1 at=18:00)"],
                                           "Asia/Tokyo"), "Asia/Tokyo",
                     rules=["business(days at=09:00)", "business(monthly business_day=-1 at=18:00)"]), ()),
    ("calendar-cron", job("calendar-cron", _expanded(["cron(0 8 1 * ? *)"], "Asia/Tokyo", "next"), "Asia/Tokyo",
                          rules=["cron(0 8 1 * ? *)"], on_closed_day="next"), ()),
    ("manual", job("manual", []), ()),
]


@pytest.mark.parametrize("name,entry,anchors", KIND_JOBS, ids=[k[0] for k in KIND_JOBS])
def test_every_reader_gives_the_same_fires_over_a_year(name: str, entry: CatalogJob,
                                                       anchors: tuple[datetime | None, ...]) -> None:
    expected = [f.at for f in job_fires(entry, START, END, anchors)]
    readers: dict[str, Any] = {
        # backfills (and `jobplane status`'s fires not started)
        "backfill": plan_fires(entry.schedule, entry.timezone, START, END, anchors, entry.calendar_schedule),
        # the fire ledger: a pass's fires (missed fires), computed once per schedule and sliced
        "ledger": PassFires(END, END - START).fires(entry, START, END, anchors),
        # the deadline check, with the anchors the control plane would read
        "deadlines": deadlines.fires(SimpleNamespace(schedule_anchors=lambda e: anchors),  # type: ignore[arg-type]
                                     entry, START, END),
        # `jobplane next`, the portal's next fires and the API's (strictly after: from just before START)
        "next": [t.astimezone(UTC) for t in next_fires(entry, max(len(expected), 1),
                                                       after=START - timedelta(microseconds=1), anchors=anchors)
                 if t <= END],
        "next-window": [f.at for f in next_job_fires(entry, START - timedelta(microseconds=1),
                                                      max(len(expected), 1), anchors).fires if f.at <= END],
    }
    if not any(kind_of(e).counts_from_deployment for e in entry.schedule):
        readers["plan"] = [f.at for f in calendar_plan.fires(entry, START, END)]  # rate() is left out of the plan
    for reader, got in readers.items():
        assert got == expected, (name, reader)
    if name != "manual":
        assert len(expected) > 1 and all(t.tzinfo is not None for t in expected)
    else:
        assert expected == []


def test_each_kind_says_what_it_is() -> None:
    """Each kind in the registry, with what each says of itself."""
    assert [k.name for k in KINDS] == ["cron", "rate", "at", "business"]
    assert len({k.prefix for k in KINDS}) == len(KINDS)
    cron, rate, at, business = (by_name(n) for n in ("cron", "rate", "at", "business"))
    assert kind_of("cron(0/15 8-9 * * ? *)") is cron and kind_of("rate(5 minutes)") is rate
    assert kind_of("at(2026-12-31T23:00:00)") is at and kind_of("business(days at=09:00)") is business
    assert cron.times_of_day("cron(0/30 8 * * ? *)") == [(8, 0), (8, 30)]
    assert cron.min_interval("cron(0/30 8 * * ? *)") == timedelta(minutes=30)
    assert rate.min_interval("rate(5 minutes)") == timedelta(minutes=5) and rate.most_per_day("rate(5 minutes)") == 288
    assert rate.times_of_day("rate(5 minutes)") is None and rate.counts_from_deployment and not rate.calendar_filters
    assert at.min_interval("at(2026-12-31T23:00:00)") is None and at.times_of_day("at(2026-12-31T23:00:00)") == [(23, 0)]
    assert business.needs_calendar and not business.deploys_as_written
    assert business.describe("business(monthly business_day=3 at=09:00)") == "the 3rd business day of each month at 09:00"
    assert rate.describe("rate(5 minutes)") == "Every 5 minutes" and at.describe("at(2026-12-31T23:00:00)") == \
        "Once, at 2026-12-31T23:00:00"
    assert list(cron.problems("cron(59 23 31 2 ? *)")) and not list(cron.problems("cron(59 23 28 2 ? *)"))
    with pytest.raises(ScheduleError, match="cron\\(0 2 \\? \\* 2-6 \\*\\)"):
        kind_of("0 2 * * 1-5")  # a Unix cron: what to write instead
    with pytest.raises(ValueError, match="calendar"):
        next(business.fires("business(days at=09:00)", ZoneInfo("Asia/Tokyo"), START))




@pytest.mark.parametrize("name,entry,anchors", [k for k in KIND_JOBS if k[0] in ("cron", "at")],
                         ids=["cron", "at"])
def test_a_kinds_days_and_times_are_those_of_its_fires(name: str, entry: CatalogJob,
                                                       anchors: tuple[datetime | None, ...]) -> None:
    """The importer's proof compares days and times of day (importer/verify.py) where it can:
    what a kind says of them must be what its fires are, every day of the year. A day its fields
    match whose times all fall in the zone's spring-forward gap has no fire (EventBridge skips
    a local time that does not exist), and is the only difference."""
    zone = ZoneInfo(entry.timezone)
    first, count = date(2026, 1, 1), 365
    begin = datetime(2026, 1, 1, tzinfo=zone) - timedelta(microseconds=1)
    for text in entry.schedule:
        kind = kind_of(text)
        days, times = kind.days(text, first, count), kind.times_of_day(text)
        assert days is not None and times is not None, text
        fired = [t.astimezone(zone) for t in kind.fires(text, zone, begin)
                 if t.astimezone(zone).date() < first + timedelta(days=count)]
        fired_days = {t.date() for t in fired}
        assert fired_days <= days, text
        for day in days - fired_days:  # each time of that day is in its gap
            assert all(_in_gap(day, h, m, zone) for h, m in times), (text, day)
        assert {(t.hour, t.minute) for t in fired} <= set(times), text
    assert by_name("rate").days("rate(5 minutes)", first, count) is None
    assert by_name("business").days("business(days at=09:00)", first, count) is None


def _in_gap(day: date, hour: int, minute: int, zone: ZoneInfo) -> bool:
    """A local time that does not exist (it does not survive a round trip through UTC)."""
    local = datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
    return local.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != local.replace(tzinfo=None)
