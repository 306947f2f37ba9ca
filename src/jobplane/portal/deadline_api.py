"""The deadline part of the JSON API (platform/deadline_report.py): per job and per team, the
share of scheduled fires that SUCCEEDED by their deadline over 30 and 90 days, and the breaches."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from jobplane.platform.control import NotFound
from jobplane.platform.deadline_report import WINDOWS, JobDeadlines, Share, job_deadlines, team_deadlines
from jobplane.portal.api import Reader, _errors
from jobplane.portal.services import Portal

router = APIRouter(prefix="/api", tags=["deadlines"], responses=_errors(400, 401, 500))


class ShareOut(BaseModel):
    days: int
    fires: int = Field(description="fires decided in the window (met, or breached and alerted)")
    met: int = Field(description="of them, those whose run SUCCEEDED by the deadline")
    share: float | None = Field(description="met / fires; null without fires")


class BreachOut(BaseModel):
    fire: str = Field(description="the scheduled fire, UTC")
    due: str = Field(description="its deadline, UTC")
    reason: str = Field(description="what kept it from succeeding in time, as alerted")
    early: bool = Field(description="alerted before the due time, the breach being certain")
    succeeded_at: str | None = Field(description="when a run of it SUCCEEDED after all")
    execution: str | None


class JobDeadlinesOut(BaseModel):
    job: str
    team: str
    deadline: str | None = Field(description="'HH:MM' on the fire's day in the job's timezone, or a duration after "
                                             "the fire; null: the job has none")
    shares: list[ShareOut]
    breaches: list[BreachOut] = Field(description="over 90 days, newest first")


class TeamDeadlinesOut(BaseModel):
    team: str
    shares: list[ShareOut]
    jobs: list[JobDeadlinesOut]


def _share(s: Share) -> ShareOut:
    return ShareOut(days=s.days, fires=s.fires, met=s.met, share=s.share)


def _job(r: JobDeadlines) -> JobDeadlinesOut:
    return JobDeadlinesOut(job=r.job, team=r.team, deadline=r.deadline, shares=[_share(s) for s in r.shares],
                           breaches=[BreachOut(**b.__dict__) for b in r.breaches])


@router.get("/jobs/{job}/deadlines", response_model=JobDeadlinesOut, responses=_errors(404),
            summary="A job's deadline: the share of fires that met it over 30 and 90 days, and the breaches")
def job_report(request: Request, job: str, portal: Portal = Reader) -> object:
    entry = portal.control.entry(job)
    report = job_deadlines(portal.control.context, entry)
    if report is None:
        return JobDeadlinesOut(job=entry.name, team=entry.team, deadline=None, shares=[], breaches=[])
    return _job(report)


@router.get("/teams/{team}/deadlines", response_model=TeamDeadlinesOut, responses=_errors(404),
            summary="A team's share of fires that met their deadlines over 30 and 90 days, and its jobs'")
def team_report(request: Request, team: str, portal: Portal = Reader) -> object:
    # one path per team, not a list under /api/deadlines: that path is also what a client makes
    # of /api/jobs/../deadlines (dot segments removed), a job report's shape answered by a list
    if not any(e.team == team for e in portal.control.entries.values()):
        raise NotFound(f"no team named {team!r} has jobs", {"team": team})
    found = team_deadlines(portal.control.context, team=team)
    if not found:
        return TeamDeadlinesOut(team=team, shares=[ShareOut(days=d, fires=0, met=0, share=None) for d in WINDOWS],
                                jobs=[])
    t = found[0]
    return TeamDeadlinesOut(team=t.team, shares=[_share(s) for s in t.shares], jobs=[_job(j) for j in t.jobs])
