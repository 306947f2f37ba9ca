"""The backfill pages: a window's preview from the job page, the confirm form that starts the
backfill, and its progress page (refreshed in place while it runs), with cancel and resume."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, Response

from jobplane.platform.backfill_model import MAX_CONCURRENT
from jobplane.platform.control import ControlError, NotFound
from jobplane.portal.pages import _act, _back, _portal
from jobplane.portal.params_form import text_params

router = APIRouter(include_in_schema=False)


@router.get("/jobs/{job}/backfill", response_class=HTMLResponse)
def backfill_preview(request: Request, job: str, start: str | None = Query(None, alias="from", max_length=40),
                     end: str | None = Query(None, alias="to", max_length=40),
                     mode: str = Query("only-missed", pattern="^(only-missed|all)$")) -> Response:
    """The window form and, once a window is given, its fires: what covers each, what would run.
    A window the platform refuses is shown on the form with the reason, not as an error page."""
    portal = _portal(request)
    summary = portal.control.job(job)
    fires, problem = None, None
    if start and end:
        try:
            fires = portal.backfills.preview(job, start, end, mode)
        except ControlError as e:
            problem = e.message
    return portal.render(request, "backfill_new.html", job=summary, e=summary.entry, start=start or "",
                         end=end or "", mode=mode, fires=fires, problem=problem, max_concurrent=MAX_CONCURRENT,
                         backfills=portal.backfills.of_job(job, 10))


@router.post("/jobs/{job}/backfill")
def backfill_form(request: Request, job: str, csrf_token: str | None = Form(None), start: str = Form(..., alias="from",
                  max_length=40), end: str = Form(..., alias="to", max_length=40), mode: str = Form("only-missed"),
                  max_concurrent: int = Form(1, ge=1, le=MAX_CONCURRENT), params: str = Form(""),
                  reason: str = Form("")) -> Response:
    portal = _portal(request)
    entry = portal.control.entry(job)
    user = _act(request, entry.team, csrf_token)
    bf = portal.backfills.create(job, user, start, end, mode=mode, max_concurrent=max_concurrent,
                                 params=text_params(entry, params), reason=reason)  # typed: portal/params_form.py
    return _back(f"/backfills/{quote(bf.id)}", "backfill")


@router.get("/backfills/{backfill}", response_class=HTMLResponse)
def backfill_page(request: Request, backfill: str) -> Response:
    portal = _portal(request)
    bf = portal.backfills.get(backfill)
    return portal.render(request, "backfill.html", bf=bf, e=portal.control.entry(bf.job))


@router.get("/backfills/{backfill}/live", response_class=HTMLResponse)
def backfill_live(request: Request, backfill: str) -> Response:
    portal = _portal(request)
    bf = portal.backfills.get(backfill)
    return portal.render(request, "_backfill_live.html", bf=bf, e=portal.control.entry(bf.job))


@router.post("/backfills/{backfill}/{action}")
def backfill_action_form(request: Request, backfill: str, action: str, csrf_token: str | None = Form(None),
                         reason: str = Form("")) -> Response:
    portal = _portal(request)
    if action not in ("cancel", "resume"):
        raise NotFound(f"unknown action {action!r}")
    bf = portal.backfills.get(backfill)
    user = _act(request, bf.team, csrf_token)
    getattr(portal.backfills, action)(backfill, user, reason)
    return _back(f"/backfills/{quote(bf.id)}", f"backfill-{action}")
