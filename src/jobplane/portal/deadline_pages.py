"""The portal's deadlines page: per team, then per job with a deadline, the share of scheduled
fires that met it over 30 and 90 days (platform/deadline_report.py); each job's breaches are on
its own page."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from jobplane.platform.deadline_report import team_deadlines
from jobplane.portal.services import portal_of

router = APIRouter(include_in_schema=False)  # an HTML page, like the other pages: not in the API schema


@router.get("/deadlines", response_class=HTMLResponse)
def deadlines_page(request: Request, team: str | None = Query(None, max_length=100)) -> Response:
    portal = portal_of(request)
    return portal.render(request, "deadlines.html", team=team, teams=team_deadlines(portal.control.context, team=team or None))
