"""The local AWS's fault injector (jobplane.platform.local.faults): a scripted fault reaches a
compiled state machine's Task under the name AWS gives it, and our own boto3 calls as an
ordinary ClientError with AWS's code, in-process and over `jobplane dev`'s server."""

from __future__ import annotations

import json
import uuid
from typing import Any, Iterator

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.faults import ECS_CAPACITY, Faults

NO_RETRIES = Config(retries={"max_attempts": 0, "total_max_attempts": 1})


class Engines:
    """This module's shared local AWS, one at a time (moto's backends are process-wide: two
    engines alive at once would share them): kept open from test to test while the tests ask for
    the same kind (in-process or served), closed before a test that starts its own. What the
    shared tests check is the fault a call meets, installed per test by the ``faults`` fixture
    (process-wide, read at each call), never what an earlier test left in the account; each
    writes under keys of its own. Two engine starts instead of sixteen (issue 66 item 7)."""

    def __init__(self) -> None:
        self.server: bool | None = None
        self.engine: LocalAWS | None = None

    def get(self, server: bool) -> LocalAWS:
        if self.engine is None or self.server != server:
            self.close()
            self.engine = LocalAWS(server_port=0 if server else None).__enter__()
            self.server = server
        return self.engine

    def close(self) -> None:
        if self.engine is not None:
            engine, self.engine, self.server = self.engine, None, None
            engine.__exit__(None, None, None)


@pytest.fixture(scope="module")
def engines() -> Iterator[Engines]:
    shared = Engines()
    yield shared
    shared.close()


@pytest.fixture(autouse=True)
def _one_engine_at_a_time(request: pytest.FixtureRequest, engines: Engines) -> None:
    """A test that starts a LocalAWS of its own finds none of the module's open."""
    if "aws" not in request.fixturenames and "shared_engines" not in request.fixturenames:
        engines.close()


@pytest.fixture
def aws(faults: Faults, engines: Engines) -> LocalAWS:
    return engines.get(server=False)


@pytest.fixture
def shared_engines(engines: Engines) -> Engines:
    return engines


def run(aws: LocalAWS, states: dict[str, Any], execution_input: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run a state machine deployed as the engine deploys a job's; its status, error and history."""
    job = f"probe-{uuid.uuid4().hex[:6]}"
    aws.deploy(job, json.dumps({"StartAt": next(iter(states)), "States": states}))
    result = aws.run(job, execution_input or {})
    aws.wait_reconciled(result.arn)  # its end handled before the next test scripts faults on this engine
    events = aws.client("stepfunctions").get_execution_history(executionArn=result.arn, maxResults=1000)["events"]
    failed = [e["taskFailedEventDetails"]["error"] for e in events if "taskFailedEventDetails" in e]
    return {"status": result.status, "error": result.error, "task_errors": failed, "output": result.output}


def update_item(aws: LocalAWS, pool: str, retry: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem", "End": True,
            **({"Retry": retry} if retry else {}),
            "Parameters": {"TableName": aws.resources["table_name"], "Key": {"pk": {"S": pool}, "sk": {"S": "POOL"}},
                           "UpdateExpression": "ADD n :one", "ExpressionAttributeValues": {":one": {"N": "1"}}}}


def test_a_throttled_update_item_fails_the_task_as_dynamodb_names_it(aws: LocalAWS, faults: Faults) -> None:
    pool = f"POOL#{uuid.uuid4().hex[:6]}"  # this test's own item: the engine is the module's
    faults.script("dynamodb", "UpdateItem", "ThrottlingException")
    r = run(aws, {"t": update_item(aws, pool)})
    assert (r["status"], r["error"]) == ("FAILED", "DynamoDB.ThrottlingException")
    assert faults.count("dynamodb", "UpdateItem", "ThrottlingException") == 1
    assert pool in faults.injected[0].detail
    # the throttled write did not happen (AWS applies none of a refused write)
    assert "Item" not in aws.client("dynamodb").get_item(TableName=aws.resources["table_name"],
                                                         Key={"pk": {"S": pool}, "sk": {"S": "POOL"}})


def test_a_retry_on_the_throttle_runs_the_write_once(aws: LocalAWS, faults: Faults) -> None:
    pool = f"POOL#{uuid.uuid4().hex[:6]}"  # this test's own item: the engine is the module's
    faults.script("dynamodb", "UpdateItem", "ProvisionedThroughputExceededException", times=2)
    retry = [{"ErrorEquals": ["DynamoDB.ProvisionedThroughputExceededException"], "IntervalSeconds": 1,
              "MaxAttempts": 3, "BackoffRate": 1.0}]
    r = run(aws, {"t": update_item(aws, pool, retry)})
    assert r["status"] == "SUCCEEDED"
    assert r["task_errors"] == ["DynamoDB.ProvisionedThroughputExceededException"] * 2
    item = aws.client("dynamodb").get_item(TableName=aws.resources["table_name"],
                                           Key={"pk": {"S": pool}, "sk": {"S": "POOL"}})["Item"]
    assert item["n"] == {"N": "1"}


def test_a_lambda_not_ready_fails_the_invoke_task_as_lambda_names_it(aws: LocalAWS, faults: Faults) -> None:
    faults.script("lambda", "Invoke", "ResourceNotReadyException", match=lambda p: p.get("FunctionName") == "idle-fn")
    r = run(aws, {"i": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": True,
                        "Parameters": {"FunctionName": "idle-fn", "Payload": {}}}})
    assert (r["status"], r["error"]) == ("FAILED", "Lambda.ResourceNotReadyException")
    assert [(i.error, i.detail) for i in faults.injected] == [("ResourceNotReadyException", "idle-fn")]


def test_match_picks_the_calls_that_fail(aws: LocalAWS, faults: Faults) -> None:
    faults.script("dynamodb", "PutItem", "ThrottlingException", match=lambda p: p["Item"]["pk"]["S"] == "hot")
    ddb = aws.client("dynamodb")
    table = aws.resources["table_name"]
    ddb.put_item(TableName=table, Item={"pk": {"S": "cold"}, "sk": {"S": "x"}})
    assert faults.count() == 0
    # our own client: botocore retries a throttle (the write lands), and the fault is on record
    ddb.put_item(TableName=table, Item={"pk": {"S": "hot"}, "sk": {"S": "x"}})
    assert faults.count("dynamodb", "PutItem", "ThrottlingException") == 1
    assert "Item" in ddb.get_item(TableName=table, Key={"pk": {"S": "hot"}, "sk": {"S": "x"}})


def ecs_task(aws: LocalAWS) -> dict[str, Any]:
    r = aws.resources
    return {"Type": "Task", "Resource": "arn:aws:states:::ecs:runTask.sync", "End": True, "Parameters": {
        "Cluster": r["cluster_arn"], "TaskDefinition": r["task_definition_arn"], "LaunchType": "FARGATE",
        "NetworkConfiguration": {"AwsvpcConfiguration": {"Subnets": [r["subnets"]], "SecurityGroups": [r["security_groups"]]}},
        "Overrides": {"ContainerOverrides": [{"Name": "runner", "Command": ["jobplane-runner", "run", "shell"],
                                              "Environment": [{"Name": "JOBPLANE_TARGET", "Value": json.dumps(
                                                  {"kind": "shell", "argv": ["true"]})}]}]}}}


def test_an_ecs_capacity_failure_fails_the_sync_task_as_amazonecs_unknown(aws: LocalAWS, faults: Faults) -> None:
    faults.script("ecs", "RunTask", ECS_CAPACITY)
    r = run(aws, {"t": ecs_task(aws)})
    assert (r["status"], r["error"]) == ("FAILED", "AmazonECS.Unknown")
    assert faults.count("ecs", "RunTask", ECS_CAPACITY) == 1


def test_an_ecs_throttle_fails_the_task_as_ecs_names_it_and_a_retry_runs_it(aws: LocalAWS, faults: Faults) -> None:
    faults.script("ecs", "RunTask", "ThrottlingException")
    task = ecs_task(aws)
    task["Retry"] = [{"ErrorEquals": ["ECS.ThrottlingException"], "IntervalSeconds": 1, "MaxAttempts": 1}]
    r = run(aws, {"t": task})
    assert r["status"] == "SUCCEEDED"
    assert r["task_errors"] == ["ECS.ThrottlingException"]


@pytest.mark.parametrize("service, operation, error, call", [
    ("dynamodb", "GetItem", "ProvisionedThroughputExceededException",
     lambda aws, c: c.get_item(TableName=aws.resources["table_name"], Key={"pk": {"S": "a"}, "sk": {"S": "b"}})),
    ("stepfunctions", "ListStateMachines", "ThrottlingException", lambda aws, c: c.list_state_machines()),
    ("s3", "PutObject", "SlowDown", lambda aws, c: c.put_object(Bucket=aws.resources["items_bucket"], Key="k", Body=b"x")),
    ("sns", "Publish", "Throttling", lambda aws, c: c.publish(TopicArn=aws.resources["topic_arn"], Message="m")),
    ("lambda", "ListFunctions", "TooManyRequestsException", lambda aws, c: c.list_functions()),
])
@pytest.mark.parametrize("server", [False, True], ids=["in-process", "server"])
def test_our_own_calls_see_aws_error_code_and_status(faults: Faults, shared_engines: Engines, server: bool, service: str,
                                                     operation: str, error: str, call: Any) -> None:
    from jobplane.platform.local.faults import ERRORS

    aws = shared_engines.get(server)  # one in-process and one served engine for the ten (Engines)
    import boto3

    client = boto3.session.Session().client(
        service, region_name=aws.region, endpoint_url=aws.endpoint_url, config=NO_RETRIES,
        aws_access_key_id=aws.credentials.access_key_id, aws_secret_access_key=aws.credentials.secret_access_key)
    faults.script(service, operation, error)
    with pytest.raises(ClientError) as raised:
        call(aws, client)
    assert raised.value.response["Error"]["Code"] == error
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == ERRORS[(service, error)][0]
    call(aws, client)  # scripted once: the next call is moto's
    assert faults.count(service, operation, error) == 1


def test_an_engine_installs_its_own_injector_for_its_life(faults: Faults) -> None:
    from jobplane.platform.local import faults as local_faults

    own = Faults("none")
    with LocalAWS(faults=own):
        assert local_faults.active() is own
    assert local_faults.active() is faults


def test_an_unknown_profile_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown fault profile 'stormy'"):
        Faults("stormy")


class Clock:
    """A hand-moved clock for the profiles' budgets (no wall-clock in the tests)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def install(injector: Faults) -> Faults:
    from jobplane.platform.local import faults as local_faults

    local_faults.install(injector)
    return injector


def raw_client(aws: LocalAWS, service: str) -> Any:
    import boto3

    return boto3.session.Session().client(service, region_name=aws.region, endpoint_url=aws.endpoint_url,
                                          config=NO_RETRIES, aws_access_key_id=aws.credentials.access_key_id,
                                          aws_secret_access_key=aws.credentials.secret_access_key)


def test_a_hot_key_is_throttled_past_its_write_budget_failed_conditions_included(faults: Faults) -> None:
    """Each write is charged ceil(size / 1 KB) WCU to its partition key, a write whose condition
    fails too (by the stored item's size); past the key's budget per second, ThrottlingException."""
    clock = Clock()
    with LocalAWS() as aws:
        injector = install(Faults("none", key_wcu_per_second=6, clock=clock))
        ddb, table = raw_client(aws, "dynamodb"), aws.resources["table_name"]
        big = {"pk": {"S": "POOL#hot"}, "sk": {"S": "POOL"}, "holders": {"S": "h" * 2500}}  # 3 WCU
        ddb.put_item(TableName=table, Item=big)  # 3 of 6
        with pytest.raises(ClientError, match="ConditionalCheckFailed"):  # charged 3 all the same: 6 of 6
            ddb.put_item(TableName=table, Item=big, ConditionExpression="attribute_not_exists(pk)")
        ddb.put_item(TableName=table, Item={"pk": {"S": "other"}, "sk": {"S": "x"}})  # another key: its own budget
        with pytest.raises(ClientError) as throttled:  # a holder item under the same partition key
            ddb.put_item(TableName=table, Item={"pk": {"S": "POOL#hot"}, "sk": {"S": "HOLDER#1"}})
        assert throttled.value.response["Error"]["Code"] == "ThrottlingException"
        assert [i.error for i in injector.injected] == ["ThrottlingException"]
        assert "POOL#hot" in injector.injected[0].detail
        clock.now += 1  # a second later the key has its budget back
        ddb.put_item(TableName=table, Item={"pk": {"S": "POOL#hot"}, "sk": {"S": "HOLDER#1"}})


def test_an_idle_function_fails_its_first_invoke_not_ready_then_runs(faults: Faults) -> None:
    clock = Clock()
    with LocalAWS() as aws:
        injector = install(Faults("none", lambda_idle_seconds=60, clock=clock))
        lam = raw_client(aws, "lambda")
        lam.create_function(FunctionName="idle", Role=aws.resources["role_arn"], PackageType="Image",
                            Code={"ImageUri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:local"})
        clock.now += 61
        task = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": True,
                "Parameters": {"FunctionName": "idle", "Payload": {}}}
        r = run(aws, {"i": task})
        assert (r["status"], r["error"]) == ("FAILED", "Lambda.ResourceNotReadyException")
        assert [(i.error, i.detail) for i in injector.injected] == [("ResourceNotReadyException", "idle")]
        run(aws, {"i": task})  # active again: moto's answer, whatever the function does
        assert injector.count(error="ResourceNotReadyException") == 1


def rules(profile: str, clock: Clock, seed: int | None = 1, **overrides: Any) -> Any:
    from jobplane.platform.local.fault_profiles import rules_for

    return rules_for(profile, seed=seed, clock=clock, **overrides)


def test_run_task_past_its_rate_is_throttled() -> None:
    clock = Clock()
    r = rules("aws-typical", clock, rate=0.0)
    answers = [r.decide("ecs", "RunTask", dict) for _ in range(21)]
    assert answers[:20] == [None] * 20 and answers[20] == ("ThrottlingException", "RunTask calls per second")
    clock.now += 0.06  # one token back at 20 a second (0.05 s)
    assert r.decide("ecs", "RunTask", dict) is None


def test_execution_history_reads_have_a_bucket_of_250_refilled_at_5_a_second() -> None:
    clock = Clock()
    r = rules("aws-typical", clock, rate=0.0)
    assert all(r.decide("stepfunctions", "GetExecutionHistory", dict) is None for _ in range(250))
    assert r.decide("stepfunctions", "GetExecutionHistory", dict) is not None
    clock.now += 1
    assert sum(r.decide("stepfunctions", "GetExecutionHistory", dict) is None for _ in range(10)) == 5


def test_lambda_invocations_in_flight_past_the_account_concurrency_are_refused() -> None:
    clock = Clock()
    r = rules("none", clock, lambda_concurrency=2)
    invoke = lambda: {"FunctionName": "f"}  # noqa: E731
    assert r.decide("lambda", "Invoke", invoke) is None and r.decide("lambda", "Invoke", invoke) is None
    assert r.decide("lambda", "Invoke", invoke)[0] == "TooManyRequestsException"
    r.done("lambda", "Invoke")  # one ended
    assert r.decide("lambda", "Invoke", invoke) is None


def test_a_profiles_draws_are_seeded() -> None:
    calls = [("dynamodb", "UpdateItem"), ("ecs", "RunTask"), ("lambda", "Invoke"), ("s3", "PutObject"),
             ("stepfunctions", "GetExecutionHistory")] * 200

    def drawn(seed: int) -> list[Any]:
        clock = Clock()
        r = rules("storm", clock, seed=seed, key_wcu_per_second=1e9, run_task_per_second=1e9, history_bucket=1e9,
                  lambda_concurrency=10**9, s3_prefix_writes_per_second=1e9)
        out = []
        for i, (service, operation) in enumerate(calls):
            clock.now += 0.001
            out.append(r.decide(service, operation, lambda: {"FunctionName": "f", "Key": {"pk": {"S": str(i)}}}))
            r.done(service, operation)
        return out

    first = drawn(7)
    assert first == drawn(7) and first != drawn(8)
    errors = {d[0] for d in first if d}
    # storm draws every documented fault of these calls within 1,000 of them
    assert {"ThrottlingException", "AmazonECS.Unknown", "EC2ThrottledException", "ENILimitReachedException",
            "TooManyRequestsException", "SlowDown"} <= errors


def test_a_wrong_setting_is_refused_naming_the_settings() -> None:
    with pytest.raises(ValueError, match="unknown fault setting.*lambda_idle_secs.*lambda_idle_seconds"):
        Faults("storm", lambda_idle_secs=1)
