"""``jobplane plan --starts``: the fleet's starts per minute over the next day, and what each
busiest minute asks of each pool against its size.

The herd a fleet makes is visible only across jobs: each file says ``00:00`` and looks fine. The
fires are the catalog's (contract/job_fires.py: what the schedules deployed fire, calendars,
spread offsets and all), so what this prints is what will start. A pool's demand at a minute is
what the jobs starting then would hold of it if each reached its peak at once (:func:`pool_weights`:
a parallel group's members together, a map's items ``max_concurrency`` at a time), against the
pool's size: the excess waits for a slot (docs/pools.md), it does not fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from jobplane.compiler.model import Job
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.job_fires import job_fires

#: How many of the busiest minutes are listed.
TOP = 10
_BAR = 40


@dataclass
class Minute:
    at: datetime
    jobs: list[str] = field(default_factory=list)


def starts_by_minute(entries: list[CatalogJob], start: datetime, hours: int = 24) -> dict[datetime, Minute]:
    """Each minute of ``[start, start + hours)`` at which some enabled job fires, with its jobs."""
    end = start + timedelta(hours=hours) - timedelta(microseconds=1)
    minutes: dict[datetime, Minute] = {}
    for entry in entries:
        if not entry.scheduled:
            continue
        for fire in job_fires(entry, start, end):
            at = fire.at.astimezone(timezone.utc).replace(second=0, microsecond=0)
            minutes.setdefault(at, Minute(at)).jobs.append(entry.name)
    return minutes


def pool_weights(job: Job) -> dict[str, int]:
    """The most of each pool the job holds at once (compiler/quota_usage.py ``job_peak``): steps
    that run one after another never add up, a parallel group's members do, and a map's items
    hold their step's weight ``max_concurrency`` times."""
    from jobplane.compiler.quota_usage import job_peak

    return dict(job_peak(job).pools)


def starts_lines(entries: list[CatalogJob], jobs: list[Job], pools: dict[str, int], start: datetime) -> list[str]:
    """The report: totals, the busiest minutes with a bar each, and each pool at those minutes."""
    minutes = starts_by_minute(entries, start)
    fires = sum(len(m.jobs) for m in minutes.values())
    head = (f"Starts in the 24 hours from {start:%Y-%m-%d %H:%M} UTC: {fires:,} fires at {len(minutes):,} distinct "
            f"minutes, of {sum(1 for e in entries if e.scheduled):,} scheduled jobs")
    if not minutes:
        return [head]
    busiest = sorted(minutes.values(), key=lambda m: (-len(m.jobs), m.at))[:TOP]
    most = len(busiest[0].jobs)
    lines = [head, f"Busiest minutes (UTC; at most {TOP}):"]
    for m in sorted(busiest, key=lambda m: m.at):
        bar = "#" * max(1, round(_BAR * len(m.jobs) / most))
        lines.append(f"  {m.at:%m-%d %H:%M}  {len(m.jobs):>6,} starts  {bar}")
    weights = {j.name: pool_weights(j) for j in jobs}
    pooled = sorted({p for w in weights.values() for p in w})
    if pooled:
        lines.append("Pools at those minutes (slots the jobs starting then would hold at once, against the size; "
                     "the excess waits for a slot):")
    for pool in pooled:
        size = pools.get(pool, 0)
        asks = []
        for m in sorted(busiest, key=lambda m: m.at):
            demand = sum(weights.get(j, {}).get(pool, 0) for j in m.jobs)
            if demand:
                asks.append(f"{m.at:%H:%M} {demand:,}" + (f" ({demand - size:,} wait)" if demand > size else ""))
        lines.append(f"  {pool} (size {size:,}): " + (", ".join(asks) if asks else "none of its jobs starts then"))
    if most > 1:
        crowded = sum(len(m.jobs) for m in minutes.values() if len(m.jobs) > 1)
        lines.append(f"{crowded:,} of {fires:,} fires share their minute with another job: `spread: '30m'` on "
                     "a job moves its fires by a stable offset (docs/dsl.md#spread-start-times)")
    return lines
