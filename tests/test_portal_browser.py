"""The portal in a real headless browser (Debian's chromium driven by Playwright): an operator
runs a job and watches it finish without reloading, then finds a failure, re-runs it from the
failed step with fixed params, and sees the lineage and the audit entry."""

from __future__ import annotations

import os
import re
import shutil
import time
from types import SimpleNamespace
from typing import Iterator

import pytest

from jobplane.devserver.dev_platform import DevPlatform
from portal_kit import start_platform

CHROMIUM = os.environ.get("JOBPLANE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM) and not os.environ.get("CI"),
                                reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does)")


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    p = start_platform(tmp_path_factory.mktemp("portal-browser"))  # the portal as `jobplane dev` serves it
    yield p
    p.stop()


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
    # Bounds that only catch a hang: expect()'s own default is 5 s, which a run on a loaded
    # 2-core machine can exceed (it failed once in make test beside a soak).
    page.set_default_timeout(120_000)
    expect.set_options(timeout=120_000)
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmations of destructive actions
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    context.close()
    assert errors == [], errors  # no script error, no CSP violation


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
                       "portal-execution-rerun.png"}, done.stdout
    for name in written:
        head = (tmp_path / name).read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">I", head[16:20])[0] == 1280
    shown = {m for doc in ("portal.md", "operate.md")
             for m in re.findall(r"\(img/([\w.-]+\.png)\)", (root / "docs" / doc).read_text())}
    assert shown and shown <= written and shown == {p.name for p in (root / "docs" / "img").glob("*.png")}
