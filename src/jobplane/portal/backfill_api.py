"""The backfill part of the JSON API (platform/backfill.py): preview a window, start a backfill
(202 with its id; the portal's driver runs it), read its progress, cancel or resume it."""

from __future__ import annotations


from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from jobplane.platform.backfill_model import MAX_CONCURRENT, Backfill
from jobplane.portal.api import ACTION_ERRORS, ReasonIn, Reader, _errors, _portal, json_body
from jobplane.portal.services import Portal
from jobplane.contract.types import JsonObject

router = APIRouter(prefix="/api", tags=["backfill"], responses=_errors(400, 401, 500))

TIME = Field(min_length=1, max_length=40, description="ISO 8601; without an offset, in the job's timezone")


class PlannedFireOut(BaseModel):
    at: str = Field(description="the fire, UTC: the run's scheduled_time")
    local: str = Field(description="the same instant in the job's timezone")
    covered_by: str | None = Field(description="what already covers it: a record, a run in flight, a backfill")
    runs: bool = Field(description="whether a backfill in the asked mode starts it")


class FireOut(BaseModel):
    at: str
    state: str = Field(description="pending, running, done, or taken (another backfill or run has it)")
    execution: str | None
    status: str | None = Field(description="the run's final status")
    tries: int
    note: str | None


class BackfillOut(BaseModel):
    id: str
    job: str
    status: str = Field(description="RUNNING, COMPLETED, HALTED or CANCELLED")
    start: str
    end: str
    mode: str
    max_concurrent: int
    params: JsonObject
    requested_by: str
    reason: str
    created_at: str
    finished_at: str | None
    note: str | None
    counts: dict[str, int]
    fires: list[FireOut]
    url: str


class BackfillIn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    start: str = Field(alias="from", min_length=1, max_length=40)
    end: str = Field(alias="to", min_length=1, max_length=40)
    mode: str = Field("only-missed", pattern="^(only-missed|all)$")
    max_concurrent: int = Field(1, ge=1, le=MAX_CONCURRENT)
    params: JsonObject = Field(default_factory=dict)
    reason: str = Field(min_length=1, max_length=500)


def backfill_out(bf: Backfill) -> BackfillOut:
    return BackfillOut(
        id=bf.id, job=bf.job, status=bf.status.value, start=bf.start, end=bf.end, mode=bf.mode.value,
        max_concurrent=bf.max_concurrent, params=bf.params, requested_by=bf.requested_by, reason=bf.reason,
        created_at=bf.created_at, finished_at=bf.finished_at, note=bf.note, counts=bf.counts(),
        fires=[FireOut(at=f.at, state=f.state.value, execution=f.execution, status=f.status, tries=f.tries, note=f.note)
               for f in bf.fires],
        url=f"/backfills/{bf.id}")


@router.get("/jobs/{job}/backfill-preview", response_model=list[PlannedFireOut], responses=_errors(404),
            summary="The fires of a past window and which a backfill would start")
def preview(request: Request, job: str, start: str = Query(alias="from", min_length=1, max_length=40),
            end: str = Query(alias="to", min_length=1, max_length=40),
            mode: str = Query("only-missed", pattern="^(only-missed|all)$"), portal: Portal = Reader) -> object:
    return [PlannedFireOut(at=p.at, local=p.local.isoformat(), covered_by=p.covered_by, runs=p.runs)
            for p in portal.backfills.preview(job, start, end, mode)]


# (not GET /jobs/{job}/backfills: one path, one method, so a 405's Allow header is exact)
@router.get("/backfills", response_model=list[BackfillOut], responses=_errors(404),
            summary="A job's backfills, newest first")
def job_backfills(request: Request, job: str = Query(min_length=1, max_length=200), portal: Portal = Reader) -> object:
    return [backfill_out(b) for b in portal.backfills.of_job(job)]


@router.get("/backfills/{backfill}", response_model=BackfillOut, responses=_errors(404))
def get_backfill(request: Request, backfill: str, portal: Portal = Reader) -> object:
    return backfill_out(portal.backfills.get(backfill))


@router.post("/jobs/{job}/backfills", status_code=202, response_model=BackfillOut, responses=ACTION_ERRORS,
             dependencies=[Depends(json_body)], summary="Backfill a past window (reason required)")
def start_backfill(request: Request, job: str, body: BackfillIn) -> object:
    portal = _portal(request)
    user = portal.authorize(request, portal.control.entry(job).team)
    bf = portal.backfills.create(job, user, body.start, body.end, mode=body.mode,
                                 max_concurrent=body.max_concurrent, params=body.params, reason=body.reason)
    return backfill_out(bf)


def _backfill_action(action: str) -> None:
    def endpoint(request: Request, backfill: str, body: ReasonIn) -> object:
        portal = _portal(request)
        bf = portal.backfills.get(backfill)
        user = portal.authorize(request, bf.team)
        return backfill_out(getattr(portal.backfills, action)(backfill, user, body.reason))

    endpoint.__name__ = f"{action}_backfill"
    router.post(f"/backfills/{{backfill}}/{action}", response_model=BackfillOut, responses=ACTION_ERRORS,
                dependencies=[Depends(json_body)],
                summary="Start no further fire (runs in flight finish)" if action == "cancel"
                else "Go on after a halt or a cancel")(endpoint)


_backfill_action("cancel")
_backfill_action("resume")
