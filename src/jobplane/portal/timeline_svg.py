"""A day of the fleet on one time axis (issue 70, part 3): every run of the day as a bar from its
start to its end, a row per job, grouped by team, then each pool's use over the same axis (slots
held, a filled step; slots waited for, a dashed line), so "what ran at 02:00, what waited for
`billing-db`, what failed" is one picture.

Each bar is a link to its run and starts with its status's shape (portal/run_marks.py: readable
without colour), with its words as its <title> (a hover, a screen reader). The page lists the
same runs as a table below the picture, for reading without it. The runs come from the day's
items (contract/run_days.py), read by key and kept by the portal, read again where the day's counters
moved (portal/timeline_days.py); a run is on it once it has ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from html import escape
from urllib.parse import quote

from jobplane.contract.clock import parse_iso
from jobplane.contract.run_days import DayRun
from jobplane.portal import run_marks
from jobplane.portal.views import duration, short_time

WIDTH = 980
LABEL = 200
ROW = 16
POOL_ROW = 44
TOP = 22
#: The statuses the timeline filters by (a day's runs ended one of these ways).
STATUSES = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "SKIPPED", "BLACKED_OUT", "MISSED")


@dataclass(frozen=True)
class PoolPoint:
    """From ``at`` on (until the next point), ``held`` slots of the pool were held by the day's
    runs and ``waiting`` slots waited for."""

    at: str
    held: int
    waiting: int


def day_bounds(day: str) -> tuple[datetime, datetime]:
    start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    try:
        return start, start + timedelta(days=1)
    except OverflowError:  # 9999-12-31: the last day there is
        return start, datetime.max.replace(tzinfo=timezone.utc)


def chosen(runs: Sequence[DayRun], team: str | None, status: str | None) -> list[DayRun]:
    return [r for r in runs if (not team or r.team == team) and (not status or r.status == status)]


def lanes(runs: Sequence[DayRun]) -> list[tuple[str, list[tuple[str, list[DayRun]]]]]:
    """The runs by team, then by job (each by name), each job's runs by start."""
    teams: dict[str, dict[str, list[DayRun]]] = {}
    for r in runs:
        teams.setdefault(r.team or "(no team)", {}).setdefault(r.job, []).append(r)
    return [(t, [(j, sorted(rs, key=lambda r: r.started_at)) for j, rs in sorted(jobs.items())])
            for t, jobs in sorted(teams.items())]


def pool_use(runs: Sequence[DayRun]) -> dict[str, list[PoolPoint]]:
    """Each pool's slots held and waited for over the day, as the points where they change."""
    changes: dict[str, dict[str, list[int]]] = {}
    for r in runs:
        for u in r.pooled:
            at = changes.setdefault(u.pool, {})
            if u.waiting_since:  # waiting from then until it got its slots (or ended without)
                until = u.started_at or u.finished_at or r.finished_at
                at.setdefault(u.waiting_since, [0, 0])[1] += u.weight
                if until:
                    at.setdefault(until, [0, 0])[1] -= u.weight
            if u.started_at:
                at.setdefault(u.started_at, [0, 0])[0] += u.weight
                end = u.finished_at or r.finished_at
                if end:
                    at.setdefault(end, [0, 0])[0] -= u.weight
    out: dict[str, list[PoolPoint]] = {}
    for pool, at in sorted(changes.items()):
        held = waiting = 0
        points = []
        for t in sorted(at, key=parse_iso):
            held, waiting = held + at[t][0], waiting + at[t][1]
            points.append(PoolPoint(t, max(held, 0), max(waiting, 0)))
        out[pool] = points
    return out


def words(r: DayRun) -> str:
    took = duration(r.started_at, r.finished_at)
    text = f"{r.job} ({r.team}): {r.status.replace('_', ' ').lower()}, started {short_time(r.started_at)}"
    text += f", took {took}" if took and r.status not in ("SKIPPED", "BLACKED_OUT", "MISSED") else ""
    for u in r.pooled:
        text += f"; {u.step} {'waited for' if u.waiting_since else 'held'} {u.weight} slot(s) of {u.pool}"
    return text


def page_of(runs: Sequence[DayRun], page: int, per_page: int) -> tuple[list[DayRun], int]:
    """The runs of ``page``'s jobs (1-based; past the last: the last), the jobs by team then name
    as drawn, and how many pages: a busy day of 5,000 jobs is drawn a page of jobs at a time, as
    the jobs page lists them (one page of every run was ~4 MB of HTML and over a second)."""
    jobs = sorted({(r.team or "(no team)", r.job) for r in runs})
    pages = max(1, -(-len(jobs) // per_page))
    page = min(page, pages)
    kept = {job for _, job in jobs[(page - 1) * per_page:page * per_page]}
    return [r for r in runs if r.job in kept], pages


def svg(day: str, runs: Sequence[DayRun], now: datetime | None = None, every: Sequence[DayRun] | None = None,
        uses: dict[str, list[PoolPoint]] | None = None) -> str:
    """The day's picture: the runs by team and job on the day's axis (UTC), then each pool's use
    (of ``every`` run of the day the filters keep when ``runs`` is a page of them; ``uses``: that
    use, when worked out already)."""
    every = runs if every is None else every
    start, end = day_bounds(day)
    now = now or datetime.now(timezone.utc)
    plot = WIDTH - LABEL - 10

    def x(value: str | None, fallback: datetime) -> float:
        t = parse_iso(value) if value else fallback
        seconds = min(max((t - start).total_seconds(), 0.0), 86400.0)
        return LABEL + plot * seconds / 86400

    body: list[str] = []
    y = TOP
    grouped = lanes(runs)
    for team, jobs in grouped:
        body.append(f'<text class="team" x="4" y="{y + 12}" font-size="12" font-weight="bold" fill="#0f172a">{escape(team)}</text>')
        y += ROW
        for job, job_runs in jobs:
            body.append(f'<text x="16" y="{y + 11}" font-size="11" fill="#334155">{escape(job[:30])}</text>')
            for r in job_runs:
                x0 = x(r.started_at, start)
                x1 = x(r.finished_at, min(now, end))
                shape, colour = run_marks.SHAPES.get(r.status, run_marks.OTHER)
                body.append(
                    f'<a href="/executions/{quote(r.execution)}"><g class="run" data-execution="{escape(r.execution)}" '
                    f'data-status="{escape(r.status)}" data-job="{escape(r.job)}"><title>{escape(words(r))}</title>'
                    f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 3):.1f}" height="{ROW - 6}" fill="{colour}" '
                    f'fill-opacity="0.35" stroke="{colour}"/>'
                    f'<g transform="translate({x0 - 6:.1f},{y + 1}) scale(1.1)">{shape.format(c=colour)}</g></g></a>')
            y += ROW
    if not grouped:
        body.append(f'<text x="{LABEL}" y="{y + 12}" font-size="12" fill="#475569">no run on this day</text>')
        y += ROW
    uses = pool_use(every) if uses is None else uses
    for pool, points in uses.items():
        y += 8
        top = max([p.held for p in points] + [p.waiting for p in points] + [1])
        base = y + POOL_ROW - 4
        scale = (POOL_ROW - 14) / top

        def steps(values: list[tuple[float, int]]) -> str:
            out, last = [], 0
            for px, v in values:
                out += [f"{px:.1f},{base - last * scale:.1f}", f"{px:.1f},{base - v * scale:.1f}"]
                last = v
            out.append(f"{LABEL + plot:.1f},{base - last * scale:.1f}")
            return " ".join(out)

        held = [(x(p.at, start), p.held) for p in points]
        waiting = [(x(p.at, start), p.waiting) for p in points]
        most_held, most_waiting = max(p.held for p in points), max(p.waiting for p in points)
        label = f"pool {pool}: at most {most_held} slot(s) held, {most_waiting} waited for"
        body.append(f'<g class="pool" data-pool="{escape(pool)}" data-held-max="{most_held}" '
                    f'data-waiting-max="{most_waiting}"><title>{escape(label)}</title>'
                    f'<text x="4" y="{y + 12}" font-size="11" fill="#0f172a">pool {escape(pool)}</text>'
                    f'<text x="4" y="{y + 26}" font-size="10" fill="#475569">held (filled) {most_held} max</text>'
                    f'<text x="4" y="{y + 38}" font-size="10" fill="#475569">waiting (dashed) {most_waiting} max</text>'
                    f'<polygon points="{LABEL:.1f},{base} {steps(held)} {LABEL + plot:.1f},{base}" fill="#1d4ed8" '
                    f'fill-opacity="0.3" stroke="#1d4ed8"/>'
                    f'<polyline points="{LABEL:.1f},{base} {steps(waiting)}" fill="none" stroke="#b45309" '
                    f'stroke-width="2" stroke-dasharray="5 3"/></g>')
        y += POOL_ROW
    height = y + 8
    label = (f"Runs of {day} (UTC): {len(runs)} run(s) of {sum(len(j) for _, j in grouped)} job(s)"
             + (f" drawn, of {len(every)} run(s) that day" if len(every) != len(runs) else "")
             + (f"; {len(uses)} pool(s)" if uses else ""))
    ticks = "".join(f'<line x1="{LABEL + plot * h / 24:.1f}" y1="{TOP - 6}" x2="{LABEL + plot * h / 24:.1f}" y2="{y}" '
                    f'stroke="#e2e8f0"/><text x="{LABEL + plot * h / 24:.1f}" y="{TOP - 10}" font-size="11" '
                    f'fill="#475569" text-anchor="{"end" if h == 24 else "middle"}">{h:02d}:00</text>' for h in range(0, 25, 3))
    inner = ticks + "".join(body)
    return (f'<svg class="timeline" role="img" aria-label="{escape(label)}" viewBox="0 0 {WIDTH} {height}" '
            f'width="{WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(label)}</title>'
            f'{inner}</svg>')
