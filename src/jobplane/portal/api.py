"""The JSON API under /api: the portal's reads and actions for automation.

Accepted runs answer 202 with the new execution's name and URL; invalid input 400; unknown job or
execution 404; an action that conflicts with the current state (stop a finished execution,
pause a paused job) 409; more than the per-user action budget 429. Actions take JSON bodies only.
"""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from jobplane.platform.control import IDEMPOTENCY_KEY_MAX, ExecutionView, JobSummary, check_cursor
from jobplane.platform.repository import Page
from jobplane.platform.expectations import StepChecks, run_expectations
from jobplane.platform.step_progress import StepProgress
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.clock import now_iso
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.attempts import Attempt
from jobplane.contract.records import AuditEntry, ExecutionRecord, JobState
from jobplane.portal import actions
from jobplane.portal.api_models import model_from
from jobplane.portal.errors import PortalError
from jobplane.portal.services import Portal, portal_of
from jobplane.portal.views import duration_seconds
from jobplane.contract.types import JsonObject


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[JsonObject]
    request_id: str
    timestamp: str


class ErrorEnvelope(BaseModel):
    error: ErrorBody


def _errors(*codes: int) -> dict[int | str, JsonObject]:
    return {code: {"model": ErrorEnvelope} for code in codes}


async def json_body(request: Request) -> None:
    """Actions accept JSON only: a cross-site HTML form cannot send it (see csrf.py)."""
    if request.method == "POST" and not request.headers.get("content-type", "").startswith("application/json"):
        raise PortalError(415, "send the action as application/json")


router = APIRouter(prefix="/api", tags=["api"], responses=_errors(400, 401, 500))


def _portal(request: Request) -> Portal:
    return portal_of(request)


def signed_in(request: Request) -> Portal:
    """Reads need an identity (any signed-in user may read)."""
    portal = _portal(request)
    portal.user(request)
    return portal


Reader = Depends(signed_in)


def page_out(page: Page[ExecutionRecord]) -> BaseModel:
    return ExecutionPage(items=[summary_out(x) for x in page.items], cursor=page.cursor)


# -- models ------------------------------------------------------------------------------------
#: What a job's state shows of itself (contract/records.JobState); the rest is the catalog's.
JOB_STATE_FIELDS = ("last_status", "last_finished_at", "running", "paused_reason", "paused_by",
                    "acknowledged_by", "missed_since", "missed_count", "missed_cause", "snoozed_until", "snoozed_by",
                    "snooze_reason")
JobOut = model_from(
    "JobOut", [(CatalogJob, ("name", "team", "description", "schedule", "timezone", "enabled")),
               (JobState, JOB_STATE_FIELDS)],
    policy=(str, ...), paused=(bool, ...),
    # not the state's field: the state keeps its blocker once acknowledged, the API shows what blocks
    blocked_by=(str | None, Field(None, description="the failed run blocking scheduled fires (none once acknowledged)")),
    next_fires=(list[str], ...), params=(JsonObject, ...), url=(str, ...))

#: A row of a list of executions: the record's own fields.
SUMMARY_FIELDS = ("execution", "job", "status", "trigger", "requested_by", "scheduled_time", "started_at",
                  "finished_at", "failed_step", "skip_reason", "abort_reason", "blocked_by", "error")
ExecutionSummary = model_from("ExecutionSummary", [(ExecutionRecord, SUMMARY_FIELDS)],
                              duration_seconds=(float | None, None), url=(str, ...))


class ExecutionPage(BaseModel):
    items: list[ExecutionSummary]  # type: ignore[valid-type]  # a model built from the record at import
    cursor: str | None = Field(description="pass back as ?cursor= for the next page")


StepAttempt = model_from("StepAttempt", [(Attempt, tuple(f.name for f in dataclasses.fields(Attempt)))])


class StepProgressOut(BaseModel):
    """What a step's code reported (jobplane.progress, jobplane.metric: docs/progress.md)."""

    step: str
    attempt: int = Field(description="the attempt that reported it (a retry starts again)")
    done: float | None
    total: float | None
    unit: str | None
    cursor: str | None = Field(description="where the step is (its last reported checkpoint)")
    metrics: dict[str, float] = Field(description="the step's counts: name -> last value reported")
    fraction: float | None = Field(description="done / total, at most 1")
    rate: float | None = Field(description="done per second since the attempt started")
    eta: str | None = Field(description="when the step ends at that rate (UTC); none once it ended")
    started_at: str
    updated_at: str = Field(description="when the values were reported")
    ended: bool = Field(description="the step's last values (it ended)")


class ExpectCheckOut(BaseModel):
    """One expectation on one attempt (jp.expect: docs/expectations.md)."""

    metric: str
    check: str = Field(description="'<op> <number>' or '<op> [<factor> *] baseline'")
    outcome: str = Field(description="pass, warn, fail or skipped (a baseline without enough earlier runs)")
    value: float | None = Field(description="what the step reported; none: not reported (not 0)")
    threshold: float | None
    baseline: float | None = Field(description="the median of the comparable earlier runs' values")
    reported: bool
    note: str


class StepChecksOut(BaseModel):
    step: str
    verdict: str = Field(description="fail if a check failed, warn if one warned, else pass")
    checks: list[ExpectCheckOut]


ExecutionOut = model_from(
    "ExecutionOut", [(ExecutionInput, ("params", "resume_from", "rerun_of", "upstream", "definition")),
                     (ExecutionRecord, ("rerun_by", "after_runs", "transitions"))],
    base=ExecutionSummary, steps=(list[StepAttempt], ...),  # type: ignore[valid-type]  # built at run time
    progress=(list[StepProgressOut], Field(default_factory=list, description="each step's reported progress and "
                                                                              "counts (docs/progress.md)")),
    expectations=(list[StepChecksOut], Field(default_factory=list, description="each step's expectation checks "
                                                                              "(docs/expectations.md)")),
    waiting=(bool, Field(False, description="RUNNING with every open attempt waiting for its pool's slot (each "
                                            "step's outcome waiting): shown as WAITING (docs/pools.md)")))


class LogOut(BaseModel):
    step: str
    attempt: int
    task_id: str
    text: str


#: An audit entry as the API shows it: all but its id.
AUDIT_FIELDS = ("at", "actor", "authority", "action", "job", "execution", "reason", "details")
AuditOut = model_from("AuditOut", [(AuditEntry, AUDIT_FIELDS)])


class Accepted(BaseModel):
    execution: str
    url: str
    status: str = "ACCEPTED"


class Done(BaseModel):
    ok: bool = True
    message: str


class RunIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    params: JsonObject = Field(default_factory=dict)
    reason: str = ""


class RerunIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    from_failed_step: bool = True
    params: JsonObject = Field(default_factory=dict)
    reason: str = ""
    current: bool = Field(False, description="run the definition deployed now; by default the one the run ran (its "
                                             "published Step Functions version; without one, a re-run whose steps "
                                             "changed since is refused, 409)")
    from_scratch: bool = Field(False, description="start the failed step from its beginning; by default from the "
                                                  "checkpoint (cursor) its attempt last reported")


class ReasonIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(min_length=1, max_length=500)


class SnoozeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    until: AwareDatetime = Field(description="when the job's alerts are delivered again (at most 7 days ahead)")
    reason: str = Field(min_length=1, max_length=500)


# -- conversions -------------------------------------------------------------------------------
def job_out(s: JobSummary) -> BaseModel:
    e, st = s.entry, s.state
    snooze = st.snooze_at(now_iso()) if st else None
    return JobOut(name=s.name, team=s.team, description=e.description, schedule=e.schedule,
                  timezone=e.timezone, enabled=e.enabled, policy=e.policy.value,
                  last_status=st.last_status if st else None, last_finished_at=st.last_finished_at if st else None,
                  running=s.running, paused=s.paused, paused_reason=st.paused_reason if st else None,
                  paused_by=st.paused_by if st else None, blocked_by=s.blocked_by,
                  acknowledged_by=st.acknowledged_by if st else None,
                  missed_since=st.missed_since if st else None, missed_count=st.missed_count if st else 0,
                  missed_cause=st.missed_cause if st else None,
                  snoozed_until=snooze.until if snooze else None, snoozed_by=snooze.by if snooze else None,
                  snooze_reason=snooze.reason if snooze else None,
                  next_fires=[t.isoformat() for t in s.next_fires], params=e.params,
                  url=f"/jobs/{s.name}")


def summary_out(x: ExecutionRecord) -> BaseModel:
    return ExecutionSummary(execution=x.execution, job=x.job, status=x.status, trigger=x.trigger,
                            requested_by=x.requested_by, scheduled_time=x.scheduled_time, started_at=x.started_at,
                            finished_at=x.finished_at, duration_seconds=duration_seconds(x.started_at, x.finished_at),
                            failed_step=x.failed_step, skip_reason=x.skip_reason, abort_reason=x.abort_reason,
                            blocked_by=x.blocked_by, error=x.error,
                            url=f"/executions/{x.execution}")


def execution_out(v: ExecutionView, progress: list[StepProgress] | None = None,
                  expectations: list[StepChecks] | None = None) -> BaseModel:
    from jobplane.portal.views import step_rows

    r = v.record
    return ExecutionOut(
        execution=v.execution, job=v.job, status=v.status, trigger=v.input.trigger, requested_by=v.input.requested_by,
        scheduled_time=v.input.scheduled_time, started_at=v.started_at, finished_at=v.finished_at,
        duration_seconds=duration_seconds(v.started_at, v.finished_at), failed_step=v.failed_step,
        skip_reason=r.skip_reason if r else None, abort_reason=r.abort_reason if r else None,
        blocked_by=r.blocked_by if r else None, error=v.error,
        url=f"/executions/{v.execution}",
        params=v.input.params, resume_from=v.input.resume_from, rerun_of=v.input.rerun_of,
        rerun_by=list(v.rerun_by), upstream=v.input.upstream, after_runs=list(v.after_runs),
        definition=v.input.definition,
        transitions=v.transitions, waiting=v.waiting,
        steps=[StepAttempt(**{k: getattr(row, k) for k in StepAttempt.model_fields}) for row in step_rows(v)],
        progress=[StepProgressOut(**p.to_json()) for p in progress or []],
        expectations=[StepChecksOut.model_validate(c.to_json()) for c in expectations or []])


# -- reads -------------------------------------------------------------------------------------
#: The most jobs one page of GET /api/jobs answers (``limit``).
JOBS_LIMIT_MAX = 1000
_PAGE_HEADERS = {
    "X-Total-Count": {"description": "How many jobs match the filters, on every page", "schema": {"type": "integer"}},
    "Link": {"description": 'With `limit`, while more jobs follow: `<next page>; rel="next"`', "schema": {"type": "string"}},
}


@router.get("/jobs", response_model=list[JobOut],  # type: ignore[valid-type]  # (as ExecutionPage.items)
            summary="Jobs, filtered by team, status and text",
            description="The jobs that match, by team and name. Without `limit`, every one of them (the answer "
                        "before pages existed, unchanged for the clients that relied on it); with `limit`, that many "
                        "from `offset` on, and a `Link` header to the next page while there is one. "
                        "`X-Total-Count` says how many match either way.",
            responses={200: {"headers": _PAGE_HEADERS}})
def list_jobs(request: Request, response: Response, team: str | None = Query(None, max_length=100),
              status: str | None = Query(None, max_length=40), q: str | None = Query(None, max_length=200),
              limit: int | None = Query(None, ge=1, le=JOBS_LIMIT_MAX,
                                        description="jobs per page; without it, every matching job"),
              offset: int = Query(0, ge=0, le=10_000_000, description="how many matching jobs to skip (with `limit`)"),
              portal: Portal = Reader) -> object:
    window = portal.control.job_window(team, status, q, offset=offset if limit is not None else 0, limit=limit)
    response.headers["X-Total-Count"] = str(window.total)
    if limit is not None and offset + limit < window.total:
        following = request.url.include_query_params(offset=offset + limit)
        response.headers["Link"] = f'<{following.path}?{following.query}>; rel="next"'
    return [job_out(s) for s in window.jobs]


@router.get("/jobs/{job}", response_model=JobOut, responses=_errors(404))
def get_job(request: Request, job: str, portal: Portal = Reader) -> object:
    return job_out(portal.control.job(job))


@router.get("/jobs/{job}/params-schema", responses=_errors(404),
            summary="The JSON Schema of a job's params, its calendar defaults resolved as a run started now would")
def job_params_schema(request: Request, job: str, portal: Portal = Reader) -> object:
    from jobplane.portal.params_form import schema_now

    return schema_now(portal.control.entry(job))


@router.get("/jobs/{job}/executions", response_model=ExecutionPage, responses=_errors(404),
            summary="A job's executions and skips, newest first")
def job_executions(request: Request, job: str, limit: int = Query(20, ge=1, le=200),
                   cursor: str | None = Query(None, max_length=2000), portal: Portal = Reader) -> object:
    return page_out(portal.control.executions(job, limit, check_cursor(cursor)))


@router.get("/executions/{execution}", response_model=ExecutionOut, responses=_errors(404))
def get_execution(request: Request, execution: str, job: str | None = Query(
        None, max_length=200, description="the job, to find an execution started a moment ago"), portal: Portal = Reader) -> object:
    view = portal.control.execution(execution, job if job in portal.control.entries else None)
    return execution_out(view, portal.control.step_progress(view.job, view.execution),
                         run_expectations(view, portal.control.entry(view.job)))


@router.get("/executions/{execution}/logs", response_model=list[LogOut], responses=_errors(404))
def execution_logs(request: Request, execution: str, step: str | None = Query(None, max_length=200), portal: Portal = Reader) -> object:
    view = portal.control.execution(execution)
    return [LogOut(step=s.step, attempt=s.attempt, task_id=s.task_id, text=s.read())
            for s in portal.control.log_streams(view, step)]


@router.get("/failures", response_model=ExecutionPage, summary="Failed, timed-out and stopped runs, newest first")
def failures(request: Request, limit: int = Query(50, ge=1, le=200), cursor: str | None = Query(None, max_length=2000), portal: Portal = Reader) -> object:
    return page_out(portal.control.failures(limit, check_cursor(cursor)))


@router.get("/skips", response_model=ExecutionPage, summary="Skipped and duplicate fires, newest first")
def skips(request: Request, limit: int = Query(50, ge=1, le=200), cursor: str | None = Query(None, max_length=2000), portal: Portal = Reader) -> object:
    return page_out(portal.control.skips(limit, check_cursor(cursor)))


@router.get("/audit", response_model=list[AuditOut])  # type: ignore[valid-type]  # (as ExecutionPage.items)
def audit(request: Request, limit: int = Query(100, ge=1, le=500), portal: Portal = Reader) -> object:
    return [AuditOut(**{k: getattr(a, k) for k in AuditOut.model_fields}) for a in portal.control.audit(limit)]


# -- actions -----------------------------------------------------------------------------------
ACTION_ERRORS = _errors(403, 404, 409, 415, 429)


#: Optional on the starting actions: the same key again (a retried request) answers 202 with the
#: execution the first one started; reused for a different request, 409.
IdempotencyKey = Header(None, alias="Idempotency-Key", min_length=1, max_length=IDEMPOTENCY_KEY_MAX,
                        description="Repeat a request safely: the same key returns the execution it started")


@router.post("/jobs/{job}/runs", status_code=202, response_model=Accepted, responses=ACTION_ERRORS,
             dependencies=[Depends(json_body)], summary="Run a job now, with params")
def run_job(request: Request, job: str, body: RunIn, idempotency_key: str | None = IdempotencyKey) -> object:
    portal = _portal(request)
    started = actions.run(portal.control, lambda team: portal.authorize(request, team), job, body.params,
                          body.reason, idempotency_key)
    return Accepted(execution=started.execution, url=f"/executions/{started.execution}?job={job}")


@router.post("/executions/{execution}/rerun", status_code=202, response_model=Accepted, responses=ACTION_ERRORS,
             dependencies=[Depends(json_body)], summary="Re-run from the failed step, or the whole job")
def rerun(request: Request, execution: str, body: RerunIn, idempotency_key: str | None = IdempotencyKey) -> object:
    portal = _portal(request)
    started = actions.rerun(portal.control, lambda team: portal.authorize(request, team), execution,
                            body.from_failed_step, body.params, body.reason, idempotency_key, body.current,
                            body.from_scratch)
    return Accepted(execution=started.execution, url=f"/executions/{started.execution}?job={started.job}")


@router.post("/executions/{execution}/stop", status_code=202, response_model=Done, responses=ACTION_ERRORS,
             dependencies=[Depends(json_body)])
def stop(request: Request, execution: str, body: ReasonIn) -> object:
    portal = _portal(request)
    actions.stop(portal.control, lambda team: portal.authorize(request, team), execution, body.reason)
    return Done(message=f"stop requested for {execution}")


def _job_action(action: str, summary: str) -> None:
    def endpoint(request: Request, job: str, body: ReasonIn) -> object:
        portal = _portal(request)
        user = portal.authorize(request, portal.control.entry(job).team)
        result = getattr(portal.control, action.replace("-", "_"))(job, user, body.reason)
        extra = f": released {', '.join(result)}" if isinstance(result, list) else ""
        return Done(message=f"{action} {job}{extra}")

    endpoint.__name__ = action.replace("-", "_") + "_job"
    router.post(f"/jobs/{{job}}/{action}", response_model=Done, responses=ACTION_ERRORS,
                dependencies=[Depends(json_body)], summary=summary)(endpoint)


_job_action("pause", "Pause a job's schedule (reason required)")
_job_action("resume", "Resume a paused schedule (reason required)")
_job_action("acknowledge", "Acknowledge the failure blocking a SKIP_IF_FAILED job")
_job_action("release-claim", "Release a claim held by an execution that no longer runs")
_job_action("unsnooze", "End a job's snooze now: its alerts are delivered again, the summary of those held follows")


@router.post("/jobs/{job}/snooze", response_model=Done, responses=ACTION_ERRORS, dependencies=[Depends(json_body)],
             summary="Hold a job's alerts until a time, then summarise them (reason required)")
def snooze_job(request: Request, job: str, body: SnoozeIn) -> object:
    portal = _portal(request)
    user = portal.authorize(request, portal.control.entry(job).team)
    portal.control.snooze(job, user, body.until, body.reason)
    return Done(message=f"{job}'s alerts snoozed until {body.until.isoformat()}")
