"""The portal's run form for a job with typed parameters (issue 69 part 2), in a real headless
browser (Debian's chromium driven by Playwright, as tests/test_portal_browser.py): one control
per type, pre-filled with the defaults a run started now gets (a calendar default resolved in
the job's timezone), a run started from it records what was chosen; the same refusal the API
gives, naming each parameter and its rule."""

from __future__ import annotations

import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pytest

from devkit import make_repo
from jobplane.contract.config import load_config
from jobplane.contract.params import calendar_value
from jobplane.devserver.dev_platform import DevPlatform

CHROMIUM = os.environ.get("JOBPLANE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(os.environ.get("JOBPLANE_SKIP_BROWSER_TESTS") == "1",
                                reason="asked to: JOBPLANE_SKIP_BROWSER_TESTS=1")

JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'tenant-close',
  team: 'billing',
  timezone: 'Pacific/Kiritimati',
  params: {
    month: jp.param.month(default='last_closed', description='the month to close'),
    day: jp.param.date(default='fire_date'),
    dry_run: jp.param.bool(true),
    tenant: jp.param.string(pattern='^t-[0-9]+$'),
    batch: jp.param.int(100, min=1, max=1000),
    mode: jp.param.enum(['full', 'delta'], default='delta'),
  },
  steps: [jp.python('close', 'sample_apps.functions:write_greeting', kwargs={ out: '/dev/null' })],
}
"""


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("params-portal")
    repo = make_repo(tmp / "repo")
    repo.write("jobs/billing/tenant-close.jsonnet", JOB)
    p = DevPlatform(load_config(tmp / "repo"), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600).start()
    yield p
    p.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    assert os.path.exists(CHROMIUM), f"Debian's chromium is not installed ({CHROMIUM}): sudo apt-get install -y chromium"
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
    page.goto(platform.portal_login_url)
    page.set_default_timeout(120_000)  # bounds that only catch a hang on a loaded machine
    expect.set_options(timeout=120_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    context.close()
    assert errors == [], errors


def test_the_run_form_has_a_control_per_type_prefilled_and_runs_what_was_chosen(page, platform: DevPlatform) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    before = datetime.now(timezone.utc)
    page.goto("/jobs/tenant-close")
    expect(page.locator("h1")).to_contain_text("tenant-close")
    month, day = page.locator("#param-month"), page.locator("#param-day")
    assert month.get_attribute("type") == "month" and day.get_attribute("type") == "date"
    # calendar defaults as a run started now gets them, in the job's timezone (UTC+14)
    assert month.input_value() in {calendar_value("last_closed", t, "Pacific/Kiritimati", None)
                                   for t in (before, datetime.now(timezone.utc))}
    assert day.input_value() in {calendar_value("fire_date", t, "Pacific/Kiritimati", None)
                                 for t in (before, datetime.now(timezone.utc))}
    assert page.locator("#param-dry_run").get_attribute("type") == "checkbox" and page.locator("#param-dry_run").is_checked()
    batch = page.locator("#param-batch")
    assert (batch.get_attribute("type"), batch.get_attribute("min"), batch.get_attribute("max"), batch.input_value()) \
        == ("number", "1", "1000", "100")
    assert page.locator("#param-mode").evaluate("s => [s.tagName, s.value, [...s.options].map(o => o.text)]") \
        == ["SELECT", "delta", ["full", "delta"]]
    tenant = page.locator("#param-tenant")
    assert tenant.get_attribute("required") is not None and tenant.get_attribute("pattern") == "^t-[0-9]+$"
    # the browser holds the form to the same rules before it is sent
    tenant.fill("acme")
    assert tenant.evaluate("e => e.validity.patternMismatch") is True
    tenant.fill("t-42")
    page.locator("#param-dry_run").uncheck()
    batch.fill("250")
    page.select_option("#param-mode", "full")
    month.fill("2026-03")
    page.click("#run-now")
    expect(page).to_have_url(re.compile(r"/executions/[0-9a-f]{32}"))
    expect(page.locator(".execution-head [data-status]").first).to_have_attribute("data-status", "SUCCEEDED")
    name = page.url.split("/executions/")[1].split("?")[0]
    recorded = platform.control.execution(name, "tenant-close").input.params
    assert recorded["tenant"] == "t-42" and recorded["batch"] == 250 and recorded["dry_run"] is False
    assert recorded["mode"] == "full" and recorded["month"] == "2026-03" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", recorded["day"])
    expect(page.locator("body")).to_contain_text("t-42")  # the run page shows the params it ran with


def test_a_form_the_browser_did_not_check_is_refused_naming_each_parameter_and_rule(platform: DevPlatform) -> None:
    """What reaches the server unchecked (a script, an old browser) is held to the schema there."""
    from fastapi.testclient import TestClient

    from portal_kit import BILLING, as_user, header_app

    client = TestClient(header_app(platform), follow_redirects=False)
    page = client.get("/jobs/tenant-close", headers=as_user(BILLING))
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    sent = client.post("/jobs/tenant-close/run", headers=as_user(BILLING), data={
        "csrf_token": token[1], "typed": "1", "p.tenant": "acme", "p.batch": "5000", "p.mode": "half",
        "p.month": "2026-3", "p.dry_run": "off", "reason": "x"})
    assert sent.status_code == 400, sent.text[:500]
    for fragment in ("tenant: must match ^t-[0-9]+$", "batch: must be at most 1000", "mode: must be one of",
                     "month: must be a month YYYY-MM"):
        assert fragment in sent.text, sent.text[:2000]
    api = client.get("/api/jobs/tenant-close/params-schema", headers=as_user(BILLING)).json()
    assert api["properties"]["tenant"]["pattern"] == "^t-[0-9]+$" and api["required"] == ["tenant"]
    assert api["properties"]["month"]["x-jobplane-default"] == "last_closed" and "x-jobplane-default-now" in api["properties"]["month"]
    refused = client.post("/api/jobs/tenant-close/runs", headers=as_user(BILLING),
                          json={"params": {"tenant": "t-1", "batch": "many"}, "reason": "x"})
    assert refused.status_code in (400, 422) and "batch" in refused.text and "whole number" in refused.text, refused.text
