"""The HTML pages and their form actions. Every form post is CSRF-checked, authorized against
the job's team and answered with a redirect (303) to the page that shows the result."""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import datetime, timezone
from functools import lru_cache
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from starlette.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from jobplane.contract import execution_input
from jobplane.platform.definition_history import run_definition
from jobplane.platform.expectations import run_expectations
from jobplane.contract import runner as rc
from jobplane.contract.clock import now_iso
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.step_kinds import per_item_steps
from jobplane.platform.control import (IDEMPOTENCY_KEY_MAX, JOB_SORTS, RECENT_FAILURES, Invalid, JobSummary,
                                      NotFound, check_cursor)
from jobplane.portal import actions, charts, logview, run_grid, run_marks, running_progress
from jobplane.portal.calendar_view import calendar_fire_lines
from jobplane.portal.diagram import svg
from jobplane.portal.job_pager import PAGE_MAX, PER_PAGE, PER_PAGE_MAX, pager
from jobplane.portal.job_rows import STATE_ATTRIBUTES
from jobplane.platform.control import Deployment
from jobplane.platform.logs import LogStream
from jobplane.portal.auth import User
from jobplane.portal.notices import NOTICES
from jobplane.portal.params_form import form_inputs, form_params
from jobplane.portal.services import Portal, portal_of
from jobplane.portal.views import failure_groups, step_rows
from jobplane.contract.types import JsonObject

log = logging.getLogger(__name__)
#: What the job page shows in the diagram's place when AWS would not say (a constant: rendered as is).
DIAGRAM_UNAVAILABLE = '<p class="muted">Diagram unavailable: the deployed definition could not be read (the portal logs why).</p>'
router = APIRouter(include_in_schema=False)
STATUSES = [s.value for s in ExecutionStatus] + ["NEVER_RUN", "PAUSED"]  # the jobs page's filter
#: The next fires a job page lists (a calendar job's: calendar_view.SHOWN, with their notes).
JOB_PAGE_FIRES = 5


def _portal(request: Request) -> Portal:
    return portal_of(request)


@router.get("/", response_class=HTMLResponse)
def jobs_page(request: Request, team: str | None = Query(None, max_length=40),
              status: str | None = Query(None, max_length=40), q: str | None = Query(None, max_length=200),
              sort: str | None = Query(None, max_length=20), page: int = Query(1, ge=1, le=PAGE_MAX),
              per_page: int = Query(PER_PAGE, ge=1, le=PER_PAGE_MAX)) -> Response:
    """One page of the jobs that match the filters (portal/job_pager.py): the filters and sorts
    run over every job on the server, the page shows ``per_page`` of them."""
    portal = _portal(request)
    sort = sort if sort in JOB_SORTS else None  # a view, not an action: an unknown sort is the default
    window = portal.control.job_window(team or None, status or None, q or None, sort=sort,
                                       state_attributes=STATE_ATTRIBUTES, offset=(page - 1) * per_page,
                                       limit=per_page, last_page_if_beyond=True)
    filters = {"team": team or "", "status": status or "", "q": q or "", "sort": sort or ""}
    marks = run_marks.page_marks(portal.control.context.ddb, portal.control.context.deployment.table, window.jobs)
    progress = running_progress.page_progress(portal.control.context.ddb, portal.control.context.deployment.table,
                                              window.jobs)
    return portal.render(request, "jobs.html", jobs=window.jobs, teams=portal.teams, statuses=STATUSES, marks=marks,
                         progress=progress,
                         recent_failures=RECENT_FAILURES, filters=filters, per_page=per_page,
                         default_per_page=PER_PAGE, pager=pager(filters, window.total, window.offset, per_page))


@router.get("/jobs/{job}", response_class=HTMLResponse)
def job_page(request: Request, job: str, cursor: str | None = Query(None, max_length=2000)) -> Response:
    portal = _portal(request)
    # A calendar job's fires are computed once a view, with their notes (calendar_view.py); its
    # summary's next fires are the first of those: they were computed a second time for it
    # (bench/portal.py, the calendar job's page).
    entry = portal.control.entry(job)
    fire_lines = calendar_fire_lines(entry) if entry.calendar_schedule is not None else None
    summary = portal.control.job(job, fires=0 if fire_lines is not None else JOB_PAGE_FIRES)
    if fire_lines is not None:
        summary = dataclasses.replace(summary, next_fires=[f.at for f in fire_lines if not f.skipped][:JOB_PAGE_FIRES])
    from jobplane.platform.deadline_report import job_deadlines

    history = _history(portal, summary, cursor)
    # the job's state is read once (control.job) and handed on: it was read three times a view
    return portal.render(request, "job.html", job=summary, e=summary.entry, diagram=_diagram(portal, job),
                         grid=run_grid.render(run_grid.job_grid(portal.control, summary.entry, history["history"])),
                         schedule_problems=_schedule_problems(portal, summary), **history,
                         deadlines=job_deadlines(portal.control.context, summary.entry), fire_lines=fire_lines or [],
                         snoozed=bool(summary.state and summary.state.snoozed(now_iso())),
                         snooze_choices=list(SNOOZE_CHOICES),
                         param_inputs=form_inputs(entry) if entry.param_set().typed else None)


def _schedule_problems(portal: Portal, summary: JobSummary) -> list[str] | None:
    """The job's schedules as deployed against the compiled ones (GetSchedule each); None when
    AWS does not answer (the page says so instead of hiding it)."""
    job = summary.name
    try:
        return list(portal.control.schedule_problems(job, summary).values())
    except Exception as e:  # noqa: BLE001 - any AWS error: shown as unavailable, logged
        log.warning("could not read %s's schedules: %s", job, e)
        return None


@router.get("/jobs/{job}/live", response_class=HTMLResponse)
def job_live(request: Request, job: str) -> Response:
    portal = _portal(request)
    summary = portal.control.job(job)
    return portal.render(request, "_job_live.html", job=summary, e=summary.entry, **_history(portal, summary, None))


def _history(portal: Portal, summary: JobSummary, cursor: str | None) -> JsonObject:
    page = portal.control.executions(summary.name, 20, check_cursor(cursor))
    return {"history": page.items, "next_cursor": page.cursor,
            "running": portal.control.running_executions(summary.name, summary),
            "trend": charts.duration_bars(page.items)}


def _diagram(portal: Portal, job: str) -> str | None:
    """The deployed definition drawn; None when it is not deployed (yet). Any other error
    (denied, throttled) is logged and shown as unavailable, never swallowed: a missing
    permission once hid the diagram on AWS without a word."""
    context = portal.control.context
    sfn = context.sfn
    try:
        described = sfn.describe_state_machine(stateMachineArn=context.deployment.state_machine_arn(job))
    except sfn.exceptions.StateMachineDoesNotExist:
        return None
    except Exception as e:  # noqa: BLE001 - any AWS error: the page still renders, and says so
        log.warning("the diagram of %s is unavailable: %s", job, e)
        return DIAGRAM_UNAVAILABLE
    return _drawn(described["definition"])


@lru_cache(maxsize=256)
def _drawn(definition: str) -> str:
    """The definition drawn, once per definition text: a job page's view drew it afresh each time
    (parse, layout and markup), though the deployed definition changes only with a deploy."""
    return svg(json.loads(definition))


@router.get("/executions/{execution}", response_class=HTMLResponse)
def execution_page(request: Request, execution: str, job: str | None = Query(None, max_length=200),
                   level: str | None = Query(None, max_length=20),
                   q: str | None = Query(None, max_length=logview.QUERY_MAX)) -> Response:
    portal = _portal(request)
    return portal.render(request, "execution.html", **_execution_context(portal, execution, job, level, q))


@router.get("/executions/{execution}/live", response_class=HTMLResponse)
def execution_live(request: Request, execution: str, job: str | None = Query(None, max_length=200),
                   level: str | None = Query(None, max_length=20),
                   q: str | None = Query(None, max_length=logview.QUERY_MAX)) -> Response:
    portal = _portal(request)
    return portal.render(request, "_execution_live.html", **_execution_context(portal, execution, job, level, q))


def _execution_context(portal: Portal, execution: str, job: str | None = None, level: str | None = None,
                       q: str | None = None) -> JsonObject:
    # ?job= finds an execution that has just started (before its claim lists it as running)
    view = portal.control.execution(execution, job if job in portal.control.entries else None)
    entry = portal.control.entry(view.job)
    level, q = logview.checked_level(level), (q or "").strip()
    logs = []
    for stream in portal.control.log_streams(view):
        lines = logview.parse(stream.read(200_000))
        shown = logview.select(lines, level, q)
        logs.append((stream, shown, len(lines), log_console_url(portal.control.context.deployment, stream)))
    rows = step_rows(view)
    gantt = charts.attempt_gantt(rows, view.started_at, view.finished_at, datetime.now(timezone.utc))
    return {"x": view, "e": entry, "rows": rows, "gantt": gantt, "logs": logs, "log_levels": logview.LEVELS,
            "log_level": level, "log_q": q,
            "maps": portal.control.map_progress(view.execution) if per_item_steps(entry.steps) else [],
            "progress": portal.control.step_progress(view.job, view.execution),  # docs/progress.md
            "expectations": run_expectations(view, entry),  # docs/expectations.md
            # the definition it ran, and what changed since the job's previous run (issue 69)
            "definition": run_definition(portal.control.context, view.job, view.execution, view.input.definition,
                                         view.started_at),
            # a scheduled fire's calendar defaults, as its runner resolved them (docs/dsl.md "Typed parameters")
            "resolved_params": portal.control.resolved_params(view.job, view.execution) if entry.param_set().calendar_defaults() else {},
            # its approval steps (jp.approval): WAITING_APPROVAL and the form, or who decided
            # (one Query of the run's approval partition, empty for a job without one)
            "approvals": _approvals(portal, view.execution)}


def _approvals(portal: Portal, execution: str) -> list[object]:
    from jobplane.platform.approvals import Approvals

    return list(Approvals(portal.control).of_run(execution))


def log_console_url(deployment: Deployment, stream: LogStream) -> str | None:
    """The stream in the CloudWatch console, for a platform on AWS (the embedded local AWS has
    no console: its endpoint is set)."""
    if deployment.endpoint_url:
        return None
    where = getattr(stream, "where", None)
    if where is None:  # an ECS task's stream, in the runner's group
        return logview.console_url(deployment.region, deployment.runner_log_group, rc.log_stream(stream.task_id))
    # a Lambda attempt's, in its function's group; none for one found by its run's identity
    # (its Task timed out before the stream was known): its lines are spread over streams
    return logview.console_url(deployment.region, where.group, where.stream) if where.stream else None


@router.get("/failures", response_class=HTMLResponse)
def failures_page(request: Request, cursor: str | None = Query(None, max_length=2000)) -> Response:
    portal = _portal(request)
    failures = portal.control.failures(50, check_cursor(cursor))
    skips = portal.control.skips(20)
    jobs = {x.job for x in failures.items}
    states = {job: portal.control.context.repo.job_state(job) for job in sorted(jobs)}  # at most 50 reads
    groups = failure_groups(failures.items, {j: s for j, s in states.items() if s}, portal.control.entries)
    return portal.render(request, "failures.html", failures=failures.items, next_cursor=failures.cursor,
                         skips=skips.items, groups=groups)


@router.get("/audit", response_class=HTMLResponse)
def audit_page(request: Request) -> Response:
    portal = _portal(request)
    return portal.render(request, "audit.html", entries=portal.control.audit(200))


# -- form actions ------------------------------------------------------------------------------
def _act(request: Request, team: str, csrf_token: str | None) -> User:
    portal = _portal(request)
    user = portal.user(request)
    portal.csrf.check(csrf_token, user.name)
    return portal.authorize(request, team)


def _back(path: str, notice: str) -> RedirectResponse:
    assert notice in NOTICES
    return RedirectResponse(f"{path}{'&' if '?' in path else '?'}notice={notice}", status_code=303)


def parse_params(text: str) -> JsonObject:
    """The form's params box: 'key=value' per line."""
    try:
        return execution_input.parse_params(text.splitlines())
    except ValueError as e:
        raise Invalid(f"params: {e}", {"params": str(e)}) from None


@router.post("/jobs/{job}/run")
async def run_form(request: Request, job: str, csrf_token: str | None = Form(None), params: str = Form(""),
                   reason: str = Form(""), typed: str = Form(""),
                   idempotency_key: str | None = Form(None, max_length=IDEMPOTENCY_KEY_MAX)) -> Response:
    portal = _portal(request)
    if typed:  # the typed form: an input per param, named p.<param> (portal/params_form.py)
        form = await request.form()
        fields = {str(k)[2:]: str(v) for k, v in form.multi_items() if str(k).startswith("p.")}
        given = form_params(portal.control.entry(job), fields, {k for k, v in fields.items() if v == "on"})
    else:
        given = parse_params(params)
    started = await run_in_threadpool(actions.run, portal.control, lambda team: _act(request, team, csrf_token), job,
                                      given, reason, idempotency_key)
    return _back(f"/executions/{started.execution}?job={quote(job)}", "started")


@router.post("/executions/{execution}/rerun")
def rerun_form(request: Request, execution: str, csrf_token: str | None = Form(None),
               mode: str = Form("failed-step"), params: str = Form(""), reason: str = Form(""),
               idempotency_key: str | None = Form(None, max_length=IDEMPOTENCY_KEY_MAX),
               current: str | None = Form(None, max_length=10), from_scratch: str | None = Form(None, max_length=10)
               ) -> Response:
    portal = _portal(request)
    started = actions.rerun(portal.control, lambda team: _act(request, team, csrf_token), execution,
                            mode == "failed-step", parse_params(params), reason, idempotency_key, current is not None,
                            from_scratch is not None)
    return _back(f"/executions/{started.execution}?job={quote(started.job)}", "rerun")


@router.post("/executions/{execution}/stop")
def stop_form(request: Request, execution: str, csrf_token: str | None = Form(None), reason: str = Form("")) -> Response:
    portal = _portal(request)
    actions.stop(portal.control, lambda team: _act(request, team, csrf_token), execution, reason)
    return _back(f"/executions/{execution}", "stop")


#: The snooze form's choices: the CLI and the API take any time within 7 days.
SNOOZE_CHOICES = {"1h": 3600, "4h": 4 * 3600, "1d": 86400, "3d": 3 * 86400, "7d": 7 * 86400}


@router.post("/jobs/{job}/snooze")
def snooze_form(request: Request, job: str, csrf_token: str | None = Form(None), reason: str = Form(""),
                duration: str = Form("")) -> Response:
    from datetime import datetime, timedelta, timezone

    from jobplane.platform.control import Invalid

    portal = _portal(request)
    user = _act(request, portal.control.entry(job).team, csrf_token)
    if duration not in SNOOZE_CHOICES:
        raise Invalid(f"snooze for one of {', '.join(SNOOZE_CHOICES)}", {"duration": duration})
    portal.control.snooze(job, user, datetime.now(timezone.utc) + timedelta(seconds=SNOOZE_CHOICES[duration]), reason)
    return _back(f"/jobs/{quote(job)}", "snooze")


@router.post("/jobs/{job}/{action}")
def job_action_form(request: Request, job: str, action: str, csrf_token: str | None = Form(None),
                    reason: str = Form("")) -> Response:
    portal = _portal(request)
    if action not in ("pause", "resume", "acknowledge", "release-claim", "unsnooze"):
        raise NotFound(f"unknown action {action!r}")
    user = _act(request, portal.control.entry(job).team, csrf_token)
    getattr(portal.control, action.replace("-", "_"))(job, user, reason)
    return _back(f"/jobs/{quote(job)}", action)
