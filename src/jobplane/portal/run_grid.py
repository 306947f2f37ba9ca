"""A job's run history as a grid on its page (issue 70, part 2): its recent runs as columns
(oldest left), its steps as rows, each cell how that step went in that run, a link to that
attempt on the run's page (what Airflow's grid view shows).

A cell's shape is its outcome's (portal/run_marks.py: readable without colour) and it has
words for a screen reader and a hover: the step, the run, the outcome, how many attempts. A map
step's cell shows its items' done and failed counts, as text ("4/5", "1 failed").

What it reads: the runs are the page's history (already read); each run's attempts are in its
record (the reconciler's ``timeline``). A map step's counts are its item records, one Query
of the run's own partition per run shown (platform/map_records.py), only for a job with a map,
a few at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from html import escape
from urllib.parse import quote

from markupsafe import Markup

from jobplane.contract.attempts import attempt_rows
from jobplane.contract.catalog import CatalogJob
from jobplane.contract.records import ExecutionRecord
from jobplane.contract.step_kinds import per_item_steps
from jobplane.contract.types import Client
from jobplane.platform.control import ControlPlane
from jobplane.platform.map_records import item_outcomes
from jobplane.portal import run_marks
from jobplane.portal.views import duration, short_time

#: The runs the grid shows (the newest of the job page's history).
GRID_RUNS = 20
#: An attempt's outcome as the status whose shape draws it.
OUTCOME_STATUS = {"succeeded": "SUCCEEDED", "failed": "FAILED", "timed out": "TIMED_OUT", "stopped": "ABORTED",
                  "running": "RUNNING", "waiting": "RUNNING"}
#: Item record statuses counted failed (contract/map_items.py).
ITEM_FAILED = frozenset({"FAILED", "TIMED_OUT"})


@dataclass(frozen=True)
class Cell:
    """One step of one run: its outcome (None: the step did not run in it), its attempts, for a
    map its items' counts, and the link to it."""

    step: str
    execution: str
    outcome: str | None
    attempts: int
    url: str
    words: str
    done: int | None = None  # a map step's items that succeeded
    failed: int | None = None  # ... and that failed (or timed out)

    @property
    def status(self) -> str | None:
        if self.done is not None:
            return "FAILED" if self.failed else "SUCCEEDED" if self.done else None
        return OUTCOME_STATUS.get(self.outcome or "", "OTHER") if self.outcome else None


@dataclass(frozen=True)
class Column:
    """One run: its head (status, start, link) and its cells, one per row."""

    execution: str
    status: str
    started_at: str | None
    url: str
    words: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Grid:
    steps: tuple[str, ...]  # the rows, in the job's order
    maps: frozenset[str]  # the rows that are map steps
    columns: tuple[Column, ...]  # oldest first


def rows_of(entry: CatalogJob) -> tuple[list[str], frozenset[str]]:
    """The grid's rows: each step in order; a parallel group's members; a map as one row (its
    items step before it: the Task that lists the items)."""
    maps = {s.name for s in per_item_steps(entry.steps)}
    rows: list[str] = []
    for s in entry.steps:
        if s.name in maps and s.parallel:
            rows += [s.parallel[0].name, s.name]
        elif s.parallel:
            rows += [m.name for m in s.parallel]
        else:
            rows.append(s.name)
    return rows, frozenset(maps)


def map_counts(ddb: Client, table: str, runs: Sequence[ExecutionRecord], maps: frozenset[str]
               ) -> dict[tuple[str, str], tuple[int, int]]:
    """(execution, map) -> (done, failed) from each run's item records; runs that ran only."""
    if not maps:
        return {}
    ran = [x for x in runs if x.status not in ("SKIPPED", "MISSED")]

    def one(x: ExecutionRecord) -> list[tuple[tuple[str, str], tuple[int, int]]]:
        counts: dict[str, list[int]] = {m: [0, 0] for m in maps}
        for o in item_outcomes(ddb, table, x.execution):
            if o.map not in counts:
                continue
            if o.status == "SUCCEEDED":
                counts[o.map][0] += 1
            elif o.status in ITEM_FAILED:
                counts[o.map][1] += 1
        return [((x.execution, m), (c[0], c[1])) for m, c in counts.items()]

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pair for pairs in pool.map(one, ran) for pair in pairs)


def grid(entry: CatalogJob, history: Sequence[ExecutionRecord], counts: dict[tuple[str, str], tuple[int, int]],
         runs: int = GRID_RUNS) -> Grid:
    """The grid of the newest ``runs`` of ``history`` (newest first, as the page reads it)."""
    steps, maps = rows_of(entry)
    columns = []
    for x in reversed(list(history)[:runs]):
        by_step: dict[str, list[int]] = {}
        outcome: dict[str, str] = {}
        for row in attempt_rows(x.steps or {}, x.timeline):
            by_step.setdefault(row.step, []).append(row.attempt)
            if row.attempt >= max(by_step[row.step]):
                outcome[row.step] = row.outcome
        cells = []
        for step in steps:
            base = f"/executions/{quote(x.execution)}"
            if step in maps:
                done, failed = counts.get((x.execution, step), (None, None))
                words = (f"{step} in run {x.execution[:12]}: " +
                         (f"{done} items done, {failed} failed" if done is not None else "no items ran"))
                cells.append(Cell(step, x.execution, None, 0, f"{base}#map-{quote(step)}", words, done, failed))
                continue
            tries = by_step.get(step, [])
            if not tries:
                cells.append(Cell(step, x.execution, None, 0, base, f"{step} in run {x.execution[:12]}: did not run"))
                continue
            last = max(tries)
            words = f"{step} in run {x.execution[:12]}: {outcome[step]}" + (f" after {last} attempts" if last > 1 else "")
            cells.append(Cell(step, x.execution, outcome[step], last, f"{base}#attempt-{quote(step)}-{last}", words))
        took = duration(x.started_at, x.finished_at)
        head = f"run {x.execution[:12]}: {x.status.replace('_', ' ').lower()}, started {short_time(x.started_at)}" + \
            (f", took {took}" if took else "")
        columns.append(Column(x.execution, x.status, x.started_at, f"/executions/{quote(x.execution)}", head, tuple(cells)))
    return Grid(tuple(steps), maps, tuple(columns))


def job_grid(control: ControlPlane, entry: CatalogJob, history: Sequence[ExecutionRecord]) -> Grid:
    """The grid of a job's page: the newest runs of its history, a map's counts read."""
    shown = list(history)[:GRID_RUNS]
    _, maps = rows_of(entry)
    context = control.context
    return grid(entry, shown, map_counts(context.ddb, context.deployment.table, shown, maps))


def render(g: Grid) -> Markup:
    """The grid as a table (a screen reader reads it by row and column), each cell a linked
    shape with its words; empty when the job has no run yet."""
    if not g.columns:
        return Markup("")
    head = "".join(
        f'<th scope="col"><a class="mark grid-run" data-execution="{escape(c.execution)}" data-status="{escape(c.status)}" '
        f'href="{escape(c.url)}" title="{escape(c.words)}">{run_marks._shape(c.status, False)}'
        f'<span class="sr-only">{escape(c.words)}</span></a></th>' for c in g.columns)
    body = []
    for i, step in enumerate(g.steps):
        cells = []
        for c in g.columns:
            cell = c.cells[i]
            status = cell.status
            if cell.done is not None:
                inner = (f'<span class="counts" aria-hidden="true">{cell.done}/{cell.done + (cell.failed or 0)}'
                         f'{f" ✗{cell.failed}" if cell.failed else ""}</span>')
            elif status is None:
                inner = '<span class="not-run" aria-hidden="true">–</span>'
            else:
                inner = run_marks._shape(status, False)
            data = f' data-outcome="{escape(cell.outcome)}"' if cell.outcome else ""
            if cell.done is not None:
                data += f' data-done="{cell.done}" data-failed="{cell.failed}"'
            cells.append(f'<td><a class="grid-cell" data-step="{escape(step)}" data-execution="{escape(c.execution)}"{data} '
                         f'href="{escape(cell.url)}" title="{escape(cell.words)}">{inner}'
                         f'<span class="sr-only">{escape(cell.words)}</span></a></td>')
        kind = " (map)" if step in g.maps else ""
        body.append(f'<tr data-step="{escape(step)}"><th scope="row">{escape(step)}{kind}</th>{"".join(cells)}</tr>')
    return Markup(f'<table class="run-grid"><caption>The last {len(g.columns)} runs (columns, oldest first) by step '
                  f'(rows); each cell links to that attempt</caption><thead><tr><th scope="col">step</th>{head}</tr>'
                  f'</thead><tbody>{"".join(body)}</tbody></table>')
