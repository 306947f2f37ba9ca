"""The portal in a real headless browser (Debian's chromium driven by Playwright): an operator
runs a job and watches it finish without reloading, then finds a failure, re-runs it from the
failed step with fixed params, and sees the lineage and the audit entry."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from types import SimpleNamespace
from typing import Iterator

import pytest

from jobplane.devserver.dev_platform import DevPlatform
from portal_kit import start_platform
from slack_receiver import Receiver, serving

CHROMIUM = os.environ.get("JOBPLANE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# Skipped only when asked (issue 47, item 5: a suite that passed with these silently skipped hid
# them); without chromium, each test fails at once saying how to install it.
pytestmark = pytest.mark.skipif(os.environ.get("JOBPLANE_SKIP_BROWSER_TESTS") == "1",
                                reason="asked to: JOBPLANE_SKIP_BROWSER_TESTS=1")


@pytest.fixture(scope="module", autouse=True)
def chromium_installed() -> None:
    assert os.path.exists(CHROMIUM), (
        f"Debian's chromium is not installed ({CHROMIUM}): sudo apt-get install -y chromium (`make test` and "
        ".ci/run install it), or JOBPLANE_SKIP_BROWSER_TESTS=1 to skip the browser tests on purpose")


@pytest.fixture(scope="module")
def slack() -> Iterator[Receiver]:
    yield from serving()  # a real local HTTP server standing in for Slack


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, slack: Receiver) -> Iterator[DevPlatform]:
    # the portal as `jobplane dev` serves it, its alerts posted to the local Slack receiver
    p = start_platform(tmp_path_factory.mktemp("portal-browser"), webhook_url=slack.url)
    yield p
    p.stop()


#: Checked on every page a test leaves (the page fixture): the accessibility basics the portal
#: keeps. Each problem is named with the element, so a failure says what to fix.
A11Y_CHECK = r"""() => {
  const problems = [];
  const name = (el) => (el.getAttribute('aria-label') || el.getAttribute('title') || el.textContent || '').trim();
  if (!document.documentElement.lang) problems.push('html without lang');
  for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
    const labelled = el.labels && el.labels.length > 0 || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
    if (!labelled) problems.push('unlabelled ' + el.outerHTML.slice(0, 120));
  }
  for (const el of document.querySelectorAll('button, a[href]')) {
    if (!name(el) && !el.querySelector('svg[aria-label], img[alt]')) problems.push('nameless ' + el.outerHTML.slice(0, 120));
  }
  for (const el of document.querySelectorAll('svg')) {
    const inLink = el.closest('a, button');
    if (!inLink && el.getAttribute('aria-hidden') !== 'true' && !(el.getAttribute('role') === 'img' && name(el)))
      problems.push('svg without role=img and a label ' + el.outerHTML.slice(0, 80));
  }
  // text contrast (WCAG AA: 4.5:1) against the first opaque background behind it
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c.slice(0, 3); } return [255, 255, 255]; };
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!walker.currentNode.textContent.trim() || !el || seen.has(el) || el.closest('svg')) continue;
    seen.add(el);
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none' || !el.getClientRects().length) continue;
    const fg = lum(rgb(style.color)), bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) problems.push('contrast ' + ratio.toFixed(2) + ' ' + el.tagName + ' ' + JSON.stringify(walker.currentNode.textContent.trim().slice(0, 40)));
  }
  return problems;
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                               args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                     "--disable-background-networking"])
        yield b
        b.close()


@pytest.fixture
def page(browser, platform: DevPlatform):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    context = browser.new_context(base_url=platform.portal_url)
    page = context.new_page()
    page.goto(platform.portal_login_url)  # this start's sign-in link, as a developer opens it
    # Bounds that only catch a hang: expect()'s own default is 5 s, which a run on a loaded
    # 2-core machine can exceed (it failed once in make test beside a soak).
    page.set_default_timeout(120_000)
    expect.set_options(timeout=120_000)
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmations of destructive actions
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    # the portal's own pages (not /api/docs: Swagger UI's page, served as it ships)
    ours = page.url.startswith(platform.portal_url) and not page.url.startswith(f"{platform.portal_url}/api/docs")
    problems = page.evaluate(A11Y_CHECK) if ours else []
    context.close()
    assert errors == [], errors  # no script error, no CSP violation
    assert problems == [], problems  # labels, names, contrast on the page the test ended on


def test_run_a_job_now_and_watch_it_succeed_without_reloading(page) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    page.goto("/")
    expect(page.locator("tr[data-job='flaky-load']")).to_contain_text("billing")
    expect(page.locator("tr[data-job='other-team']")).to_contain_text('<script>alert("x")</script>')  # as text
    page.locator("tr[data-job='flaky-load'] a").first.click()
    expect(page.locator("h1")).to_contain_text("flaky-load")
    page.fill("textarea[name=params]", "mode=ok")
    page.click("#run-now")
    expect(page).to_have_url(re.compile(r"/executions/[0-9a-f]{32}"))
    page.evaluate("window.__sameDocument = true")
    expect(page.locator(".execution-head [data-status]").first).to_have_attribute("data-status", "SUCCEEDED")
    assert page.evaluate("window.__sameDocument") is True  # updated in place, not reloaded
    expect(page.locator("tr[data-step='load']")).to_contain_text("succeeded")
    expect(page.locator("details[data-log-step='load'] table.log-lines")).to_contain_text("step succeeded")


Missing = SimpleNamespace(error=None)  # no record yet


def test_recover_a_failure_from_the_failures_page(page, platform: DevPlatform) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    page.goto("/jobs/flaky-load")
    page.fill("textarea[name=params]", "mode=fail")
    page.click("#run-now")
    expect(page.locator(".execution-head [data-status]").first).to_have_attribute("data-status", "FAILED")
    failed_url = page.url.split("?")[0]
    failed = failed_url.rsplit("/", 1)[1]
    # The run records FAILED itself; the error line is added from the step's log by the
    # reconciler once the execution has ended, a moment later (longer on a loaded machine), and
    # the failures page is not live: load it when the record has its error.
    deadline = time.monotonic() + 120  # a bound that catches a hang
    while not (platform.control.repo.execution(failed) or Missing).error:
        assert time.monotonic() < deadline, "the reconciler never added the failed step's error"
        time.sleep(0.1)

    page.goto("/failures")
    row = page.locator(f"table.failures tr[data-execution='{failed}']")
    expect(row).to_contain_text("load")
    expect(row).to_contain_text("ConnectionError: partner API answered 503")
    row.locator("a").first.click()
    expect(page.locator(".failed-step")).to_have_text("load")
    expect(page.locator("pre.error")).to_contain_text("partner API answered 503")
    expect(page.locator("tr[data-step='load'] td").nth(3)).to_have_text("75")  # exit code: retryable
    # the failed attempt's log in columns, its error's traceback expanded; then filtered
    log = page.locator("details[data-log-step='load'] table.log-lines").last
    expect(log.locator("tr.log-error details.traceback[open] pre")).to_contain_text(
        "ConnectionError: partner API answered 503")
    expect(log.locator("tr[data-level='info']").first).to_contain_text("step started")
    page.select_option("form.log-filter select[name=level]", "error")
    page.click("form.log-filter button[type=submit]")
    log = page.locator("details[data-log-step='load'] table.log-lines").last
    expect(log.locator("tr.log-error").first).to_contain_text("step failed")
    expect(page.locator("table.log-lines tr[data-level='info']")).to_have_count(0)
    page.fill("form.log-filter input[name=q]", "partner API answered")
    page.select_option("form.log-filter select[name=level]", "")
    page.click("form.log-filter button[type=submit]")
    rows = page.locator("details[data-log-step='load'] table.log-lines").last.locator("tbody tr")
    expect(rows.first).to_contain_text("partner API answered")
    assert all("partner api answered" in t.lower() for t in rows.all_inner_texts())
    page.goto(failed_url)

    page.fill("form.rerun textarea[name=params]", "mode=ok")
    page.fill("form.rerun input[name=reason]", "partner API is back")
    page.click("#rerun-failed")
    expect(page).not_to_have_url(failed_url)
    expect(page.locator(".execution-head [data-status]").first).to_have_attribute("data-status", "SUCCEEDED")
    rerun = page.url.split("?")[0].rsplit("/", 1)[1]
    expect(page.locator("[data-rerun-of]")).to_have_attribute("href", f"/executions/{failed}")
    expect(page.locator("table.timeline tbody tr")).to_have_count(1)  # only the failed step ran again
    expect(page.locator("figure.gantt rect.attempt[data-step='load']")).to_have_attribute("data-outcome", "succeeded")

    page.goto(f"/executions/{failed}")
    expect(page.locator("[data-rerun-by]")).to_have_attribute("href", f"/executions/{rerun}")
    page.goto("/audit")
    entry = page.locator("table.audit tbody tr").first
    expect(entry).to_contain_text("dev@localhost")
    expect(entry).to_contain_text("rerun from failed step")
    expect(entry).to_contain_text("partner API is back")

    page.goto("/jobs/flaky-load")
    expect(page.locator("#live tr[data-execution]").first).to_have_attribute("data-execution", rerun)
    # the job's recent runs as bars: the failure and its recovery among them, with the success rate
    trend = page.locator("figure.trend")
    expect(trend.locator("rect.run[data-status='FAILED']").first).to_be_attached()
    expect(trend.locator("rect.run[data-status='SUCCEEDED']").last).to_be_attached()
    expect(trend.locator("figcaption")).to_contain_text("% succeeded")
    expect(trend.locator("svg")).to_have_attribute("role", "img")


def test_from_a_slack_alert_to_a_rerun_of_the_failed_step_in_three_clicks_or_fewer(
        page, platform: DevPlatform, slack: Receiver) -> None:  # type: ignore[no-untyped-def]
    """The operator's path from an alert (issue 16): open the alert's link, see what failed,
    re-run from the failed step. Clicks are counted (a followed link counts as one), not seconds."""
    from playwright.sync_api import expect

    failed = platform.control.run_now("flaky-load", "scheduler@example.com", {"mode": "fail"})
    deadline = time.monotonic() + 300  # a bound that catches a hang: the alert is delivered once the run ends
    while not (post := next((p for p in slack.posts if failed in json.dumps(p)), None)):
        assert time.monotonic() < deadline, "no Slack alert for the failed run"
        time.sleep(0.1)
    link = re.search(r"https?://[^\s|>\"]+/executions/" + failed, json.dumps(post))[0]
    clicks = 1  # following the alert's link
    page.goto(link)
    # what failed, without a click: the failed step, its error line, the attempt's exit code
    expect(page.locator(".failed-step")).to_have_text("load")
    expect(page.locator("pre.error")).to_contain_text("partner API answered 503")
    expect(page.locator("tr[data-step='load'][data-outcome='failed']").first).to_be_visible()
    page.fill("form.rerun textarea[name=params]", "mode=ok")  # the fix: typing, not clicking
    page.click("#rerun-failed")
    clicks += 1
    expect(page.locator(".execution-head [data-status]").first).to_have_attribute("data-status", "SUCCEEDED")
    expect(page.locator("[data-rerun-of]")).to_have_attribute("href", f"/executions/{failed}")
    assert clicks <= 3


def test_the_failures_page_groups_by_job_with_the_action_that_moves_each_on(page, platform: DevPlatform) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    from jobplane.contract import execution_input

    aws = platform.aws
    for job, fire in (("other-team", "2027-09-06T10:00:00Z"), ("flaky-load", "2027-09-06T10:05:00Z")):
        arn = aws.start(job, execution_input.scheduled(fire, {"mode": "fail"}))
        aws.wait(arn, timeout=300)
        aws.wait_reconciled(arn, timeout=300)
    page.goto("/failures")
    # growth's SKIP_IF_FAILED job waits for an acknowledgement, which only growth may give
    blocked = page.locator("table.failure-groups tr[data-job='other-team']")
    expect(blocked).to_have_attribute("data-state", "blocked")
    expect(blocked).to_contain_text("growth's members or an admin can acknowledge it")
    expect(blocked.locator("button")).to_have_count(0)
    # billing's job still fails: its one action re-runs the newest failure from its failed step
    failing = page.locator("table.failure-groups tr[data-job='flaky-load']")
    expect(failing).to_have_attribute("data-state", "failing")
    newest = failing.locator("a[href^='/executions/']").first.get_attribute("href").rsplit("/", 1)[1]
    failing.locator("button", has_text="Re-run from load").click()
    expect(page.locator("[data-rerun-of]")).to_have_attribute("href", f"/executions/{newest}")
    expect(page.locator(".execution-head [data-status]").first).not_to_have_attribute("data-status", "RUNNING")


def test_the_jobs_page_sorts_by_failures_and_by_the_last_runs_duration(page, platform: DevPlatform) -> None:  # type: ignore[no-untyped-def]
    from collections import Counter

    from playwright.sync_api import expect

    from jobplane.contract import execution_input

    aws = platform.aws
    for fire in ("2027-10-04T10:00:00Z", "2027-10-04T10:05:00Z"):  # flaky-load fails twice
        arn = aws.start("flaky-load", execution_input.scheduled(fire, {"mode": "fail"}))
        aws.wait(arn, timeout=300)
        aws.wait_reconciled(arn, timeout=300)
    arn = aws.start("slow-report", execution_input.manual("ops@example.com", overrides={"mode": "sleep", "seconds": 2}))
    aws.wait(arn, timeout=300)
    repo = platform.control.repo
    counts = Counter(x.job for x in repo.recent_failures(200).items)
    page.goto("/")
    page.select_option("select[name=sort]", "failures")
    page.click("form.filters button[type=submit]")
    rows = page.locator("table.jobs tbody tr")
    entries = platform.control.entries  # equals keep the page's team-and-name order
    expect(rows.first).to_have_attribute("data-job", min(counts, key=lambda j: (-counts[j], entries[j].team, j)))
    first = rows.first.get_attribute("data-job")
    expect(rows.first.locator("td.recent-failures")).to_have_text(str(counts[first]))
    shown = [int(t) for t in page.locator("td.recent-failures").all_inner_texts()]
    assert shown == sorted(shown, reverse=True)
    page.select_option("select[name=sort]", "duration")
    page.click("form.filters button[type=submit]")
    longest = max((s for s in repo.job_states() if s.last_duration is not None), key=lambda s: s.last_duration)
    expect(page.locator("table.jobs tbody tr").first).to_have_attribute("data-job", longest.job)
    expect(page.locator("table.jobs tbody tr").first.locator("td.last-took")).not_to_have_text("")


def test_the_jobs_page_in_pages_keeps_its_filters_from_page_to_page(page, platform: DevPlatform) -> None:  # type: ignore[no-untyped-def]
    """The jobs page in pages of 2 (portal/job_pager.py): "next" shows the following jobs, a
    filter chosen on page 2 starts again at page 1 of the filtered jobs, with the page size kept."""
    from playwright.sync_api import expect

    everyone = [j.name for j in platform.control.jobs(fires=0)]
    billing = [n for n in everyone if platform.control.entries[n].team == "billing"]
    page.goto("/?per_page=2")
    rows = page.locator("table.jobs tbody tr")
    expect(rows).to_have_count(2)
    assert [rows.nth(i).get_attribute("data-job") for i in range(2)] == everyone[:2]
    expect(page.locator("nav.pager").first).to_contain_text(f"1–2 of {len(everyone)} jobs")
    page.locator("nav.pager").first.get_by_role("link", name="next ›").click()
    expect(page.locator("nav.pager").first).to_have_attribute("data-page", "2")
    assert [rows.nth(i).get_attribute("data-job") for i in range(rows.count())] == everyone[2:4]
    page.select_option("select[name=team]", "billing")
    page.click("form.filters button[type=submit]")
    expect(page.locator("nav.pager").first).to_contain_text(f"of {len(billing)} jobs")
    assert "per_page=2" in page.url and "page=" not in page.url.replace("per_page=", "")
    assert [rows.nth(i).get_attribute("data-job") for i in range(rows.count())] == billing[:2]
    page.locator("nav.pager").first.get_by_role("link", name="last »").click()
    expect(page.locator("nav.pager").first).to_have_attribute("data-page", str(-(-len(billing) // 2)))
    last = billing[(len(billing) - 1) // 2 * 2:]
    expect(rows).to_have_count(len(last))
    assert [rows.nth(i).get_attribute("data-job") for i in range(rows.count())] == last
    assert "team=billing" in page.url


def test_the_api_docs_render_under_the_portals_csp(page) -> None:  # type: ignore[no-untyped-def]
    """Issue 10, item 16: /api/docs was blank (Swagger UI from a CDN, blocked by the CSP). Now its
    assets come from the portal; the page fixture fails on any CSP violation or script error."""
    from playwright.sync_api import expect

    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto("/api/docs")
    expect(page.locator(".swagger-ui .information-container")).to_contain_text("jobplane portal API")
    expect(page.locator(".opblock-summary-path").first).to_be_visible()
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/jobs/{job}/runs" in p.replace("\u200b", "") for p in paths), paths
    assert all(url.startswith(page.url.split("/api/docs")[0]) for url in requested), requested  # nothing from elsewhere


def test_the_docs_screenshots_come_from_the_script_that_makes_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`make screenshots` runs real examples and photographs the pages; every image the docs
    show is one it writes (so none is hand-made or left over from a page that changed)."""
    import struct
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "scripts" / "screenshots.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    written = {p.name for p in tmp_path.glob("*.png")}
    assert written == {"portal-jobs.png", "portal-job.png", "portal-failures.png", "portal-execution-failed.png",
                       "portal-execution-rerun.png", "portal-backfill.png", "portal-timeline.png",
                       "portal-timeline-next.png"}, done.stdout
    for name in written:
        head = (tmp_path / name).read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", head[16:20])[0] == 1280
    shown = {m for doc in ("portal.md", "operate.md")
             for m in re.findall(r"\(img/([\w.-]+\.png)\)", (root / "docs" / doc).read_text())}
    assert shown and shown <= written and shown == {p.name for p in (root / "docs" / "img").glob("*.png")}


def test_backfill_a_past_window_from_the_job_page_and_watch_it_finish(page, platform: DevPlatform) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    page.goto("/jobs/long-wait")
    page.click("#backfill")
    page.fill("input[name=from]", "2026-01-01T00:00")
    page.fill("input[name=to]", "2026-01-03T23:59")
    page.click("#preview")
    expect(page.locator("tr[data-fire]")).to_have_count(3)  # daily at 02:00 UTC
    expect(page.locator("tr[data-fire='2026-01-02T02:00:00Z']")).to_contain_text("2026-01-02 Fri 02:00 UTC")
    page.fill("input[name=reason]", "the scheduler was down on Jan 1-3")
    page.click("#start-backfill")
    expect(page).to_have_url(re.compile(r"/backfills/bf-[0-9a-f]{12}\?notice=backfill"))
    expect(page.locator("#live h2 [data-status]")).to_have_attribute("data-status", "COMPLETED")  # refreshed in place
    expect(page.locator("tr[data-fire] [data-status='SUCCEEDED']")).to_have_count(3)
    page.locator("tr[data-fire='2026-01-01T02:00:00Z'] a").click()
    expect(page.locator("[data-backfill]")).to_have_text(re.compile(r"bf-[0-9a-f]{12}"))
    expect(page.locator("#live")).to_contain_text("backfill for 2026-01-01T02:00:00Z")
