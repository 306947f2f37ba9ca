"""The portal's pictures (issue 70) in the real headless browser, over real runs on the local
engine (the runner a real subprocess): each job's recent runs as marks on the jobs page, read
for a whole page at once, and the same data from the JSON API."""

from __future__ import annotations

import os
import threading
from collections import Counter
from typing import Iterator

import pytest

from jobplane.contract import execution_input
from jobplane.contract.recent_runs import KEPT, RecentRun
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.portal import run_marks
from test_portal_browser import A11Y_CHECK, browser, chromium_installed, page, platform, slack  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(os.environ.get("JOBPLANE_SKIP_BROWSER_TESTS") == "1",
                                reason="asked to: JOBPLANE_SKIP_BROWSER_TESTS=1")


def _ended(platform: DevPlatform, arn: str) -> None:
    """Wait for a run's end and for the engine to have handled it (the reconciler notes it)."""
    platform.aws.wait(arn, timeout=300)
    platform.aws.wait_reconciled(arn, timeout=300)


@pytest.fixture(scope="module")
def runs(platform: DevPlatform) -> dict[str, str]:
    """Real runs of two jobs, every way a run of them ends here: flaky-load fails (a scheduled
    fire), then succeeds; slow-report runs, a scheduled fire meanwhile is skipped (SKIP_IF_RUNNING),
    the run is stopped (ABORTED), and one more is left running. By role: the execution names."""
    aws, sfn = platform.aws, platform.aws.client("stepfunctions")
    names: dict[str, str] = {}
    arn = aws.start("flaky-load", execution_input.scheduled("2027-10-04T10:00:00Z", {"mode": "fail"}))
    _ended(platform, arn)
    names["failed"] = arn.rsplit(":", 1)[1]
    arn = aws.start("flaky-load", execution_input.manual("ops@example.com", overrides={"mode": "ok"}))
    _ended(platform, arn)
    names["succeeded"] = arn.rsplit(":", 1)[1]
    holder = aws.start("slow-report", execution_input.manual("ops@example.com", overrides={"mode": "sleep", "seconds": 600}))
    repo = platform.control.repo
    for _ in range(3000):  # its claim taken (a bound that only catches a hang)
        state = repo.job_state("slow-report")
        if state and state.running:
            break
        threading.Event().wait(0.05)
    skipped = aws.start("slow-report", execution_input.scheduled("2027-10-04T11:00:00Z"))
    _ended(platform, skipped)
    names["skipped"] = skipped.rsplit(":", 1)[1]
    sfn.stop_execution(executionArn=holder, cause="test: stopped")
    _ended(platform, holder)
    names["aborted"] = holder.rsplit(":", 1)[1]
    running = aws.start("slow-report", execution_input.manual("ops@example.com", overrides={"mode": "sleep", "seconds": 600}))
    for _ in range(3000):
        state = repo.job_state("slow-report")
        if state and running.rsplit(":", 1)[1] in state.running:
            break
        threading.Event().wait(0.05)
    names["running"] = running.rsplit(":", 1)[1]
    return names


def test_the_jobs_page_shows_each_jobs_recent_runs_as_marks_linking_to_them(page, platform: DevPlatform,  # type: ignore[no-untyped-def]
                                                                             runs: dict[str, str]) -> None:
    from playwright.sync_api import expect

    repo = platform.control.repo
    page.goto("/?per_page=500")
    for job in ("flaky-load", "slow-report"):
        ended = list(reversed(repo.executions(job, KEPT).items))  # the records, oldest first
        assert ended, job
        marks = page.locator(f"tr[data-job='{job}'] td.recent-runs a.mark")
        running = sorted(set(repo.job_state(job).running) - {x.execution for x in ended})  # type: ignore[union-attr]
        expect(marks).to_have_count(len(ended) + len(running))
        shown = [(m.get_attribute("data-execution"), m.get_attribute("data-status")) for m in marks.all()]
        assert shown == [(x.execution, x.status) for x in ended] + [(r, "RUNNING") for r in running]
        for m, x in zip(marks.all(), ended):  # each a link to its run, its words for a screen reader
            assert m.get_attribute("href") == f"/executions/{x.execution}"
            words = m.locator(".sr-only").inner_text()
            assert words.startswith(x.status.replace("_", " ").lower()) and words == m.get_attribute("title")
            if x.status not in ("SKIPPED", "MISSED"):
                assert "took" in words and x.started_at and x.started_at[:10] in words
    # by start: the stopped run, the fire skipped while it ran, the run still running
    slow = [(m.get_attribute("data-execution"), m.get_attribute("data-status"))
            for m in page.locator("tr[data-job='slow-report'] a.mark").all()]
    assert slow[-3:] == [(runs["aborted"], "ABORTED"), (runs["skipped"], "SKIPPED"), (runs["running"], "RUNNING")]
    flaky = [m.get_attribute("data-status") for m in page.locator("tr[data-job='flaky-load'] a.mark").all()]
    assert flaky[-2:] == ["FAILED", "SUCCEEDED"]
    running = page.locator(f"a.mark[data-execution='{runs['running']}']")
    assert running.get_attribute("href") == f"/executions/{runs['running']}?job=slow-report"
    expect(page.locator("tr[data-job='typed-params'] td.recent-runs")).to_have_text("no runs yet")
    # a mark leads to its run
    page.locator(f"a.mark[data-execution='{runs['failed']}']").click()
    expect(page.locator(".execution-head [data-status]").first).to_have_attribute("data-status", "FAILED")
    page.goto("/")  # the page fixture checks the jobs page's accessibility (names, labels, contrast)


def test_the_api_serves_the_marks_the_page_shows(page, platform: DevPlatform, runs: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    page.goto("/?team=billing")
    drawn = {row.get_attribute("data-job"): [(m.get_attribute("data-execution"), m.get_attribute("data-status"),
                                              m.get_attribute("title"), m.get_attribute("href"))
                                             for m in row.locator("a.mark").all()]
             for row in page.locator("table.jobs tbody tr[data-job]").all()}
    answer = page.request.get("/api/recent-runs?team=billing")
    assert answer.ok, answer.text()
    served = {j["job"]: [(r["execution"], r["status"], r["words"], r["url"]) for r in j["runs"]] for j in answer.json()}
    assert served == drawn
    assert served["flaky-load"][-1][1] == "SUCCEEDED" and served["slow-report"][-1][1] == "RUNNING"


def test_the_jobs_page_reads_every_jobs_marks_at_once_never_a_read_per_job(platform: DevPlatform,
                                                                             runs: dict[str, str]) -> None:
    """The calls the jobs page makes to DynamoDB are the same for 2 jobs a page as for 6: no call
    per job; the marks are one BatchGetItem of the page's RECENT items."""
    from devkit import signed_in

    ddb = platform.control.context.ddb
    calls: list[tuple[str, object]] = []

    def record(model, params, **_):  # type: ignore[no-untyped-def]
        calls.append((model.name, params))

    ddb.meta.events.register("before-parameter-build.dynamodb", record, unique_id="pictures-count")
    opener = signed_in(platform.portal_login_url)  # as a browser signs in
    try:
        counted = {}
        for per_page in (2, 6):
            calls.clear()
            with opener.open(f"{platform.portal_url}/?per_page={per_page}", timeout=120) as answer:
                assert answer.status == 200
                body = answer.read().decode()
            assert body.count("<tr data-job=") == per_page
            counted[per_page] = Counter(name for name, _ in calls)
            recent = [p for name, p in calls if name == "BatchGetItem"
                      and any(k["sk"]["S"] == "RECENT" for t in p["RequestItems"].values() for k in t["Keys"])]
            assert len(recent) == 1, calls
            assert len(next(iter(recent[0]["RequestItems"].values()))["Keys"]) == per_page
    finally:
        ddb.meta.events.unregister("before-parameter-build.dynamodb", unique_id="pictures-count")
    assert counted[2] == counted[6], counted


def test_each_status_has_its_own_shape_and_words_and_a_breach_is_marked() -> None:
    """Readable without colour: no two statuses share a shape; a breached fire's run says so."""
    shapes = {s: run_marks._shape(s, False) for s in run_marks.SHAPES}
    stripped = {s: svg.replace(run_marks.SHAPES[s][1], "") for s, svg in shapes.items()}
    assert len(set(stripped.values())) == len(stripped)
    runs = (RecentRun("b", "MISSED", "2027-01-02T02:00:00Z", "2027-01-02T02:10:00Z", "2027-01-02T02:00:00Z"),
            RecentRun("a", "FAILED", "2027-01-01T02:00:00.100Z", "2027-01-01T02:01:30.100Z", "2027-01-01T02:00:00Z",
                      "load"))
    shown = run_marks.marks("j", runs, ("2027-01-01T02:00:00.000Z",), frozenset({"c"}))
    assert [(m.execution, m.status, m.breached) for m in shown] == [("a", "FAILED", True), ("b", "MISSED", False),
                                                                    ("c", "RUNNING", False)]
    assert shown[0].words == "failed, started 2027-01-01 02:00:00 UTC, took 1 min 30 s, at step load, deadline breached"
    assert shown[1].words == "missed, fire 2027-01-02 02:00:00 UTC"
    html = str(run_marks.render(shown))
    assert html.count("data-breached") == 1 and run_marks.BREACH in html
