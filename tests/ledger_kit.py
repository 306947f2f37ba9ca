"""What the fire ledger's tests share (tests/test_missed_fires*.py): the job they schedule,
and how they read what the ledger recorded and sent."""

from __future__ import annotations

import json
import re
import time

from slack_receiver import Receiver

from jobplane.devserver.dev_platform import DevPlatform

MINUTELY = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: '%(name)s',
      team: 'billing',
      schedule: 'cron(0/1 * * * ? *)',
      timezone: '%(zone)s',
      enabled: %(enabled)s,
      policy: jp.policy.%(policy)s,
      params: { mode: 'ok', marker: null, seconds: 1, release: null },
      steps: [jp.python('work', 'sample_apps.functions:behave')],
      notify: jp.slack('#billing-alerts'),
    }
"""


def missed_records(platform: DevPlatform, job: str) -> list:  # type: ignore[type-arg]
    return [r for r in platform.control.repo.executions(job, limit=500).items if r.status == "MISSED"]


def alerts(slack: Receiver, job: str, status: str = "MISSED") -> list[dict]:  # type: ignore[type-arg]
    """The Slack posts of ``job``'s MISSED event whose status field is ``status``."""
    return [p for p in list(slack.posts) if re.search(rf"(^|\s){re.escape(job)} MISSED\b", p.get("text", "")) and
            f"*Status*\\n{status}" in json.dumps(p.get("blocks", []))]


def wait_until(condition, limit: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    """A hang guard for the alert feed's delivery (SNS -> SQS -> notifier), not a time budget."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "not delivered"
        time.sleep(0.1)
