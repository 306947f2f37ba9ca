"""The portal's pictures (issue 70) in the real headless browser, over real runs on the local
engine (the runner a real subprocess): each job's recent runs as marks on the jobs page, read
for a whole page at once, and the same data from the JSON API."""

from __future__ import annotations

import os
import threading
from collections import Counter
from datetime import timezone
from typing import Iterator

import pytest

from jobplane.contract import execution_input
from jobplane.contract.recent_runs import KEPT, RecentRun
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.portal import run_marks
from slack_receiver import Receiver
from test_portal_browser import A11Y_CHECK, browser, chromium_installed, page, slack  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(os.environ.get("JOBPLANE_SKIP_BROWSER_TESTS") == "1",
                                reason="asked to: JOBPLANE_SKIP_BROWSER_TESTS=1")


#: A job with a map step (jp.map): its cells count the items done and failed.
FANOUT = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'fanout',
  team: 'billing',
  description: 'Closes each tenant; one may fail (tolerated).',
  schedule: jp.manual,
  params: { count: 4, fail_always: [] },
  steps: [
    jp.python('prepare', 'sample_apps.functions:prepare'),
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.fanout:close_month'),
           opts={ max_concurrency: 2, tolerated_failures: 1 }),
  ],
}
"""


#: A job whose step holds the one slot of pool ledger-db: a second run waits for it.
POOLED = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'ledger-load',
  team: 'billing',
  description: 'Loads the ledger, one at a time (pool ledger-db).',
  schedule: jp.manual,
  policy: jp.policy.ALWAYS_RUN,
  params: { log: '', release: '' },
  steps: [jp.python('load', 'sample_apps.functions:hold', opts={ pool: 'ledger-db' })],
}
"""


#: A scheduled job holding ledger-db: it fires every hour and a run is expected to take 2 hours,
#: so its fires would ask for 2 slots at once (the next 24 hours' view draws that demand).
HOURLY_POOLED = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'ledger-hourly',
  team: 'billing',
  description: 'Posts the ledger every hour (pool ledger-db).',
  schedule: 'cron(15 * * * ? *)',
  expected_duration: '2h',
  timeout: '3h',
  steps: [jp.python('post', 'sample_apps.functions:boom', opts={ pool: 'ledger-db' })],
}
"""


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, slack: Receiver) -> Iterator[DevPlatform]:  # noqa: F811
    """The portal as `jobplane dev` serves it, over the test jobs and a job with a map."""
    from devkit import make_repo
    from jobplane.contract.config import load_config

    tmp = tmp_path_factory.mktemp("portal-pictures")
    repo = make_repo(tmp / "repo")
    repo.write("jobs/billing/fanout.jsonnet", FANOUT)
    repo.write("jobs/billing/ledger-load.jsonnet", POOLED)
    repo.write("jobs/billing/ledger-hourly.jsonnet", HOURLY_POOLED)
    toml = tmp / "repo" / "jobplane.toml"
    toml.write_text(toml.read_text() + '\n[pools.ledger-db]\nsize = 1\nteams = ["billing"]\n')
    p = DevPlatform(load_config(tmp / "repo"), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600, webhook_url=slack.url).start()
    yield p
    p.stop()


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
    arn = aws.start("fanout", execution_input.manual("ops@example.com", overrides={"fail_always": ["t-0002"]}))
    _ended(platform, arn)
    names["fanout-one-failed"] = arn.rsplit(":", 1)[1]
    arn = aws.start("fanout", execution_input.manual("ops@example.com", overrides={"count": 3}))
    _ended(platform, arn)
    names["fanout-ok"] = arn.rsplit(":", 1)[1]
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
    per job; the marks are one BatchGetItem of the page's RECENT items. Only the page's own
    calls are counted: those of the thread that served it (the platform's own threads share the
    client, and a reconciler's or a check's call meanwhile is not the page's), and a running
    job's progress line is one BatchGetItem of the running runs' steps whatever the page's size
    (tests/test_progress.py), so it is set apart: whether one of the page's jobs runs just now
    is the scheduler's doing."""
    import threading

    from devkit import signed_in

    ddb = platform.control.context.ddb
    calls: list[tuple[str, object]] = []
    threads: list[int] = []

    def record(model, params, **_):  # type: ignore[no-untyped-def]
        calls.append((model.name, params))
        threads.append(threading.get_ident())

    def progress(name: str, params: object) -> bool:
        return name == "BatchGetItem" and all(k["pk"]["S"].startswith("PROGRESS#")  # type: ignore[index]
                                              for t in params["RequestItems"].values() for k in t["Keys"])  # type: ignore[index]

    ddb.meta.events.register("before-parameter-build.dynamodb", record, unique_id="pictures-count")
    opener = signed_in(platform.portal_login_url)  # as a browser signs in
    try:
        counted = {}
        for per_page in (2, 6):
            calls.clear()
            threads.clear()
            with opener.open(f"{platform.portal_url}/?per_page={per_page}", timeout=120) as answer:
                assert answer.status == 200
                body = answer.read().decode()
            assert body.count("<tr data-job=") == per_page
            recent = [(p, t) for (name, p), t in zip(calls, threads) if name == "BatchGetItem"
                      and any(k["sk"]["S"] == "RECENT" for t in p["RequestItems"].values() for k in t["Keys"])]
            assert len(recent) == 1, calls
            page = [(name, p) for (name, p), t in zip(calls, threads) if t == recent[0][1]]
            assert sum(1 for name, p in page if progress(name, p)) <= 1, page
            counted[per_page] = Counter(name for name, p in page if not progress(name, p))
            assert len(next(iter(recent[0][0]["RequestItems"].values()))["Keys"]) == per_page
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


def test_the_job_page_draws_its_runs_by_step_each_cell_linking_to_its_attempt(page, platform: DevPlatform,  # type: ignore[no-untyped-def]
                                                                            runs: dict[str, str]) -> None:
    from playwright.sync_api import expect

    from jobplane.contract.attempts import attempt_rows

    repo = platform.control.repo
    page.goto("/jobs/flaky-load")
    grid = page.locator("table.run-grid")
    ended = list(reversed(repo.executions("flaky-load", 20).items))
    heads = grid.locator("thead a.grid-run")
    expect(heads).to_have_count(len(ended))
    assert [(h.get_attribute("data-execution"), h.get_attribute("data-status")) for h in heads.all()] == \
        [(x.execution, x.status) for x in ended]
    for step in ("prepare", "load"):
        cells = grid.locator(f"tbody tr[data-step='{step}'] a.grid-cell")
        for cell, x in zip(cells.all(), ended, strict=True):
            tries = [r for r in attempt_rows(x.steps or {}, x.timeline) if r.step == step]
            assert cell.get_attribute("data-execution") == x.execution
            if not tries:
                assert cell.get_attribute("data-outcome") is None and "did not run" in cell.get_attribute("title")
                continue
            last = max(tries, key=lambda r: r.attempt)
            assert cell.get_attribute("data-outcome") == last.outcome
            assert cell.get_attribute("href") == f"/executions/{x.execution}#attempt-{step}-{last.attempt}"
            assert last.outcome in cell.locator(".sr-only").inner_text()
    failed = grid.locator(f"tbody tr[data-step='load'] a.grid-cell[data-execution='{runs['failed']}']")
    expect(failed).to_have_attribute("data-outcome", "failed")
    failed.click()  # to the failed attempt's row on the run's page
    expect(page).to_have_url(f"{platform.portal_url}/executions/{runs['failed']}#attempt-load-1")
    expect(page.locator("tr#attempt-load-1")).to_have_attribute("data-outcome", "failed")


def test_a_map_steps_cells_count_its_items_and_the_api_serves_the_grid(page, platform: DevPlatform,  # type: ignore[no-untyped-def]
                                                                      runs: dict[str, str]) -> None:
    from playwright.sync_api import expect

    from jobplane.platform.map_records import item_outcomes

    context = platform.control.context
    page.goto("/jobs/fanout")
    row = page.locator("table.run-grid tbody tr[data-step='close-all']")
    expect(row.locator("th")).to_contain_text("(map)")
    for role in ("fanout-one-failed", "fanout-ok"):
        outcomes = [o for o in item_outcomes(context.ddb, context.deployment.table, runs[role]) if o.map == "close-all"]
        done = sum(o.status == "SUCCEEDED" for o in outcomes)
        failed = sum(o.status in ("FAILED", "TIMED_OUT") for o in outcomes)
        cell = row.locator(f"a.grid-cell[data-execution='{runs[role]}']")
        expect(cell).to_have_attribute("data-done", str(done))
        expect(cell).to_have_attribute("data-failed", str(failed))
        expect(cell.locator(".sr-only")).to_have_text(f"close-all in run {runs[role][:12]}: {done} items done, {failed} failed")
        assert cell.get_attribute("href") == f"/executions/{runs[role]}#map-close-all"
    assert (done, failed) == (3, 0)  # the last: three tenants, none failed
    cell = row.locator(f"a.grid-cell[data-execution='{runs['fanout-one-failed']}']")
    expect(cell).to_have_attribute("data-failed", "1")  # t-0002, tolerated; the others done
    assert int(cell.get_attribute("data-done")) >= 2
    cell.click()
    expect(page.locator("section#map-close-all [data-failed]")).to_have_text("1 failed")
    # the API: the same grid
    page.goto("/jobs/fanout")
    drawn = [[(a.get_attribute("data-step"), a.get_attribute("data-outcome"), a.get_attribute("data-done"),
               a.get_attribute("data-failed"), a.get_attribute("href")) for a in col]
             for col in zip(*[tr.locator("a.grid-cell").all() for tr in page.locator("table.run-grid tbody tr").all()])]
    answer = page.request.get("/api/jobs/fanout/grid")
    assert answer.ok, answer.text()
    served = answer.json()
    assert served["steps"] == ["prepare", "tenants", "close-all"] and served["maps"] == ["close-all"]
    assert [[(c["step"], c["outcome"], None if c["done"] is None else str(c["done"]),
              None if c["failed"] is None else str(c["failed"]), c["url"]) for c in r["cells"]]
            for r in served["runs"]] == drawn


@pytest.fixture(scope="module")
def pooled(platform: DevPlatform, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Two runs of ledger-load at once: the first holds the pool's one slot until released, the
    second waits for it meanwhile (WAITING), then holds it. Their execution names."""
    aws, control = platform.aws, platform.control
    tmp = tmp_path_factory.mktemp("pooled")
    params = {"log": str(tmp / "log"), "release": str(tmp / "release")}
    first = aws.start("ledger-load", execution_input.manual("ops@example.com", overrides=params))
    for _ in range(6000):  # it holds the slot (its step started: the log says so)
        if (tmp / "log").exists() and "start" in (tmp / "log").read_text():
            break
        threading.Event().wait(0.05)
    second = aws.start("ledger-load", execution_input.manual("ops@example.com", overrides=params))
    name = second.rsplit(":", 1)[1]
    for _ in range(6000):  # it waits for the slot
        if control.execution(name, "ledger-load").waiting:
            break
        threading.Event().wait(0.05)
    (tmp / "release").write_text("go")
    _ended(platform, first)
    _ended(platform, second)
    return [first.rsplit(":", 1)[1], name]


def test_the_timeline_draws_the_days_runs_by_team_with_the_pools_use(page, platform: DevPlatform,  # type: ignore[no-untyped-def]
                                                                    runs: dict[str, str], pooled: list[str]) -> None:
    from playwright.sync_api import expect

    repo = platform.control.repo
    day = repo.execution(runs["failed"]).started_at[:10]  # type: ignore[union-attr]
    records = [x for job in platform.control.entries for x in repo.executions(job, 100).items
               if x.started_at and x.started_at[:10] == day]
    assert {x.status for x in records} >= {"SUCCEEDED", "FAILED", "ABORTED", "SKIPPED"}
    page.goto(f"/timeline?day={day}")
    bars = page.locator("svg.timeline g.run")
    expect(bars).to_have_count(len(records))
    drawn = {b.get_attribute("data-execution"): b.get_attribute("data-status") for b in bars.all()}
    assert drawn == {x.execution: x.status for x in records}
    assert runs["running"] not in drawn  # drawn once it has ended
    link = page.locator(f"svg.timeline a:has(g.run[data-execution='{runs['failed']}'])")
    assert link.get_attribute("href") == f"/executions/{runs['failed']}"
    assert "flaky-load (billing): failed" in page.locator(f"g.run[data-execution='{runs['failed']}'] title").text_content()
    teams = [t.text_content() for t in page.locator("svg.timeline text.team").all()]
    assert teams == sorted({x.team for x in records})
    # the pool: one slot held at a time, and the second run waited for it
    pool = page.locator("svg.timeline g.pool[data-pool='ledger-db']")
    expect(pool).to_have_attribute("data-held-max", "1")
    expect(pool).to_have_attribute("data-waiting-max", "1")
    expect(page.locator(f"table.timeline-runs tr[data-execution='{pooled[1]}']")).to_contain_text("waited from")
    # filters: a status, a team
    page.select_option("select[name=status]", "FAILED")
    with page.expect_navigation():  # the form's GET loads the filtered page: read it once it has
        page.click("form.timeline-filters button[type=submit]")
    expected_failed = {x.execution for x in records if x.status == "FAILED"}
    expect(page.locator("svg.timeline g.run")).to_have_count(len(expected_failed))
    failed = {b.get_attribute("data-execution") for b in page.locator("svg.timeline g.run").all()}
    assert failed == expected_failed and runs["failed"] in failed
    page.goto(f"/timeline?day={day}&team=growth")
    expect(page.locator("svg.timeline g.run")).to_have_count(len([x for x in records if x.team == "growth"]))
    # the API: the same runs and pools
    answer = page.request.get(f"/api/timeline?day={day}")
    assert answer.ok, answer.text()
    served = answer.json()
    assert {r["execution"]: r["status"] for r in served["runs"]} == drawn
    ledger = next(p for p in served["pools"] if p["pool"] == "ledger-db")
    assert max(x["held"] for x in ledger["points"]) == 1 and max(x["waiting"] for x in ledger["points"]) == 1
    page.goto(f"/timeline?day={day}")  # the page fixture checks the page's accessibility


def test_a_fire_whose_deadline_was_breached_marks_its_run(page, platform: DevPlatform,  # type: ignore[no-untyped-def]
                                                          runs: dict[str, str]) -> None:
    """The deadline watch notes a breached fire (platform/deadlines.py ``_decide``, through
    RunHistory.note_breach); the run of that fire is marked, in words too. Here the note is made
    as the watch makes it, for the failed run's real scheduled fire."""
    from playwright.sync_api import expect

    from jobplane.platform.run_history import RunHistory

    context = platform.control.context
    failed = platform.control.repo.execution(runs["failed"])
    assert failed is not None and failed.scheduled_time
    page.goto("/?team=billing")
    mark = page.locator(f"a.mark[data-execution='{runs['failed']}']")
    expect(mark).not_to_have_attribute("data-breached", "")
    RunHistory(context.ddb, context.deployment.table).note_breach("flaky-load", failed.scheduled_time)
    page.goto("/?team=billing")
    expect(mark).to_have_attribute("data-breached", "")
    expect(mark.locator(".sr-only")).to_contain_text("deadline breached")
    others = page.locator("tr[data-job='flaky-load'] a.mark[data-breached]")
    expect(others).to_have_count(1)  # only the run of that fire


def test_the_next_24_hours_fires_by_team_with_the_pools_expected_demand(page, platform: DevPlatform) -> None:  # type: ignore[no-untyped-def]
    """The timeline's other view: every scheduled job's fires of the window the page names, as
    the one enumerator of fires (contract/job_fires.py, `jobplane next`'s) counts them, by team;
    a pool's demand from its jobs' peaks and expected durations; the team filter; the API."""
    from datetime import datetime

    from playwright.sync_api import expect

    from jobplane.contract.job_fires import job_fires

    control = platform.control
    page.goto("/timeline")
    page.click("a[href='/timeline/next']")
    picture = page.locator("svg.timeline-next")
    start = datetime.fromisoformat(picture.get_attribute("data-from") or "")
    end = datetime.fromisoformat(picture.get_attribute("data-to") or "")
    assert (end - start).total_seconds() == 24 * 3600
    expected = {name: [f.at for f in job_fires(e, start, end, control.schedule_anchors(e)) if f.at < end]
                for name, e in control.entries.items() if e.scheduled}  # a fire at the end: the next window's
    expected = {name: fires for name, fires in expected.items() if fires}
    assert len(expected["every-minute"]) == 24 * 60 and len(expected["ledger-hourly"]) == 24
    rows = page.locator("svg.timeline-next g.job-fires")
    expect(rows).to_have_count(len(expected))
    assert {r.get_attribute("data-job"): int(r.get_attribute("data-fires") or 0) for r in rows.all()} == \
        {name: len(fires) for name, fires in expected.items()}
    # a job firing a few times: a mark a fire, at its time, each in words; a busy one: a band
    hourly = page.locator("svg.timeline-next g.job-fires[data-job='ledger-hourly'] g.fire")
    assert [datetime.fromisoformat(f.get_attribute("data-at") or "") for f in hourly.all()] == expected["ledger-hourly"]
    assert "ledger-hourly (billing): fires" in (hourly.first.locator("title").text_content() or "")
    busy = page.locator("svg.timeline-next g.job-fires[data-job='every-minute']")
    expect(busy.locator("path.fire-band")).to_have_count(1)
    assert "every 1 min" in (busy.locator("title").first.text_content() or "")
    link = page.locator("svg.timeline-next a:has(g.job-fires[data-job='ledger-hourly'])")
    assert link.get_attribute("href") == "/jobs/ledger-hourly"
    # grouped by team: each team's fires counted per hour
    teams = {t.get_attribute("data-team"): int(t.get_attribute("data-fires") or 0)
             for t in page.locator("svg.timeline-next g.team-fires").all()}
    by_team: dict[str, int] = {}
    for name, fires in expected.items():
        by_team[control.entries[name].team] = by_team.get(control.entries[name].team, 0) + len(fires)
    assert teams == by_team
    # ledger-db: a run an hour, each holding its one slot for 2 hours: 2 slots asked for at once
    assert control.entries["ledger-hourly"].pool_peak == {"ledger-db": 1}
    expect(page.locator("svg.timeline-next g.pool-demand[data-pool='ledger-db']")).to_have_attribute("data-slots-max", "2")
    # the team filter
    page.select_option("select[name=team]", "growth")
    with page.expect_navigation():  # the filtered page, not the one the form was on
        page.click("form.timeline-filters button[type=submit]")
    growth = {r.get_attribute("data-job") for r in page.locator("svg.timeline-next g.job-fires").all()}
    assert growth == {n for n in expected if control.entries[n].team == "growth"}
    expect(page.locator("svg.timeline-next g.pool-demand")).to_have_count(0)  # no growth job holds a pool
    # the API: the same fires, for the window it names
    answer = page.request.get("/api/timeline/next")
    assert answer.ok, answer.text()
    served = answer.json()
    start, end = datetime.fromisoformat(served["from"]), datetime.fromisoformat(served["to"])
    again = {name: [f.at for f in job_fires(e, start, end, control.schedule_anchors(e)) if f.at < end]
             for name, e in control.entries.items() if e.scheduled}
    assert {j["job"]: [datetime.fromisoformat(t) for t in j["fires"]] for j in served["jobs"]} == \
        {name: fires for name, fires in again.items() if fires}
    ledger = next(p for p in served["pools"] if p["pool"] == "ledger-db")
    assert max(x["slots"] for x in ledger["points"]) == 2
    page.goto("/timeline/next")  # the page fixture checks the page's accessibility


def test_a_busy_days_timeline_draws_a_page_of_jobs_with_every_runs_pools(page, platform: DevPlatform,  # type: ignore[no-untyped-def]
                                                                        runs: dict[str, str], pooled: list[str]) -> None:
    """At 5,000 jobs a day's picture of every run was megabytes: it draws a page of jobs (by team,
    then name) and says how many pages; the pools' use is every run's, whichever page."""
    from playwright.sync_api import expect

    repo = platform.control.repo
    day = repo.execution(runs["failed"]).started_at[:10]  # type: ignore[union-attr]
    records = [x for job in platform.control.entries for x in repo.executions(job, 100).items
               if x.started_at and x.started_at[:10] == day]
    jobs = sorted({(x.team, x.job) for x in records})
    assert len(jobs) >= 3 and "ledger-load" in {j for _, j in jobs}
    whole = page.request.get(f"/api/timeline?day={day}").json()
    assert whole["pages"] == 1 and whole["runs_that_day"] == len(records)
    seen = []
    for n in range(1, len(jobs) + 1):
        served = page.request.get(f"/api/timeline?day={day}&per_page=1&page={n}").json()
        assert served["pages"] == len(jobs) and served["runs_that_day"] == len(records)
        assert {r["job"] for r in served["runs"]} == {jobs[n - 1][1]}
        assert served["pools"] == whole["pools"]  # every run's use of the pool, on every page
        seen += [r["execution"] for r in served["runs"]]
    assert sorted(seen) == sorted(x.execution for x in records)
    # the page: ?page= past the last is the last; the picture and the table its jobs' runs
    from jobplane.portal import job_pager

    assert len(jobs) <= job_pager.PER_PAGE  # here one page: every run drawn, no pager
    page.goto(f"/timeline?day={day}&page=9")
    expect(page.locator("svg.timeline g.run")).to_have_count(len(records))
    expect(page.locator("nav.pager")).to_have_count(0)


def test_a_viewed_day_shows_a_run_that_ended_and_a_rerun_since_reading_only_what_moved(
        page, platform: DevPlatform, pooled: list[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The portal keeps a day it drew (portal/timeline_days.py): a view of an unchanged day reads
    the day's counters only; a run of the day that ends, and a re-run, are drawn by the next view,
    which reads again only the items they were noted in (the reconciler notes them, for real)."""
    from playwright.sync_api import expect

    from jobplane.contract import run_days

    aws, control = platform.aws, platform.control
    ddb = control.context.ddb
    params = {"log": str(tmp_path / "log"), "release": str(tmp_path / "release")}
    arn = aws.start("ledger-load", execution_input.manual("ops@example.com", overrides=params))
    name = arn.rsplit(":", 1)[1]
    for _ in range(6000):  # it runs (holds its slot until released)
        if (tmp_path / "log").exists() and "start" in (tmp_path / "log").read_text():
            break
        threading.Event().wait(0.05)
    started = aws.client("stepfunctions").describe_execution(executionArn=arn)["startDate"]
    day = started.astimezone(timezone.utc).strftime("%Y-%m-%d")  # the run's day (UTC)
    page.goto(f"/timeline?day={day}")
    expect(page.locator("svg.timeline g.run").first).to_be_attached()
    expect(page.locator(f"svg.timeline g.run[data-execution='{name}']")).to_have_count(0)  # running: not yet
    calls: list[tuple[str, dict]] = []  # type: ignore[type-arg]

    def record(model, params, **_):  # type: ignore[no-untyped-def]
        calls.append((model.name, params))

    def day_keys_read() -> list[str]:
        return [k["sk"]["S"] for n, p in calls if n == "BatchGetItem" for t in p["RequestItems"].values()
                for k in t["Keys"] if k["pk"]["S"] == run_days.day_pk(day)]

    ddb.meta.events.register("before-parameter-build.dynamodb", record, unique_id="kept-day-count")
    try:
        answer = page.request.get(f"/api/timeline?day={day}")
        assert answer.ok and name not in {r["execution"] for r in answer.json()["runs"]}
        assert day_keys_read() == []  # unchanged since the page: the day's counters only
        assert [p["Key"]["sk"]["S"] for n, p in calls if n == "GetItem"] == [run_days.VERSIONS_SK]
        (tmp_path / "release").write_text("go")
        _ended(platform, arn)
        calls.clear()
        page.goto(f"/timeline?day={day}")
        expect(page.locator(f"svg.timeline g.run[data-execution='{name}']")).to_have_attribute("data-status", "SUCCEEDED")
        record_ = control.repo.execution(name)
        assert record_ is not None and record_.started_at
        moved = day_keys_read()
        assert run_days.day_sk("ledger-load", record_.started_at) in moved and len(moved) < len(run_days.day_sks())
        rerun = control.rerun(name, "ops@example.com", from_failed_step=False)
        _ended(platform, arn.rsplit(":", 1)[0] + ":" + rerun)  # the same state machine's execution
        page.goto(f"/timeline?day={day}")
        expect(page.locator(f"svg.timeline g.run[data-execution='{rerun}']")).to_have_count(1)
        expect(page.locator(f"svg.timeline g.run[data-execution='{name}']")).to_have_count(1)
        served = page.request.get(f"/api/timeline?day={day}").json()
        assert {name, rerun} <= {r["execution"] for r in served["runs"]}
    finally:
        ddb.meta.events.unregister("before-parameter-build.dynamodb", unique_id="kept-day-count")
