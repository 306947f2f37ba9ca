"""Run after another job (issue 15, `after:`), on the local engine: the compiled state machines
on moto, the runner as real subprocesses, and the status events delivered by the engine as the
compiled EventBridge rules deliver them on AWS (contract/upstream.py).
"""

from __future__ import annotations

import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest

from devkit import make_repo
from jobplane.compiler.problems import DefinitionError
from jobplane.compiler.validate import load_jobs
from jobplane.contract import execution_input
from jobplane.contract.config import load_config
from jobplane.devserver.dev_platform import DevPlatform

JOB = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: '%(name)s',
      team: 'billing',
      description: '%(name)s',
      schedule: %(schedule)s,
      policy: jp.policy.%(policy)s,
      params: { mode: 'ok', marker: null, seconds: 30, release: null },
      steps: [jp.python('work', 'sample_apps.functions:behave')],
      after: %(after)s,
    }
"""


def write_job(repo, name: str, after: str = "[]", schedule: str = "jp.daily('02:00')",  # type: ignore[no-untyped-def]
              policy: str = "SKIP_IF_RUNNING") -> None:
    repo.write(f"jobs/billing/{name}.jsonnet", textwrap.dedent(JOB % {"name": name, "after": after,
                                                                      "schedule": schedule, "policy": policy}))


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("after")
    repo = make_repo(tmp / "repo")
    write_job(repo, "extract")
    write_job(repo, "load", "[jp.after('extract')]", "jp.manual")
    write_job(repo, "cleanup", "[jp.after('extract', on='FAILED')]", "jp.manual")
    write_job(repo, "guarded", "[jp.after('extract')]", policy="SKIP_IF_FAILED")  # a schedule too
    write_job(repo, "report", schedule="jp.manual")  # these two: the catch-up's anchor test only
    write_job(repo, "publish", "[jp.after('report')]", "jp.manual")
    # these two: the catch-up tells a step's timeout from the whole job's
    repo.write("jobs/billing/slowpoke.jsonnet", textwrap.dedent(JOB % {
        "name": "slowpoke", "after": "[]", "schedule": "jp.manual", "policy": "ALWAYS_RUN"}).replace(
        "after: [],", "after: [], timeout: '5s',"))
    write_job(repo, "mop", "[jp.after('slowpoke', on='FAILED')]", "jp.manual")
    p = DevPlatform(load_config(tmp / "repo"), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600).start()
    yield p
    p.stop()


def fire(platform: DevPlatform, when: str, mode: str = "ok") -> str:
    """A scheduled fire of the upstream job, run to its end and its status event handled."""
    arn = platform.aws.start("extract", execution_input.scheduled(when, {"mode": mode}))
    platform.aws.wait(arn, timeout=300)
    platform.aws.wait_reconciled(arn, timeout=300)
    return arn


def runs_after(platform: DevPlatform, job: str, upstream_arn: str) -> list:  # type: ignore[type-arg]
    """The records of ``job``'s runs started by the upstream execution, once they have ended."""
    name = upstream_arn.rsplit(":", 1)[1]
    deadline = time.monotonic() + 300  # hang guard
    while True:
        sfn = platform.aws.client("stepfunctions")
        running = sfn.list_executions(stateMachineArn=platform.aws.state_machines[job], statusFilter="RUNNING")
        if not running["executions"]:
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    page = platform.control.repo.executions(job, limit=200)
    return [r for r in page.items if r.input.upstream == name]


def test_an_upstream_success_starts_the_downstream_once_even_when_the_event_comes_twice(platform: DevPlatform) -> None:
    upstream = fire(platform, "2026-03-01T02:00:00Z")
    runs = runs_after(platform, "load", upstream)
    assert [(r.status, r.trigger) for r in runs] == [("SUCCEEDED", "upstream")]
    run = runs[0]
    assert run.scheduled_time == "2026-03-01T02:00:00Z"  # the upstream run's, carried over
    assert run.requested_by == f"after {upstream.rsplit(':', 1)[1]}"
    assert not runs_after(platform, "cleanup", upstream)  # waits for a failure only
    record = platform.control.repo.execution(upstream.rsplit(":", 1)[1])
    assert record is not None and record.status == "SUCCEEDED"
    # EventBridge delivers at least once: the same event again starts nothing new
    again = platform.aws.deliver_status_event(upstream, "SUCCEEDED")
    assert sorted(a.split(":")[6] for a in again) == ["jp-guarded", "jp-load"]  # each job waiting for it
    for arn in again:
        platform.aws.wait(arn, timeout=300)
    runs = runs_after(platform, "load", upstream)
    assert sorted((r.status, r.skip_reason) for r in runs) == [("SKIPPED", "DUPLICATE"), ("SUCCEEDED", None)]
    # lineage both ways: the upstream record names the run it started
    item = platform.aws.client("dynamodb").get_item(TableName=platform.deployment.table,
                                                    Key={"pk": {"S": f"EXEC#{upstream.rsplit(':', 1)[1]}"},
                                                         "sk": {"S": "EXEC"}})["Item"]
    guarded = runs_after(platform, "guarded", upstream)  # the other job waiting for it: the same
    assert sorted((r.status, r.skip_reason) for r in guarded) == [("SKIPPED", "DUPLICATE"), ("SUCCEEDED", None)]
    guarded = [r for r in guarded if r.status == "SUCCEEDED"]
    assert sorted(item["after_jobs"]["SS"]) == ["guarded", "load"]
    assert sorted(item["after_runs"]["SS"]) == sorted([run.execution, guarded[0].execution])
    from fastapi.testclient import TestClient

    from portal_kit import READER, as_user, header_app

    client = TestClient(header_app(platform))
    up = client.get(f"/api/executions/{upstream.rsplit(':', 1)[1]}", headers=as_user(READER)).json()
    down = client.get(f"/api/executions/{run.execution}", headers=as_user(READER)).json()
    assert run.execution in up["after_runs"] and (down["upstream"], down["trigger"]) == (up["execution"], "upstream")
    page = client.get(f"/executions/{run.execution}", headers=as_user(READER)).text
    assert f'<a href="/executions/{up["execution"]}" data-upstream>' in page
    page = client.get(f"/executions/{up['execution']}", headers=as_user(READER)).text
    assert f'<a href="/executions/{run.execution}" data-after-run>' in page


def test_an_upstream_failure_starts_the_clean_up_job_and_not_the_downstream(platform: DevPlatform) -> None:
    upstream = fire(platform, "2026-03-02T02:00:00Z", mode="fail")
    assert [(r.status, r.trigger) for r in runs_after(platform, "cleanup", upstream)] == [("SUCCEEDED", "upstream")]
    assert runs_after(platform, "load", upstream) == []


def test_a_skipped_upstream_run_starts_nothing(platform: DevPlatform) -> None:
    fire(platform, "2026-03-04T02:00:00Z")
    skipped = fire(platform, "2026-03-03T02:00:00Z")  # older than a claimed fire: a duplicate skip
    name = skipped.rsplit(":", 1)[1]
    assert platform.control.repo.execution(name).status == "SKIPPED"
    assert runs_after(platform, "load", skipped) == []
    sfn = platform.aws.client("stepfunctions")
    started = [e for e in sfn.list_executions(stateMachineArn=platform.aws.state_machines["load"])["executions"]
               if name in (sfn.describe_execution(executionArn=e["executionArn"]).get("input") or "")]
    assert len(started) == 1  # the rule fired (the event cannot tell a skip) and the run did nothing
    history = sfn.get_execution_history(executionArn=started[0]["executionArn"])["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
    assert entered == ["Claim (first)", "Start", "Upstream: load", "Upstream: check", "Upstream: nothing to do"]


def test_the_downstream_policy_holds_a_failure_blocks_upstream_started_runs_until_acknowledged(
        platform: DevPlatform) -> None:
    control = platform.control
    failed = control.run_now("guarded", "aiko@example.com", {"mode": "fail"})
    deadline = time.monotonic() + 300  # hang guard
    while control.repo.execution(failed) is None:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert control.repo.execution(failed).status == "FAILED"
    upstream = fire(platform, "2026-03-05T02:00:00Z")
    assert [(r.status, r.skip_reason) for r in runs_after(platform, "guarded", upstream)] == [("SKIPPED", "LAST_FAILED")]
    control.acknowledge("guarded", "aiko@example.com", "known partner outage")
    upstream = fire(platform, "2026-03-06T02:00:00Z")
    assert [(r.status, r.trigger) for r in runs_after(platform, "guarded", upstream)] == [("SUCCEEDED", "upstream")]
    assert not control.repo.job_state("guarded").blocked  # a success ends the block


def run_upstream(platform: DevPlatform, job: str, delivered: bool = True, **overrides: object) -> str:
    """A manual run of ``job`` to its end; ``delivered=False``: EventBridge never sees its status
    event (Step Functions sends them best effort), so no job waiting for it starts."""
    aws = platform.aws
    machine = aws.state_machines[job].split(":")[-1]
    rules = aws.after_rules.pop(machine) if not delivered else None
    try:
        arn = aws.start(job, execution_input.manual("t", overrides=overrides or None))
        aws.wait(arn, timeout=300)
        aws.wait_reconciled(arn, timeout=300)
    finally:
        if rules is not None:
            aws.after_rules[machine] = rules
    return arn


def past_grace() -> datetime:
    """A clock for the catch-up at which a run that ended just now is past its grace period."""
    from jobplane.platform.catchup import GRACE

    return datetime.now(timezone.utc) + GRACE + timedelta(minutes=1)


def settled(platform: DevPlatform) -> None:
    """Every run an upstream event started has ended (and so marked the upstream record)."""
    sfn = platform.aws.client("stepfunctions")
    deadline = time.monotonic() + 300  # hang guard
    for job in ("load", "cleanup", "guarded"):
        machine = platform.aws.state_machines[job]
        while sfn.list_executions(stateMachineArn=machine, statusFilter="RUNNING")["executions"]:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_a_lost_upstream_event_is_caught_up_once_and_a_late_one_is_a_duplicate(platform: DevPlatform) -> None:
    from jobplane.platform.catchup import UpstreamCatchUp, catch_up_name

    first = fire(platform, "2026-04-01T02:00:00Z")  # delivered: the rule is known to exist
    assert [r.status for r in runs_after(platform, "load", first)] == ["SUCCEEDED"]
    settled(platform)
    # Step Functions sends status events best effort: EventBridge never sees the next one
    machine = platform.aws.state_machines["extract"].split(":")[-1]
    rules = platform.aws.after_rules.pop(machine)
    try:
        lost = fire(platform, "2026-04-02T02:00:00Z")
    finally:
        platform.aws.after_rules[machine] = rules
    lost_name = lost.rsplit(":", 1)[1]
    assert runs_after(platform, "load", lost) == []
    assert UpstreamCatchUp(platform.control.runs).check() == []  # just ended: its event may still come
    started = UpstreamCatchUp(platform.control.runs, clock=past_grace).check()
    # each job waiting for its success, once
    assert sorted(started) == sorted(catch_up_name(job, lost_name) for job in ("load", "guarded"))
    runs = runs_after(platform, "load", lost)
    assert [(r.status, r.trigger, r.requested_by, r.execution) for r in runs] == [
        ("SUCCEEDED", "upstream", f"catch-up after {lost_name}", catch_up_name("load", lost_name))]
    assert runs[0].scheduled_time == "2026-04-02T02:00:00Z"  # the upstream run's, as the rule's run
    assert [r.execution for r in runs_after(platform, "guarded", lost)] == [catch_up_name("guarded", lost_name)]
    settled(platform)
    audit = [a for a in platform.control.audit() if a.action == "catch-up" and a.execution in started]
    assert sorted(a.job for a in audit) == ["guarded", "load"] and {a.actor for a in audit} == {"jobplane"}
    assert all(lost_name in a.reason for a in audit)
    assert UpstreamCatchUp(platform.control.runs, clock=past_grace).check() == []  # once: its runs marked the record
    # the event arrives after all: recorded as a duplicate, nothing runs twice
    for arn in platform.aws.deliver_status_event(lost, "SUCCEEDED"):
        platform.aws.wait(arn, timeout=300)
    assert sorted((r.status, r.skip_reason) for r in runs_after(platform, "load", lost)) == [
        ("SKIPPED", "DUPLICATE"), ("SUCCEEDED", None)]


def test_only_runs_newer_than_one_that_started_the_downstream_are_caught_up(platform: DevPlatform) -> None:
    """A run of the upstream job that ended before any of its runs started the downstream may
    predate the rule (``after`` just added): it is never caught up. One after such a start is."""
    from jobplane.platform.catchup import UpstreamCatchUp, catch_up_name

    before_rule = run_upstream(platform, "report", delivered=False)
    assert UpstreamCatchUp(platform.control.runs, clock=past_grace).check() == []  # no run ever started publish
    delivered = run_upstream(platform, "report")
    assert [r.status for r in runs_after(platform, "publish", delivered)] == ["SUCCEEDED"]
    lost = run_upstream(platform, "report", delivered=False)
    started = UpstreamCatchUp(platform.control.runs, clock=past_grace).check()
    assert started == [catch_up_name("publish", lost.rsplit(":", 1)[1])]  # not the run before the first start
    assert [r.execution for r in runs_after(platform, "publish", lost)] == started
    assert runs_after(platform, "publish", before_rule) == []


def test_a_run_the_rule_would_not_have_started_is_not_caught_up(platform: DevPlatform) -> None:
    """`on: 'FAILED'` starts after a failed or a step's timed-out run (the execution FAILED), not
    after the whole job ran out of time (the execution TIMED_OUT): both are recorded TIMED_OUT,
    so the catch-up asks Step Functions how the execution ended, as the event would have said."""
    from jobplane.platform.catchup import UpstreamCatchUp

    failed = run_upstream(platform, "slowpoke", mode="fail")  # mop runs after it: the rule is known to exist
    assert [r.status for r in runs_after(platform, "mop", failed)] == ["SUCCEEDED"]
    timed_out = run_upstream(platform, "slowpoke", delivered=False, mode="sleep", seconds=60)  # past the job's 5 s
    assert platform.aws.client("stepfunctions").describe_execution(executionArn=timed_out)["status"] == "TIMED_OUT"
    assert platform.control.repo.execution(timed_out.rsplit(":", 1)[1]).status == "TIMED_OUT"
    catch_up = UpstreamCatchUp(platform.control.runs, clock=past_grace)
    assert catch_up.missed("mop", "slowpoke", "FAILED", past_grace()) == []
    assert runs_after(platform, "mop", timed_out) == []


def test_unknown_upstream_jobs_and_cycles_are_refused_naming_them(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    write_job(repo, "a", "[jp.after('b')]")
    write_job(repo, "b", "[jp.after('c')]")
    write_job(repo, "c", "[jp.after('a')]")
    write_job(repo, "d", "[jp.after('d')]")
    write_job(repo, "e", "[jp.after('flaky-lod')]")
    with pytest.raises(DefinitionError) as e:
        load_jobs(load_config(tmp_path / "repo"))
    text = str(e.value)
    assert "jobs/billing/a.jsonnet: job 'a': after[0].job: a cycle: a -> b -> c -> a (a job cannot wait for itself)" in text
    assert "jobs/billing/d.jsonnet: job 'd': after[0].job: a cycle: d -> d" in text
    assert "jobs/billing/e.jsonnet: job 'e': after[0].job: no job named 'flaky-lod' (did you mean 'flaky-load'?)" in text
    assert text.count("a cycle") == 2  # each cycle once, not once per member
