"""The portal's SVG charts place marks by time and escape every text they draw."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from types import SimpleNamespace

from jobplane.contract.attempts import Attempt
from jobplane.portal import charts


def test_attempts_sit_on_the_runs_time_axis_with_the_retry_wait_as_a_gap() -> None:
    rows = [Attempt("load", 1, "2026-11-30T10:00:00Z", "2026-11-30T10:00:10Z", outcome="failed"),
            Attempt("load", 2, "2026-11-30T10:00:30Z", "2026-11-30T10:00:40Z", outcome="succeeded")]
    svg = charts.attempt_gantt(rows, "2026-11-30T10:00:00Z", "2026-11-30T10:00:40Z", datetime.now(timezone.utc))
    bars = [(float(x), float(w)) for x, w in re.findall(r'class="attempt".*?x="([\d.]+)".*?width="([\d.]+)"', svg)]
    assert len(bars) == 2
    (x1, w1), (x2, w2) = bars
    assert abs(w1 - w2) < 0.5  # both took 10 s
    assert abs((x2 - x1) - 3 * w1) < 0.5  # the second started 30 s after the first, 3 widths on
    assert 'data-outcome="failed"' in svg and "load attempt 2: succeeded, 10 s" in svg


def test_a_run_still_going_ends_now_and_nothing_unescaped_is_drawn() -> None:
    now = datetime(2026, 11, 30, 10, 1, tzinfo=timezone.utc)
    rows = [Attempt("a<b>", 1, "2026-11-30T10:00:00Z", None, outcome="running")]
    svg = charts.attempt_gantt(rows, "2026-11-30T10:00:00Z", None, now)
    assert "a&lt;b&gt;" in svg and "<b>" not in svg and "running" in svg
    assert charts.attempt_gantt([Attempt("x", 1, None, None, outcome="running")], None, None, now) is None


def test_recent_runs_give_a_success_rate_of_the_runs_that_ran() -> None:
    def run(status: str, seconds: int, n: int) -> SimpleNamespace:
        return SimpleNamespace(execution=f"e{n:031d}", status=status, started_at="2026-11-30T10:00:00Z",
                               finished_at=f"2026-11-30T10:{seconds // 60:02d}:{seconds % 60:02d}Z")
    newest_first = [run("SUCCEEDED", 60, 4), run("SKIPPED", 0, 3), run("FAILED", 30, 2), run("SUCCEEDED", 120, 1)]
    svg, figures = charts.duration_bars(newest_first)
    assert figures == {"runs": 4, "ran": 3, "succeeded": 2, "success_rate": 67, "median": "1 min"}
    heights = {s: float(h) for s, h in re.findall(r'data-status="(\w+)".*?height="([\d.]+)"', svg)}
    assert heights["SKIPPED"] < heights["FAILED"] < heights["SUCCEEDED"]
    assert svg.index("e" + "0" * 30 + "1") < svg.index("e" + "0" * 30 + "4")  # oldest first, left
    assert charts.duration_bars([]) is None
    # a fire inside a blackout window is no run that ran either (a flat mark, not in the rate)
    svg, figures = charts.duration_bars([run("BLACKED_OUT", 0, 5)] + newest_first)
    assert figures == {"runs": 5, "ran": 3, "succeeded": 2, "success_rate": 67, "median": "1 min"}
