"""AWS's documented limits (contract/limits.py) on the local engine, on by default: each row
refused as AWS refuses it (its error name), whether moto refuses it itself or the moto patch
aws_limits does (whose stock-vs-fixed probe is in tests/test_moto_fixes.py)."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any, Iterator

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from jobplane.contract import limits
from jobplane.contract.limits import BY_NAME, LIMITS
from jobplane.platform.local.engine import LocalAWS

NO_RETRIES = Config(retries={"total_max_attempts": 1})


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAWS]:
    with LocalAWS() as local:
        yield local


def client(aws: LocalAWS, service: str) -> Any:
    return boto3.session.Session().client(service, region_name=aws.region, config=NO_RETRIES,
                                          aws_access_key_id="local", aws_secret_access_key="local")


def run(aws: LocalAWS, states: dict[str, Any], execution_input: Any = None) -> Any:
    job = f"limit-{uuid.uuid4().hex[:6]}"
    aws.deploy(job, json.dumps({"StartAt": next(iter(states)), "States": states}))
    return aws.run(job, execution_input or {}, timeout=120)


def refused(call: Any) -> str:
    with pytest.raises(ClientError) as e:
        call()
    return str(e.value.response["Error"]["Code"])


def test_every_limit_names_its_error_and_its_aws_page() -> None:
    assert len({limit.name for limit in LIMITS}) == len(LIMITS)
    for limit in LIMITS:
        assert limit.source.startswith("https://docs.aws.amazon.com/"), limit.name
        assert limit.value > 0 and limit.error and limit.enforced_by in ("moto", "engine"), limit.name


def test_a_state_output_past_256_kib_fails_the_run_with_states_data_limit_exceeded(aws: LocalAWS) -> None:
    def output_of(size: int) -> Any:
        return run(aws, {"p": {"Type": "Pass", "Result": {"blob": "x" * size}, "End": True}})

    assert output_of(200 * 1024).status == "SUCCEEDED"
    big = output_of(BY_NAME["state_payload"].value)
    assert (big.status, big.error) == ("FAILED", "States.DataLimitExceeded")


@pytest.mark.parametrize("mode", ["INLINE", "DISTRIBUTED"])
def test_a_maps_collected_result_past_256_kib_fails_it(aws: LocalAWS, mode: str) -> None:
    """300 items of 1 KB each: the Map's own result is ~300 KB (a child's output is small)."""
    processor: dict[str, Any] = {"ProcessorConfig": {"Mode": mode, **({"ExecutionType": "STANDARD"} if mode == "DISTRIBUTED" else {})},
                                 "StartAt": "c", "States": {"c": {"Type": "Pass", "Result": "y" * 1024, "End": True}}}
    items = list(range(300))
    r = run(aws, {"m": {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": processor, "End": True}}, {"items": items})
    assert (r.status, r.error) == ("FAILED", "States.DataLimitExceeded")
    small = run(aws, {"m": {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": processor, "End": True}},
                {"items": items[:100]})
    assert small.status == "SUCCEEDED"


def ecs_task(aws: LocalAWS, value_size: int) -> dict[str, Any]:
    r = aws.resources
    target = json.dumps({"kind": "shell", "argv": ["true"]})
    return {"Type": "Task", "Resource": "arn:aws:states:::ecs:runTask.sync", "End": True, "Parameters": {
        "Cluster": r["cluster_arn"], "TaskDefinition": r["task_definition_arn"], "LaunchType": "FARGATE",
        "NetworkConfiguration": {"AwsvpcConfiguration": {"Subnets": [r["subnets"]], "SecurityGroups": [r["security_groups"]]}},
        "Overrides": {"ContainerOverrides": [{"Name": "runner", "Command": ["jobplane-runner", "run", "shell"],
                                              "Environment": [{"Name": "JOBPLANE_TARGET", "Value": target},
                                                              {"Name": "PAD", "Value": "p" * value_size}]}]}}}


def test_run_task_overrides_past_8192_characters_fail_the_step_as_ecs_names_it(aws: LocalAWS) -> None:
    r = run(aws, {"t": ecs_task(aws, 8200)})
    assert (r.status, r.error) == ("FAILED", "ECS.InvalidParameterException")
    assert run(aws, {"t": ecs_task(aws, 7000)}).status == "SUCCEEDED"


def test_overrides_are_counted_as_ecs_counts_them_json_punctuation_included() -> None:
    overrides = {"containerOverrides": [{"name": "runner", "environment": [{"name": "A", "value": "x" * 8100}]}]}
    assert 8100 < limits.overrides_size(overrides) == len(json.dumps(overrides, separators=(",", ":")))


def test_a_lambda_environment_past_4_kb_is_refused_at_create_and_update(aws: LocalAWS) -> None:
    lam = client(aws, "lambda")
    spec = dict(Role=aws.resources["role_arn"], PackageType="Image",
                Code={"ImageUri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:local"})
    assert refused(lambda: lam.create_function(FunctionName="big", Environment={"Variables": {"V": "x" * 4100}},
                                               **spec)) == "InvalidParameterValueException"
    lam.create_function(FunctionName="fits", Environment={"Variables": {"V": "x" * 4000}}, **spec)
    assert refused(lambda: lam.update_function_configuration(
        FunctionName="fits", Environment={"Variables": {"V": "x" * 4000, "W": "y" * 100}})) == "InvalidParameterValueException"


def test_a_synchronous_invoke_past_6_mb_is_refused_request_too_large(aws: LocalAWS) -> None:
    lam = client(aws, "lambda")
    payload = json.dumps({"blob": "x" * BY_NAME["lambda_invoke_request"].value}).encode()
    with pytest.raises(ClientError) as e:
        lam.invoke(FunctionName="anything", Payload=payload)
    assert e.value.response["Error"]["Code"] == "RequestTooLargeException"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413


def test_a_dynamodb_item_past_400_kb_is_refused_by_moto(aws: LocalAWS) -> None:
    ddb = client(aws, "dynamodb")
    item = {"pk": {"S": "big"}, "sk": {"S": "item"}, "v": {"S": "x" * BY_NAME["dynamodb_item"].value}}
    assert refused(lambda: ddb.put_item(TableName=aws.resources["table_name"], Item=item)) == "ValidationException"


def test_an_sns_message_past_256_kb_in_bytes_is_refused(aws: LocalAWS) -> None:
    sns = client(aws, "sns")
    topic = aws.resources["topic_arn"]
    assert refused(lambda: sns.publish(TopicArn=topic, Message="x" * (256 * 1024 + 1))) == "InvalidParameter"
    # 100,000 characters of three bytes each: 300 KB, which AWS counts (and moto did not)
    assert refused(lambda: sns.publish(TopicArn=topic, Message="\u20ac" * 100_000)) == "InvalidParameter"
    sns.publish(TopicArn=topic, Message="x" * (200 * 1024))


def test_event_rules_past_the_quota_per_bus_are_refused(aws: LocalAWS) -> None:
    events = client(aws, "events")
    bus = events.create_event_bus(Name=f"bus-{uuid.uuid4().hex[:6]}")["EventBusArn"]
    pattern = json.dumps({"source": ["jobplane"]})
    for i in range(BY_NAME["event_rules"].value):
        events.put_rule(Name=f"r{i}", EventBusName=bus, EventPattern=pattern)
    assert refused(lambda: events.put_rule(Name="one-too-many", EventBusName=bus,
                                           EventPattern=pattern)) == "LimitExceededException"
    events.put_rule(Name="r0", EventBusName=bus, EventPattern=pattern)  # an update of a rule is not a new one


def test_schedules_past_the_accounts_quota_are_refused_by_the_api_and_the_deploy(
        aws: LocalAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quota (10 million) held at what exists plus two: creating those two succeeds, the
    next fails as CreateSchedule (and terraform apply with it) fails on AWS."""
    from jobplane.platform.local import moto_patches

    existing = moto_patches.count_schedules(aws.region)
    monkeypatch.setitem(limits.BY_NAME, "schedules", replace(BY_NAME["schedules"], value=existing + 2))
    scheduler = client(aws, "scheduler")
    spec = dict(ScheduleExpression="rate(1 day)", FlexibleTimeWindow={"Mode": "OFF"},
                Target={"Arn": aws.resources["topic_arn"], "RoleArn": aws.resources["role_arn"]})
    scheduler.create_schedule(Name="s1", **spec)
    moto_patches.put_schedule(aws.region, {"Name": "s2", "GroupName": "default", **spec})
    assert refused(lambda: scheduler.create_schedule(Name="s3", **spec)) == "ServiceQuotaExceededException"
    with pytest.raises(ClientError, match="ServiceQuotaExceededException"):
        moto_patches.put_schedule(aws.region, {"Name": "s3", "GroupName": "default", **spec})
    moto_patches.put_schedule(aws.region, {"Name": "s2", "GroupName": "default", **spec})  # an update: allowed
