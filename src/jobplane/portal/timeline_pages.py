"""The fleet's timeline page (issue 70, part 3): every run of a chosen day (UTC) on one time
axis, grouped by team, filtered by team and status, with each pool's use over the same axis
(portal/timeline_svg.py); the runs also as a table. Its JSON is ``GET /api/timeline``
(portal/pictures_api.py). Its other view, ``/timeline/next``: the next 24 hours' scheduled fires,
by team, with each pool's expected demand (portal/timeline_fires.py; JSON ``GET /api/timeline/next``),
a page of jobs at a time as the jobs page (the teams' fires per hour and the pools: every job)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from jobplane.contract.run_days import DayRun
from jobplane.platform.run_history import RunHistory
from jobplane.portal import timeline_days, timeline_fires, timeline_svg
from jobplane.portal.errors import PortalError
from jobplane.portal.job_pager import PAGE_MAX, PER_PAGE
from jobplane.portal.services import Portal, portal_of

router = APIRouter(include_in_schema=False)  # an HTML page, like the other pages: not in the API schema


def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class DayPage:
    """What a view of a day draws: every run the filters keep, the runs of the page's jobs, how
    many pages, and the pools' use of every run kept."""

    every: list[DayRun]
    runs: list[DayRun]
    pages: int
    uses: dict[str, list[timeline_svg.PoolPoint]]


def day_page(portal: Portal, day: str, team: str | None, status: str | None, page: int, per_page: int) -> DayPage:
    """The runs of ``page`` of the day's jobs the filters keep (timeline_svg.page_of) and the rest
    of what the view draws; ``day``: YYYY-MM-DD. The day's items are kept in memory and read again
    where their counters moved (portal/timeline_days.py: one GetItem a view when nothing changed),
    what a view works out of them once per state of the day."""
    context = portal.control.context
    kept = timeline_days.DAYS_KEPT.day(RunHistory(context.ddb, context.deployment.table), day)
    every = kept.derived(("chosen", team, status), lambda runs: timeline_svg.chosen(runs, team, status))
    runs, pages = kept.derived(("page", team, status, page, per_page), lambda _: timeline_svg.page_of(every, page, per_page))
    uses = kept.derived(("pools", team, status), lambda _: timeline_svg.pool_use(every))
    return DayPage(every, runs, pages, uses)


def DayQuery() -> Any:  # noqa: N802 - a parameter's declaration, as FastAPI's Query
    """``?day=YYYY-MM-DD`` (UTC): a pattern and the date format (a schema-valid day is a date)."""
    return Query(None, pattern=r"^\d{4}-\d{2}-\d{2}$", json_schema_extra={"format": "date"},
                 description="YYYY-MM-DD (UTC); today without it")


def chosen_day(day: str | None) -> str:
    """The day asked for, checked (2026-02-30 is refused: 400), or today."""
    if not day:
        return today()
    try:
        return date.fromisoformat(day).isoformat()
    except ValueError:
        raise PortalError(400, f"day {day!r} is not a date (YYYY-MM-DD)") from None


@router.get("/timeline", response_class=HTMLResponse)
def timeline_page(request: Request, day: str | None = DayQuery(), team: str | None = Query(None, max_length=100),
                  status: str | None = Query(None, max_length=40), page: int = Query(1, ge=1, le=PAGE_MAX)) -> Response:
    portal = portal_of(request)
    shown = chosen_day(day)
    drawn = day_page(portal, shown, team or None, status or None, page, PER_PAGE)
    every, runs, pages = drawn.every, drawn.runs, drawn.pages
    page = min(page, pages)
    query = {k: v for k, v in (("day", day or ""), ("team", team or ""), ("status", status or "")) if v}
    links = {n: f"/timeline?{urlencode(query | ({'page': str(n)} if n > 1 else {}))}".rstrip("?")
             for n in (page - 1, page + 1) if 1 <= n <= pages}
    return portal.render(request, "timeline.html", day=shown, team=team or "", chosen_status=status or "", teams=portal.teams,
                         statuses=timeline_svg.STATUSES, runs=runs, every=len(every), page=page, pages=pages, links=links,
                         picture=timeline_svg.svg(shown, runs, every=every, uses=drawn.uses), words=timeline_svg.words)


def fires_view(portal: Portal, team: str | None, now: datetime | None = None) -> timeline_fires.NextFires:
    """The next 24 hours' fires of the catalog's jobs (of ``team``), from now (portal/timeline_fires.py)."""
    control = portal.control
    return timeline_fires.VIEWS.view(control.entries, control.schedule_anchors, now or datetime.now(timezone.utc), team)


def fires_page(view: timeline_fires.NextFires, page: int, per_page: int) -> tuple[tuple[timeline_fires.JobFires, ...], int]:
    """The jobs of ``page`` (1-based; past the last: the last) and how many pages there are."""
    pages = max(1, -(-len(view.jobs) // per_page))
    page = min(page, pages)
    return view.jobs[(page - 1) * per_page:page * per_page], pages


@router.get("/timeline/next", response_class=HTMLResponse)
def next_fires_page(request: Request, team: str | None = Query(None, max_length=100),
                    page: int = Query(1, ge=1, le=PAGE_MAX)) -> Response:
    portal = portal_of(request)
    view = fires_view(portal, team or None)
    shown, pages = fires_page(view, page, PER_PAGE)
    page = min(page, pages)
    query = {"team": team} if team else {}
    links = {n: f"/timeline/next?{urlencode(query | ({'page': str(n)} if n > 1 else {}))}".rstrip("?")
             for n in (page - 1, page + 1) if 1 <= n <= pages}
    return portal.render(request, "timeline_next.html", view=view, shown=shown, page=page, pages=pages, links=links,
                         team=team or "", teams=portal.teams, picture=timeline_fires.VIEWS.svg(view, page, shown),
                         job_words=timeline_fires.job_words, per_page=PER_PAGE,
                         each_up_to=timeline_fires.EACH_UP_TO)
