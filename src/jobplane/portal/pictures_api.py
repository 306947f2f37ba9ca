"""The pictures' data as JSON (issue 70): what each picture of the portal draws, read the same
way, so a client (or a test) gets exactly what the page shows.

* ``GET /api/recent-runs``: the jobs page's marks, for the same page of jobs (the same filters,
  sort, page and page size), in one BatchGetItem per 100 jobs.
* ``GET /api/jobs/{job}/grid``: the job page's runs by step (portal/run_grid.py).
* ``GET /api/timeline``: a day's runs and pools' use (portal/timeline_svg.py), as the page draws them.
* ``GET /api/timeline/next``: the next 24 hours' fires and pools' expected demand (portal/timeline_fires.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, Field, TypeAdapter

from jobplane.platform.control import JOB_SORTS
from jobplane.portal import run_grid, run_marks, timeline_fires, timeline_pages, timeline_svg
from jobplane.portal.api import Reader, _errors
from jobplane.portal.job_pager import PAGE_MAX, PER_PAGE, PER_PAGE_MAX
from jobplane.portal.job_rows import STATE_ATTRIBUTES
from jobplane.portal.services import Portal

router = APIRouter(prefix="/api", tags=["pictures"], responses=_errors(400, 401, 500))


def as_json(adapter: TypeAdapter[Any], value: object) -> Response:
    """``value`` (built of the answer's own models, so already valid) written once as JSON. Handed
    back as models, FastAPI validates them again against ``response_model`` and serializes in
    passes: the recent-runs API (a page of 100 jobs' 1,000 marks) went from x24.3 to x13.2 the
    bench's cheapest line without them (bench/portal.py at 5,000 jobs).
    ``response_model`` stays, for the schema."""
    return Response(adapter.dump_json(value, by_alias=True), media_type="application/json")


class MarkOut(BaseModel):
    execution: str
    status: str = Field(description="SUCCEEDED, FAILED, TIMED_OUT, ABORTED, SKIPPED, MISSED, or RUNNING (now)")
    started_at: str | None = None
    finished_at: str | None = None
    scheduled_time: str | None = None
    failed_step: str | None = None
    deadline_breached: bool = Field(description="the run's scheduled fire breached its deadline")
    words: str = Field(description="the mark's text (what a screen reader and a hover say)")
    url: str


class JobMarksOut(BaseModel):
    job: str
    runs: list[MarkOut] = Field(description="oldest first, as drawn; runs still running last")


def mark_out(m: run_marks.Mark) -> MarkOut:
    return MarkOut(execution=m.execution, status=m.status, started_at=m.started_at, finished_at=m.finished_at,
                   scheduled_time=m.scheduled_time, failed_step=m.failed_step, deadline_breached=m.breached,
                   words=m.words, url=m.url)


@router.get("/recent-runs", response_model=list[JobMarksOut], summary="The jobs page's recent runs, a page of jobs",
            description="Each job's last runs (at most 10, and any running now), for the page of jobs the jobs page "
                        "shows with the same filters: `page` of `per_page` jobs.")
def recent_runs(request: Request, team: str | None = Query(None, max_length=40),
                status: str | None = Query(None, max_length=40), q: str | None = Query(None, max_length=200),
                sort: str | None = Query(None, max_length=20), page: int = Query(1, ge=1, le=PAGE_MAX),
                per_page: int = Query(PER_PAGE, ge=1, le=PER_PAGE_MAX), portal: Portal = Reader) -> object:
    sort = sort if sort in JOB_SORTS else None
    window = portal.control.job_window(team or None, status or None, q or None, sort=sort,
                                       state_attributes=STATE_ATTRIBUTES, offset=(page - 1) * per_page,
                                       limit=per_page, last_page_if_beyond=True, fires=0)
    context = portal.control.context
    marks = run_marks.page_marks(context.ddb, context.deployment.table, window.jobs)
    return as_json(_MARKS, [JobMarksOut(job=j.name, runs=[mark_out(m) for m in marks[j.name]]) for j in window.jobs])


class CellOut(BaseModel):
    step: str
    outcome: str | None = Field(description="the step's last attempt's outcome in the run; null: it did not run "
                                            "(or, for a map, see done and failed)")
    attempts: int
    done: int | None = Field(None, description="a map step: its items that succeeded")
    failed: int | None = Field(None, description="a map step: its items that failed or timed out")
    words: str
    url: str = Field(description="the attempt on the run's page")


class ColumnOut(BaseModel):
    execution: str
    status: str
    started_at: str | None
    words: str
    url: str
    cells: list[CellOut] = Field(description="one per step, in the order of steps")


class GridOut(BaseModel):
    job: str
    steps: list[str]
    maps: list[str] = Field(description="the steps that are maps (their cells count items)")
    runs: list[ColumnOut] = Field(description="oldest first, as drawn")


@router.get("/jobs/{job}/grid", response_model=GridOut, responses=_errors(404),
            summary="A job's recent runs by step (the job page's grid)")
def job_grid(request: Request, job: str, portal: Portal = Reader) -> object:
    entry = portal.control.entry(job)
    page = portal.control.executions(job, run_grid.GRID_RUNS, None)
    g = run_grid.job_grid(portal.control, entry, page.items)
    return as_json(_GRID, GridOut(job=job, steps=list(g.steps), maps=sorted(g.maps), runs=[
        ColumnOut(execution=c.execution, status=c.status, started_at=c.started_at, words=c.words, url=c.url,
                  cells=[CellOut(step=x.step, outcome=x.outcome, attempts=x.attempts, done=x.done, failed=x.failed,
                                 words=x.words, url=x.url) for x in c.cells])
        for c in g.columns]))


class PoolUseOut(BaseModel):
    pool: str
    weight: int
    step: str
    waiting_since: str | None = Field(description="when it began waiting for its slots (null: it got them at once)")
    started_at: str | None = Field(description="when it got its slots")
    finished_at: str | None


class DayRunOut(BaseModel):
    execution: str
    job: str
    team: str
    status: str
    started_at: str
    finished_at: str | None
    scheduled_time: str | None
    pooled: list[PoolUseOut]
    words: str
    url: str


class PoolPointOut(BaseModel):
    at: str
    held: int = Field(description="slots held by the day's runs from this time on")
    waiting: int = Field(description="slots waited for from this time on")


class PoolOut(BaseModel):
    pool: str
    points: list[PoolPointOut]


class TimelineOut(BaseModel):
    day: str
    runs: list[DayRunOut] = Field(description="the runs of the page's jobs (by team, then name), by start")
    runs_that_day: int = Field(description="every run of the day the filters keep")
    page: int
    pages: int
    pools: list[PoolOut] = Field(description="each pool's use by every run of the day the filters keep")


@router.get("/timeline", response_model=TimelineOut, responses=_errors(400), summary="A day's runs across jobs, and pools' use (the timeline page)",
            description="Every run that started on `day` (UTC; today without it) and has ended, with the pool slots "
                        "its steps waited for and held; `team` and `status` keep only those; the runs of `page` of "
                        "`per_page` jobs (as the page draws them), the pools' use of every run kept.")
def timeline(request: Request, day: str | None = timeline_pages.DayQuery(),
             team: str | None = Query(None, max_length=100), status: str | None = Query(None, max_length=40),
             page: int = Query(1, ge=1, le=PAGE_MAX), per_page: int = Query(PER_PAGE, ge=1, le=PER_PAGE_MAX),
             portal: Portal = Reader) -> object:
    shown = timeline_pages.chosen_day(day)
    drawn = timeline_pages.day_page(portal, shown, team or None, status or None, page, per_page)
    every, runs, pages = drawn.every, drawn.runs, drawn.pages
    return as_json(_TIMELINE, TimelineOut(day=shown, runs_that_day=len(every), page=min(page, pages), pages=pages, runs=[
        DayRunOut(execution=r.execution, job=r.job, team=r.team, status=r.status, started_at=r.started_at,
                  finished_at=r.finished_at, scheduled_time=r.scheduled_time, words=timeline_svg.words(r),
                  url=f"/executions/{r.execution}",
                  pooled=[PoolUseOut(pool=u.pool, weight=u.weight, step=u.step, waiting_since=u.waiting_since,
                                     started_at=u.started_at, finished_at=u.finished_at) for u in r.pooled])
        for r in runs], pools=[PoolOut(pool=p, points=[PoolPointOut(at=x.at, held=x.held, waiting=x.waiting) for x in pts])
                               for p, pts in drawn.uses.items()]))


class JobFiresOut(BaseModel):
    job: str
    team: str
    fires: list[str] = Field(description="its fires in the window, UTC, in order")
    pool_peak: dict[str, int] = Field(description="pool -> the slots a run holds at once at most")
    holds_for: int = Field(description="seconds a run is taken to hold them (its expected_duration, else "
                                       f"{timeline_fires.ASSUMED_RUN})")
    words: str
    url: str


class DemandPointOut(BaseModel):
    at: str
    slots: int = Field(description="slots the fires would ask for from this time on")


class PoolDemandOut(BaseModel):
    pool: str
    points: list[DemandPointOut]


class TeamHoursOut(BaseModel):
    team: str
    fires_per_hour: list[int] = Field(description="24 counts, the first the hour from `from`")


class NextFiresOut(BaseModel):
    from_: str = Field(alias="from", description="the window's start (now, UTC)")
    to: str = Field(description="24 hours later")
    fires: int = Field(description="every fire in the window (of every job the filter keeps)")
    jobs_firing: int
    page: int
    pages: int
    jobs: list[JobFiresOut] = Field(description="the page's jobs, by team, then name")
    teams: list[TeamHoursOut] = Field(description="every job the filter keeps, not only the page's")
    pools: list[PoolDemandOut] = Field(description="each pool's expected demand, of every job the filter keeps")


@router.get("/timeline/next", response_model=NextFiresOut, response_model_by_alias=True,
            summary="The next 24 hours' scheduled fires by team, and pools' expected demand (the timeline's next view)",
            description="Each scheduled job's fires from now for 24 hours, as its deployed schedules fire (the same "
                        "fires as `jobplane next`), `page` of `per_page` jobs at a time; each team's fires per hour "
                        "and each pool's expected demand over every job `team` keeps.")
def timeline_next(request: Request, team: str | None = Query(None, max_length=100),
                  page: int = Query(1, ge=1, le=PAGE_MAX), per_page: int = Query(PER_PAGE, ge=1, le=PER_PAGE_MAX),
                  portal: Portal = Reader) -> object:
    view = timeline_pages.fires_view(portal, team or None)
    shown, pages = timeline_pages.fires_page(view, page, per_page)
    return as_json(_NEXT, NextFiresOut.model_validate({
        "from": view.start.isoformat(), "to": view.end.isoformat(), "fires": view.fire_count,
        "jobs_firing": len(view.jobs), "page": min(page, pages), "pages": pages,
        "jobs": [JobFiresOut(job=j.job, team=j.team, fires=[t.isoformat() for t in j.fires], pool_peak=dict(j.pool_peak),
                             holds_for=j.holds_for, words=timeline_fires.job_words(j), url=j.url) for j in shown],
        "teams": [TeamHoursOut(team=t, fires_per_hour=c) for t, c in timeline_fires.hour_counts(view).items()],
        "pools": [PoolDemandOut(pool=p, points=[DemandPointOut(at=x.at.isoformat(), slots=x.slots) for x in pts])
                  for p, pts in view.demand.items()]}))


_MARKS: TypeAdapter[Any] = TypeAdapter(list[JobMarksOut])
_GRID: TypeAdapter[Any] = TypeAdapter(GridOut)
_TIMELINE: TypeAdapter[Any] = TypeAdapter(TimelineOut)
_NEXT: TypeAdapter[Any] = TypeAdapter(NextFiresOut)
