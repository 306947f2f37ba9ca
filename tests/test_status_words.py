"""What `status`, `plan` and the jobs page say of how a job starts, and what a stopped platform's
`status` still computes (issue 47, item 8): a job started by `after:` reads "after <job>
(SUCCEEDED)", not "manual"; a stopped platform shows each job's next fire and the fires that fell
due since its scheduler stopped. The platform's clock is moved back (its scheduler's record says
it stopped minutes ago), never slept on."""

from __future__ import annotations

import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

from click.testing import CliRunner

from devkit import FakeClock, make_repo, signed_in
from ledger_kit import MINUTELY

from jobplane.cli.app import main
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform

AFTER = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: 'follow-up',
      team: 'billing',
      schedule: jp.manual,
      after: [jp.after('heartbeat')],
      steps: [jp.python('work', 'sample_apps.functions:behave')],
    }
"""


def test_after_jobs_read_after_their_upstream_and_a_stopped_platform_computes_fires(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.write("jobs/billing/heartbeat.jsonnet", textwrap.dedent(MINUTELY % {
        "name": "heartbeat", "zone": "UTC", "enabled": "true", "policy": "ALWAYS_RUN"}))
    repo.write("jobs/billing/follow-up.jsonnet", textwrap.dedent(AFTER))
    data = tmp_path / "data"
    # the platform ran until ten minutes ago, by its clock (the scheduler's record keeps it)
    stopped = (datetime.now(timezone.utc) - timedelta(minutes=10)).replace(second=30, microsecond=0)

    def cli(*args: str) -> str:
        result = CliRunner().invoke(main, ["--root", str(repo.path), *args])
        assert result.exit_code == 0, result.output
        return result.output

    platform = DevPlatform(load_config(repo.path), data, 0, 0, clock=FakeClock(stopped), run_services=False,
                           snapshot_interval=3600, catch_up_interval=3600).start()
    try:
        running = cli("status", "--data-dir", str(data))
        row = next(line for line in running.splitlines() if line.startswith("follow-up "))
        assert row.endswith("after heartbeat (SUCCEEDED)") and "manual" not in row
        with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/", timeout=60) as r:
            page = r.read().decode()
        assert "after heartbeat (SUCCEEDED)" in page
        with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/jobs/follow-up", timeout=60) as r:
            assert "after heartbeat (SUCCEEDED)" in r.read().decode()
    finally:
        platform.stop()

    offline = cli("status", "--data-dir", str(data))
    assert "jobplane dev is not running" in offline
    lines = {line.split()[0]: line for line in offline.splitlines() if line.startswith(("heartbeat ", "follow-up "))}
    assert lines["follow-up"].endswith("after heartbeat (SUCCEEDED)")
    next_fire = (datetime.now(timezone.utc) + timedelta(minutes=1)).replace(second=0, microsecond=0)
    assert lines["heartbeat"].endswith((next_fire.strftime("%Y-%m-%d %H:%M UTC"),
                                        (next_fire + timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M UTC")))
    first = (stopped + timedelta(minutes=1)).replace(second=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "Not started since the scheduler stopped" in offline
    assert f"  heartbeat: " in offline and f"fires since {first}" in offline

    plan = CliRunner().invoke(main, ["--root", str(repo.path), "plan", "--against", str(tmp_path / "empty")])
    assert "schedule: after heartbeat (SUCCEEDED)" in plan.output, plan.output
