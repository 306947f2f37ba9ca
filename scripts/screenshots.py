"""Screenshots of the portal pages an operator meets, for docs/portal.md and docs/operate.md.

    make screenshots            (or: .venv/bin/python scripts/screenshots.py [--out docs/img])

Starts the platform `jobplane dev` runs, on this repository's example jobs and in a scratch data
directory (nothing of a running `jobplane dev` is touched), makes the situations the docs walk
through happen for real (a daily report that succeeds, a backfill started without its params
that fails, its re-run from the failed step with the params fixed, a backfill of a past week), and
photographs each page in Debian's chromium driven by Playwright, as the browser tests do. The pages show real data of
this run, so the images change with the code that renders them: re-run this after a change to
the portal's pages and commit the images with it.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("JOBPLANE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
OPERATOR = "dev@localhost"  # the signed-in user of `jobplane dev` (jobplane.toml [dev] dev_user)


def make_runs(platform) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Run the examples into the states the pages should show; their execution names."""
    from jobplane.platform.control import Access

    control, aws = platform.control, platform.aws
    operator = Access.from_config(platform.config).person(OPERATOR)  # as the portal and the CLI judge them

    def finished(job: str, name: str) -> str:
        arn = control.deployment.execution_arn(job, name)
        aws.wait(arn, timeout=600)
        aws.wait_reconciled(arn, timeout=600)
        return name

    report = finished("daily-sales-report", control.run_now("daily-sales-report", operator))
    failed = finished("backfill-search-index", control.run_now(
        "backfill-search-index", operator, reason="mapping change of 2026-11-28"))
    rerun = finished("backfill-search-index", control.rerun(
        failed, operator, from_failed_step=True, params={"from": "2026-11-01", "to": "2026-11-28"},
        reason="forgot the range"))
    for name, want in ((report, "SUCCEEDED"), (failed, "FAILED"), (rerun, "SUCCEEDED")):
        status = control.execution(name).status
        if status != want:
            raise SystemExit(f"{name}: {status}, not {want}: the examples no longer behave as the docs say")
    # the report's missed nights of a past week, backfilled (docs/operate.md)
    backfill = platform.backfills.create("daily-sales-report", operator, "2026-11-16T00:00", "2026-11-20T23:59",
                                         reason="scheduler paused by mistake")
    done = platform.backfills.follow(backfill.id, lambda b: None, interval=0.2)
    if done.status.value != "COMPLETED" or any(f.status != "SUCCEEDED" for f in done.fires):
        raise SystemExit(f"{backfill.id}: {done}: the examples no longer behave as the docs say")
    return {"report": report, "failed": failed, "rerun": rerun, "backfill": backfill.id}


def shoot(portal_url: str, login_url: str, runs: dict[str, str], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    pages = {
        "portal-jobs.png": "/",
        "portal-job.png": "/jobs/backfill-search-index",
        "portal-failures.png": "/failures",
        "portal-execution-failed.png": f"/executions/{runs['failed']}",
        "portal-execution-rerun.png": f"/executions/{runs['rerun']}",
        "portal-backfill.png": f"/backfills/{runs['backfill']}",
        "portal-timeline.png": "/timeline",  # the day's runs across jobs (issue 70)
        "portal-timeline-next.png": "/timeline/next",  # the next 24 hours' fires by team (issue 70)
    }
    written = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(base_url=portal_url, viewport={"width": 1280, "height": 800})
        page.goto(login_url)  # this start's sign-in link, as the banner prints it
        for file, path in pages.items():
            page.goto(path)
            page.wait_for_load_state("networkidle")
            target = out / file
            page.screenshot(path=str(target), full_page=True)
            written.append(target)
        browser.close()
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="where the PNG files go")
    args = ap.parse_args()
    if not os.path.exists(CHROMIUM):
        sys.exit(f"no chromium at {CHROMIUM} (apt-get install chromium, or set JOBPLANE_CHROMIUM)")
    from jobplane.contract.config import load_config
    from jobplane.devserver.dev_platform import DevPlatform

    # moto logs every state's JSONPath miss at ERROR: the engine's diagnostics, not this script's
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="jobplane-screenshots-") as data:
        platform = DevPlatform(load_config(ROOT), Path(data), 0, 0, run_scheduler=False, snapshot_interval=3600)
        platform.start()
        try:
            runs = make_runs(platform)
            for path in shoot(platform.portal_url, platform.portal_login_url, runs, args.out):
                print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        finally:
            platform.stop()


if __name__ == "__main__":
    main()
