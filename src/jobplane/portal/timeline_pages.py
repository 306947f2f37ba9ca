"""The fleet's timeline page (issue 70, part 3): every run of a chosen day (UTC) on one time
axis, grouped by team, filtered by team and status, with each pool's use over the same axis
(portal/timeline_svg.py); the runs also as a table. Its JSON is ``GET /api/timeline``
(portal/pictures_api.py)."""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from jobplane.contract.run_days import DayRun
from jobplane.platform.run_history import RunHistory
from jobplane.portal import timeline_svg
from jobplane.portal.errors import PortalError
from jobplane.portal.services import Portal, portal_of

router = APIRouter(include_in_schema=False)  # an HTML page, like the other pages: not in the API schema
def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def day_runs(portal: Portal, day: str, team: str | None, status: str | None) -> list[DayRun]:
    """The day's runs the filters keep (its items by key: two BatchGetItem requests); ``day``: YYYY-MM-DD."""
    context = portal.control.context
    return timeline_svg.chosen(RunHistory(context.ddb, context.deployment.table).day(day), team, status)


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
                  status: str | None = Query(None, max_length=40)) -> Response:
    portal = portal_of(request)
    shown = chosen_day(day)
    runs = day_runs(portal, shown, team or None, status or None)
    return portal.render(request, "timeline.html", day=shown, team=team or "", chosen_status=status or "", teams=portal.teams,
                         statuses=timeline_svg.STATUSES, runs=runs, picture=timeline_svg.svg(shown, runs),
                         pools=timeline_svg.pool_use(runs), words=timeline_svg.words)
