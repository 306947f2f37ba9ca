"""Freezes (issue 69 part 3, beyond): `jobplane plan` refuses a change to a job during its own
freeze window unless --break-glass --reason, which the running `jobplane dev`'s audit log records;
the portal's job page shows the window and marks the next fires inside it. Its own file: it
starts a `jobplane dev` of its own (the in-process local AWS is one per process at a time)."""

from __future__ import annotations

import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

from devkit import make_repo
from test_blackout_dev import JOB

from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform

def test_plan_refuses_a_change_during_the_jobs_own_freeze_unless_break_glass_audited(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jobplane.cli import main

    today = datetime.now(timezone.utc).date()
    repo = make_repo(tmp_path / "repo")
    with open(repo.path / "jobplane.toml", "a") as f:  # a freeze from yesterday to tomorrow: now, whenever this runs
        f.write(f"""
[blackouts]
years = [{today.year - 1}, {today.year + 1}]

[blackouts.release-freeze]
dates = ["{(today - timedelta(days=1)).isoformat()}..{(today + timedelta(days=1)).isoformat()}"]
timezone = "UTC"
freeze = true
""")
    job = textwrap.dedent(JOB % {"name": "frozen", "schedule": "cron(0 * * * ? *)", "marker": tmp_path / "m"})
    job = job.replace("blackout: ['db-maint', 'month-close']", "blackout: ['release-freeze']")
    repo.write("jobs/billing/frozen.jsonnet", job)
    cli = CliRunner()
    base = ["--root", str(repo.path)]
    assert cli.invoke(main, [*base, "compile"]).exit_code == 0
    repo.write("jobs/billing/frozen.jsonnet", job.replace("seconds: 0", "seconds: 1"))
    refused = cli.invoke(main, [*base, "plan"])
    assert refused.exit_code == 2, refused.output
    assert "frozen (changed) is frozen by release-freeze until" in refused.output
    assert "--break-glass" in refused.output
    no_reason = cli.invoke(main, [*base, "plan", "--break-glass"])
    assert no_reason.exit_code != 0 and "--break-glass needs --reason" in no_reason.output
    # another job, without the freeze, changes freely
    repo.write("jobs/billing/other.jsonnet", JOB.replace("blackout: ['db-maint', 'month-close'],", "") % {
        "name": "other", "schedule": "cron(0 * * * ? *)", "marker": tmp_path / "m"})
    repo.write("jobs/billing/frozen.jsonnet", job)  # back as compiled: only `other` is new
    assert cli.invoke(main, [*base, "plan"]).exit_code == 0
    repo.write("jobs/billing/frozen.jsonnet", job.replace("seconds: 0", "seconds: 1"))
    platform = DevPlatform(load_config(repo.path), tmp_path / "data", 0, 0, run_scheduler=False, run_services=False,
                           snapshot_interval=3600, catch_up_interval=3600).start()
    try:
        glass = cli.invoke(main, [*base, "plan", "--break-glass", "--reason", "the ledger fix cannot wait",
                                  "--data-dir", str(tmp_path / "data")])
        assert glass.exit_code == 0, glass.output
        assert "BREAK GLASS: frozen (changed) during freeze release-freeze" in glass.output
        entries = [e for e in platform.control.repo.audit_log(100) if e.action == "break-glass"]
        assert [(e.job, e.reason, e.actor) for e in entries] == [("frozen", "the ledger fix cannot wait", "dev@localhost")]
        assert '"window": "release-freeze"' in entries[0].details
        # the portal's job page: the window, and the next fires inside it marked
        from devkit import signed_in

        with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/jobs/frozen", timeout=60) as r:
            page = r.read().decode()
        assert "Blackout windows" in page and "release-freeze: fires inside are skipped; a freeze" in page
        assert page.count("(blacked out by release-freeze: skipped)") >= 3  # the next fires, all inside it
    finally:
        platform.stop()

