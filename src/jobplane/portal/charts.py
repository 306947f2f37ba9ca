"""Pictures of time, drawn on the server as SVG (no script, nothing from elsewhere: the CSP
allows it as it is): a run's step attempts on one time axis (where the time went, where the
retries were), and a job's recent runs as duration bars coloured by outcome with its success
rate (what Airflow's Gantt and duration charts show). Every mark carries a <title>, so a
screen reader and a mouse hover say the same as the bar.
"""

from __future__ import annotations

from datetime import datetime
from html import escape
from collections.abc import Iterable, Sequence

from jobplane.contract.clock import parse_iso
from jobplane.contract.attempts import Attempt
from jobplane.contract.records import ExecutionRecord
from jobplane.portal.views import seconds
from jobplane.contract.types import JsonObject

COLOURS = {"succeeded": "#16a34a", "SUCCEEDED": "#16a34a", "failed": "#dc2626", "FAILED": "#dc2626",
           "TIMED_OUT": "#b45309", "timed out": "#b45309", "ABORTED": "#64748b", "stopped": "#64748b",
           "SKIPPED": "#cbd5e1", "BLACKED_OUT": "#99f6e4", "running": "#2563eb", "RUNNING": "#2563eb"}
OTHER = "#94a3b8"
WIDTH = 760
ROW = 22
LABEL = 170


#: Records that are not runs that ran: a skip (the policy) and a fire inside a blackout window.
NOT_RUNS = ("SKIPPED", "BLACKED_OUT")


def _t(value: str | None) -> datetime | None:
    return parse_iso(value) if value else None


def _svg(height: int, label: str, body: Iterable[str]) -> str:
    return (f'<svg class="chart" role="img" aria-label="{escape(label)}" viewBox="0 0 {WIDTH} {height}" '
            f'width="{WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
            f'<title>{escape(label)}</title>{"".join(body)}</svg>')


def attempt_gantt(rows: Sequence[Attempt], started_at: str | None, finished_at: str | None,
                  now: datetime) -> str | None:
    """One bar per step attempt, placed by its start and end on the run's time axis (an attempt
    still running ends at ``now``). None when no attempt has a start time yet."""
    timed = [r for r in rows if _t(r.started_at)]
    if not timed:
        return None
    t0 = _t(started_at) or min(t for r in timed if (t := _t(r.started_at)))
    ends = [_t(r.finished_at) or now for r in timed] + ([_t(finished_at)] if finished_at else [])
    t1 = max(e for e in ends if e is not None)
    span = max((t1 - t0).total_seconds(), 0.001)
    plot = WIDTH - LABEL - 10
    body = []
    for i, r in enumerate(timed):
        start = _t(r.started_at) or t0
        end = _t(r.finished_at) or now
        x = LABEL + plot * (start - t0).total_seconds() / span
        w = max(plot * (end - start).total_seconds() / span, 2)
        y = 6 + i * ROW
        outcome = r.outcome
        took = seconds(max((end - start).total_seconds(), 0)) if r.finished_at else "running"
        tip = f"{r.step} attempt {r.attempt}: {outcome}, {took}, from +{seconds((start - t0).total_seconds())}"
        body.append(f'<text x="{LABEL - 8}" y="{y + 14}" text-anchor="end" font-size="12" fill="#334155">'
                    f'{escape(r.step)} #{r.attempt}</text>'
                    f'<rect class="attempt" data-step="{escape(r.step)}" data-outcome="{escape(outcome)}" '
                    f'x="{x:.1f}" y="{y}" width="{w:.1f}" height="{ROW - 6}" rx="3" '
                    f'fill="{COLOURS.get(outcome, OTHER)}"><title>{escape(tip)}</title></rect>')
    height = 6 + len(timed) * ROW + 18
    body.append(f'<text x="{LABEL}" y="{height - 4}" font-size="11" fill="#64748b">0</text>'
                f'<text x="{WIDTH - 10}" y="{height - 4}" font-size="11" fill="#64748b" text-anchor="end">'
                f'{escape(seconds(span) if span >= 1 else f"{span:.1f} s")}</text>')
    return _svg(height, f"Step attempts over the run's {seconds(span) if span >= 1 else f'{span:.1f} s'}", body)


def duration_bars(executions: Sequence[ExecutionRecord]) -> tuple[str, JsonObject] | None:
    """The job's recent runs, oldest left: bar height its duration, colour its outcome (skips
    are short grey marks). Returns the SVG and the figures it shows (runs, success rate of the
    runs that ran, median duration), or None without a finished run."""
    runs = [(x, t0, t1) for x in reversed(executions) if (t0 := _t(x.started_at)) and (t1 := _t(x.finished_at))]
    if not runs:
        return None
    took = [max((t1 - t0).total_seconds(), 0) for _, t0, t1 in runs]
    ran = [x for x, _, _ in runs if x.status not in NOT_RUNS]
    ok = sum(1 for x in ran if x.status == "SUCCEEDED")
    longest = max(took) or 1.0
    height, base = 90, 70
    step = min((WIDTH - 20) / len(runs), 24.0)  # a few runs stay bars, not walls
    body = []
    for i, ((x, t0, _), s) in enumerate(zip(runs, took)):
        h = 3 if x.status in NOT_RUNS else max(60 * s / longest, 3)
        tip = f"{x.execution[:12]} {x.status}, {seconds(s) if s >= 1 else f'{s:.1f} s'}, started {t0.strftime('%Y-%m-%d %H:%M:%S')} UTC"
        body.append(f'<a href="/executions/{escape(x.execution)}"><rect class="run" data-status="{escape(x.status)}" '
                    f'x="{10 + i * step + 1:.1f}" y="{base - h:.1f}" width="{max(step - 2, 1):.1f}" height="{h:.1f}" '
                    f'fill="{COLOURS.get(x.status, OTHER)}"><title>{escape(tip)}</title></rect></a>')
    body.append(f'<line x1="10" y1="{base}" x2="{WIDTH - 10}" y2="{base}" stroke="#cbd5e1"/>'
                f'<text x="10" y="{height - 4}" font-size="11" fill="#64748b">oldest</text>'
                f'<text x="{WIDTH - 10}" y="{height - 4}" font-size="11" fill="#64748b" text-anchor="end">newest; '
                f'tallest {escape(seconds(longest) if longest >= 1 else f"{longest:.1f} s")}</text>')
    ordered = sorted(s for (x, _, _), s in zip(runs, took) if x.status not in NOT_RUNS) or [0.0]
    median = ordered[len(ordered) // 2]
    figures = {"runs": len(runs), "ran": len(ran), "succeeded": ok,
               "success_rate": round(100 * ok / len(ran)) if ran else None,
               "median": seconds(median) if median >= 1 else f"{median:.1f} s"}
    label = (f"Last {len(runs)} runs: {figures['success_rate']}% succeeded, median {figures['median']}"
             if ran else f"Last {len(runs)} runs: all skipped")
    return _svg(height, label, body), figures
