"""The operator CLI against a deployment on AWS: `--deployment` names the platform by the compiled
root's `jobplane` output (as `terraform output -json` writes it), boto3 finds the endpoint and
credentials the standard way (here AWS_ENDPOINT_URL and the keys of the embedded AWS, which is an
ordinary AWS endpoint to the CLI), the catalog is read from S3 as on AWS. Same commands, same
output and exit codes as against `jobplane dev`."""

from __future__ import annotations

import contextlib
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jobplane.cli import main
from jobplane.contract import execution_input
from jobplane.contract.layout import catalog_parts
from jobplane.devserver.dev_platform import DevPlatform
from iam_calls import (APPROVAL_STATEMENTS, CALENDAR_STATEMENTS, DEFINITION_STATEMENTS, MAP_STATEMENTS, calls_into,
                       iam_calls)


@pytest.fixture(scope="module")
def deployment(platform: DevPlatform, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `terraform output -json` prints for the compiled base root, and the catalog parts the
    team roots upload to the base module's bucket."""
    aws = platform.aws
    s3 = aws.client("s3")
    import base_module as bm

    bucket = bm.resolve("${aws_s3_bucket.catalog.id}", {"name_prefix": platform.config.name_prefix})
    s3.create_bucket(Bucket=bucket)
    for part in catalog_parts(platform.output_dir):  # what each team root's aws_s3_object uploads
        s3.put_object(Bucket=bucket, Key=f"catalog/{part.parent.name}.json", Body=part.read_bytes())
    out = tmp_path_factory.mktemp("outputs") / "deployment.json"
    out.write_text(json.dumps({"jobplane": {"sensitive": False, "type": ["object", {}], "value": {
        "table": aws.resources["table_name"], "topic_arn": aws.resources["topic_arn"], "region": aws.region,
        "account_id": platform.deployment.account_id, "name_prefix": platform.config.name_prefix,
        "catalog_uri": f"s3://{bucket}/catalog/", "log_group": aws.log_group,
        "portal_url": "https://jobs.example.com"}}}))
    return out


#: Every AWS call the operator commands made (in this thread; the platform's own threads make
#: theirs): the portal's role must allow each, since the portal makes them through the same
#: control plane (test_the_portal_role_allows_every_call_the_control_plane_made).
CALLS: list[dict[str, Any]] = []


def cli(platform: DevPlatform, deployment: Path, *args: str) -> Any:
    """`jobplane ARGS` with only what an operator's shell on AWS would have: the deployment file
    and boto3's standard environment (no dev.json: the data directory is elsewhere)."""
    aws = platform.aws
    env = {"JOBPLANE_DEPLOYMENT": str(deployment), "AWS_ENDPOINT_URL": aws.endpoint_url,
           "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id, "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key,
           "AWS_DEFAULT_REGION": aws.region, "JOBPLANE_DATA_DIR": str(deployment.parent / "no-dev-here")}
    with recording():
        return CliRunner().invoke(main, ["--root", str(platform.config.root), *args], env=env, catch_exceptions=False)


def recording() -> contextlib.AbstractContextManager[None]:
    """Every AWS call this thread makes meanwhile goes into CALLS."""
    return calls_into(CALLS)


def job_page_diagram(platform: DevPlatform) -> None:
    """The job page draws the deployed definition (DescribeStateMachine, issue 41 item 7: the
    portal role lacked it, and the error was swallowed, so the diagram never showed on AWS)."""
    from types import SimpleNamespace

    from jobplane.portal.pages import _diagram

    with recording():
        drawn = _diagram(SimpleNamespace(control=platform.control), "long-wait")
    assert drawn and drawn.startswith("<svg")


def jobs_page_window(platform: DevPlatform, deployment: Path) -> None:
    """A page of the jobs list reads only its own jobs' states (BatchGetItem, issue 54 item 6),
    filtered by a status from the status index (gsi3, issue 66 item 3), and `jobplane
    index-statuses` files the states written before the index: the portal's role (and the
    operator's) must allow those calls too."""
    with recording():
        window = platform.control.job_window(limit=2)
        platform.control.job_window(status="FAILED", limit=2)
    r = cli(platform, deployment, "index-statuses")  # records its own calls
    assert r.exit_code == 0 and "filed in the status index" in r.output, r.output
    assert len(window.jobs) == 2 and window.total >= 2
    assert any(c["operation"] == "BatchGetItem" for c in CALLS)
    assert any(c["operation"] == "Query" and c["params"].get("IndexName") == "gsi3" for c in CALLS)


def test_operator_commands_on_aws_as_locally_within_the_portal_role(platform: DevPlatform, deployment: Path,
                                                                     tmp_path: Path) -> None:
    CALLS.clear()
    run_status_and_logs(platform, deployment)
    stop_pause_resume_and_ack(platform, deployment, tmp_path)
    backfill_a_window(platform, deployment)
    a_pause_survives_an_apply(platform, deployment)
    undelivered_alerts(platform, deployment)
    job_page_diagram(platform)
    jobs_page_window(platform, deployment)
    portal_role_allows_every_call(platform)


def a_pause_survives_an_apply(platform: DevPlatform, deployment: Path) -> None:
    """Issue 49, item 3: `terraform apply` of the team root writes each schedule as compiled
    (ENABLED), which undid a pause on AWS: every fire then started an execution. After the apply
    the pipeline runs `jobplane repair-pauses` (and the periodic Lambda repairs what it finds, as
    drift): the paused job's next fire starts no execution at all. Fired by the local scheduler
    as EventBridge Scheduler would (an ENABLED schedule's due fire starts its state machine)."""
    from datetime import datetime, timedelta, timezone

    from jobplane.contract.schedule import iter_fire_times, parse, validate_timezone
    from jobplane.platform.local.scheduler import LocalScheduler

    aws, job, prefix = platform.aws, "long-wait", platform.config.name_prefix
    scheduler, name = aws.client("scheduler"), f"{prefix}-{job}"
    assert cli(platform, deployment, "pause", job, "--reason", "vendor outage").exit_code == 0
    assert scheduler.get_schedule(Name=name, GroupName=prefix)["State"] == "DISABLED"

    def apply_team_root() -> None:
        """What `terraform apply` of the team root does to the schedule: its compiled arguments."""
        compiled = json.loads((platform.output_dir / "teams/billing/long-wait.job.tf.json").read_text())
        [tf] = compiled["resource"]["aws_scheduler_schedule"].values()
        current = scheduler.get_schedule(Name=name, GroupName=prefix)
        assert tf["name"] == name and tf["state"] == "ENABLED"
        scheduler.update_schedule(Name=name, GroupName=prefix, State=tf["state"], ScheduleExpression=tf["schedule_expression"],
                                  ScheduleExpressionTimezone=tf["schedule_expression_timezone"],
                                  FlexibleTimeWindow={"Mode": tf["flexible_time_window"]["mode"]}, Target=current["Target"])

    def fires_after(repair: Any) -> list[Any]:
        """The schedule's next fire, as the scheduler sees it after the apply and ``repair``."""
        schedule = scheduler.get_schedule(Name=name, GroupName=prefix)
        start = datetime(2027, 3, 1, tzinfo=timezone.utc)
        due = next(iter(iter_fire_times(parse(schedule["ScheduleExpression"]),
                                        validate_timezone(schedule["ScheduleExpressionTimezone"]), start)))
        now = [due - timedelta(minutes=5)]
        local = LocalScheduler(scheduler, aws.client("stepfunctions"), prefix, clock=lambda: now[0])
        local.start()
        apply_team_root()
        assert scheduler.get_schedule(Name=name, GroupName=prefix)["State"] == "ENABLED"  # the pause undone
        repair()
        now[0] = due + timedelta(minutes=1)
        return [f for f in local.tick() if f.schedule == name]

    # the pipeline's step after the apply
    def pipeline() -> None:
        r = cli(platform, deployment, "repair-pauses")
        assert r.exit_code == 0 and f"{name}: ENABLED though its job is paused; disabled again" in r.output, r.output

    assert fires_after(pipeline) == []
    # the periodic Lambda's part: what it finds is repaired and reported
    from jobplane.platform.slow import _repair_pauses

    assert fires_after(lambda: _repair_pauses(platform.control) == [name] or pytest.fail("not repaired")) == []
    # without either, the apply's ENABLED schedule fires the paused job
    started = fires_after(lambda: None)
    assert [f.schedule for f in started] == [name]
    aws.wait(started[0].execution_arn, timeout=300)
    assert cli(platform, deployment, "resume", job, "--reason", "vendor back").exit_code == 0


def undelivered_alerts(platform: DevPlatform, deployment: Path) -> None:
    """An alert Slack refused, as the notifier Lambda's dead-letter queue holds it on AWS (the
    event it was invoked with; the error as an attribute): status counts it, `dead-letters`
    lists it, `--resend` publishes it again (audited) and empties the queue."""
    from jobplane.contract.notifications import NotificationMessage, Outcome

    caller = platform.aws.client("sts").get_caller_identity()["Arn"]
    last = platform.control.repo.job_state("flaky-load")
    assert last is not None and last.last_execution
    alert = NotificationMessage(version=1, event="FAILED", job="flaky-load", team="billing",
                                execution=last.last_execution, execution_arn=f"arn:x:{last.last_execution}",
                                outcome=Outcome(status="FAILED", step="load"), channels=["#billing-alerts"])
    sqs = platform.aws.client("sqs")
    url = sqs.get_queue_url(QueueName=f"{platform.config.name_prefix}-events-dlq")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"Records": [{"EventSource": "aws:sns", "Sns": {
        "Type": "Notification", "Message": alert.model_dump_json()}}]}), MessageAttributes={
        "RequestID": {"DataType": "String", "StringValue": "5f1c"},
        "ErrorCode": {"DataType": "Number", "StringValue": "200"},
        "ErrorMessage": {"DataType": "String", "StringValue": "Slack delivery failed: invalid_auth"}})
    r = cli(platform, deployment, "status")
    assert r.exit_code == 0 and f"Undelivered: about 1 in {platform.config.name_prefix}-events-dlq" in r.output, r.output
    r = cli(platform, deployment, "dead-letters")
    assert r.exit_code == 0 and f"FAILED alert of flaky-load ({last.last_execution})" in r.output, r.output
    assert "(200 Slack delivery failed: invalid_auth)" in r.output
    r = cli(platform, deployment, "dead-letters", "--resend", "--reason", "bot token rotated")
    assert r.exit_code == 0 and "1 alert published again" in r.output and caller in r.output, r.output
    assert platform.control.events_dead_letters().peek() == []
    entry = next(a for a in platform.control.audit(20) if a.action == "resend_alert")
    assert (entry.actor, entry.job, entry.execution) == (caller, "flaky-load", last.last_execution)


def backfill_a_window(platform: DevPlatform, deployment: Path) -> None:
    """A backfill run from an operator's shell: planned, started and followed to its end with
    the calls the portal's driver makes too (so the portal's role must allow them)."""
    caller = platform.aws.client("sts").get_caller_identity()["Arn"]
    r = cli(platform, deployment, "backfill", "long-wait", "--from", "2026-02-01T00:00", "--to", "2026-02-02T23:59",
            "--reason", "missed while the scheduler was paused")
    assert r.exit_code == 0, r.output
    assert "long-wait (UTC): 2 fires in the window, 2 to run (only-missed)" in r.output
    assert "https://jobs.example.com/executions/bf-" in r.output
    backfill_id = re.search(r"^(bf-[0-9a-f]{12}): COMPLETED \(2 SUCCEEDED\)$", r.output, re.M)[1]
    bf = platform.backfills.get(backfill_id)
    assert bf.requested_by == caller and [f.status for f in bf.fires] == ["SUCCEEDED", "SUCCEEDED"]


def run_status_and_logs(platform: DevPlatform, deployment: Path) -> None:
    caller = platform.aws.client("sts").get_caller_identity()["Arn"]
    r = cli(platform, deployment, "run", "flaky-load", "-p", 'mode="fail"')
    assert r.exit_code == 1, r.output
    name = re.search(r"started flaky-load: ([0-9a-f]{32})", r.output)[1]
    assert f"https://jobs.example.com/executions/{name}" in r.output
    assert "load (attempt 1): failed" in r.output
    assert "FAILED at load (exit code 75)" in r.output and f"logs: jobplane logs {name}" in r.output
    record = platform.control.repo.execution(name)
    assert record.requested_by == caller  # the caller's AWS identity, as CloudTrail has it
    r = cli(platform, deployment, "logs", name, "--step", "load")
    assert r.exit_code == 0 and "==> load (attempt 1, task " in r.output
    assert "partner API answered 503" in r.output
    r = cli(platform, deployment, "status", "--json")
    rows = {row["job"]: row for row in json.loads(r.output)}
    assert r.exit_code == 0 and rows["flaky-load"]["last_status"] == "FAILED"
    r = cli(platform, deployment, "run", "flaky-load", "-p", 'mode="ok"')
    assert r.exit_code == 0 and r.output.rstrip().splitlines()[-2] == "SUCCEEDED"
    r = cli(platform, deployment, "status")
    assert r.exit_code == 0 and re.search(r"^flaky-load\s+billing\s+SUCCEEDED", r.output, re.M)


def stop_pause_resume_and_ack(platform: DevPlatform, deployment: Path, tmp_path: Path) -> None:
    control = platform.control
    caller = platform.aws.client("sts").get_caller_identity()["Arn"]
    r = cli(platform, deployment, "run", "long-wait", "--no-wait", "-p", f'release="{tmp_path / "never"}"')
    assert r.exit_code == 0, r.output
    name = re.search(r"started long-wait: ([0-9a-f]{32})", r.output)[1]
    deadline = time.monotonic() + 300  # a hang guard: the step is running
    while not control.execution(name, "long-wait").timeline:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    r = cli(platform, deployment, "stop", name, "--reason", "vendor is down")
    assert r.exit_code == 0 and f"stop requested for {name} (AWS (" in r.output and caller in r.output
    arn = control.execution(name, "long-wait").execution_arn
    platform.aws.wait(arn, timeout=300)
    platform.aws.wait_reconciled(arn, timeout=300)  # the stopped run's record (written by the reconciler)
    r = cli(platform, deployment, "stop", name, "--reason", "again")
    assert r.exit_code == 1 and "is not running" in r.output  # the same errors as locally
    assert cli(platform, deployment, "pause", "long-wait", "--reason", "vendor outage").exit_code == 0
    state = control.repo.job_state("long-wait")
    assert state.paused and state.paused_by == caller and state.paused_reason == "vendor outage"
    assert cli(platform, deployment, "resume", "long-wait", "--reason", "vendor back").exit_code == 0
    assert not control.repo.job_state("long-wait").paused
    # a SKIP_IF_FAILED job blocked by a failure: acknowledged from the CLI, its next fire runs
    failed = platform.aws.start("other-team", execution_input.scheduled("2027-06-07T10:00:00Z", {"mode": "fail"}))
    assert platform.aws.wait(failed, timeout=300).status == "FAILED"
    platform.aws.wait_reconciled(failed, timeout=300)
    r = cli(platform, deployment, "ack", "other-team", "--reason", "known issue")
    assert r.exit_code == 0, r.output
    assert control.repo.job_state("other-team").acknowledged_by == caller
    ran = platform.aws.start("other-team", execution_input.scheduled("2027-06-14T10:00:00Z", {}))
    assert platform.aws.wait(ran, timeout=300).status == "SUCCEEDED"
    audit = [(a.actor, a.action) for a in control.audit(20)]
    assert (caller, "acknowledge_failure") in audit and (caller, "stop") in audit and (caller, "pause") in audit
    # the CLI with --deployment acts as an operator (IAM decides), and its entries say so (issue 47 item 4)
    assert {a.authority for a in control.audit(20) if a.actor == caller} == {"operator"}


def test_a_console_start_with_no_input_is_a_manual_run_that_unblocks_the_job(platform: DevPlatform,
                                                                              deployment: Path) -> None:
    """StartExecution with ``{}`` (the Step Functions console's default input): a manual run of
    the job's default params, which unblocks a SKIP_IF_FAILED job as any manual success does,
    and which the operator commands show with the input it ran with."""
    aws, control = platform.aws, platform.control
    failed = aws.start("other-team", execution_input.scheduled("2027-08-02T10:00:00Z", {"mode": "fail"}))
    assert aws.wait(failed, timeout=300).status == "FAILED"
    aws.wait_reconciled(failed, timeout=300)
    blocked = aws.run("other-team", execution_input.scheduled("2027-08-09T10:00:00Z", {}), timeout=300)
    assert control.repo.execution(blocked.arn.rsplit(":", 1)[1]).skip_reason == "LAST_FAILED"
    sfn = aws.client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=aws.state_machines["other-team"], input="{}")["executionArn"]
    ex = aws.wait(arn, timeout=300)
    assert ex.status == "SUCCEEDED", ex.states_entered
    # its defaults are merged in the first claim's own arguments: 3 states, as a scheduled run's (issue 66)
    assert ex.states_entered == ["Claim (first)", "work", "Finish"]
    aws.wait_reconciled(arn, timeout=300)
    name = arn.rsplit(":", 1)[1]
    record = control.repo.execution(name)
    assert (record.trigger, record.requested_by) == ("manual", "console (unknown caller)")  # not "sfn:StartExecution"
    assert record.scheduled_time == record.started_at and record.given == {}  # what was sent is kept as sent
    view = control.execution(name)
    assert view.input == execution_input.defaults(record.started_at, control.entry("other-team").params)
    r = cli(platform, deployment, "status", "--json")
    assert r.exit_code == 0, r.output
    assert {row["job"]: row for row in json.loads(r.output)}["other-team"]["last_status"] == "SUCCEEDED"
    after = aws.run("other-team", execution_input.scheduled("2027-08-16T10:00:00Z", {}), timeout=300)
    assert "work" in after.states_entered  # the block is gone: the next fire runs


def test_a_deployment_file_that_is_not_one_says_so(platform: DevPlatform, tmp_path: Path) -> None:
    bad = tmp_path / "outputs.json"
    bad.write_text(json.dumps({"something_else": {"value": 1}}))
    r = cli(platform, bad, "status")
    assert r.exit_code == 1 and "not the `jobplane` output of terraform/jobs" in r.output


def portal_role_allows_every_call(platform: DevPlatform) -> None:
    """The base module's portal role against what the operator commands above called through
    the control plane the portal shares (run, stop, pause, resume, acknowledge, logs, backfill)."""
    import base_module as bm
    from iam_policy import denied_calls

    calls = iam_calls(CALLS)
    assert {c.action for c in calls} >= {"states:StartExecution", "states:StopExecution", "scheduler:UpdateSchedule",
                                        "states:DescribeStateMachine",
                                        "iam:PassRole", "logs:GetLogEvents", "s3:GetObject", "s3:ListBucket", "dynamodb:Query",
                                        "sqs:ReceiveMessage", "sqs:DeleteMessage", "sns:Publish", "dynamodb:BatchGetItem",
                                        "dynamodb:PutItem", "dynamodb:UpdateItem"}
    # the operator policy: the portal's statements and the dead-letter queue's (the CLI's alone)
    statements = bm.policy_statements("operator", {"name_prefix": platform.config.name_prefix})
    portal_only = bm.policy_statements("portal", {"name_prefix": platform.config.name_prefix})
    assert denied_calls(portal_only, [c for c in calls if not c.why.startswith(("sqs.", "sns."))]) == []
    assert denied_calls(statements, calls) == []
    for i, statement in enumerate(statements):
        if statement.get("sid") in MAP_STATEMENTS | CALENDAR_STATEMENTS | DEFINITION_STATEMENTS | APPROVAL_STATEMENTS:  # the examples have no map or
            # calendar job: their use is proven by tests/test_map.py and tests/test_schedule_health.py
            continue
        assert denied_calls(statements[:i] + statements[i + 1:], calls), f"the portal role's {statement.get('sid')} is used by no call"
