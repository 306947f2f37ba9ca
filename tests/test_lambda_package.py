"""The Lambda package (`make package`) is reproducible, and every handler in it runs in a fresh
interpreter that has only what the Lambda Python runtime has: the unzipped package, the standard
library and boto3. Each handler talks to the embedded local AWS in server mode as to AWS (the
SDK's AWS_ENDPOINT_URL and the per-start key), and the notifier posts to a real HTTP receiver."""

from __future__ import annotations

import functools
import json
from datetime import datetime, timedelta, timezone
import subprocess
import sys
import sysconfig
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from iam_policy import Call, denied_calls
from slack_receiver import Receiver

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract.lambda_runtimes import CURRENT, CURRENT_RUNTIME
from jobplane.platform.local.engine import LocalAWS

HERE = Path(__file__).resolve().parent
BUILD = ROOT / "scripts" / "build_lambda.py"
#: What the Lambda Python runtime itself provides besides the standard library
#: (https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html: the runtime includes the SDK).
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six.py")


@functools.cache
def lambda_python() -> str:
    """An interpreter of the Lambda runtime's Python version (the package's compiled wheels are
    built for it, not for the one running the tests): on PATH, or pyenv's."""
    import glob
    import shutil

    candidates = [shutil.which(f"python{CURRENT.python}"), *sorted(glob.glob(
        str(Path.home() / f".pyenv/versions/{CURRENT.python}.*/bin/python{CURRENT.python}")), reverse=True)]
    found = next((c for c in candidates if c and subprocess.run(
        [c, "-c", "import sys; assert sys.version_info[:2] == " + repr(tuple(map(int, CURRENT.python.split("."))))],
        capture_output=True).returncode == 0), None)
    if found is None:
        pytest.fail(f"no Python {CURRENT.python} here ({CURRENT_RUNTIME}, the Lambda runtime the package is built for): "
                    f"install it (pyenv install {CURRENT.python}, or the distribution's python{CURRENT.python})")
    return found


def build(out: Path) -> Path:
    done = subprocess.run([sys.executable, str(BUILD), "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert f"MB ({CURRENT_RUNTIME}, x86_64), sha256 " in done.stdout
    return out


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("lambda") / "jobplane-lambda.zip")


@pytest.fixture(scope="module")
def lambda_root(package: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The unzipped package as /var/task, and a directory with only the runtime's own SDK."""
    task = tmp_path_factory.mktemp("task")
    with zipfile.ZipFile(package) as z:
        z.extractall(task)
    runtime = tmp_path_factory.mktemp("runtime")
    site = Path(sysconfig.get_paths()["purelib"])
    for name in RUNTIME_PACKAGES:
        (runtime / name).symlink_to(site / name)
    return {"task": task, "runtime": runtime}


RECORDED: dict[str, list[dict[str, Any]]] = {}  # handler -> the AWS calls it made (IAM contract below)


def call_handler(roots: dict[str, Path], handler: str, event: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """``module.function(event, None)`` in `python -I -S` with sys.path = package, SDK, stdlib;
    every AWS call it makes is recorded (service, operation, the parameters that name resources)."""
    code = f"""
import json, sys
sys.path[:0] = [{str(roots['task'])!r}, {str(roots['runtime'])!r}]
import importlib
import botocore.client
calls = []
_call = botocore.client.BaseClient._make_api_call
def _recorded(self, operation, params):
    named = {{k: params[k] for k in ("TableName", "IndexName", "TopicArn", "SecretId", "executionArn",
                                    "stateMachineArn", "logGroupName", "logStreamName", "Bucket", "Key", "Prefix",
                                    "Name", "GroupName", "QueueUrl", "QueueName", "RuleArn", "RuleArns")
             if k in params}}
    if "Target" in params:  # UpdateSchedule passes the schedule's role
        named["RoleArn"] = params["Target"].get("RoleArn")
    if "TransactItems" in params:
        named["TransactItems"] = [[kind, body["TableName"]] for item in params["TransactItems"] for kind, body in item.items()]
    calls.append({{"service": self.meta.service_model.service_name, "operation": operation, "params": named}})
    return _call(self, operation, params)
botocore.client.BaseClient._make_api_call = _recorded
module, _, function = {handler!r}.rpartition(".")
result = getattr(importlib.import_module(module), function)(json.loads(sys.stdin.read()), None)
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("moto", "fastapi", "jinja2", "click", "gojsonnet"))
print("RESULT " + json.dumps({{"result": result, "leaked": leaked, "calls": calls,
                               "jobplane_from": sys.modules["jobplane"].__file__}}, default=str))
"""
    done = subprocess.run([lambda_python(), "-I", "-S", "-c", code], input=json.dumps(event), capture_output=True,
                          text=True, env=env, timeout=300)
    line = next((l for l in done.stdout.splitlines() if l.startswith("RESULT ")), None)
    assert done.returncode == 0 and line, done.stdout[-2000:] + done.stderr[-4000:]
    out = json.loads(line[7:])
    assert out["leaked"] == [] and out["jobplane_from"].startswith(str(roots["task"]))
    RECORDED.setdefault(handler, []).extend(out["calls"])
    return out["result"]


@pytest.fixture(scope="module")
def aws():
    with LocalAWS(server_port=0, env={"PYTHONPATH": str(HERE)}) as local:
        local.reconcile = False  # the packaged reconciler does it here, as its Lambda would
        yield local


def lambda_env(aws: LocalAWS, **extra: str) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": aws.endpoint_url or "", "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id,
            "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key, "AWS_REGION": aws.region,
            "AWS_DEFAULT_REGION": aws.region, "JOBPLANE_NAME_PREFIX": aws.prefix,
            "JOBPLANE_TABLE": aws.resources["table_name"], "JOBPLANE_TOPIC_ARN": aws.resources["topic_arn"],
            "JOBPLANE_LOG_GROUP": aws.log_group, "PATH": "/usr/bin:/bin", **extra}


def test_two_builds_give_the_same_bytes(package: Path, tmp_path: Path) -> None:
    again = build(tmp_path / "again.zip")
    assert again.read_bytes() == package.read_bytes()
    with zipfile.ZipFile(package) as z:
        names = z.namelist()
        assert names == sorted(names) and {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert "jobplane/platform/reconciler.py" in names and not any(n.startswith("jobplane/platform/local/") for n in names)
    assert any(n.startswith("pydantic_core/") and n.endswith(".so") for n in names)  # compiled for the runtime
    assert not any(n.startswith(("boto3/", "botocore/")) for n in names)  # the runtime provides them


def catalog_bucket(aws: LocalAWS) -> str:
    """The base module's catalog bucket on this local AWS, where the team roots upload the catalog."""
    import base_module as bm

    bucket = bm.resolve("${aws_s3_bucket.catalog.id}", {})
    s3 = aws.client("s3")
    if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=bucket)
    return bucket


def test_the_reconciler_handler_records_a_stopped_run(aws: LocalAWS, lambda_root: dict[str, Path]) -> None:
    from jobplane.contract.catalog import CATALOG_VERSION, Catalog, CatalogJob, NotifySettings, Runbook

    name = f"job-{uuid.uuid4().hex[:8]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC",
                              "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]})
    aws.deploy(name, asl.compile_job(job, aws.prefix))
    # the job's alert settings, where the team root uploads them: its ABORTED alert carries them
    bucket = catalog_bucket(aws)
    catalog = Catalog(version=CATALOG_VERSION, name_prefix=aws.prefix, jobs=[CatalogJob(
        name=name, team="billing", schedule=[], timezone="UTC", policy="SKIP_IF_RUNNING", timeout=3600, steps=[],
        state_machine=f"{aws.prefix}-{name}", asl="", states=0,
        notify=NotifySettings(channels=["#billing-stops"], events=["FAILED", "TIMED_OUT"]),
        runbook=Runbook(impact="late invoices", recovery="run it again"))])
    aws.client("s3").put_object(Bucket=bucket, Key="catalog/billing.json", Body=catalog.render().encode())
    sqs, sns = aws.client("sqs"), aws.client("sns")
    queue = sqs.create_queue(QueueName=f"alerts-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=aws.resources["topic_arn"], Protocol="sqs", Endpoint=queue_arn,
                  Attributes={"RawMessageDelivery": "true"})
    arn = aws.start(name, execution_input.manual("ops", overrides={"mode": "sleep", "seconds": 60}))
    aws.client("stepfunctions").stop_execution(executionArn=arn, error="Ops.Stop", cause="packaged test")
    aws.wait(arn, timeout=300)
    event = {"detail-type": "Step Functions Execution Status Change", "source": "aws.states",
             "detail": {"executionArn": arn, "status": "ABORTED", "stateMachineArn": aws.state_machines[name]}}
    assert call_handler(lambda_root, "jobplane.platform.reconciler.handler", event,
                        lambda_env(aws, JOBPLANE_CATALOG=f"s3://{bucket}/catalog/")) == {"result": "recorded"}
    record = aws.repository().execution(arn.rsplit(":", 1)[1])
    assert record.status == "ABORTED" and record.expires_at is not None
    # its alert, as the notifier receives it: the job's channels, events and runbook (the
    # notifier then posts nothing: the job subscribed to FAILED and TIMED_OUT only)
    received = [json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10,
                                                                   WaitTimeSeconds=5).get("Messages", [])]
    (alert,) = [m for m in received if m["execution"] == record.execution]
    assert (alert["event"], alert["channels"], alert["events"]) == ("ABORTED", ["#billing-stops"], ["FAILED", "TIMED_OUT"])
    assert alert["runbook"] == {"impact": "late invoices", "workaround": "", "recovery": "run it again"}
    # a run that recorded its own failure gets its timeline and the step's error line from its log
    failed = aws.start(name, execution_input.manual("ops", overrides={"mode": "fail"}))
    assert aws.wait(failed, timeout=300).status == "FAILED"
    event["detail"] |= {"executionArn": failed, "status": "FAILED"}
    assert call_handler(lambda_root, "jobplane.platform.reconciler.handler", event, lambda_env(aws)) == {
        "result": "expiry"}
    record = aws.repository().execution(failed.rsplit(":", 1)[1])
    assert record.error == "ConnectionError: partner API answered 503"
    assert [(r.step, r.outcome, r.exit_code) for r in record.timeline] == [("work", "failed", 75)]
    # a pooled run stopped while its step holds a slot: the handler gives the slot back (the
    # holder item deleted, the counter lowered, in one transaction: platform/pool_slots.py)
    from jobplane.platform.pool_slots import pools

    pooled = f"job-{uuid.uuid4().hex[:8]}"
    aws.deploy(pooled, asl.compile_job(Job.from_definition({
        "name": pooled, "team": "billing", "timezone": "UTC", "pool": "stops",
        "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]}), aws.prefix, {"stops": 1}))
    held = aws.start(pooled, execution_input.manual("ops", overrides={"mode": "sleep", "seconds": 60}))

    def used() -> int:
        found = {p.name: p for p in pools(aws.client("dynamodb"), aws.resources["table_name"])}
        return found["stops"].used if "stops" in found else 0

    deadline = datetime.now(timezone.utc) + timedelta(seconds=300)  # catches a hang; decides nothing
    while used() != 1:
        assert datetime.now(timezone.utc) < deadline, "the pooled step never held its slot"
        time.sleep(0.05)
    aws.client("stepfunctions").stop_execution(executionArn=held, error="Ops.Stop", cause="packaged test")
    aws.wait(held, timeout=300)
    event["detail"] |= {"executionArn": held, "status": "ABORTED", "stateMachineArn": aws.state_machines[pooled]}
    call_handler(lambda_root, "jobplane.platform.reconciler.handler", event, lambda_env(aws))
    assert used() == 0
    assert_role_allows("reconciler", RECORDED["jobplane.platform.reconciler.handler"], {})


def test_the_notifier_handler_posts_to_slack_with_the_error_read_from_cloudwatch_logs(
        aws: LocalAWS, lambda_root: dict[str, Path]) -> None:
    """The alert of a failed run carries the step's error line: the packaged notifier finds the
    failed attempt's task in the execution history and reads its CloudWatch Logs stream, which
    the runner's log driver wrote (the local ECS agent, as awslogs does on AWS)."""
    name = f"job-{uuid.uuid4().hex[:8]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC",
                              "steps": [{"name": "load", "python": "sample_apps.functions:behave"}]})
    aws.deploy(name, asl.compile_job(job, aws.prefix))
    # two failures in a row: the message says the job waits for 2 (after_failures), so the
    # notifier counts the first from the job's records before it posts the second
    for _ in range(2):
        arn = aws.start(name, execution_input.manual("ops", overrides={"mode": "fail"}))
        assert aws.wait(arn, timeout=300).status == "FAILED"
        aws.wait_reconciled(arn)
    receiver = Receiver([])
    try:
        secret = aws.client("secretsmanager").create_secret(Name=f"slack-{uuid.uuid4().hex[:6]}",
                                                            SecretString=receiver.url)["ARN"]
        message = {"version": 1, "event": "FAILED", "job": name, "team": "billing", "execution": arn.rsplit(":", 1)[1],
                   "execution_arn": arn, "trigger": "manual", "scheduled_time": "2027-01-01T00:00:00Z",
                   "requested_by": "ops", "started_at": "2027-01-01T00:00:01Z", "finished_at": "2027-01-01T00:01:00Z",
                   "outcome": {"status": "FAILED", "step": "load"}, "channels": ["#billing-alerts"],
                   "after_failures": 2}
        event = {"Records": [{"EventSource": "aws:sns", "Sns": {"Message": json.dumps(message)}}]}
        out = call_handler(lambda_root, "jobplane.platform.notifier.handler", event, lambda_env(
            aws, JOBPLANE_SLACK_WEBHOOK_SECRET_ARN=secret, JOBPLANE_PORTAL_URL="https://jobs.example.com",
            JOBPLANE_TEAM_CHANNELS=json.dumps({"billing": "#billing-alerts"})))
        assert len(out["results"]) == 1
        assert len(receiver.posts) == 1
        posted = json.dumps(receiver.posts[0])
        assert name in posted and "ConnectionError: partner API answered 503" in posted
        assert f"https://jobs.example.com/executions/{arn.rsplit(':', 1)[1]}" in posted
        assert_role_allows("notifier", RECORDED["jobplane.platform.notifier.handler"],
                           {"slack_webhook_secret_arn": secret})
    finally:
        receiver.close()


def test_the_notifier_handler_posts_each_teams_alert_to_its_channel_with_a_bot_token(
        aws: LocalAWS, lambda_root: dict[str, Path]) -> None:
    """Issue 41 item 8, as deployed: the packaged notifier reads the bot token from its secret
    and posts each SNS record by chat.postMessage to the channel it is routed to, with only the
    role the base module gives it (the webhook's statement absent, the bot token's used)."""
    from slack_receiver import BOT_TOKEN

    receiver = Receiver([])
    RECORDED.pop("jobplane.platform.notifier.handler", None)  # this configuration's calls alone
    try:
        secret = aws.client("secretsmanager").create_secret(Name=f"slack-bot-{uuid.uuid4().hex[:6]}",
                                                            SecretString=BOT_TOKEN)["ARN"]
        records = []
        for team in ("billing", "growth"):
            message = {"version": 1, "event": "FAILED", "job": f"{team}-job", "team": team, "execution": f"{team}-1",
                       "execution_arn": f"arn:aws:states:us-east-1:123456789012:execution:jobplane-{team}-job:{team}-1",
                       "trigger": "manual", "scheduled_time": "2027-01-01T00:00:00Z", "requested_by": "ops",
                       "outcome": {"status": "FAILED", "step": "load"}, "channels": [],
                       "error": "ValueError: bad input"}
            records.append({"EventSource": "aws:sns", "Sns": {"Message": json.dumps(message)}})
        out = call_handler(lambda_root, "jobplane.platform.notifier.handler", {"Records": records}, lambda_env(
            aws, JOBPLANE_SLACK_BOT_TOKEN_SECRET_ARN=secret, JOBPLANE_SLACK_API_URL=receiver.api_url,
            JOBPLANE_TEAM_CHANNELS=json.dumps({"billing": "#billing-alerts", "growth": "#growth-alerts"})))
        assert out["results"] == [["sent"], ["sent"]]
        assert [(path, body["channel"], body["text"].split(" ")[0]) for path, body in receiver.requests] == [
            ("/api/chat.postMessage", "#billing-alerts", "billing-job"),
            ("/api/chat.postMessage", "#growth-alerts", "growth-job")]
        # every call allowed by the role as configured for a bot token, and its statement needed
        # (the webhook configuration's test above checks that each statement is used)
        import base_module as bm

        vars = {"slack_bot_token_secret_arn": secret}
        statements = bm.policy_statements("notifier", vars)
        calls = recorded_calls(RECORDED["jobplane.platform.notifier.handler"]) + lambda_service_calls("notifier", vars)
        assert denied_calls(statements, calls) == []
        assert denied_calls([st for st in statements if st.get("sid") != "SlackBotToken"], calls)
    finally:
        receiver.close()


def test_the_notifier_handler_posts_a_signed_webhook_reading_its_targets_from_their_secret(
        aws: LocalAWS, lambda_root: dict[str, Path]) -> None:
    """Issue 68 part 1, as deployed: the packaged notifier reads the webhook targets from the
    secret the base module names (JOBPLANE_WEBHOOK_SECRET_ARN) and posts the alert signed to a
    real receiver that checks the signature with its own code; the role as configured with
    webhook_secret_arn allows every call, and its WebhookTargets statement is needed."""
    from webhook_receiver import WebhookReceiver

    import base_module as bm

    receiver = WebhookReceiver()
    RECORDED.pop("jobplane.platform.notifier.handler", None)  # this configuration's calls alone
    try:
        secret = aws.client("secretsmanager").create_secret(Name=f"webhooks-{uuid.uuid4().hex[:6]}",
                                                            SecretString=receiver.targets())["ARN"]
        message = {"version": 1, "event": "FAILED", "job": "billing-job", "team": "billing", "execution": "billing-1",
                   "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:jobplane-billing-job:billing-1",
                   "trigger": "manual", "outcome": {"status": "FAILED", "step": "load"},
                   "channels": ["webhook:oncall"], "error": "ValueError: bad input"}
        out = call_handler(lambda_root, "jobplane.platform.notifier.handler",
                           {"Records": [{"EventSource": "aws:sns", "Sns": {"Message": json.dumps(message)}}]},
                           lambda_env(aws, JOBPLANE_WEBHOOK_SECRET_ARN=secret,
                                      JOBPLANE_TEAM_CHANNELS=json.dumps({"billing": "#billing-alerts"})))
        assert out["results"] == [["logged", "sent"]]  # Slack not configured: its default channel only logged
        (got,) = receiver.received
        assert got.verified and got.body["job"] == "billing-job" and got.body["error"] == "ValueError: bad input"
        vars = {"webhook_secret_arn": secret}
        statements = bm.policy_statements("notifier", vars)
        calls = recorded_calls(RECORDED["jobplane.platform.notifier.handler"]) + lambda_service_calls("notifier", vars)
        assert denied_calls(statements, calls) == []
        assert denied_calls([st for st in statements if st.get("sid") != "WebhookTargets"], calls)
    finally:
        receiver.close()


def test_the_portal_oidc_secret_handler_sets_the_rule_and_returns_no_secret(aws: LocalAWS,
                                                                            lambda_root: dict[str, Path]) -> None:
    """Issue 41 item 10: the OIDC client secret no longer passes through Terraform (state the plan
    role reads). The handler Terraform invokes reads it with its own role and writes it into the
    load balancer's rule, keeping every other action; its result, kept in the state, holds the
    secret's version only."""
    ec2, elb, sm = aws.client("ec2"), aws.client("elbv2"), aws.client("secretsmanager")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{i}.0/24", AvailabilityZone=f"{aws.region}{z}")
               ["Subnet"]["SubnetId"] for i, z in ((1, "a"), (2, "b"))]
    lb = elb.create_load_balancer(Name="jobplane-portal", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
    tg = elb.create_target_group(Name="jobplane-portal", Protocol="HTTP", Port=8080, VpcId=vpc,
                                 TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]
    listener = elb.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80, DefaultActions=[
        {"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}])["Listeners"][0]["ListenerArn"]
    oidc = {"Issuer": "https://login.example.com", "AuthorizationEndpoint": "https://login.example.com/a",
            "TokenEndpoint": "https://login.example.com/t", "UserInfoEndpoint": "https://login.example.com/u",
            "ClientId": "jobplane-portal", "ClientSecret": "set-by-jobplane-portal-oidc-secret",
            "Scope": "openid email", "OnUnauthenticatedRequest": "authenticate"}
    forward = {"Type": "forward", "Order": 2, "TargetGroupArn": tg}
    rule = elb.create_rule(ListenerArn=listener, Priority=10, Conditions=[
        {"Field": "host-header", "HostHeaderConfig": {"Values": ["jobs.example.com"]}}], Actions=[
        {"Type": "authenticate-oidc", "Order": 1, "AuthenticateOidcConfig": oidc}, forward])["Rules"][0]["RuleArn"]
    secret = sm.create_secret(Name="jobplane/portal-oidc", SecretString="the-oidc-client-secret-4711")
    result = call_handler(lambda_root, "jobplane.platform.oidc_secret.handler", {"RuleArn": "arn:elsewhere"},
                          lambda_env(aws, JOBPLANE_PORTAL_RULE_ARN=rule, JOBPLANE_PORTAL_OIDC_SECRET_ARN=secret["ARN"]))
    assert result == {"rule": rule, "secret_version": secret["VersionId"]}  # the event names nothing it uses
    assert "the-oidc-client-secret-4711" not in json.dumps(result)
    actions = elb.describe_rules(RuleArns=[rule])["Rules"][0]["Actions"]
    assert actions[0]["AuthenticateOidcConfig"] == {**oidc, "ClientSecret": "the-oidc-client-secret-4711"}
    assert actions[1] == forward
    assert_role_allows("portal_oidc_secret", RECORDED["jobplane.platform.oidc_secret.handler"],
                       {"portal.oidc.client_secret_arn": secret["ARN"], "aws_lb_listener_rule.portal.arn": rule})


def _upstream_run(aws: LocalAWS, job: str, ended_minutes_ago: int, after_jobs: list[str]) -> str:
    """A finished run of ``job`` (a real execution, its record as the state machine wrote it),
    moved ``ended_minutes_ago`` into the past, as the packaged handler reads time from the clock;
    ``after_jobs``: the jobs its status event started (the mark their runs write)."""
    from datetime import datetime, timedelta, timezone

    from jobplane.contract.clock import iso_millis

    arn = aws.start(job, execution_input.manual("ops"))
    assert aws.wait(arn, timeout=300).status == "SUCCEEDED"
    name = arn.rsplit(":", 1)[1]
    ended = datetime.now(timezone.utc) - timedelta(minutes=ended_minutes_ago)
    started = iso_millis(ended - timedelta(seconds=30))
    values = {":s": {"S": started}, ":f": {"S": iso_millis(ended)}}
    update = "SET started_at = :s, gsi1sk = :s, finished_at = :f"
    if after_jobs:
        update += " ADD after_jobs :jobs"
        values[":jobs"] = {"SS": after_jobs}
    aws.client("dynamodb").update_item(TableName=aws.resources["table_name"], Key={"pk": {"S": f"EXEC#{name}"},
                                                                                 "sk": {"S": "EXEC"}},
                                       UpdateExpression=update, ExpressionAttributeValues=values)
    return name


def test_the_periodic_handler_announces_a_slow_run_and_catches_up_lost_status_events(
        aws: LocalAWS, lambda_root: dict[str, Path], tmp_path: Path) -> None:
    import time

    from jobplane.contract.catalog import CATALOG_VERSION, Catalog, CatalogAfter, CatalogJob, CatalogStep, NotifySettings
    from jobplane.platform.catchup import catch_up_name

    name = f"job-{uuid.uuid4().hex[:8]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "expected_duration": "1s",
                              "notify": {"events": ["FAILED", "SLOW"]},
                              "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]})
    aws.deploy(name, asl.compile_job(job, aws.prefix))
    # a job that runs after another: an earlier run of the upstream started it, the latest's
    # status event never came (ended 20 minutes ago)
    upstream, downstream = f"up-{uuid.uuid4().hex[:8]}", f"down-{uuid.uuid4().hex[:8]}"
    for n, after_jobs in ((upstream, []), (downstream, [{"job": upstream}])):
        aws.deploy(n, asl.compile_job(Job.from_definition({  # (this local AWS delivers no `after` event)
            "name": n, "team": "billing", "timezone": "UTC", "after": after_jobs,
            "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]}), aws.prefix))
    _upstream_run(aws, upstream, 60, [downstream])
    lost = _upstream_run(aws, upstream, 20, [])
    # a run stopped whose status event never reached the reconciler: no record, its claim held
    # (this module's local AWS hands no event to a reconciler: the packaged handlers do)
    gone = f"gone-{uuid.uuid4().hex[:8]}"
    aws.deploy(gone, asl.compile_job(Job.from_definition({
        "name": gone, "team": "billing", "timezone": "UTC",
        "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]}), aws.prefix))
    stopped = aws.start(gone, execution_input.manual("ops", overrides={"mode": "sleep", "seconds": 120}))
    deadline = time.monotonic() + 300  # a hang guard: the run must hold its claim
    while not (aws.repository().job_state(gone) and aws.repository().job_state(gone).running):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    aws.client("stepfunctions").stop_execution(executionArn=stopped, error="Ops.Stop", cause="lost event test")
    aws.wait(stopped, timeout=300)
    stopped_name = stopped.rsplit(":", 1)[1]
    assert aws.repository().execution(stopped_name) is None and aws.repository().job_state(gone).running
    entry = lambda n, **kw: CatalogJob(name=n, team="billing", policy=job.policy, timeout=job.timeout,  # noqa: E731
                                       state_machine=f"{aws.prefix}-{n}", asl="", states=0, **{"steps": [], **kw})
    # a scheduled job whose schedule was deleted outside jobplane; the ledger last looked 15 minutes
    # ago (its fires up to 10 minutes ago, the grace, are due)
    stopped_job = f"sched-{uuid.uuid4().hex[:8]}"
    aws.client("dynamodb").update_item(
        TableName=aws.resources["table_name"], Key={"pk": {"S": f"JOB#{stopped_job}"}, "sk": {"S": "STATE"}},
        UpdateExpression="SET fires_checked_until = :t, job = :j, gsi1pk = :p, gsi1sk = :j",
        ExpressionAttributeValues={":t": {"S": (datetime.now(timezone.utc) - timedelta(minutes=15)).strftime(
            "%Y-%m-%dT%H:%M:%S.000Z")}, ":j": {"S": stopped_job}, ":p": {"S": "JOBS"}})
    # and one just deployed, which the ledger has not looked at: its fires count from its
    # schedule's creation (ListSchedules), so none is due yet
    from jobplane.contract.names import team_role_name

    fresh_job = f"new-{uuid.uuid4().hex[:8]}"
    scheduler = aws.client("scheduler")
    try:
        scheduler.create_schedule_group(Name=aws.prefix)
    except scheduler.exceptions.ConflictException:
        pass
    scheduler.create_schedule(Name=f"{aws.prefix}-{fresh_job}", GroupName=aws.prefix,
                              ScheduleExpression="cron(0/1 * * * ? *)", FlexibleTimeWindow={"Mode": "OFF"},
                              Target={"Arn": f"arn:aws:states:{aws.region}:123456789012:stateMachine:{aws.prefix}-{fresh_job}",
                                      # the team's schedule role, as compiled (compiler/shared_roles.py)
                                      "RoleArn": f"arn:aws:iam::123456789012:role/{team_role_name(aws.prefix, 'billing', 'scheduler', 'f00d', 1)}"})
    # ... and paused, but an apply wrote its compiled state (ENABLED) again: the periodic pass
    # disables it again, as drift (issue 49, item 3)
    aws.repository().set_paused(fresh_job, "billing", "ops@example.com", "vendor outage",
                                datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    # and a job with a deadline, deployed an hour ago, whose one fire since (30 minutes ago, due 10
    # minutes after it) never ran: the ledger records it MISSED, the deadline check alerts it once
    from jobplane.platform.local import moto_patches

    late_job = f"late-{uuid.uuid4().hex[:8]}"
    late_fire = (datetime.now(timezone.utc) - timedelta(minutes=30)).replace(second=0, microsecond=0)
    late_cron = f"cron({late_fire.minute} {late_fire.hour} * * ? *)"
    moto_patches.put_schedule(aws.region, {
        "Name": f"{aws.prefix}-{late_job}", "GroupName": aws.prefix, "ScheduleExpression": late_cron,
        "FlexibleTimeWindow": {"Mode": "OFF"}, "ScheduleExpressionTimezone": "UTC",
        "Target": {"Arn": f"arn:aws:states:{aws.region}:123456789012:stateMachine:{aws.prefix}-{late_job}",
                   "RoleArn": f"arn:aws:iam::123456789012:role/{team_role_name(aws.prefix, 'billing', 'scheduler', 'f00d', 1)}"}},
        created_at=datetime.now(timezone.utc) - timedelta(hours=1))
    # and a backfill someone started from a laptop that then slept: nothing else drives it
    backfilled = f"bf-{uuid.uuid4().hex[:8]}"
    aws.deploy(backfilled, asl.compile_job(Job.from_definition({
        "name": backfilled, "team": "billing", "timezone": "UTC", "schedule": "cron(15 * * * ? *)",
        "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]}), aws.prefix))
    catalog = Catalog(version=CATALOG_VERSION, name_prefix=aws.prefix, jobs=[
        # (its step watched for stalls: platform/stalls.py)
        entry(name, expected_duration=1, notify=NotifySettings(events=job.notify.events),
              steps=[CatalogStep(name="work", kind="python", stall_after=60)]),
        entry(upstream), entry(downstream, after=[CatalogAfter(job=upstream)]), entry(gone),
        entry(stopped_job, schedule=["cron(0/1 * * * ? *)"]), entry(fresh_job, schedule=["cron(0/1 * * * ? *)"]),
        entry(backfilled, schedule=["cron(15 * * * ? *)"]),
        entry(late_job, schedule=[late_cron], deadline="10m")])
    # on AWS the check reads the catalog parts the team roots upload to the base module's bucket
    bucket = catalog_bucket(aws)
    s3 = aws.client("s3")
    s3.put_object(Bucket=bucket, Key="catalog/billing.json", Body=catalog.render().encode())
    from jobplane.platform.backfill import Backfills
    from jobplane.platform.control import ControlPlane, Deployment

    (tmp_path / "catalog.json").write_text(catalog.render())
    laptop = ControlPlane(Deployment(table=aws.resources["table_name"], topic_arn=aws.resources["topic_arn"],
                                     name_prefix=aws.prefix, endpoint_url=aws.endpoint_url,
                                     catalog_path=tmp_path / "catalog.json",
                                     access_key_id=aws.credentials.access_key_id,
                                     secret_access_key=aws.credentials.secret_access_key))
    hour = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    bf = Backfills(laptop.runs).create(backfilled, "ops@example.com", hour.isoformat(), (hour + timedelta(minutes=59)).isoformat(),
                                  reason="missed while the account was moved")
    arn = aws.start(name, execution_input.manual("ops", overrides={"mode": "sleep", "seconds": 120}))
    try:
        deadline = time.monotonic() + 300  # a hang guard: the run must be claimed and 1 s old
        while not aws.repository().job_state(name) or not aws.repository().job_state(name).running:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(2)  # past its expected duration of 1 s (the step sleeps 120 s)
        # its step reported progress 5 minutes ago, as a runner writes it (its stall_after is 1 minute)
        from jobplane.contract import progress

        quiet_since = repr(round(time.time() - 300, 3))
        aws.client("dynamodb").put_item(TableName=aws.resources["table_name"], Item={
            "pk": {"S": progress.pk(name, arn.rsplit(":", 1)[1])}, "sk": {"S": "work"}, "attempt": {"N": "1"},
            "started_at": {"N": quiet_since}, "updated_at": {"N": quiet_since}, "done": {"N": "3"}})
        env = lambda_env(aws, JOBPLANE_ACCOUNT_ID="123456789012", JOBPLANE_CATALOG=f"s3://{bucket}/catalog/")
        first = call_handler(lambda_root, "jobplane.platform.slow.handler", {}, env)
        again = call_handler(lambda_root, "jobplane.platform.slow.handler", {}, env)
        assert first["alerted"] == [arn.rsplit(":", 1)[1]] and again["alerted"] == []  # announced once
        assert first["stalled"] == [arn.rsplit(":", 1)[1]] and again["stalled"] == []  # once a stall
        assert first["reconciled"] == [stopped_name] and again["reconciled"] == []  # recorded once
        record = aws.repository().execution(stopped_name)
        assert record.status == "ABORTED" and "lost event test" in record.error and not record.alert_pending
        assert not aws.repository().job_state(gone).running  # the claim is released
        assert first["caught_up"] == [catch_up_name(downstream, lost)] and again["caught_up"] == []  # started once
        assert first["missed"] == sorted([stopped_job, late_job]) and again["missed"] == []  # alerted once
        assert first["deadlines"] == [f"{late_job} {execution_input.iso(late_fire)} DEADLINE"]
        assert again["deadlines"] == []  # alerted once
        assert bf.id in first["backfills"]  # moved on by the periodic pass: its fire started once
        assert first["pauses_repaired"] == [f"{aws.prefix}-{fresh_job}"] and again["pauses_repaired"] == []
        assert scheduler.get_schedule(Name=f"{aws.prefix}-{fresh_job}", GroupName=aws.prefix)["State"] == "DISABLED"
        fires = Backfills(laptop.runs).get(bf.id).fires
        assert [f.at for f in fires] == [execution_input.iso(hour + timedelta(minutes=15))] and fires[0].execution
        missed = [r for r in aws.repository().executions(stopped_job).items if r.status == "MISSED"]
        assert missed and all("is missing" in r.error for r in missed)
        caught = aws.client("stepfunctions").describe_execution(executionArn=aws.state_machines[downstream].replace(
            ":stateMachine:", ":execution:") + ":" + first["caught_up"][0])
        assert json.loads(caught["input"])["upstream"] == lost
        aws.wait(caught["executionArn"], timeout=300)
        assert aws.repository().execution(first["caught_up"][0]).status == "SUCCEEDED"
        assert_role_allows("slow", RECORDED["jobplane.platform.slow.handler"], {})
    finally:
        aws.client("stepfunctions").stop_execution(executionArn=arn)


# -- the IAM contract of the Lambda roles: what each packaged handler called, plus what Lambda
# -- itself does with the function's role, is allowed by the base module's policy for it ---------
def lambda_service_calls(function: str, vars: dict[str, str]) -> list[Call]:
    """Calls Lambda makes with the execution role for the function's own configuration: logs
    (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html), traces when
    tracing is Active (https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html), the
    asynchronous dead-letter queue, KMS-encrypted (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html),
    and the key of its encrypted environment (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars-encryption.html)."""
    import base_module as bm

    fn = bm.resource("aws_lambda_function", function)
    name = bm.resolve(fn["function_name"], vars)
    stream = f"arn:aws:logs:{bm.REGION}:{bm.ACCOUNT}:log-group:/aws/lambda/{name}:log-stream:2027/01/01/[$LATEST]0abc"
    calls = [Call("logs:CreateLogStream", stream, {}, "logs"), Call("logs:PutLogEvents", stream, {}, "logs")]
    if fn["tracing_config"][0]["mode"] == "Active":
        calls += [Call(a, "*", {}, "tracing") for a in ("xray:PutTraceSegments", "xray:PutTelemetryRecords")]
    if fn.get("dead_letter_config"):
        dlq = bm.resolve(fn["dead_letter_config"][0]["target_arn"], vars)
        calls += [Call("sqs:SendMessage", dlq, {}, "dead letters"),
                  Call("kms:GenerateDataKey", bm.KMS_KEY_ARN, {}, "encrypted dead-letter queue")]
    return calls + [Call("kms:Decrypt", bm.KMS_KEY_ARN, {}, "encrypted environment")]


def recorded_calls(recorded: list[dict[str, Any]]) -> list[Call]:
    """IAM actions and resources of the API calls a handler made."""
    import base_module as bm

    table = lambda name: f"arn:aws:dynamodb:{bm.REGION}:{bm.ACCOUNT}:table/{name}"  # noqa: E731
    calls = []
    for c in recorded:
        service, op, params = c["service"], c["operation"], c["params"]
        why = f"{service}.{op}"
        if service == "dynamodb" and op == "TransactWriteItems":
            # each write of a transaction needs its own action
            # (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html)
            calls += [Call(f"dynamodb:{kind}Item", table(t), {}, why) for kind, t in params["TransactItems"]]
        elif service == "dynamodb" and "IndexName" in params:
            # a query of an index is authorised on the index's ARN
            # (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/iam-policy-specific-table-indexes.html)
            calls.append(Call(f"dynamodb:{op}", f"{table(params['TableName'])}/index/{params['IndexName']}", {}, why))
        elif service == "dynamodb":
            calls.append(Call(f"dynamodb:{op}", table(params["TableName"]), {}, why))
        elif service in ("states", "stepfunctions") and op == "StartExecution":
            calls.append(Call("states:StartExecution", params["stateMachineArn"], {}, why))
        elif service in ("states", "stepfunctions") and op in ("ListStateMachineVersions", "ListExecutions",
                                                               "DeleteStateMachineVersion"):
            # the version pruning: authorized on the state machine's (unqualified) ARN
            # (https://docs.aws.amazon.com/step-functions/latest/dg/auth-version-alias.html)
            arn = params.get("stateMachineArn") or params["stateMachineVersionArn"].rsplit(":", 1)[0]
            calls.append(Call(f"states:{op}", arn, {}, why))
        elif service in ("states", "stepfunctions"):  # botocore names the service stepfunctions
            calls.append(Call(f"states:{op}", params["executionArn"], {}, why))
        elif service == "sns":
            calls.append(Call(f"sns:{op}", params["TopicArn"], {}, why))
        elif service == "secretsmanager":
            calls.append(Call(f"secretsmanager:{op}", params["SecretId"], {}, why))
        elif service == "s3" and op == "ListObjectsV2":
            # s3:ListBucket on the bucket, the prefix as s3:prefix
            # (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html, Permissions)
            calls.append(Call("s3:ListBucket", f"arn:aws:s3:::{params['Bucket']}", {"s3:prefix": params.get("Prefix", "")}, why))
        elif service == "s3" and op == "GetObject":
            calls.append(Call("s3:GetObject", f"arn:aws:s3:::{params['Bucket']}/{params['Key']}", {}, why))
        elif service == "logs" and op == "GetLogEvents":
            # its resource is the stream (Service Authorization Reference, Amazon CloudWatch Logs:
            # https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatchlogs.html)
            calls.append(Call("logs:GetLogEvents", f"arn:aws:logs:{bm.REGION}:{bm.ACCOUNT}:log-group:"
                              f"{params['logGroupName']}:log-stream:{params['logStreamName']}", {}, why))
        elif service == "scheduler" and op == "GetSchedule":
            # a schedule's ARN (Service Authorization Reference, Amazon EventBridge Scheduler:
            # https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoneventbridgescheduler.html)
            calls.append(Call("scheduler:GetSchedule", f"arn:aws:scheduler:{bm.REGION}:{bm.ACCOUNT}:schedule/"
                              f"{params.get('GroupName', 'default')}/{params['Name']}", {}, why))
        elif service == "scheduler" and op == "UpdateSchedule":
            # the schedule's ARN; its role passed again; on AWS the schedule is under the
            # platform key (the compiled kms_key_arn), used by Scheduler for the caller
            # (https://docs.aws.amazon.com/scheduler/latest/UserGuide/encryption-rest.html)
            calls += [Call("scheduler:UpdateSchedule", f"arn:aws:scheduler:{bm.REGION}:{bm.ACCOUNT}:schedule/"
                           f"{params['GroupName']}/{params['Name']}", {}, why),
                      Call("iam:PassRole", params["RoleArn"], {"iam:PassedToService": "scheduler.amazonaws.com"}, why),
                      Call("kms:Encrypt", bm.KMS_KEY_ARN, {"kms:ViaService": f"scheduler.{bm.REGION}.amazonaws.com"}, why)]
        elif service == "scheduler" and op == "ListSchedules":
            calls.append(Call("scheduler:ListSchedules", "*", {}, why))  # no resource type (same reference)
        elif service == "elbv2" and op == "DescribeRules":
            # no resource-level permissions (Service Authorization Reference, Elastic Load Balancing V2:
            # https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html)
            calls.append(Call("elasticloadbalancing:DescribeRules", "*", {}, why))
        elif service == "elbv2":
            calls.append(Call(f"elasticloadbalancing:{op}", params["RuleArn"], {}, why))  # a listener rule's ARN
        elif service == "sqs":
            # a queue's ARN from its URL's last part (or GetQueueUrl's QueueName)
            # (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsqs.html)
            queue = params.get("QueueName") or params["QueueUrl"].rstrip("/").rsplit("/", 1)[-1]
            calls.append(Call(f"sqs:{op}", f"arn:aws:sqs:{bm.REGION}:{bm.ACCOUNT}:{queue}", {}, why))
        else:
            raise AssertionError(f"no IAM mapping for {why}; add it with its AWS doc")
    return calls


def assert_role_allows(function: str, recorded: list[dict[str, Any]], vars: dict[str, str]) -> None:
    import base_module as bm

    statements = bm.policy_statements(function, vars)
    calls = recorded_calls(recorded) + lambda_service_calls(function, vars)
    assert recorded, f"the {function} handler made no AWS call"
    assert denied_calls(statements, calls) == [], f"the {function} role"
    for i, statement in enumerate(statements):
        assert denied_calls(statements[:i] + statements[i + 1:], calls), \
            f"the {function} role's {statement.get('sid')} is used by no call"
