"""The timeline's other view (issue 70, part 3): the next 24 hours' scheduled fires of the fleet
on one time axis, grouped by team, with each pool's expected demand over the same axis.

The fires are the catalog's, by the one enumerator every reader of fires calls
(contract/job_fires.py: `jobplane next`, the fire ledger, deadlines): a calendar job's business
days, each schedule's own kind, spread already resolved in the deployed schedule, a rate()
counted from its schedule's start (ControlPlane.schedule_anchors). A pool's expected demand: each
fire of a job holding the pool adds the slots a run holds at once at most (the catalog's
``pool_peak``, compiler/peak.py) for as long as a run is expected to take (its
``expected_duration``, else :data:`ASSUMED_RUN` seconds): what would be asked for if every fire
started on time, not what the pool admits.

Why a cache: 5,000 jobs fire about 90,000 times in 24 hours (bench/portal.py's fleet); working
each out on every request costs seconds. A job's fires over the hour's window (this hour and the
next 25) depend only on its schedule, zone, calendar and anchors, and most jobs share those with
others, so each distinct schedule is worked out once an hour (:class:`FireCache`); a request only
cuts the window [now, now + 24 h] and its hours out of each distinct schedule's list, once, and
asks only a rate() job for its anchors. A page draws a page of jobs (the jobs page's 100), the
teams' fires per hour and the pools over every job.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from datetime import datetime, timedelta, timezone
from html import escape
from urllib.parse import quote

from jobplane.contract.catalog import CatalogJob
from jobplane.contract.job_fires import job_fires
from jobplane.contract.schedule_kinds import kind_of

HOURS = 24
#: seconds a run of a job without ``expected_duration`` is taken to hold its pool's slots
ASSUMED_RUN = 300
#: a job row draws each fire as its own mark (with its own hover) up to this many; more, as one band
EACH_UP_TO = 48
WIDTH = 980
LABEL = 200
ROW = 16
TEAM_ROW = 30
POOL_ROW = 44
TOP = 22
FIRE_COLOUR = "#1d4ed8"
DEMAND_COLOUR = "#b45309"

Anchors = tuple[datetime | None, ...]


@dataclass(frozen=True)
class JobFires:
    """One job's fires in the window (UTC, in order)."""

    job: str
    team: str
    timezone: str
    fires: tuple[datetime, ...]
    pool_peak: tuple[tuple[str, int], ...]
    holds_for: int  # seconds a run is expected to hold its pools' slots
    per_hour: tuple[int, ...] = ()  # its fires in each hour of the window

    @property
    def url(self) -> str:
        return f"/jobs/{quote(self.job)}"


@dataclass(frozen=True)
class DemandPoint:
    """From ``at`` on (until the next point), ``slots`` of the pool would be asked for."""

    at: datetime
    slots: int


@dataclass(frozen=True)
class NextFires:
    """The view's data: the window, each firing job's fires (by team, then name), and each pool's
    expected demand over the window (of every job the team filter keeps)."""

    start: datetime
    end: datetime
    jobs: tuple[JobFires, ...]
    demand: dict[str, tuple[DemandPoint, ...]]

    @property
    def fire_count(self) -> int:
        return sum(len(j.fires) for j in self.jobs)


class FireCache:
    """Each distinct schedule's fires over the current hour's window, worked out once an hour."""

    def __init__(self) -> None:
        self._hour: datetime | None = None
        self._fires: dict[Hashable, tuple[datetime, ...]] = {}
        self._lock = threading.Lock()

    def fires(self, entry: CatalogJob, anchors: Anchors, now: datetime) -> tuple[datetime, ...]:
        """``entry``'s fires from the start of ``now``'s hour to 25 hours later (UTC, in order): every
    window starting in the hour falls in it."""
        hour = now.replace(minute=0, second=0, microsecond=0)
        key: Hashable = (tuple(entry.schedule), entry.timezone, anchors,
                         None if entry.calendar is None else (entry.name, tuple(entry.rules), entry.on_closed_day,
                                                              id(entry.calendar)))
        with self._lock:
            if hour != self._hour:
                self._hour, self._fires = hour, {}
            found = self._fires.get(key)
        if found is None:
            found = tuple(f.at.astimezone(timezone.utc)
                          for f in job_fires(entry, hour, hour + timedelta(hours=HOURS + 1), anchors))
            with self._lock:
                if hour == self._hour:
                    self._fires[key] = found
        return found

    def clear(self) -> None:
        with self._lock:
            self._hour, self._fires = None, {}


CACHE = FireCache()


class ViewCache:
    """The view of each (minute, team) and its pictures, for the minute: the window starts at the
    next whole minute, so every request of a minute has the same answer (the catalog's entries the
    same object: a new catalog, a new view). The first request of a minute works it out."""

    KEPT = 16

    def __init__(self) -> None:
        self._views: dict[tuple[datetime, str | None, int], tuple[object, NextFires, dict[int, str]]] = {}
        self._lock = threading.Lock()

    def view(self, entries: dict[str, CatalogJob], anchors_of: Callable[[CatalogJob], Anchors], now: datetime,
             team: str | None) -> NextFires:
        key = (_window_start(now), team, id(entries))
        with self._lock:
            found = self._views.get(key)
        if found is not None and found[0] is entries:
            return found[1]
        view = next_fires(list(entries.values()), anchors_of, now, team)
        with self._lock:
            if len(self._views) >= self.KEPT:
                self._views.pop(next(iter(self._views)))
            self._views[key] = (entries, view, {})
        return view

    def svg(self, view: NextFires, page: int, shown: Sequence[JobFires]) -> str:
        """The picture of ``page`` of ``view`` (drawn once a minute)."""
        with self._lock:
            found = next((v for v in self._views.values() if v[1] is view), None)
        if found is None:
            return svg(view, shown)
        drawn = found[2].get(page)
        if drawn is None:
            drawn = found[2][page] = svg(view, shown)
        return drawn

    def clear(self) -> None:
        with self._lock:
            self._views.clear()


VIEWS = ViewCache()


def _window_start(now: datetime) -> datetime:
    return now.astimezone(timezone.utc).replace(second=0, microsecond=0) + timedelta(minutes=1)


def next_fires(entries: Sequence[CatalogJob], anchors_of: Callable[[CatalogJob], Anchors], now: datetime,
               team: str | None = None, cache: FireCache = CACHE) -> NextFires:
    """The fires of ``entries`` (of ``team``) from the next whole minute after ``now`` (a fire
    this minute has been, EventBridge fires at whole minutes) for 24 hours (a fire at the window's
    end left to the next window), and each pool's expected demand."""
    start = _window_start(now)
    end = start + timedelta(hours=HOURS)
    bounds = [start + timedelta(hours=h) for h in range(1, HOURS)]
    out = []
    # per schedule (its cached list, kept here so that its id is not reused meanwhile): cut once
    cut: dict[int, tuple[tuple[datetime, ...], tuple[datetime, ...], tuple[int, ...]]] = {}
    for e in sorted(entries, key=lambda e: (e.team, e.name)):
        if not e.scheduled or (team and e.team != team):
            continue
        known = cache.fires(e, anchors_of(e) if _counts_from_deployment(tuple(e.schedule)) else (), start)
        if id(known) not in cut:
            fires = known[bisect_left(known, start):bisect_left(known, end)]
            edges = [0, *(bisect_left(fires, b) for b in bounds), len(fires)]
            cut[id(known)] = known, fires, tuple(b - a for a, b in zip(edges, edges[1:]))
        _, fires, per_hour = cut[id(known)]
        if fires:
            out.append(JobFires(e.name, e.team, e.timezone, fires, tuple(sorted(e.pool_peak.items())),
                                e.expected_duration or ASSUMED_RUN, per_hour))
    return NextFires(start, end, tuple(out), demand(out, end))


@lru_cache(maxsize=4096)
def _counts_from_deployment(schedule: tuple[str, ...]) -> bool:
    """Whether a schedule counts its fires from its deployment (a rate()): only those need
    their anchors (a GetSchedule each, cached: platform/anchors.py)."""
    return any(kind_of(expression).counts_from_deployment for expression in schedule)


def demand(jobs: Sequence[JobFires], end: datetime) -> dict[str, tuple[DemandPoint, ...]]:
    """Each pool's slots asked for over the window, as the points where it changes: every fire of
    a pooled job asks for its peak from the fire for as long as a run is expected to take."""
    changes: dict[str, dict[datetime, int]] = {}
    for j in jobs:
        for pool, slots in j.pool_peak:
            at = changes.setdefault(pool, {})
            for t in j.fires:
                at[t] = at.get(t, 0) + slots
                until = t + timedelta(seconds=j.holds_for)
                if until < end:
                    at[until] = at.get(until, 0) - slots
    out = {}
    for pool, at in sorted(changes.items()):
        level, points = 0, []
        for t in sorted(at):
            level += at[t]
            points.append(DemandPoint(t, level))
        out[pool] = tuple(points)
    return out


def _hhmm(t: datetime) -> str:
    return t.strftime("%H:%M")


def every(fires: Sequence[datetime]) -> str:
    """'every 15 min' when the fires are evenly spaced, else ''."""
    gaps = {int((b - a).total_seconds()) for a, b in zip(fires, fires[1:])}
    if len(gaps) != 1:
        return ""
    gap = gaps.pop()
    return f"every {gap // 3600} h" if gap % 3600 == 0 else f"every {gap // 60} min" if gap % 60 == 0 else f"every {gap} s"


def job_words(j: JobFires) -> str:
    """The row's words (its hover, a screen reader): how many fires, when (UTC), what it holds."""
    n = len(j.fires)
    text = f"{j.job} ({j.team}): {n} fire{'s' if n != 1 else ''}"
    spacing = every(j.fires)
    if n <= 6:
        text += " at " + ", ".join(_hhmm(t) for t in j.fires) + " UTC"
    else:
        text += f"{', ' + spacing if spacing else ''}, first {_hhmm(j.fires[0])}, last {_hhmm(j.fires[-1])} UTC"
    for pool, slots in j.pool_peak:
        text += f"; each run asks for {slots} slot(s) of {pool}"
    return text


def fire_words(j: JobFires, t: datetime) -> str:
    return f"{j.job} ({j.team}): fires {t.strftime('%Y-%m-%d %H:%M')} UTC"


def hour_counts(view: NextFires) -> dict[str, list[int]]:
    """Each team's fires in each hour of the window (hour 0: the first 60 minutes from its start)."""
    out: dict[str, list[int]] = {}
    same = Counter((j.team, j.per_hour) for j in view.jobs)  # jobs of one schedule share their counts
    for (team, per_hour), jobs in same.items():
        counts = out.setdefault(team, [0] * HOURS)
        for h, n in enumerate(per_hour):
            counts[h] += n * jobs
    return out


def svg(view: NextFires, shown: Sequence[JobFires] | None = None) -> str:
    """The picture: per team a row of fires per hour (its count in words on hover; every job of
    the view), then a row per job ``shown`` (a page of them: each fire a downward triangle at its
    time, or a band of ticks when it fires more than :data:`EACH_UP_TO` times), then each pool's
    expected demand (a dashed step line)."""
    start, plot = view.start, WIDTH - LABEL - 10
    shown = view.jobs if shown is None else shown
    span = HOURS * 3600

    def x(t: datetime) -> float:
        return LABEL + plot * min(max((t - start).total_seconds(), 0.0), span) / span

    body: list[str] = []
    y = TOP
    by_team: dict[str, list[JobFires]] = {}
    for j in shown:
        by_team.setdefault(j.team, []).append(j)
    for team, counts in hour_counts(view).items():
        jobs = by_team.get(team, [])
        most = max(counts) or 1
        bars = "".join(
            f'<rect class="hour" data-hour="{h}" data-fires="{n}" x="{LABEL + plot * h / HOURS:.1f}" '
            f'y="{y + TEAM_ROW - 4 - (TEAM_ROW - 10) * n / most:.1f}" width="{plot / HOURS - 1:.1f}" '
            f'height="{(TEAM_ROW - 10) * n / most:.1f}" fill="#94a3b8"><title>{escape(team)}: {n} fire(s) from '
            f'{_hhmm(start + timedelta(hours=h))} UTC for an hour</title></rect>'
            for h, n in enumerate(counts) if n)
        total = sum(counts)
        body.append(f'<g class="team-fires" data-team="{escape(team)}" data-fires="{total}">'
                    f'<text class="team" x="4" y="{y + 12}" font-size="12" font-weight="bold" fill="#0f172a">'
                    f'{escape(team)}</text><text x="4" y="{y + 25}" font-size="10" fill="#475569">{total} fire{"s" if total != 1 else ""}, '
                    f'bars by hour</text>{bars}</g>')
        y += TEAM_ROW
        for j in jobs:
            words = job_words(j)
            marks: list[str] = []
            if len(j.fires) <= EACH_UP_TO:
                for t in j.fires:
                    px = x(t)
                    marks.append(f'<g class="fire" data-at="{t.isoformat()}"><title>{escape(fire_words(j, t))}</title>'
                                 f'<path d="M{px - 4:.1f} {y + 3} L{px + 4:.1f} {y + 3} L{px:.1f} {y + ROW - 3} Z" '
                                 f'fill="{FIRE_COLOUR}"/></g>')
            else:  # one path of ticks: a mark a fire would be thousands of elements
                ticks = " ".join(f"M{x(t):.1f} {y + 3}v{ROW - 6}" for t in j.fires)
                marks.append(f'<path class="fire-band" d="{ticks}" stroke="{FIRE_COLOUR}" stroke-width="1"/>')
            body.append(f'<a href="{escape(j.url)}"><g class="job-fires" data-job="{escape(j.job)}" '
                        f'data-fires="{len(j.fires)}"><title>{escape(words)}</title>'
                        f'<text x="16" y="{y + 11}" font-size="11" fill="#334155">{escape(j.job[:30])}</text>'
                        f'{"".join(marks)}</g></a>')
            y += ROW
    if not view.jobs:
        body.append(f'<text x="{LABEL}" y="{y + 12}" font-size="12" fill="#475569">no fire in the next 24 hours</text>')
        y += ROW
    for pool, points in view.demand.items():
        y += 8
        top = max([p.slots for p in points] + [1])
        base = y + POOL_ROW - 4
        scale = (POOL_ROW - 14) / top
        line, last = [f"{LABEL:.1f},{base:.1f}"], 0
        for p in points:
            px = x(p.at)
            line += [f"{px:.1f},{base - last * scale:.1f}", f"{px:.1f},{base - p.slots * scale:.1f}"]
            last = p.slots
        line.append(f"{LABEL + plot:.1f},{base - last * scale:.1f}")
        busiest = max(points, key=lambda p: p.slots)
        label = f"pool {pool}: at most {busiest.slots} slot(s) asked for at once, from {_hhmm(busiest.at)} UTC"
        body.append(f'<g class="pool-demand" data-pool="{escape(pool)}" data-slots-max="{busiest.slots}">'
                    f'<title>{escape(label)}</title>'
                    f'<text x="4" y="{y + 12}" font-size="11" fill="#0f172a">pool {escape(pool)}</text>'
                    f'<text x="4" y="{y + 26}" font-size="10" fill="#475569">expected (dashed) {busiest.slots} max</text>'
                    f'<polyline points="{" ".join(line)}" fill="none" stroke="{DEMAND_COLOUR}" stroke-width="2" '
                    f'stroke-dasharray="5 3"/></g>')
        y += POOL_ROW
    first = start.replace(minute=0, second=0) + timedelta(hours=1)
    ticks = "".join(
        f'<line x1="{x(t):.1f}" y1="{TOP - 6}" x2="{x(t):.1f}" y2="{y}" stroke="#e2e8f0"/>'
        f'<text x="{x(t):.1f}" y="{TOP - 10}" font-size="11" fill="#475569" text-anchor="middle">{_hhmm(t)}</text>'
        for h in range(0, HOURS, 3) if (t := first + timedelta(hours=h)) < view.end)
    label = (f"Scheduled fires from {start.strftime('%Y-%m-%d %H:%M')} UTC for 24 hours: {view.fire_count} fire(s) of "
             f"{len(view.jobs)} job(s)" + (f"; {len(view.demand)} pool(s)" if view.demand else ""))
    height = y + 8
    return (f'<svg class="timeline timeline-next" role="img" aria-label="{escape(label)}" '
            f'data-from="{start.isoformat()}" data-to="{view.end.isoformat()}" viewBox="0 0 {WIDTH} {height}" '
            f'width="{WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(label)}</title>'
            f'{ticks}{"".join(body)}</svg>')
