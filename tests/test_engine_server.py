"""The engine's HTTP server mode (what `jobplane dev` uses), in a module of its own: moto's
backends are per process, so it must not share a worker's mock with the in-process tests."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.platform.local.engine import LocalAWS

HERE = Path(__file__).resolve().parent


def test_server_mode_serves_other_clients(tmp_path: Path) -> None:
    """Any AWS client pointed at the port — here another process — drives the same platform."""
    with LocalAWS(prefix="jpserver", server_port=0, env={"PYTHONPATH": str(HERE)}) as server:
        port, key = server.server_port, server.credentials
        name = f"job-{uuid.uuid4().hex[:8]}"
        job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC",
                                  "steps": [{"name": "work", "python": "sample_apps.functions:behave"}]})
        server.deploy(name, asl.compile_job(job, server.prefix))
        marker = tmp_path / "ran"
        start = ("import boto3, sys; c = boto3.client('stepfunctions', region_name='us-east-1', "
                 f"endpoint_url='http://127.0.0.1:{port}', aws_access_key_id='{key.access_key_id}', "
                 f"aws_secret_access_key='{key.secret_access_key}'); "
                 "print(c.start_execution(stateMachineArn=sys.argv[1], name='from-outside', input=sys.argv[2])['executionArn'])")
        payload = json.dumps(execution_input.manual("cli", overrides={"mode": "ok", "marker": str(marker)}).to_json())
        out = subprocess.run([sys.executable, "-c", start, server.state_machines[name], payload],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        arn = out.stdout.strip()
        ex = server.wait(arn)
        server.wait_reconciled(arn)
        record = server.repository().execution(arn.rsplit(":", 1)[1])
        assert ex.status == "SUCCEEDED" and record.status == "SUCCEEDED" and marker.exists()


def test_a_server_start_begins_from_an_empty_account_whatever_an_earlier_engine_left() -> None:
    """moto's backends are process-global. An engine whose stop never reached its reset (an
    exception on the way out) must not hand the next `jobplane dev` in the process its schedules:
    one kept with its old creation time made the fire ledger count fires before the start as
    missed (the unexplained failure of test_missed_fires_restart). Left behind here as such an
    engine leaves it, in moto's backends."""
    from moto.moto_api._internal.models import moto_api_backend

    from jobplane.platform.local import moto_patches

    moto_patches.apply()
    try:
        moto_patches.put_schedule("us-east-1", {
            "Name": "left-behind", "GroupName": "default", "ScheduleExpression": "rate(1 hour)",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": {"Arn": "arn:aws:sqs:us-east-1:123456789012:q", "RoleArn": "arn:aws:iam::123456789012:role/r"}})
        with LocalAWS(prefix="jpleft", server_port=0) as later:
            names = [s["Name"] for s in later.client("scheduler").list_schedules()["Schedules"]]
            assert names == [], names
    finally:
        moto_api_backend.reset()
