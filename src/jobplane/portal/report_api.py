"""A job's month and a team's (platform/monthly_report.py) in the JSON API and as pages: the figures a team's
monthly review reads (runs, success rate, median and p95 duration, start delay, missed fires,
the deadline kept, failures), computed from the run records as `jobplane report` prints them;
and ``/metrics``, every job's state as OpenMetrics text for a Prometheus or Datadog scrape."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from jobplane.platform.control import Invalid, NotFound
from jobplane.platform.monthly_report import (BadMonth, MonthReport, TeamMonth, job_month, last_month,
                                              team_last_month, team_month)
from jobplane.portal.api import Reader, _errors
from jobplane.portal.services import Portal, portal_of

router = APIRouter(prefix="/api", tags=["reports"], responses=_errors(400, 401, 500))
pages_router = APIRouter(include_in_schema=False)  # an HTML page, like the other pages
metrics_router = APIRouter(tags=["reports"], responses=_errors(401, 500))

_MONTH = Query(None, max_length=7, description="YYYY-MM in the job's timezone; default: the last whole month")


def _report(portal: Portal, job: str, month: str | None) -> MonthReport:
    entry = portal.control.entry(job)  # NotFound: 404
    try:
        return job_month(portal.control.context, entry, month or last_month(entry.timezone, datetime.now(timezone.utc)))
    except BadMonth as e:
        raise Invalid(str(e), {"month": month}) from None


@router.get("/jobs/{job}/report", responses=_errors(404),
            summary="A job's month: runs by outcome, success rate, durations, start delay, missed fires, "
                    "deadline, failures (from the run records)")
def job_report(request: Request, job: str, month: str | None = _MONTH, portal: Portal = Reader) -> dict[str, Any]:
    return _report(portal, job, month).to_json()


@pages_router.get("/jobs/{job}/report", response_class=HTMLResponse)
def job_report_page(request: Request, job: str, month: str | None = Query(None, max_length=7)) -> Response:
    portal = portal_of(request)
    return portal.render(request, "report.html", report=_report(portal, job, month))


def _team_report(portal: Portal, team: str, month: str | None) -> TeamMonth:
    entries = list(portal.control.entries.values())
    if not any(e.team == team for e in entries):
        raise NotFound(f"no job of team {team!r}", {"team": team})
    try:
        return team_month(portal.control.context, entries, team,
                          month or team_last_month(entries, team, datetime.now(timezone.utc)))
    except BadMonth as e:
        raise Invalid(str(e), {"month": month}) from None


@router.get("/teams/{team}/report", responses=_errors(404),
            summary="A team's month: its totals and each job's month (from the run records)")
def team_report(request: Request, team: str, month: str | None = _MONTH, portal: Portal = Reader) -> dict[str, Any]:
    return _team_report(portal, team, month).to_json()


@pages_router.get("/teams/{team}/report", response_class=HTMLResponse)
def team_report_page(request: Request, team: str, month: str | None = Query(None, max_length=7)) -> Response:
    portal = portal_of(request)
    return portal.render(request, "team_report.html", report=_team_report(portal, team, month))


@metrics_router.get("/metrics", response_class=PlainTextResponse, responses={200: {
                        "description": "OpenMetrics text 1.0.0",
                        "content": {"application/openmetrics-text": {"schema": {"type": "string"}}}}},
                    summary="Every job's state as OpenMetrics text, for Prometheus or Datadog (platform/openmetrics.py)")
def metrics(request: Request, portal: Portal = Reader) -> Response:
    from jobplane.platform import openmetrics

    jobs = portal.control.jobs(fires=0)  # the states alone: no fire is computed for a scrape
    return PlainTextResponse(openmetrics.render(jobs), media_type=openmetrics.CONTENT_TYPE)
