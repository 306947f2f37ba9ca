"""The Lambda package (`make package`) is reproducible, and every handler in it runs in a fresh
interpreter that has only what the Lambda Python runtime has: the unzipped package, the standard
library and boto3. Each handler talks to the embedded local AWS in server mode as to AWS (the
SDK's AWS_ENDPOINT_URL and the per-start key), and the notifier posts to a real HTTP receiver."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from slack_receiver import Receiver

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.platform.local.engine import LocalAWS

HERE = Path(__file__).resolve().parent
BUILD = ROOT / "scripts" / "build_lambda.py"
#: What the Lambda Python runtime itself provides besides the standard library
#: (https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html: the runtime includes the SDK).
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six.py")


def build(out: Path) -> Path:
    done = subprocess.run([sys.executable, str(BUILD), "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "MB (python3.11, x86_64), sha256 " in done.stdout
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


def call_handler(roots: dict[str, Path], handler: str, event: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """``module.function(event, None)`` in `python -I -S` with sys.path = package, SDK, stdlib."""
    code = f"""
import json, sys
sys.path[:0] = [{str(roots['task'])!r}, {str(roots['runtime'])!r}]
import importlib
module, _, function = {handler!r}.rpartition(".")
result = getattr(importlib.import_module(module), function)(json.loads(sys.stdin.read()), None)
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("moto", "fastapi", "jinja2", "click", "gojsonnet"))
print("RESULT " + json.dumps({{"result": result, "leaked": leaked,
                               "jobplane_from": sys.modules["jobplane"].__file__}}, default=str))
"""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=json.dumps(event), capture_output=True,
                          text=True, env=env, timeout=300)
    line = next((l for l in done.stdout.splitlines() if l.startswith("RESULT ")), None)
    assert done.returncode == 0 and line, done.stdout[-2000:] + done.stderr[-4000:]
    out = json.loads(line[7:])
    assert out["leaked"] == [] and out["jobplane_from"].startswith(str(roots["task"]))
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
            "PATH": "/usr/bin:/bin", **extra}


def test_two_builds_give_the_same_bytes(package: Path, tmp_path: Path) -> None:
    again = build(tmp_path / "again.zip")
    assert again.read_bytes() == package.read_bytes()
    with zipfile.ZipFile(package) as z:
        names = z.namelist()
        assert names == sorted(names) and {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert "jobplane/platform/reconciler.py" in names and not any(n.startswith("jobplane/platform/local/") for n in names)
    assert any(n.startswith("pydantic_core/") and n.endswith(".so") for n in names)  # compiled for the runtime
    assert not any(n.startswith(("boto3/", "botocore/")) for n in names)  # the runtime provides them


def test_the_reconciler_handler_records_a_stopped_run(aws: LocalAWS, lambda_root: dict[str, Path]) -> None:
    name = f"job-{uuid.uuid4().hex[:8]}"
    job = Job.model_validate({"name": name, "team": "billing", "timezone": "UTC",
                              "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]})
    aws.deploy(name, asl.compile_job(job, aws.prefix))
    arn = aws.start(name, execution_input.manual("ops", overrides={"mode": "sleep", "seconds": 60}))
    aws.client("stepfunctions").stop_execution(executionArn=arn, error="Ops.Stop", cause="packaged test")
    aws.wait(arn, timeout=300)
    event = {"detail-type": "Step Functions Execution Status Change", "source": "aws.states",
             "detail": {"executionArn": arn, "status": "ABORTED", "stateMachineArn": aws.state_machines[name]}}
    assert call_handler(lambda_root, "jobplane.platform.reconciler.handler", event, lambda_env(aws)) == {
        "result": "recorded"}
    record = aws.repository().execution(arn.rsplit(":", 1)[1])
    assert record.status == "ABORTED" and record.expires_at is not None


def test_the_notifier_handler_posts_to_slack_with_the_webhook_from_secrets_manager(
        aws: LocalAWS, lambda_root: dict[str, Path]) -> None:
    receiver = Receiver([])
    try:
        secret = aws.client("secretsmanager").create_secret(Name=f"slack-{uuid.uuid4().hex[:6]}",
                                                            SecretString=receiver.url)["ARN"]
        message = {"version": 1, "event": "FAILED", "job": "nightly", "team": "billing", "execution": "run-1",
                   "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:jp-nightly:run-1",
                   "trigger": "schedule", "scheduled_time": "2027-01-01T00:00:00Z", "requested_by": "scheduler",
                   "started_at": "2027-01-01T00:00:01Z", "finished_at": "2027-01-01T00:01:00Z",
                   "outcome": {"status": "FAILED", "step": "load"}, "channels": ["#billing-alerts"]}
        event = {"Records": [{"EventSource": "aws:sns", "Sns": {"Message": json.dumps(message)}}]}
        out = call_handler(lambda_root, "jobplane.platform.notifier.handler", event, lambda_env(
            aws, JOBPLANE_SLACK_WEBHOOK_SECRET_ARN=secret, JOBPLANE_PORTAL_URL="https://jobs.example.com",
            JOBPLANE_TEAM_CHANNELS=json.dumps({"billing": "#billing-alerts"})))
        assert len(out["results"]) == 1
        assert len(receiver.posts) == 1 and "nightly" in json.dumps(receiver.posts[0])
    finally:
        receiver.close()


def test_the_slow_run_handler_announces_a_run_past_its_expected_duration(
        aws: LocalAWS, lambda_root: dict[str, Path], tmp_path: Path) -> None:
    import time

    from jobplane.contract.catalog import CATALOG_VERSION, Catalog, CatalogJob, NotifySettings

    name = f"job-{uuid.uuid4().hex[:8]}"
    job = Job.model_validate({"name": name, "team": "billing", "timezone": "UTC", "expected_duration": "1s",
                              "notify": {"events": ["FAILED", "SLOW"]},
                              "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]})
    aws.deploy(name, asl.compile_job(job, aws.prefix))
    catalog = Catalog(version=CATALOG_VERSION, name_prefix=aws.prefix, jobs=[CatalogJob(
        name=name, team="billing", policy=job.policy, timeout=job.timeout, expected_duration=1,
        notify=NotifySettings(events=job.notify.events), steps=[], state_machine=f"{aws.prefix}-{name}",
        asl="", states=0)])
    (tmp_path / "catalog.json").write_text(catalog.render())
    arn = aws.start(name, execution_input.manual("ops", overrides={"mode": "sleep", "seconds": 120}))
    try:
        deadline = time.monotonic() + 300  # a hang guard: the run must be claimed and 1 s old
        while not aws.repository().job_state(name) or not aws.repository().job_state(name).running:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(2)  # past its expected duration of 1 s (the step sleeps 120 s)
        env = lambda_env(aws, JOBPLANE_ACCOUNT_ID="123456789012", JOBPLANE_CATALOG=str(tmp_path / "catalog.json"))
        first = call_handler(lambda_root, "jobplane.platform.slow.handler", {}, env)
        again = call_handler(lambda_root, "jobplane.platform.slow.handler", {}, env)
        assert first["alerted"] == [arn.rsplit(":", 1)[1]] and again["alerted"] == []  # announced once
    finally:
        aws.client("stepfunctions").stop_execution(executionArn=arn)
