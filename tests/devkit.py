"""A scratch repository with test jobs for the local platform (`jobplane dev`) and the portal,
whose steps run tests/sample_apps through the real runner."""

from __future__ import annotations

import http.cookiejar
import textwrap
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

from conftest import ROOT, Repo

TESTS = Path(__file__).resolve().parent

TOML = """\
[platform]
name_prefix = "jp"
default_timezone = "UTC"
default_channel = "#platform-default"
admins = ["root@example.com"]

[teams.billing]
channel = "#billing-alerts"
members = ["dev@localhost", "aiko@example.com"]

[teams.growth]
channel = "#growth-alerts"
members = ["ben@example.com"]

[dev]
data_dir = ".jobplane"
dev_user = "dev@localhost"

[dev.env]
PYTHONPATH = "%(tests)s"
JOBPLANE_STOP_GRACE_SECONDS = "3"
"""

JOBS = {
    "billing/every-minute.jsonnet": """\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'every-minute',
          team: 'billing',
          description: 'Fires every minute.',
          schedule: 'cron(* * * * ? *)',
          timezone: 'UTC',
          policy: jp.policy.SKIP_IF_RUNNING,
          steps: [jp.python('tick', 'sample_apps.functions:behave')],
        }
    """,
    "billing/flaky-load.jsonnet": """\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'flaky-load',
          team: 'billing',
          description: 'Prepares, then loads; mode=fail makes the load fail.',
          runbook: jp.runbook(impact='Reports are stale.', recovery='Fix the input, re-run from the failed step.'),
          schedule: jp.manual,
          policy: jp.policy.SKIP_IF_RUNNING,
          params: { mode: 'fail', marker: null },
          steps: [
            jp.python('prepare', 'sample_apps.functions:prepare'),
            jp.python('load', 'sample_apps.functions:behave'),
          ],
        }
    """,
    "billing/long-wait.jsonnet": """\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'long-wait',
          team: 'billing',
          description: 'Waits for a release file (or 60 s).',
          schedule: jp.daily('02:00'),
          policy: jp.policy.SKIP_IF_RUNNING,
          params: { mode: 'wait', release: null, seconds: 60 },
          steps: [jp.python('wait', 'sample_apps.functions:behave')],
        }
    """,
    "billing/slow-report.jsonnet": """\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'slow-report',
          team: 'billing',
          description: 'Usually done in a minute.',
          schedule: jp.manual,
          policy: jp.policy.SKIP_IF_RUNNING,
          timeout: '1h',
          expected_duration: '1m',
          params: { mode: 'wait', release: null, seconds: 60 },
          steps: [jp.python('crunch', 'sample_apps.functions:behave')],
          notify: jp.slack('#billing-alerts', events=[jp.events.FAILED, jp.events.SLOW]),
        }
    """,
    "billing/typed-params.jsonnet": """\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'typed-params',
          team: 'billing',
          description: 'Records the params it was given, with their JSON types.',
          schedule: jp.manual,
          params: { out: null, dry_run: false, tags: ['a', 'b'], limit: 10, label: '2026', options: { deep: true } },
          steps: [jp.python('record', 'sample_apps.functions:record')],
        }
    """,
    "growth/other-team.jsonnet": """\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'other-team',
          team: 'growth',
          description: 'Belongs to growth: <script>alert("x")</script> must render as text.',
          schedule: jp.weekly('MON', '06:00'),
          timezone: 'America/New_York',
          policy: jp.policy.SKIP_IF_FAILED,
          steps: [jp.python('work', 'sample_apps.functions:behave')],
        }
    """,
}


def make_repo(path: Path) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo(path)
    (path / "jobplane.toml").write_text(TOML % {"tests": TESTS})
    for rel, text in JOBS.items():
        repo.write(f"jobs/{rel}", textwrap.dedent(text))
    return repo


#: Two hourly jobs in a timezone with daylight saving, for the backfill tests.
HOURLY = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: '%(name)s',
      team: 'billing',
      description: 'Half past every hour, New York time.',
      schedule: 'cron(30 * * * ? *)',
      timezone: 'America/New_York',
      policy: jp.policy.%(policy)s,
      params: { mode: 'ok', marker: null, seconds: 30, release: null },
      steps: [jp.python('work', 'sample_apps.functions:behave')],
    }
"""


def backfill_repo(path: Path) -> Path:
    """The scratch repository plus ``hourly`` (ALWAYS_RUN) and ``serial`` (SKIP_IF_RUNNING)."""
    r = make_repo(path)
    r.write("jobs/billing/hourly.jsonnet", textwrap.dedent(HOURLY % {"name": "hourly", "policy": "ALWAYS_RUN"}))
    r.write("jobs/billing/serial.jsonnet", textwrap.dedent(HOURLY % {"name": "serial", "policy": "SKIP_IF_RUNNING"}))
    return path


class FakeClock:
    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


__all__ = ["ROOT", "make_repo", "FakeClock", "utc"]


def signed_in(login_url: str) -> urllib.request.OpenerDirector:
    """An HTTP client signed in to a ``jobplane dev`` portal the way a browser is: through the
    start's login link, keeping the session cookie it sets."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(login_url, timeout=60) as r:
        assert r.status == 200 and r.url.rstrip("/") == login_url.split("/login")[0], r.url
    return opener
