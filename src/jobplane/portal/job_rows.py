"""The jobs page's rows, each rendered once per distinct content.

At 1,000 jobs the rows were a third of the page's time (bench/portal.py: ~25 ms of Jinja), yet
between two loads almost every row is unchanged: the same definition, state and next fires. A
row is rendered from a :class:`JobRow` alone (its template is given nothing else), so the row's
value is a complete cache key: a cached row cannot show anything its inputs do not hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from markupsafe import Markup

from jobplane.contract import datamodel as dm
from jobplane.contract.clock import now_iso
from jobplane.portal.run_marks import Mark

if TYPE_CHECKING:
    from jinja2 import Template

    from jobplane.platform.control import JobSummary

#: Rows kept rendered (~0.6 KB each): every row of 5,000 jobs paged through, and some changed
#: versions. At 4,096 a whole list of 5,000 rows evicted each row before it was shown again
#: (bench/portal.py's "rows only: 5,000 rows, kept" took longer than rendering them afresh).
ROWS_KEPT = 8192

#: What the jobs page reads of each job's state: what :class:`JobRow` shows, and the page filters
#: and sorts by. Not the holder, the last execution's name, who paused it or the state's copy of
#: the team (the catalog's is shown): at 1,000 jobs, each attribute left out of the answer is
#: parsing left undone (bench/portal.py: the page's state read ~20% faster than reading all 13).
#: tests/test_correctness.py checks that a state read this way gives the same row.
STATE_ATTRIBUTES = ("job", dm.ATTR_RUNNING, dm.ATTR_LAST_STATUS, dm.ATTR_LAST_STARTED_AT, dm.ATTR_LAST_FINISHED_AT,
                    dm.ATTR_BLOCKED_BY, dm.ATTR_ACKNOWLEDGED_BY, dm.ATTR_PAUSED_AT, dm.ATTR_PAUSED_REASON,
                    dm.ATTR_MISSED_SINCE, dm.ATTR_MISSED_COUNT, dm.ATTR_SNOOZED_UNTIL)


@dataclass(frozen=True)
class JobRow:
    """Everything one row of the jobs page shows, and nothing else."""

    name: str
    description: str
    team: str
    schedule: tuple[str, ...]
    started_by: str  # without a schedule: "after <job> (SUCCEEDED)", or "manual only"
    timezone: str
    next_fires: tuple[datetime, ...]
    policy: str
    enabled: bool
    running: bool
    last_status: str | None
    last_started_at: str | None
    last_finished_at: str | None
    has_duration: bool  # both times of the last run that ended are known
    paused: bool
    paused_reason: str | None
    blocked: bool
    recent_failures: int | None  # None: the page does not show the column
    missed_since: str | None  # an open episode of missed fires: the last expected fire did not run
    missed_count: int
    snoozed_until: str | None = None  # its alerts are held until then (platform/snooze.py)
    marks: tuple[Mark, ...] = ()  # its recent runs (portal/run_marks.py)
    progress: str | None = None  # a running run's progress in a few words (portal/running_progress.py)

    @classmethod
    def of(cls, job: JobSummary, failures_shown: bool, marks: tuple[Mark, ...] = (),
           progress: str | None = None) -> JobRow:
        e, s = job.entry, job.state
        return cls(name=e.name, description=e.description, team=e.team, schedule=tuple(e.rules or e.schedule),
                   started_by=e.started_by, timezone=e.timezone, next_fires=tuple(job.next_fires), policy=e.policy.value, enabled=e.enabled,
                   running=bool(job.running), last_status=s.last_status if s else None,
                   last_started_at=s.last_started_at if s else None, last_finished_at=s.last_finished_at if s else None,
                   has_duration=bool(s and s.last_duration is not None), paused=job.paused,
                   paused_reason=s.paused_reason if s else None, blocked=job.blocked_by is not None,
                   recent_failures=job.recent_failures if failures_shown else None,
                   missed_since=s.missed_since if s else None, missed_count=s.missed_count if s else 0,
                   snoozed_until=s.snoozed_until if s and s.snoozed(now_iso()) else None, marks=marks,
                   progress=progress if job.running else None)


class RowRenderer:
    """``job_rows(jobs, failures_shown)`` in the jobs page's template: the rows' markup, in one
    call from the template (a call per row cost Jinja more than a cached row does)."""

    def __init__(self, template: Template, kept: int = ROWS_KEPT):
        self.template = template
        self.rendered = lru_cache(maxsize=kept)(self.render)

    def __call__(self, jobs: Iterable[JobSummary], failures_shown: bool,
                 marks: Mapping[str, tuple[Mark, ...]] | None = None,
                 progress: Mapping[str, str] | None = None) -> Markup:
        rendered, marks, progress = self.rendered, marks or {}, progress or {}
        return Markup("").join(rendered(JobRow.of(job, failures_shown, marks.get(job.name, ()), progress.get(job.name)))
                               for job in jobs)

    def render(self, row: JobRow) -> Markup:
        """One row rendered afresh (``rendered``: the same, kept)."""
        return Markup(self.template.render(r=row))  # autoescaped: the template is .html
