"""The fire ledger's per-pass fires (platform/pass_fires.py): every job's window is answered with
exactly what plan_fires gives for it, for every kind of schedule (crons across clock changes,
several crons in one job, at(), rate() with and without its anchor, calendar jobs that skip or
move fires off closed days), while one pass shares a schedule's computation between its jobs."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from jobplane.contract.calendars import CatalogCalendar
from jobplane.contract.catalog import CatalogJob
from jobplane.platform.backfill_model import MAX_FIRES, plan_fires
from jobplane.platform.pass_fires import PassFires

CAL = CatalogCalendar(name="ny", first_year=2026, last_year=2027, weekend=[5, 6],
                      closed={"2026-03-09": "closed", "2026-10-30": "closure", "2026-11-02": "holiday"})
ANCHOR = datetime(2026, 3, 1, 0, 0, 17, tzinfo=timezone.utc)


def job(name: str, schedule: list[str], zone: str = "America/New_York", rules: list[str] | None = None,
        on_closed_day: str = "skip") -> CatalogJob:
    calendar = CAL.model_copy(deep=True) if rules is not None else None  # each job its own copy, as the catalog's
    return CatalogJob(name=name, team="billing", schedule=schedule, timezone=zone, policy="ALWAYS_RUN", timeout=60,
                      steps=[], state_machine=f"jp-{name}", asl="", states=0, rules=rules or [], calendar=calendar,
                      on_closed_day=on_closed_day)


JOBS = [
    (job("minutely", ["cron(0/1 * * * ? *)"], "UTC"), ()),
    (job("half-hourly-ny", ["cron(0/30 * * * ? *)"]), ()),
    (job("two-crons", ["cron(30 1-3 * * ? *)", "cron(0/15 2 ? * MON-FRI *)"]), ()),
    (job("once", ["at(2026-03-08T02:30:00)", "at(2026-11-01T01:30:00)"]), ()),
    (job("rate-anchored", ["rate(7 minutes)"], "UTC"), (ANCHOR,)),
    (job("rate-unanchored", ["rate(7 minutes)"], "UTC"), (None,)),
    (job("cal-skip", ["cron(0/10 0-3 * * ? *)"], rules=["cron(0/10 0-3 * * ? *)"]), ()),
    (job("cal-next", ["cron(0/5 1-2 * * ? *)"], rules=["cron(0/5 1-2 * * ? *)"], on_closed_day="next"), ()),
    # a fire moved onto a day its cron fires anyway is that day's own fire: these move onto days they do not
    (job("weekend-next", ["cron(0/20 1-2 ? * SAT,SUN,FRI *)"], rules=["cron(0/20 1-2 ? * SAT,SUN,FRI *)"],
         on_closed_day="next"), ()),
    (job("cal-rules", ["cron(0 9 * * ? *)"], rules=["business(days at=01:00,01:30,02:30)",
                                                    "business(monthly business_day=-1 at=23:50)"]), ()),
]
#: clock changes (New York: 03-08, 11-01), a closed Friday, and the days closed fires move to
#: (Friday 03-06 from the weekend and Monday 03-09; Thursday 10-29; Tuesday 11-03 from 10-30..11-02)
CENTRES = [datetime(2026, 3, 8, 7, tzinfo=timezone.utc), datetime(2026, 11, 1, 6, tzinfo=timezone.utc),
           datetime(2026, 10, 31, 3, 50, tzinfo=timezone.utc), datetime(2026, 3, 6, 7, tzinfo=timezone.utc),
           datetime(2026, 10, 29, 6, tzinfo=timezone.utc), datetime(2026, 11, 3, 7, tzinfo=timezone.utc)]


@pytest.mark.parametrize("entry, anchors", JOBS, ids=[e.name for e, _ in JOBS])
def test_each_window_is_what_plan_fires_gives(entry: CatalogJob, anchors: tuple[datetime | None, ...]) -> None:
    """Many windows of one pass (as the pass's jobs ask, each from its own watermark): the
    first computes, later ones are slices of it or widen it; each answer equals plan_fires."""
    rng = random.Random(entry.name)
    for centre in CENTRES:
        planned = PassFires(centre + timedelta(hours=5), timedelta(hours=6))
        for _ in range(40):
            a = centre + timedelta(minutes=rng.randrange(-360, 300), seconds=rng.choice([0, 0.001, 17, 59.999]))
            b = a + timedelta(minutes=rng.choice([0, 1, 5, 30, 90, 240, 359]))
            expected = plan_fires(entry.schedule, entry.timezone, a, b, anchors, entry.calendar_schedule)
            assert planned.fires(entry, a, b, anchors) == expected, (entry.name, a, b)


def test_one_pass_of_every_kind_interleaved_keeps_each_schedule_apart() -> None:
    """One pass asked by jobs of every kind in turn (the same cron in two zones, the same rule
    skipping and moving, a rate() with another anchor): no schedule answers for another."""
    variants = JOBS + [(job("night-tokyo", ["cron(30 1-3 * * ? *)"], "Asia/Tokyo"), ()),
                       (job("night-ny", ["cron(30 1-3 * * ? *)"]), ()),
                       (job("weekend-skip", ["cron(0/20 1-2 ? * SAT,SUN,FRI *)"],
                            rules=["cron(0/20 1-2 ? * SAT,SUN,FRI *)"]), ()),
                       (job("weekend-previous", ["cron(0/20 1-2 ? * SAT,SUN,FRI *)"],
                            rules=["cron(0/20 1-2 ? * SAT,SUN,FRI *)"], on_closed_day="previous"), ()),
                       (job("rate-other-anchor", ["rate(7 minutes)"], "UTC"), (ANCHOR + timedelta(minutes=3),))]
    rng = random.Random(54)
    for centre in CENTRES:
        planned = PassFires(centre + timedelta(hours=5), timedelta(hours=6))
        for _ in range(300):
            entry, anchors = rng.choice(variants)
            a = centre + timedelta(minutes=rng.randrange(-360, 300))
            b = a + timedelta(minutes=rng.choice([1, 30, 240]))
            assert planned.fires(entry, a, b, anchors) == plan_fires(
                entry.schedule, entry.timezone, a, b, anchors, entry.calendar_schedule), (entry.name, a, b)


def test_jobs_that_share_a_schedule_share_its_computation() -> None:
    """1,000 jobs on one cron and 1,000 on one calendar rule (each with its own copy of the
    calendar), each from its own watermark: two computations a schedule, not one a job."""
    now = datetime(2026, 3, 9, 12, tzinfo=timezone.utc)
    planned = PassFires(now, timedelta(hours=6))
    rng = random.Random(1)
    for i in range(1000):
        for kind in ("cron", "cal"):
            entry = job(f"{kind}-{i}", ["cron(0/1 * * * ? *)"], rules=["cron(0/1 * * * ? *)"] if kind == "cal" else None)
            since = now - timedelta(minutes=rng.randrange(5, 300), seconds=rng.randrange(60))
            got = planned.fires(entry, since + timedelta(milliseconds=1), now - timedelta(minutes=10))
            if i % 100 == 0:
                assert got == plan_fires(entry.schedule, entry.timezone, since + timedelta(milliseconds=1),
                                         now - timedelta(minutes=10), (), entry.calendar_schedule)
    assert planned.computed <= 4


def test_a_rate_without_its_anchor_is_computed_for_its_window_alone() -> None:
    """Without the schedule's anchor a rate() counts from the window's start: no window may be
    answered from another's computation."""
    entry, _ = JOBS[5]
    planned = PassFires(datetime(2026, 3, 8, 12, tzinfo=timezone.utc), timedelta(hours=6))
    a = datetime(2026, 3, 8, 8, 0, 3, tzinfo=timezone.utc)
    first = planned.fires(entry, a, a + timedelta(hours=1), (None,))
    second = planned.fires(entry, a + timedelta(minutes=1), a + timedelta(hours=1), (None,))
    assert second[0] - first[0] == timedelta(minutes=1) and planned.computed == 2  # each from its own start
    assert second == plan_fires(entry.schedule, entry.timezone, a + timedelta(minutes=1), a + timedelta(hours=1))


def test_too_many_fires_in_a_window_is_refused_as_plan_fires_refuses_it() -> None:
    entry = job("many", ["cron(0/1 * * * ? *)"], "UTC")
    start = datetime(2026, 3, 8, tzinfo=timezone.utc)
    end = start + timedelta(minutes=MAX_FIRES + 5)
    with pytest.raises(ValueError):
        plan_fires(entry.schedule, entry.timezone, start, end)
    planned = PassFires(end, timedelta(hours=6))
    with pytest.raises(ValueError):
        planned.fires(entry, start, end)
    # a wide span it cannot compute whole still answers a window inside the limit
    planned.fires(entry, end - timedelta(minutes=5), end)
    assert planned.fires(entry, start, start + timedelta(minutes=3)) == plan_fires(
        entry.schedule, entry.timezone, start, start + timedelta(minutes=3))
