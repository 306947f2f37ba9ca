"""Each moto fix, with the stock behaviour it corrects shown in a clean process (so an upgrade
of the pinned moto tells us which fixes are still needed)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

CASING_PROBE = textwrap.dedent("""
    import json, time, boto3, sys
    from moto import mock_aws
    if sys.argv[1] == "fixed":
        from jobplane.platform.local import moto_fixes
        moto_fixes.apply("service_casing")
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        role = "arn:aws:iam::123456789012:role/r"
        wait = {"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 60, "End": True}}}
        other = sfn.create_state_machine(name="other", definition=json.dumps(wait), roleArn=role)["stateMachineArn"]
        target = sfn.start_execution(stateMachineArn=other, name="held")["executionArn"]
        d = {"StartAt": "d", "States": {"d": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sfn:describeExecution",
             "Parameters": {"ExecutionArn.$": "$.arn"}, "ResultSelector": {"Status.$": "$.Status"}, "End": True}}}
        sm = sfn.create_state_machine(name="s", definition=json.dumps(d), roleArn=role)["stateMachineArn"]
        arn = sfn.start_execution(stateMachineArn=sm, name="probe", input=json.dumps({"arn": target}))["executionArn"]
        while (r := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            time.sleep(0.02)
        sfn.stop_execution(executionArn=target)
        print(json.dumps({"status": r["status"], "cause": r.get("cause"), "output": r.get("output")}))
""")

PROBE = textwrap.dedent("""
    import json, time, uuid, boto3, sys
    from moto import mock_aws
    if sys.argv[1] == "fixed":
        from jobplane.platform.local import moto_fixes
        moto_fixes.apply("context_start_time")
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        ddb.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                         AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                         KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
        d = {"StartAt": "put", "States": {"put": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem",
             "Parameters": {"TableName": "t", "Item": {"pk": {"S.$": "$$.Execution.StartTime"}}}, "End": True}}}
        sm = sfn.create_state_machine(name="s", definition=json.dumps(d), roleArn="arn:aws:iam::123456789012:role/r")
        arn = sfn.start_execution(stateMachineArn=sm["stateMachineArn"], name=str(uuid.uuid4()))["executionArn"]
        while (r := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            time.sleep(0.02)
        items = ddb.scan(TableName="t")["Items"]
        print(json.dumps({"status": r["status"], "cause": r.get("cause"), "pk": items[0]["pk"]["S"] if items else None}))
""")


def probe(mode: str, code: str = PROBE) -> dict:
    out = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_context_start_time_is_an_iso_string(mode: str) -> None:
    result = probe(mode)
    if mode == "stock":
        assert result["status"] == "FAILED" and "not JSON serializable" in result["cause"]
    else:
        assert result["status"] == "SUCCEEDED"
        assert result["pk"].endswith("Z") and "T" in result["pk"] and len(result["pk"]) == 24


@pytest.mark.parametrize("mode", ["stock", "fixed"])
def test_aws_sdk_parameters_and_results_use_api_casing(mode: str) -> None:
    result = probe(mode, CASING_PROBE)
    if mode == "stock":
        assert result["status"] == "FAILED" and result["cause"].endswith("'ExecutionArn'")
    else:
        assert result["status"] == "SUCCEEDED"
        assert json.loads(result["output"]) == {"Status": "RUNNING"}


def test_pinned_version_is_installed() -> None:
    from jobplane.platform.local import moto_fixes

    moto_fixes.check_version()
