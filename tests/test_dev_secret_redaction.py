"""Issue 65 item 2: a step's declared secret given a local value through `[dev.env]` (the
documented way, docs/dev.md) is redacted under `jobplane dev` as on AWS, for python and Lambda
steps: `jobplane logs`, the portal (its API and its page) and the log cache never show it. On
AWS the runner learns the names from the job's task definition (ECS) or its function's secret
sources (Lambda); locally the agents pass the same names (platform/local/declared_secrets.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from devkit import signed_in
from jobplane.cli import main
from test_dev_platform import finished, repo_root, start_platform  # noqa: F401 (fixture)

VALUE = "opaque-ledger-value-4711"  # no secret-looking name or shape: only its declaration hides it
JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'shows-config',
  team: 'billing',
  schedule: jp.manual,
  params: { name: 'LEDGER_CONN' },
  steps: [
    jp.python('on-ecs', 'sample_apps.functions:print_variable',
              opts={ secrets: { LEDGER_CONN: jp.secret('billing/ledger-conn') } }),
    jp.lambda('on-lambda', 'sample_apps.functions:print_variable',
              opts={ secrets: { LEDGER_CONN: jp.secret('billing/ledger-conn') } }),
  ],
}
"""


def test_a_declared_secrets_dev_value_is_redacted_in_logs_portal_and_cache(repo_root: Path, tmp_path: Path) -> None:
    (repo_root / "jobs" / "billing" / "shows-config.jsonnet").write_text(JOB)
    with (repo_root / "jobplane.toml").open("a") as f:  # [dev.env] is the file's last table
        f.write(f'LEDGER_CONN = "{VALUE}"\n')
    data = tmp_path / "data"
    platform = start_platform(repo_root, data)
    try:
        name = platform.control.run_now("shows-config", "dev@localhost")
        view = finished(platform, name, "shows-config")
        assert view.status == "SUCCEEDED", view
        logs = CliRunner().invoke(main, ["--root", str(repo_root), "logs", name, "--data-dir", str(data)])
        assert logs.exit_code == 0, logs.output
        # each step printed its line, with the value replaced
        assert logs.output.count("the configured value is ") == 2, logs.output
        assert VALUE not in logs.output
        opener = signed_in(platform.portal_login_url)
        with opener.open(f"{platform.portal_url}/api/executions/{name}/logs", timeout=60) as r:
            api = r.read().decode()
        assert "the configured value is " in api and VALUE not in api
        with opener.open(f"{platform.portal_url}/executions/{name}", timeout=60) as r:
            page = r.read().decode()
        assert VALUE not in page
        cached = [p for p in data.rglob("*") if p.is_file() and VALUE.encode() in p.read_bytes()]
        assert cached == [], cached  # the log cache (and nothing else in the data directory) holds it
        streams = [s.read() for step in ("on-ecs", "on-lambda") for s in platform.control.log_streams(name, step)]
        assert all("the configured value is " in s and VALUE not in s for s in streams) and len(streams) == 2
    finally:
        platform.stop()
