"""The next 24 hours' fires (portal/timeline_fires.py) worked out through its caches are the
fires the one enumerator counts (contract/job_fires.py), whatever minute and hour a request
comes in, and a pool's demand adds up each fire's peak for a run's expected time."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.job_fires import job_fires
from jobplane.portal import timeline_fires as tf


def entry(name: str, team: str, schedule: list[str], zone: str = "UTC", **more: object) -> CatalogJob:
    return CatalogJob.model_validate({
        "name": name, "team": team, "schedule": schedule, "timezone": zone, "policy": "SKIP_IF_RUNNING",
        "timeout": 3600, "steps": [{"name": "work", "kind": "python"}], "state_machine": f"jobplane-{name}",
        "asl": f"teams/{team}/{name}.job.tf.json", "states": 3} | more)


JOBS = [entry("quarter", "growth", ["rate(15 minutes)"]),
        entry("tokyo-morning", "billing", ["cron(0 9 ? * MON-FRI *)"], "Asia/Tokyo"),
        entry("ledger", "billing", ["cron(15 * * * ? *)"], pool_peak={"ledger-db": 2}, expected_duration=5400),
        entry("also-ledger", "billing", ["cron(15 * * * ? *)"], pool_peak={"ledger-db": 1}),
        entry("manual", "growth", []),
        entry("off", "growth", ["cron(0 2 * * ? *)"], enabled=False)]
ANCHOR = datetime(2026, 3, 1, 0, 7, tzinfo=timezone.utc)


def anchors(e: CatalogJob) -> tuple[datetime | None, ...]:
    return tuple(ANCHOR if x.startswith("rate(") else None for x in e.schedule)


def expected(now: datetime) -> dict[str, list[datetime]]:
    start = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    end = start + timedelta(hours=24)
    out = {e.name: [f.at for f in job_fires(e, start, end, anchors(e)) if f.at < end] for e in JOBS if e.scheduled}
    return {name: fires for name, fires in out.items() if fires}


def test_the_cached_fires_are_the_enumerators_at_every_minute_and_across_hours() -> None:
    cache = tf.FireCache()
    # the same cache asked through the hour's end, at its last minute, then the next hour's first
    for now in (datetime(2026, 3, 2, 10, 0, 5, tzinfo=timezone.utc), datetime(2026, 3, 2, 10, 59, 59, tzinfo=timezone.utc),
                datetime(2026, 3, 2, 11, 0, 0, tzinfo=timezone.utc), datetime(2026, 3, 3, 23, 59, 30, tzinfo=timezone.utc)):
        view = tf.next_fires(JOBS, anchors, now, cache=cache)
        assert view.start == now.replace(second=0, microsecond=0) + timedelta(minutes=1)
        assert {j.job: list(j.fires) for j in view.jobs} == expected(now), now
        assert [(j.team, j.job) for j in view.jobs] == sorted((j.team, j.job) for j in view.jobs)  # by team, then name
        assert all(j.fires[0] >= view.start and j.fires[-1] < view.end for j in view.jobs)
        # each team's fires per hour: the hour from the window's start each
        hours = tf.hour_counts(view)
        for team, counts in hours.items():
            fires = [t for j in view.jobs if j.team == team for t in j.fires]
            assert counts == [sum(1 for t in fires if view.start + timedelta(hours=h) <= t < view.start + timedelta(hours=h + 1))
                              for h in range(24)]
    quarter = next(j for j in tf.next_fires(JOBS, anchors, datetime(2026, 3, 2, 10, 0, 5, tzinfo=timezone.utc), cache=cache).jobs
                   if j.job == "quarter")
    assert len(quarter.fires) == 96 and quarter.fires[0].minute % 15 == 7  # counted from its anchor, 00:07
    assert "every 15 min" in tf.job_words(quarter)


def test_a_pools_demand_adds_each_fires_peak_for_a_runs_expected_time() -> None:
    view = tf.next_fires(JOBS, anchors, datetime(2026, 3, 2, 10, 30, tzinfo=timezone.utc), team="billing",
                         cache=tf.FireCache())
    points = view.demand["ledger-db"]
    # at each :15 both fire: ledger asks for 2 slots for 90 minutes, also-ledger 1 for 5 minutes;
    # two ledger runs overlap, so 2 + 2 + 1 at once at most
    assert max(p.slots for p in points) == 5
    at = {p.at: p.slots for p in points}
    first = datetime(2026, 3, 2, 11, 15, tzinfo=timezone.utc)
    assert at[first] == 3 and at[first + timedelta(minutes=5)] == 2 and at[first + timedelta(hours=1)] == 5
    assert tf.next_fires(JOBS, anchors, datetime(2026, 3, 2, 10, 30, tzinfo=timezone.utc), team="growth",
                         cache=tf.FireCache()).demand == {}
