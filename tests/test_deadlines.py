"""Deadlines (issue 53, platform/deadlines.py) on the local AWS: each job's scheduled fire run by
the compiled state machine with the real runner, its status recorded as on AWS, and the deadline
checker's passes taken by a clock the test sets (the platform's clock moved, as the fire ledger's
tests do; never by sleeping). Alerts go SNS -> the local notifier -> a real local Slack receiver.

A deadline met, breached by a slow step, breached by a failure with nothing retrying (alerted
early), breached for certain by the history's typical step durations (early), met after a
re-run: one DEADLINE alert each where due, one RECOVERED note when a breached fire lands, none
otherwise; no duplicate across passes or a checker started again.
"""

from __future__ import annotations

import json
import re
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from click.testing import CliRunner

from devkit import make_repo, signed_in
from slack_receiver import Receiver, serving

from jobplane.cli.app import main
from jobplane.compiler.model import Job
from jobplane.contract import datamodel as dm
from jobplane.contract import deadlines, execution_input
from jobplane.contract.attempts import Attempt
from jobplane.contract.clock import iso_millis, parse_iso
from jobplane.contract.config import load_config
from jobplane.contract.records import ExecutionRecord
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.control import ControlPlane
from jobplane.platform.deadlines import DeadlineWatch, deployed_since, fires

JOB = """\
    local jp = import 'jobplane.libsonnet';
    {
      name: '%(name)s',
      team: 'billing',
      schedule: ['%(schedule)s'],
      timezone: '%(zone)s',
      deadline: '%(deadline)s',
      policy: jp.policy.ALWAYS_RUN,
      params: { mode: 'ok', marker: null, seconds: 1, release: null },
      steps: [jp.python('work', 'sample_apps.functions:behave')],
      runbook: { impact: 'the %(name)s report is late', recovery: 'jobplane rerun the failed run' },
      notify: jp.slack('#billing-alerts'),
    }
"""


@pytest.fixture(scope="module")
def slack() -> Iterator[Receiver]:
    yield from serving()  # a real local HTTP server standing in for Slack


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, slack: Receiver) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("deadlines")
    repo = make_repo(tmp / "repo")
    # The platform's clock stands 10 minutes back, so the schedules are created then; each job
    # fires daily at a minute 5 minutes back: its fire is after its schedule was created (a fire
    # before the job was deployed is not its to answer for) and before its run starts, as on AWS.
    fire = datetime.now(timezone.utc) - timedelta(minutes=5)
    daily = f"cron({fire.minute} {fire.hour} * * ? *)"
    # the wall-time job: in the fixed-offset zone whose 09:xx that minute is, ready by 12:00
    offset = (9 - fire.hour) % 24
    offset = offset - 24 if offset > 14 else offset
    zone = "Etc/GMT" + (f"-{offset}" if offset > 0 else f"+{-offset}" if offset < 0 else "")
    jobs = {"met": (f"cron({fire.minute} 9 * * ? *)", zone, "12:00"),
            "slow": (daily, "UTC", "30m"), "failed": (daily, "UTC", "1h"), "rerun": (daily, "UTC", "1h"),
            "typical": (daily, "UTC", "3h"), "outbox": (daily, "UTC", "30m"), "eta": (daily, "UTC", "1h"),
            "backfilled": (daily, "UTC", "1h"), "comeback": (daily, "UTC", "1h")}
    later = fire + timedelta(hours=6)  # after the test pauses the job, however late it runs
    jobs["paused"] = (f"cron({later.minute} {later.hour} * * ? *)", "UTC", "30m")
    # two fires a minute apart, for the reports: one met, one breached
    second = fire + timedelta(minutes=1)
    jobs["report"] = (f"cron({fire.minute} {fire.hour} * * ? *)', 'cron({second.minute} {second.hour} * * ? *)",
                      "UTC", "30m")
    for name, (schedule, tz, deadline) in jobs.items():
        repo.write(f"jobs/billing/{name}.jsonnet", textwrap.dedent(JOB % {
            "name": name, "schedule": schedule, "zone": tz, "deadline": deadline}))
    # the platform's own periodic pass runs once, at start: each test takes the passes itself
    p = DevPlatform(load_config(repo.path), tmp / "data", 0, 0, run_scheduler=False, run_services=False,
                    snapshot_interval=3600, catch_up_interval=3600, webhook_url=slack.url,
                    clock=lambda: datetime.now(timezone.utc) - timedelta(minutes=10)).start()
    yield p
    p.stop()


#: Every AWS call the checkers of the running test made: (service, operation, params).
CALLS: list[tuple[str, str, dict]] = []  # type: ignore[type-arg]


@pytest.fixture(autouse=True)
def _calls() -> Iterator[None]:
    CALLS.clear()
    yield


def _record(client) -> None:  # type: ignore[no-untyped-def]
    """Keep every call ``client`` makes (botocore's provide-client-params event: the operation
    and its parameters as sent)."""
    service = client.meta.service_model.service_name

    def keep(params, model, **_):  # type: ignore[no-untyped-def]
        CALLS.append((service, model.name, dict(params)))

    client.meta.events.register("provide-client-params.*.*", keep)


def watch(platform: DevPlatform, at: datetime) -> DeadlineWatch:
    """A deadline checker whose clock stands at ``at``: a new one each time, on a control plane
    of its own (as a new Lambda invocation, or a restarted `jobplane dev`); its AWS calls are
    kept in CALLS."""
    control = ControlPlane(platform.deployment)
    sns = platform.deployment.client("sns")
    for client in {id(c): c for c in (sns, control.ddb, control.repo.ddb, control.sfn, control.scheduler)}.values():
        _record(client)
    return DeadlineWatch(control.reads, sns, platform.deployment.topic_arn, clock=lambda: at,
                         metrics=platform.aws.metric_sink())


def metric_lines(platform: DevPlatform, job: str) -> list[dict[str, Any]]:
    """The deadline check's metric lines of ``job`` so far (`jobplane dev`'s metrics file), each
    checked against AWS's EMF specification (tests/emf_spec.py)."""
    from emf_spec import check

    path = platform.aws.metrics_file
    assert path is not None
    return [check(line) for line in path.read_text().splitlines()
            if '"Deadline' in line and json.loads(line).get("job") == job] if path.exists() else []


def denied(platform: DevPlatform) -> list[str]:
    """The calls in CALLS the periodic Lambda's role (terraform/platform/slow.tf) would refuse,
    each as AWS would authorize it: its action on its resource's ARN (the base module's names,
    prefix 'jobplane', for the local prefix)."""
    import base_module as bm
    from iam_policy import Call, denied_calls

    local = platform.config.name_prefix
    table = bm.ARNS["aws_dynamodb_table"](bm.PREFIX)
    calls = []
    for service, operation, params in CALLS:
        if service == "dynamodb":
            resource = table + (f"/index/{params['IndexName']}" if params.get("IndexName") else "")
        elif service == "sns":
            resource = bm.ARNS["aws_sns_topic"](f"{bm.PREFIX}-events")
        elif service == "stepfunctions":
            arn = params["executionArn"].split(":")
            resource = ":".join(arn[:6] + [arn[6].replace(local, bm.PREFIX, 1)] + arn[7:])
        elif service == "scheduler" and operation == "ListSchedules":
            resource = "*"
        elif service == "scheduler":
            name = params["Name"].replace(local, bm.PREFIX, 1)
            resource = f"arn:aws:scheduler:{bm.REGION}:{bm.ACCOUNT}:schedule/{bm.PREFIX}/{name}"
        else:
            raise AssertionError(f"a call this test does not map: {service} {operation}")
        prefix = {"stepfunctions": "states"}.get(service, service)
        calls.append(Call(f"{prefix}:{operation}", resource, {}, f"{service} {operation}"))
    return denied_calls(bm.policy_statements("slow", {}), calls)


def first_fire(platform: DevPlatform, job: str) -> datetime:
    """The job's first fire after its schedule was created, by the checker's own computation."""
    created = deployed_since(platform.control.context, platform.control.entries[job])
    assert created is not None
    return fires(platform.control, platform.control.entries[job], created, created + timedelta(days=2))[0]


def run(platform: DevPlatform, job: str, given: execution_input.ExecutionInput, wait: bool = True) -> str:
    arn = platform.aws.start(job, given)
    if wait:
        platform.aws.wait(arn, timeout=300)
        platform.aws.wait_reconciled(arn, timeout=300)
    return arn.rsplit(":", 1)[1]


def posts(slack: Receiver, job: str, status: str) -> list[dict]:  # type: ignore[type-arg]
    """The Slack posts of ``job``'s DEADLINE event whose status field is ``status``."""
    return [p for p in list(slack.posts) if re.search(rf"(^|\s){re.escape(job)} DEADLINE\b", p.get("text", "")) and
            f"*Status*\\n{status}" in json.dumps(p.get("blocks", []))]


def settle(platform: DevPlatform) -> None:
    """Every alert published so far has been handled: the local notifier's queue is empty, none
    in flight (a message is deleted only once posted to Slack)."""
    alerts = platform.alerts
    assert alerts is not None
    sqs = platform.aws.client("sqs")

    def empty() -> bool:
        attrs = sqs.get_queue_attributes(QueueUrl=alerts.queue_url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        return attrs["ApproximateNumberOfMessages"] == "0" and attrs["ApproximateNumberOfMessagesNotVisible"] == "0"

    wait_for(empty)


def wait_for(condition, limit: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + limit  # a hang guard, not a time budget
    while not condition():
        assert time.monotonic() < end, "never happened"
        time.sleep(0.05)


def outcome(platform: DevPlatform, job: str, fire: datetime) -> dict:  # type: ignore[type-arg]
    found = [o for o in watch(platform, fire).outcomes(job, execution_input.iso(fire)) if
             o.fire == execution_input.iso(fire)]
    assert len(found) == 1
    return found[0].__dict__ | {"met": found[0].met}


def test_a_deadline_met_records_the_fire_and_alerts_nothing(platform: DevPlatform, slack: Receiver) -> None:
    fire = first_fire(platform, "met")
    zone = platform.control.entries["met"].timezone
    assert fire.astimezone(deadlines.ZoneInfo(zone)).strftime("%H") == "09"
    run(platform, "met", execution_input.scheduled(fire))
    assert watch(platform, fire + timedelta(minutes=5)).check({"met"}) == []
    assert watch(platform, fire + timedelta(hours=4)).check({"met"}) == []  # past noon: decided already
    settle(platform)
    assert posts(slack, "met", "DEADLINE") == []
    found = outcome(platform, "met", fire)
    assert (found["outcome"], found["met"]) == ("MET", True)
    assert found["due"] == iso_millis(fire + timedelta(hours=3, minutes=-fire.minute))  # 12:00 on the fire's day
    # one metric line: met, with the slack between the run's end and noon
    [line] = metric_lines(platform, "met")
    slack = (parse_iso(found["due"]) - parse_iso(found["succeeded_at"])).total_seconds()
    assert (line["team"], line["DeadlineMet"], line["DeadlineSlack"]) == ("billing", 1, round(slack, 3))


def test_a_slow_step_breaches_once_and_recovers_once(platform: DevPlatform, slack: Receiver, tmp_path: Path) -> None:
    fire = first_fire(platform, "slow")
    release, marker = tmp_path / "release", tmp_path / "marker"
    name = run(platform, "slow", execution_input.scheduled(fire, {
        "mode": "wait", "seconds": 300, "release": str(release), "marker": str(marker)}), wait=False)
    wait_for(marker.exists)
    assert watch(platform, fire + timedelta(minutes=1)).check({"slow"}) == []  # running, in time, no history
    late = fire + timedelta(minutes=31)
    assert watch(platform, late).check({"slow"}) == [f"slow {execution_input.iso(fire)} DEADLINE"]
    assert watch(platform, late + timedelta(minutes=5)).check({"slow"}) == []  # another pass, a restarted checker
    wait_for(lambda: len(posts(slack, "slow", "DEADLINE")) == 1)
    text = json.dumps(posts(slack, "slow", "DEADLINE")[0]["blocks"])
    assert f"still running: run {name}, at step work" in text
    assert "the slow report is late" in text and "jobplane rerun the failed run" in text  # the runbook
    assert f"/executions/{name}" in text  # the link
    release.write_text("go")
    platform.aws.wait_reconciled(platform.deployment.execution_arn("slow", name), timeout=300)
    assert watch(platform, late + timedelta(minutes=10)).check({"slow"}) == [f"slow {execution_input.iso(fire)} RECOVERED"]
    assert watch(platform, late + timedelta(minutes=15)).check({"slow"}) == []
    wait_for(lambda: len(posts(slack, "slow", "RECOVERED")) == 1)
    settle(platform)
    assert len(posts(slack, "slow", "DEADLINE")) == 1 and len(posts(slack, "slow", "RECOVERED")) == 1
    # the note's title says it recovered (not the breach's title again), its text is not an error
    # (issue 65 item 4); its link is the run that landed
    breach, note = posts(slack, "slow", "DEADLINE")[0]["blocks"], posts(slack, "slow", "RECOVERED")[0]["blocks"]
    assert breach[0]["text"]["text"] == ":alarm_clock: slow: deadline"
    assert note[0]["text"]["text"] == ":white_check_mark: slow: deadline recovered"
    assert "*Recovered*" in json.dumps(note) and "*Error*" not in json.dumps(note)
    assert f"/executions/{name}" in json.dumps(note)
    found = outcome(platform, "slow", fire)
    assert found["outcome"] == "BREACHED" and not found["early"]
    # the breach's line (met 0, no slack while it ran) and its recovery's (the run's slack)
    breach_line, recovery_line = metric_lines(platform, "slow")
    assert breach_line["DeadlineMet"] == 0 and "DeadlineSlack" not in breach_line
    slack = (parse_iso(found["due"]) - parse_iso(found["succeeded_at"])).total_seconds()
    assert recovery_line["DeadlineSlack"] == round(slack, 3) and "DeadlineMet" not in recovery_line
    # every call the checker made is one the periodic Lambda's role allows
    made = {(service, operation) for service, operation, _ in CALLS}
    assert {("dynamodb", "Query"), ("dynamodb", "PutItem"), ("dynamodb", "UpdateItem"), ("sns", "Publish"),
            ("scheduler", "GetSchedule"), ("stepfunctions", "GetExecutionHistory")} <= made, made
    assert denied(platform) == []


def test_a_failure_with_nothing_retrying_alerts_early_once(platform: DevPlatform, slack: Receiver) -> None:
    fire = first_fire(platform, "failed")
    name = run(platform, "failed", execution_input.scheduled(fire, {"mode": "fail"}))
    # the fire's deadline is an hour away, and nothing of it runs: the breach is certain now
    assert watch(platform, fire + timedelta(minutes=2)).check({"failed"}) == [f"failed {execution_input.iso(fire)} DEADLINE (early)"]
    assert watch(platform, fire + timedelta(minutes=3)).check({"failed"}) == []
    assert watch(platform, fire + timedelta(hours=2)).check({"failed"}) == []  # the due time passing adds nothing
    wait_for(lambda: len(posts(slack, "failed", "DEADLINE")) == 1)
    settle(platform)
    assert len(posts(slack, "failed", "DEADLINE")) == 1
    text = json.dumps(posts(slack, "failed", "DEADLINE")[0]["blocks"])
    assert "will miss its deadline 1h" in text and f"run {name} FAILED at step work" in text
    assert "nothing of this fire is running or retrying" in text
    found = outcome(platform, "failed", fire)
    assert (found["outcome"], found["early"], found["met"]) == ("BREACHED", True, False)
    # its DeadlineMet is written when the due time passed unmet (the early alert was not final), once
    [line] = metric_lines(platform, "failed")
    assert line["DeadlineMet"] == 0 and "DeadlineSlack" not in line


def test_an_early_alerts_fire_a_rerun_meets_in_time_counts_as_met_once(platform: DevPlatform,
                                                                      slack: Receiver) -> None:
    """The early alert is not the fire's outcome: a re-run that succeeds before the due time
    meets it, and its one DeadlineMet line says 1, as the records' on-time share does."""
    fire = first_fire(platform, "comeback")
    failed = run(platform, "comeback", execution_input.scheduled(fire, {"mode": "fail"}))
    assert watch(platform, fire + timedelta(minutes=2)).check({"comeback"}) == [
        f"comeback {execution_input.iso(fire)} DEADLINE (early)"]
    assert metric_lines(platform, "comeback") == []  # not final yet
    run(platform, "comeback", execution_input.rerun("aiko@example.com", failed, {"mode": "ok"}, None))
    assert watch(platform, fire + timedelta(minutes=3)).check({"comeback"}) == [
        f"comeback {execution_input.iso(fire)} RECOVERED"]
    assert watch(platform, fire + timedelta(hours=2)).check({"comeback"}) == []  # the due time passing adds nothing
    found = outcome(platform, "comeback", fire)
    assert found["met"] is True
    [line] = metric_lines(platform, "comeback")
    slack_seconds = (parse_iso(found["due"]) - parse_iso(found["succeeded_at"])).total_seconds()
    assert (line["DeadlineMet"], line["DeadlineSlack"]) == (1, round(slack_seconds, 3)) and slack_seconds > 0


def test_a_fire_met_after_a_rerun_alerts_nothing(platform: DevPlatform, slack: Receiver) -> None:
    fire = first_fire(platform, "rerun")
    failed = run(platform, "rerun", execution_input.scheduled(fire, {"mode": "fail"}))
    again = run(platform, "rerun", execution_input.rerun("aiko@example.com", failed, {"mode": "ok"}, None))
    assert watch(platform, fire + timedelta(minutes=5)).check({"rerun"}) == []
    assert watch(platform, fire + timedelta(hours=2)).check({"rerun"}) == []
    settle(platform)
    assert posts(slack, "rerun", "DEADLINE") == []
    found = outcome(platform, "rerun", fire)
    assert (found["outcome"], found["met"], found["execution"]) == ("MET", True, again)


def test_a_fire_run_by_a_backfill_meets_its_deadline(platform: DevPlatform, slack: Receiver) -> None:
    """The scheduled start never came; a backfill of that one fire ("Run it as that fire") ran it
    in time: the fire met its deadline."""
    fire = first_fire(platform, "backfilled")
    ran = run(platform, "backfilled", execution_input.backfill("aiko@example.com", fire, {"mode": "ok"}, "bf-test"))
    assert watch(platform, fire + timedelta(minutes=50)).check({"backfilled"}) == []
    assert watch(platform, fire + timedelta(hours=2)).check({"backfilled"}) == []
    found = outcome(platform, "backfilled", fire)
    assert (found["outcome"], found["met"], found["execution"]) == ("MET", True, ran)
    settle(platform)
    assert posts(slack, "backfilled", "DEADLINE") == []


def test_the_remaining_steps_typical_duration_alerts_early(platform: DevPlatform, slack: Receiver,
                                                           tmp_path: Path) -> None:
    """The job's history: its step took 4 hours in each of its last successful runs (records as
    the reconciler leaves them); a run of the fire at that step, 3 hours before its deadline,
    will not make it. (The checker's clock stands before the step began: it has run 0 s.)"""
    ddb = platform.aws.client("dynamodb")
    for i in range(3):
        start = datetime(2026, 1, 10 + i, 0, 0, tzinfo=timezone.utc)
        end = start + timedelta(hours=4)
        record = ExecutionRecord(
            execution=f"typical-history-{i}", job="typical", team="billing", status="SUCCEEDED", trigger="schedule",
            scheduled_time=execution_input.iso(start), started_at=iso_millis(start), finished_at=iso_millis(end),
            given=execution_input.scheduled(start).to_json(), transitions=5,
            timeline=(Attempt("work", 1, iso_millis(start), iso_millis(end), "succeeded"),))
        ddb.put_item(TableName=platform.deployment.table, Item=record.to_item())
    fire = first_fire(platform, "typical")
    release, marker = tmp_path / "release", tmp_path / "marker"
    name = run(platform, "typical", execution_input.scheduled(fire, {
        "mode": "wait", "seconds": 300, "release": str(release), "marker": str(marker)}), wait=False)
    wait_for(marker.exists)
    said = watch(platform, fire + timedelta(minutes=1)).check({"typical"})
    release.write_text("go")
    assert said == [f"typical {execution_input.iso(fire)} DEADLINE (early)"]
    wait_for(lambda: len(posts(slack, "typical", "DEADLINE")) == 1)
    text = json.dumps(posts(slack, "typical", "DEADLINE")[0]["blocks"])
    assert f"run {name} is at step work; the steps left typically take 4 h 0 min" in text
    assert "median of the job's last 3 successful runs" in text
    platform.aws.wait_reconciled(platform.deployment.execution_arn("typical", name), timeout=300)
    # it succeeded in time after all: the note says so, and the fire counts as met
    assert watch(platform, fire + timedelta(minutes=2)).check({"typical"}) == [f"typical {execution_input.iso(fire)} RECOVERED"]
    wait_for(lambda: len(posts(slack, "typical", "RECOVERED")) == 1)
    assert outcome(platform, "typical", fire)["met"] is True
    assert denied(platform) == []


def test_a_running_steps_progress_eta_past_the_deadline_alerts_early(platform: DevPlatform, slack: Receiver,
                                                                      tmp_path: Path) -> None:
    """The predictive deadline (issue 67): no history, but the running step reports its progress
    (written as the runner writes it): 10 of 1,000 tenants 10 minutes into its attempt is 1 a
    minute, ending some 16 hours later, long after the 1h deadline. One early alert says when it
    would end, while there is still time to act; the periodic role may make the read."""
    from jobplane.contract import progress

    fire = first_fire(platform, "eta")
    release, marker = tmp_path / "release", tmp_path / "marker"
    name = run(platform, "eta", execution_input.scheduled(fire, {
        "mode": "wait", "seconds": 300, "release": str(release), "marker": str(marker)}), wait=False)
    try:
        wait_for(marker.exists)
        began = fire + timedelta(minutes=1)

        def reported(done: int, total: int) -> None:
            platform.aws.client("dynamodb").put_item(TableName=platform.deployment.table, Item={
                "pk": {"S": progress.pk("eta", name)}, "sk": {"S": "work"}, "attempt": {"N": "1"},
                "started_at": {"N": str(began.timestamp())},
                "updated_at": {"N": str((began + timedelta(minutes=10)).timestamp())},
                "done": {"N": str(done)}, "total": {"N": str(total)}, "unit": {"S": "tenants"}})

        reported(10, 12)  # at 1 a minute, 2 left: it makes it
        assert watch(platform, began + timedelta(minutes=11)).check({"eta"}) == []
        reported(10, 1000)  # the list grew: 990 left at 1 a minute, early, once
        assert watch(platform, began + timedelta(minutes=11)).check({"eta"}) == [f"eta {execution_input.iso(fire)} DEADLINE (early)"]
        assert watch(platform, began + timedelta(minutes=12)).check({"eta"}) == []
    finally:
        release.write_text("go")
    wait_for(lambda: len(posts(slack, "eta", "DEADLINE")) == 1)
    text = json.dumps(posts(slack, "eta", "DEADLINE")[0]["blocks"])
    ends = began + timedelta(minutes=10) + timedelta(minutes=990)
    due = fire + timedelta(hours=1)  # the job's zone is UTC: its wall time, with the day
    assert f"at this rate it ends {ends:%Y-%m-%d %H:%M} UTC, after the deadline (due {due:%Y-%m-%d %H:%M} UTC)" in text
    assert "10 of 1,000 tenants (1%)" in text
    assert outcome(platform, "eta", fire)["early"] is True
    assert denied(platform) == []


def test_the_deadline_is_validated_naming_the_field() -> None:
    from jobplane.compiler.fields import Invalid

    base = {"name": "nightly", "team": "billing", "timezone": "UTC", "schedule": "cron(0 9 * * ? *)",
            "steps": [{"name": "s", "python": "a.b:c"}]}
    assert Job.from_definition(base | {"deadline": "12:00"}).deadline == "12:00"
    assert Job.from_definition(base | {"deadline": "3h"}).deadline == "3h"
    cases = {"08:30": "is not after the fire at 09:00 of cron(0 9 * * ? *)",
             "09:00": "is not after the fire at 09:00",
             "noon": "is neither a wall time 'HH:MM'", "25h": "must be 1m to 24h", "24:00": "is neither a wall time"}
    for text, said in cases.items():
        with pytest.raises(Invalid) as e:
            Job.from_definition(base | {"deadline": text})
        assert said in str(e.value.problems), text
    with pytest.raises(Invalid) as e:
        Job.from_definition(base | {"schedule": "rate(1 hour)", "deadline": "12:00"})
    assert "fires at every time of day" in str(e.value.problems)
    with pytest.raises(Invalid) as e:
        Job.from_definition(base | {"schedule": [], "deadline": "1h"})
    assert "this job has no schedule" in str(e.value.problems)


def test_a_wall_time_deadline_is_on_the_fire_s_local_day() -> None:
    noon = deadlines.parse("12:00")
    tokyo = datetime(2026, 3, 2, 0, 0, tzinfo=timezone.utc)  # 09:00 Tokyo
    assert noon.due(tokyo, "Asia/Tokyo") == datetime(2026, 3, 2, 3, 0, tzinfo=timezone.utc)
    # New York across spring forward: 12:00 EDT on 2026-03-08 is 16:00 UTC (17:00 UTC the day before)
    assert noon.due(datetime(2026, 3, 8, 13, 0, tzinfo=timezone.utc), "America/New_York") == \
        datetime(2026, 3, 8, 16, 0, tzinfo=timezone.utc)
    assert noon.due(datetime(2026, 3, 7, 14, 0, tzinfo=timezone.utc), "America/New_York") == \
        datetime(2026, 3, 7, 17, 0, tzinfo=timezone.utc)
    # 02:30 does not exist in New York on 2026-03-08: read with the offset before the gap (03:30 EDT)
    assert deadlines.parse("02:30").due(datetime(2026, 3, 8, 6, 0, tzinfo=timezone.utc), "America/New_York") == \
        datetime(2026, 3, 8, 7, 30, tzinfo=timezone.utc)
    assert deadlines.parse("90m").due(tokyo, "Asia/Tokyo") == tokyo + timedelta(minutes=90)


def test_the_share_of_fires_that_met_the_deadline_is_reported(platform: DevPlatform, slack: Receiver) -> None:
    created = deployed_since(platform.control.context, platform.control.entries["report"])
    assert created is not None
    first, second = fires(platform.control.context, platform.control.entries["report"], created, created + timedelta(days=1))[:2]
    assert second - first == timedelta(minutes=1)
    run(platform, "report", execution_input.scheduled(first))  # met; the second fire never runs
    assert watch(platform, second + timedelta(minutes=31)).check({"report"}) == [
        f"report {execution_input.iso(second)} DEADLINE"]
    wait_for(lambda: len(posts(slack, "report", "DEADLINE")) == 1)
    assert "no run of this fire started" in json.dumps(posts(slack, "report", "DEADLINE")[0]["blocks"])
    # the API
    with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/api/jobs/report/deadlines", timeout=60) as r:
        api = json.loads(r.read())
    assert api["deadline"] == "30m"
    assert [(s["days"], s["fires"], s["met"], s["share"]) for s in api["shares"]] == [(30, 2, 1, 0.5), (90, 2, 1, 0.5)]
    assert [(b["fire"], b["early"], b["succeeded_at"]) for b in api["breaches"]] == [
        (execution_input.iso(second), False, None)]
    with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/api/teams/billing/deadlines", timeout=60) as r:
        team = json.loads(r.read())
    assert team["team"] == "billing" and "report" in [j["job"] for j in team["jobs"]]
    assert team["shares"][0]["fires"] == sum(j["shares"][0]["fires"] for j in team["jobs"]) >= 2
    # `jobplane status`
    status = CliRunner().invoke(main, ["--root", str(platform.config.root), "status", "--data-dir",
                                       str(platform.data_dir)])
    assert status.exit_code == 0, status.output
    assert "    report (30m): 1/2 met (50%) over 30 days; 1/2 met (50%) over 90 days" in status.output
    assert f"      breached {execution_input.iso(second)} (due " in status.output
    assert re.search(r"^  team billing: \d+/\d+ met", status.output, re.M)
    as_json = CliRunner().invoke(main, ["--root", str(platform.config.root), "status", "--json", "--data-dir",
                                        str(platform.data_dir)])
    rows = {row["job"]: row for row in json.loads(as_json.output)}
    assert rows["report"]["deadline"]["shares"][0] == {"days": 30, "fires": 2, "met": 1, "share": 0.5}
    assert rows["flaky-load"]["deadline"] is None  # a job without one
    # the job's page
    with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/jobs/report", timeout=60) as r:
        page = r.read().decode()
    assert "1/2 met (50%) over 30 days" in page and page.count('class="deadline-breach"') == 1
    # the team's, on the deadlines page
    with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/deadlines?team=billing", timeout=60) as r:
        page = r.read().decode()
    assert 'data-team="billing"' in page and 'data-job="report"' in page and 'data-team="growth"' not in page
    with signed_in(platform.portal_login_url).open(f"{platform.portal_url}/deadlines?team=growth", timeout=60) as r:
        assert "No job has a deadline in team growth." in r.read().decode()


def test_a_bad_deadline_is_named_with_its_file_job_and_field(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    repo.write("jobs/billing/close.jsonnet", textwrap.dedent(JOB % {
        "name": "close", "schedule": "cron(0 9 * * ? *)", "zone": "Asia/Tokyo", "deadline": "08:00"}))
    repo.write("jobs/billing/hourly.jsonnet", textwrap.dedent(JOB % {
        "name": "hourly", "schedule": "rate(1 hour)", "zone": "UTC", "deadline": "12:00"}))
    result = CliRunner().invoke(main, ["--root", str(repo.path), "validate"])
    assert result.exit_code == 2
    out = result.output
    assert ("jobs/billing/close.jsonnet: job 'close': deadline: '08:00' is not after the fire at 09:00 of "
            "cron(0 9 * * ? *)") in out
    assert "jobs/billing/hourly.jsonnet: job 'hourly': deadline: '12:00': rate(1 hour) fires at every time of day" in out
    assert "2 problems found; nothing was written." in out  # all of them at once


def test_a_paused_job_s_fires_are_not_held_to_the_deadline(platform: DevPlatform, slack: Receiver) -> None:
    """Its fire comes after it was paused: nothing runs, and nothing is expected to."""
    fire = first_fire(platform, "paused")
    platform.control.pause("paused", "aiko@example.com", "quarter-end freeze")
    state = platform.control.repo.job_state("paused")
    assert state is not None and state.paused_at is not None and parse_iso(state.paused_at) < fire
    try:
        assert watch(platform, fire + timedelta(hours=1)).check({"paused"}) == []
        assert watch(platform, fire + timedelta(hours=1)).outcomes("paused", execution_input.iso(fire)) == []
    finally:
        platform.control.resume("paused", "aiko@example.com", "freeze over")
    settle(platform)
    assert posts(slack, "paused", "DEADLINE") == []


def test_the_plan_says_when_a_deadline_changes() -> None:
    from jobplane.compiler.plan import describe_job_change
    from jobplane.contract.catalog import CatalogJob

    old = CatalogJob(name="close", team="billing", policy="SKIP_IF_RUNNING", timeout=3600, steps=[],
                     state_machine="jp-close", asl="", states=0, schedule=["cron(0 9 * * ? *)"])
    new = old.model_copy(update={"deadline": "12:00"})
    now = datetime(2026, 12, 3, tzinfo=timezone.utc)
    assert "deadline: None -> 12:00" in describe_job_change(old, new, {}, {}, now)
    assert not any(line.startswith("deadline") for line in describe_job_change(new, new, {}, {}, now))


def test_an_alert_not_published_by_a_pass_that_stopped_is_published_by_the_next_once(
        platform: DevPlatform, slack: Receiver) -> None:
    fire = first_fire(platform, "outbox")
    late = fire + timedelta(minutes=31)  # nothing ran for it
    broken = watch(platform, late)
    broken.topic_arn = platform.deployment.topic_arn + "-gone"  # SNS refuses the publish
    assert broken.check({"outbox"}) == []  # recorded, then the publish failed
    found = outcome(platform, "outbox", fire)
    assert found["outcome"] == "BREACHED" and found["alert_pending"]
    assert watch(platform, late + timedelta(minutes=1)).check({"outbox"}) == []  # the stopped pass may still publish
    assert watch(platform, late + timedelta(minutes=3)).check({"outbox"}) == [
        f"outbox {execution_input.iso(fire)} DEADLINE"]
    assert watch(platform, late + timedelta(minutes=4)).check({"outbox"}) == []
    wait_for(lambda: len(posts(slack, "outbox", "DEADLINE")) == 1)
    settle(platform)
    assert len(posts(slack, "outbox", "DEADLINE")) == 1 and not outcome(platform, "outbox", fire)["alert_pending"]
