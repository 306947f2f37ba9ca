"""Each job's recent runs as small marks on the jobs page (issue 70, part 1), oldest to newest.

A mark is a link to its run: a tiny SVG shape (each status its own shape as well as its own
colour, so the marks read without colour) and, for screen readers and on hover, words: the
status, when it started and how long it took. A run whose fire breached its deadline is
underlined, and says so. A running run (the state's claims) is the last mark, a ring.

The marks come from each job's ``RECENT`` item (contract/recent_runs.py), read for the whole
page in one BatchGetItem per 100 jobs (platform/run_history.py): never a read per job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from urllib.parse import quote

from markupsafe import Markup

from jobplane.contract.clock import parse_iso
from jobplane.contract.recent_runs import RecentRun
from jobplane.contract.types import Client
from jobplane.platform.control import JobSummary
from jobplane.platform.run_history import RunHistory
from jobplane.portal.views import duration, short_time

#: Each status's shape (an SVG fragment in a 12x12 box) and colour; the words say it too.
SHAPES = {
    "SUCCEEDED": ('<circle cx="6" cy="6" r="5" fill="{c}"/>', "#15803d"),
    "FAILED": ('<path d="M1.5 1.5 L10.5 10.5 M10.5 1.5 L1.5 10.5" stroke="{c}" stroke-width="3"/>', "#b91c1c"),
    "TIMED_OUT": ('<path d="M6 1 L11 11 L1 11 Z" fill="{c}"/>', "#b45309"),
    "ABORTED": ('<rect x="1.5" y="1.5" width="9" height="9" fill="{c}"/>', "#475569"),
    "SKIPPED": ('<circle cx="6" cy="6" r="4.2" fill="none" stroke="{c}" stroke-width="1.6"/>', "#64748b"),
    "MISSED": ('<path d="M6 1 L11 6 L6 11 L1 6 Z" fill="none" stroke="{c}" stroke-width="1.6" '
               'stroke-dasharray="2 1.2"/>', "#7c3aed"),
    # a fire inside a blackout window: a struck-through ring (not a run; shape, not colour alone)
    "BLACKED_OUT": ('<circle cx="6" cy="6" r="4.2" fill="none" stroke="{c}" stroke-width="1.6"/>'
                    '<path d="M2 10 L10 2" stroke="{c}" stroke-width="1.6"/>', "#0f766e"),
    "RUNNING": ('<circle cx="6" cy="6" r="4.5" fill="none" stroke="{c}" stroke-width="1.8"/>'
                '<circle cx="6" cy="6" r="1.8" fill="{c}"/>', "#1d4ed8"),
}
OTHER = ('<rect x="3" y="3" width="6" height="6" fill="{c}"/>', "#64748b")
BREACH = '<rect x="0" y="13" width="12" height="2" fill="#b91c1c"/>'


@dataclass(frozen=True)
class Mark:
    """One mark as drawn: its run, its status, its words, and whether its fire was late."""

    execution: str
    status: str
    words: str  # what a screen reader and a hover say
    breached: bool  # its fire's deadline was breached
    url: str
    started_at: str | None = None
    finished_at: str | None = None
    scheduled_time: str | None = None
    failed_step: str | None = None

    @property
    def status_class(self) -> str:
        return self.status.lower()


def _fire_key(value: str | None) -> str | None:
    try:
        return parse_iso(value).isoformat() if value else None
    except ValueError:
        return None


@lru_cache(maxsize=2048)  # a job's marks only change when a run of it ends or starts: ~5 KB each
def marks(job: str, runs: tuple[RecentRun, ...], breached: tuple[str, ...], running: frozenset[str]
          ) -> tuple[Mark, ...]:
    """The job's marks, oldest first: its recent runs (newest first as kept), then the runs still
    running that are not among them. Worked out once per (job, runs, breached fires, running
    runs): the jobs page draws the same 100 jobs' 1,000 marks view after view."""
    late = {k for f in breached if (k := _fire_key(f))}
    out = []
    for r in reversed(runs):
        took = duration(r.started_at, r.finished_at)
        words = r.status.replace("_", " ").lower()
        if r.status == "MISSED":
            words += f", fire {short_time(r.scheduled_time or r.started_at)}"
        else:
            words += f", started {short_time(r.started_at)}" if r.started_at else ""
            words += f", took {took}" if took and r.status not in ("SKIPPED", "BLACKED_OUT") else ""
        if r.failed_step and r.status not in ("SUCCEEDED", "SKIPPED"):
            words += f", at step {r.failed_step}"
        breach = _fire_key(r.scheduled_time) in late if r.scheduled_time else False
        if breach:
            words += ", deadline breached"
        out.append(Mark(r.execution, r.status, words, breach, f"/executions/{quote(r.execution)}", r.started_at,
                        r.finished_at, r.scheduled_time, r.failed_step))
    known = {r.execution for r in runs}
    for name in sorted(running - known):
        out.append(Mark(name, "RUNNING", "running now", False, f"/executions/{quote(name)}?job={quote(job)}"))
    return tuple(out)


@lru_cache(maxsize=16)
def _shape(status: str, breached: bool) -> str:
    shape, colour = SHAPES.get(status, OTHER)
    return (f'<svg class="mark-shape" aria-hidden="true" focusable="false" width="12" height="15" '
            f'viewBox="0 0 12 15" xmlns="http://www.w3.org/2000/svg">{shape.format(c=colour)}'
            f'{BREACH if breached else ""}</svg>')


def render(shown: tuple[Mark, ...]) -> Markup:
    """The marks as an ordered list of links (oldest first); empty when the job has not run."""
    if not shown:
        return Markup('<span class="muted marks-none">no runs yet</span>')
    items = "".join(
        f'<li><a class="mark mark-{escape(m.status_class)}" data-status="{escape(m.status)}" '
        f'data-execution="{escape(m.execution)}"{" data-breached" if m.breached else ""} href="{escape(m.url)}" '
        f'title="{escape(m.words)}">{_shape(m.status, m.breached)}<span class="sr-only">{escape(m.words)}</span></a></li>'
        for m in shown)
    return Markup(f'<ol class="marks" aria-label="recent runs, oldest first">{items}</ol>')


def page_marks(ddb: Client, table: str, jobs: Sequence[JobSummary]) -> dict[str, tuple[Mark, ...]]:
    """The marks of a page of jobs, by job: their RECENT items in one BatchGetItem per 100 jobs
    (the page's states are read already: a job's running runs come from its state)."""
    recent = RunHistory(ddb, table).recent_of([j.name for j in jobs])
    return {j.name: marks(j.name, *recent.get(j.name, ((), ())), frozenset(j.running)) for j in jobs}
