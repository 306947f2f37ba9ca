"""`after_failures` (issue 69 part 4): a job's failure alerts wait for N failed runs in a row, and
the RECOVERED note of a streak nobody was told of is held too. Under `jobplane dev`'s platform
with real runner subprocesses and Slack a real local HTTP receiver: the decision is the
notifier's, from the job's execution records, as the notifier Lambda makes it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from devkit import FakeClock, make_repo, utc
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform
from slack_receiver import Receiver
from test_dev_platform import finished, wait_for

STREAKY = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'streaky',
  team: 'billing',
  schedule: jp.manual,
  policy: jp.policy.%(policy)s,
  params: { mode: 'fail' },
  notify: { events: ['FAILED', 'TIMED_OUT', 'ABORTED', 'RECOVERED'], after_failures: %(after)s },
  steps: [jp.python('load', 'sample_apps.functions:behave')],
}
"""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver([])
    yield r
    r.close()


def test_failures_alert_from_the_nth_in_a_row_and_only_an_announced_streak_recovers(
        tmp_path: Path, receiver: Receiver) -> None:
    root = tmp_path / "repo"
    make_repo(root)
    (root / "jobs/billing/streaky.jsonnet").write_text(STREAKY % {"policy": "SKIP_IF_RUNNING", "after": 2})
    platform = DevPlatform(load_config(root), tmp_path / "data", 0, 0, clock=FakeClock(utc("2027-03-01T10:00:30")),
                           webhook_url=receiver.url, run_scheduler=False, run_services=False,
                           snapshot_interval=3600).start()
    assert platform.alerts is not None
    alerts = platform.alerts

    def run(mode: str, status: str) -> tuple[str, list[str]]:
        """One run to its end, and what the notifier did with its alert (if it had one)."""
        name = platform.control.run_now("streaky", "dev@localhost", {"mode": mode})
        assert finished(platform, name, "streaky").status == status
        if status == "SUCCEEDED" and not platform.control.repo.execution(name):
            return name, []
        delivered = wait_for(lambda: [r for e, r in alerts.delivered if e == name], what=f"{name}'s alert")
        return name, delivered[0]

    def posted(name: str) -> list[str]:
        return [str(p) for p in receiver.posts if name in str(p)]

    try:
        first, results = run("fail", "FAILED")
        assert results == ["held: failure 1 in a row of the 2 after which this job alerts (after_failures)"]
        assert posted(first) == []
        second, results = run("fail", "FAILED")
        assert results == ["sent"] and len(posted(second)) == 1 and "FAILED" in posted(second)[0]
        recovered, results = run("ok", "SUCCEEDED")
        assert results == ["sent"] and "RECOVERED" in posted(recovered)[0]
        # a single failure, then a success: neither is told (the success's note would recover
        # from a failure the channel never saw)
        lone, results = run("fail", "FAILED")
        assert results[0].startswith("held: failure 1 in a row") and posted(lone) == []
        quiet, results = run("ok", "SUCCEEDED")
        assert results == ["held: the 1 failure this run ends were never announced (after_failures 2)"]
        assert posted(quiet) == []
        assert len(receiver.posts) == 2  # the second failure and its recovery, nothing else
    finally:
        platform.stop()


@pytest.mark.parametrize("policy,after,says", [
    ("SKIP_IF_FAILED", 2, "after_failures 2: the policy SKIP_IF_FAILED blocks the job's next fires at each failure"),
    ("SKIP_IF_RUNNING", 11, "after_failures"),
    ("SKIP_IF_RUNNING", 0, "after_failures"),
])
def test_a_streak_a_policy_cannot_wait_for_is_refused_naming_the_field(tmp_path: Path, policy: str, after: int,
                                                                       says: str) -> None:
    from click.testing import CliRunner

    from jobplane.cli import main

    root = tmp_path / "repo"
    make_repo(root)
    (root / "jobs/billing/streaky.jsonnet").write_text(STREAKY % {"policy": policy, "after": after})
    result = CliRunner().invoke(main, ["--root", str(root), "validate"])
    assert result.exit_code != 0
    line = next(line for line in result.output.splitlines() if "streaky" in line and "notify" in line)
    assert "streaky.jsonnet" in line and says in line, result.output
