"""The AWS calls our code makes, as IAM sees them: record a thread's boto3 calls, then map each
to the IAM action, resource and condition keys AWS authorizes it by (Service Authorization
Reference), for tests/iam_policy.py to check against the base module's policies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: The portal role's statements only a map's reads and re-runs use: tests/test_map.py proves each
#: is needed by them (test_the_portal_role_allows_every_call_of_a_maps_reads_...), the operator
#: commands of tests/test_cli_aws.py (the examples have no map) make none of those calls.
MAP_STATEMENTS = frozenset({"MapLists", "ListMapLists", "WriteRerunLists", "RerunListKey"})
#: The portal role's statements only a job of many schedules (a calendar job) uses:
#: tests/test_schedule_health.py proves it is needed; the examples have no such job.
CALENDAR_STATEMENTS = frozenset({"ListSchedules"})
#: The statements of the definitions runs ran (reading them: the run page, `jobplane diff`;
#: recording them: `jobplane record-definitions`, the operator's): tests/test_definition_versions.py
#: proves each is needed; the operator commands of tests/test_cli_aws.py read none.
DEFINITION_STATEMENTS = frozenset({"ReadDefinitions", "ListDefinitions", "RecordDefinitions", "RecordVersions"})
#: The portal role's statements only an approval's decision uses (jp.approval): their use is proven
#: by tests/test_approvals.py; the operator commands of tests/test_cli_aws.py decide none.
APPROVAL_STATEMENTS = frozenset({"DecideApprovals"})


@contextlib.contextmanager
def calls_into(calls: list[dict[str, Any]]) -> Iterator[None]:
    """Every AWS call this thread makes meanwhile goes into ``calls``."""
    import threading

    import botocore.client

    me, real = threading.current_thread(), botocore.client.BaseClient._make_api_call

    def recorded(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if threading.current_thread() is me:
            calls.append({"service": client.meta.service_model.service_name, "operation": operation, "params": params})
        return real(client, operation, params)

    botocore.client.BaseClient._make_api_call = recorded  # type: ignore[method-assign]
    try:
        yield
    finally:
        botocore.client.BaseClient._make_api_call = real  # type: ignore[method-assign]


def iam_calls(recorded: list[dict[str, Any]]) -> list[Any]:
    """The IAM actions and resources of the recorded calls (Service Authorization Reference)."""
    import base_module as bm
    from iam_policy import Call

    arn = f"{bm.REGION}:{bm.ACCOUNT}"
    out = []
    for c in recorded:
        service, op, p = c["service"], c["operation"], c["params"]
        why = f"{service}.{op}"
        if service == "sts":  # GetCallerIdentity needs no permission
            continue
        if service == "dynamodb" and op == "BatchGetItem":  # authorized per table it reads
            out += [Call("dynamodb:BatchGetItem", f"arn:aws:dynamodb:{arn}:table/{t}", {}, why) for t in p["RequestItems"]]
        elif service == "dynamodb":
            table = f"arn:aws:dynamodb:{arn}:table/{p['TableName']}"
            out.append(Call(f"dynamodb:{op}", table + (f"/index/{p['IndexName']}" if p.get("IndexName") else ""), {}, why))
        elif service == "stepfunctions" and op in ("StartExecution", "DescribeStateMachine", "ListStateMachineVersions",
                                                   "ListExecutions", "DeleteStateMachineVersion"):
            # a version's (or alias's) calls are authorized on its state machine's ARN, the
            # qualifier as states:StateMachineQualifier
            # (https://docs.aws.amazon.com/step-functions/latest/dg/auth-version-alias.html)
            given = p.get("stateMachineArn") or p["stateMachineVersionArn"]
            machine, _, qualifier = given.partition(":stateMachine:")[2].partition(":")
            unqualified = given.split(":stateMachine:")[0] + ":stateMachine:" + machine
            out.append(Call(f"states:{op}", unqualified, {"states:StateMachineQualifier": qualifier} if qualifier else {},
                            why))
        elif service == "stepfunctions" and op in ("SendTaskSuccess", "SendTaskFailure"):
            # a callback's task token: no ARN in the call (API_SendTaskSuccess.html), authorized on "*"
            out.append(Call(f"states:{op}", "*", {}, why))
        elif service == "stepfunctions":
            out.append(Call(f"states:{op}", p["executionArn"], {}, why))
        elif service == "scheduler" and op == "ListSchedules":  # no resource type: "*" only
            out.append(Call("scheduler:ListSchedules", "*", {}, why))
        elif service == "scheduler":
            out.append(Call(f"scheduler:{op}", f"arn:aws:scheduler:{arn}:schedule/{p['GroupName']}/{p['Name']}", {}, why))
            if op == "UpdateSchedule":  # the schedule's role is passed again
                out.append(Call("iam:PassRole", p["Target"]["RoleArn"],
                                {"iam:PassedToService": "scheduler.amazonaws.com"}, why))
                # on AWS every schedule has the platform key (the compiled kms_key_arn), which
                # Scheduler uses for the caller to encrypt the target's input again
                # (https://docs.aws.amazon.com/scheduler/latest/UserGuide/encryption-rest.html)
                out.append(Call("kms:Encrypt", bm.KMS_KEY_ARN, {"kms:ViaService": f"scheduler.{bm.REGION}.amazonaws.com"},
                                "UpdateSchedule of a schedule under the platform key"))
        elif service == "s3" and op == "ListObjectsV2":
            # s3:ListBucket on the bucket, with the prefix asked for as s3:prefix
            # (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html, Permissions)
            out.append(Call("s3:ListBucket", f"arn:aws:s3:::{p['Bucket']}", {"s3:prefix": p.get("Prefix", "")}, why))
        elif service == "s3" and op in ("PutObject", "DeleteObject"):
            # an SSE-KMS bucket's writer needs kms:GenerateDataKey
            # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html#require-sse-kms)
            # a conditional write carries its If-None-Match as s3:if-none-match
            # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html)
            conditional = {"s3:if-none-match": p["IfNoneMatch"]} if "IfNoneMatch" in p else {}
            out.append(Call(f"s3:{op}", f"arn:aws:s3:::{p['Bucket']}/{p['Key']}", conditional, why))
            if op == "PutObject":
                out.append(Call("kms:GenerateDataKey", bm.KMS_KEY_ARN, {"kms:ViaService": f"s3.{bm.REGION}.amazonaws.com"},
                                "the catalog bucket's KMS key, used by S3 for the writer"))
        elif service == "s3":
            # GetObject, and HeadObject, which S3 authorizes as s3:GetObject
            # (https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html, Permissions)
            out.append(Call("s3:GetObject", f"arn:aws:s3:::{p['Bucket']}/{p['Key']}", {}, why))
            # an SSE-KMS object: https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html
            out.append(Call("kms:Decrypt", bm.KMS_KEY_ARN, {}, "the catalog's KMS key"))
        elif service == "logs":
            out.append(Call("logs:GetLogEvents",
                            f"arn:aws:logs:{arn}:log-group:{p['logGroupName']}:log-stream:{p['logStreamName']}", {}, why))
        elif service == "sqs":
            # the queue's ARN from its name or URL; ChangeMessageVisibilityBatch is authorized as
            # sqs:ChangeMessageVisibility (Service Authorization Reference, Amazon SQS)
            queue = p.get("QueueName") or p["QueueUrl"].rstrip("/").rsplit("/", 1)[-1]
            action = "ChangeMessageVisibility" if op == "ChangeMessageVisibilityBatch" else op
            out.append(Call(f"sqs:{action}", f"arn:aws:sqs:{arn}:{queue}", {}, why))
            if op == "ReceiveMessage":  # an SSE-KMS queue's consumer decrypts the messages
                # (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-key-management.html)
                out.append(Call("kms:Decrypt", bm.KMS_KEY_ARN, {"kms:ViaService": f"sqs.{bm.REGION}.amazonaws.com"}, why))
        elif service == "sns" and op == "Publish":
            out.append(Call("sns:Publish", p["TopicArn"], {}, why))
            # a topic under a customer managed key (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html)
            for key_action in ("kms:GenerateDataKey", "kms:Decrypt"):
                out.append(Call(key_action, bm.KMS_KEY_ARN, {"kms:ViaService": f"sns.{bm.REGION}.amazonaws.com"}, why))
        else:
            raise AssertionError(f"no IAM mapping for {why}; add it with its AWS doc")
    return out




def runner_requests(monkeypatch: Any) -> list[tuple[str, dict[str, Any]]]:
    """Every request the runner's standard-library AWS client sends from now on (its target and
    body: runner/aws_requests.py ``json_call``), still sent: what a runner role's policy is held to."""
    from jobplane.runner import aws_requests

    sent: list[tuple[str, dict[str, Any]]] = []
    real = aws_requests.json_call

    def recorded(service: str, target: str, request: dict[str, Any], env: Any = None, **kw: Any) -> Any:
        sent.append((target, request))
        return real(service, target, request, env, **kw)

    monkeypatch.setattr(aws_requests, "json_call", recorded)
    return sent


def runner_env(aws: Any) -> dict[str, str]:
    """A runner's environment on the local engine: its endpoint and key, as a runner role gives them."""
    return {"AWS_ENDPOINT_URL": str(aws.endpoint_url), "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id,
            "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key, "AWS_REGION": aws.region}
