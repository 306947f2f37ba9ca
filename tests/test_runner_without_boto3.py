"""Issue 62 finding 9: the runner is installed into the application's image with --no-deps
(runner/Dockerfile), so boto3 may not be there; yet a Lambda step's handler reads the step's
secrets and a map's items step writes its list to S3. Both now sign their calls with the
standard library (runner/aws_requests.py). Proved in a runner process where ``import boto3`` and
``import botocore`` fail, against the local AWS in server mode, whose front refuses any request
whose SigV4 signature botocore's own signer does not reproduce."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from jobplane.contract import lambda_step as ls
from jobplane.contract import map_items
from jobplane.platform.local.engine import LocalAWS
from jobplane.runner import aws_requests

SRC = Path(__file__).resolve().parents[1] / "src"

#: run first in the runner's process: boto3, botocore and s3transfer cannot be imported
BLOCK = """
import importlib.abc, sys
class NoSdk(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('boto3', 'botocore', 's3transfer'):
            raise ModuleNotFoundError(f'No module named {name!r} (blocked: an image without the AWS SDK)', name=name)
        return None
sys.meta_path.insert(0, NoSdk())
for sdk in ('boto3', 'botocore'):
    try:
        __import__(sdk)
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit(f'{sdk} is importable: the test proves nothing')
"""


def run_without_sdk(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK + code], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAWS]:
    with LocalAWS(server_port=0) as local:
        yield local


def aws_env(aws: LocalAWS) -> dict[str, str]:
    """What the function's role (Lambda) or the task role (ECS) gives the runner, locally."""
    return {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "AWS_ENDPOINT_URL": str(aws.endpoint_url),
            "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id,
            "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key, "AWS_REGION": aws.region}


def test_a_lambda_step_reads_its_secrets_without_boto3(aws: LocalAWS) -> None:
    secret = aws.client("secretsmanager").create_secret(Name="billing/db", SecretString="s3cr3t pass")["ARN"]
    aws.client("ssm").put_parameter(Name="/billing/token", Value="tok-123", Type="SecureString")
    parameter = aws.client("ssm").get_parameter(Name="/billing/token")["Parameter"]["ARN"]
    function_env = {ls.ENV_SECRET_SOURCES: json.dumps({"DB_PASSWORD": secret, "API_TOKEN": parameter})}
    done = run_without_sdk(
        "import json; from jobplane.runner import lambda_handler as h\n"
        f"print(json.dumps(h.declared_secrets({function_env!r}, None, {{'DB_PASSWORD', 'API_TOKEN'}})))\n", aws_env(aws))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"DB_PASSWORD": "s3cr3t pass", "API_TOKEN": "tok-123"}
    # a secret the role cannot read refuses the attempt, naming it (as before, from AWS's own error)
    missing = {ls.ENV_SECRET_SOURCES: json.dumps({"GONE": secret.replace("billing/db", "billing/gone")})}
    done = run_without_sdk(
        "from jobplane.runner import lambda_handler as h\n"
        f"try:\n    h.declared_secrets({missing!r}, None, {{'GONE'}})\nexcept h.Refused as e:\n    print(e)\n", aws_env(aws))
    assert done.returncode == 0, done.stderr
    assert "secret GONE" in done.stdout and "ResourceNotFoundException" in done.stdout


def test_an_items_step_writes_its_list_without_boto3(aws: LocalAWS) -> None:
    bucket = aws.resources["items_bucket"]
    key = map_items.items_key("fan", "run 1/é", "close-all", "0b4f6a5e-token")  # a key that needs URI-encoding
    done = run_without_sdk(
        "from jobplane.runner import items_out\n"
        f"print(items_out.write({f's3://{bucket}/{key}'!r}, (f't-{{i}}' for i in range(2500))))\n", aws_env(aws))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2500"
    got = aws.client("s3").get_object(Bucket=bucket, Key=key)
    assert got["Metadata"] == {map_items.COUNT_METADATA: "2500"} and got["ContentType"] == map_items.CONTENT_TYPE
    assert map_items.decode(got["Body"].read()) == [(i, f"t-{i}") for i in range(2500)]
    # a wrong secret key: the front's signature check refuses it, and the step fails saying so
    bad = aws_env(aws) | {"AWS_SECRET_ACCESS_KEY": "not-the-key"}
    done = run_without_sdk(
        "from jobplane.runner import items_out\n"
        f"items_out.write({f's3://{bucket}/other.jsonl'!r}, ['a'])\n", bad)
    assert done.returncode != 0 and "AwsError" in done.stderr


def test_the_signature_is_botocores_for_s3_and_json_apis_with_a_session_token() -> None:
    """The same request signed here and by botocore (SigV4Auth, S3SigV4Auth): the same
    Authorization, with a session token (Lambda's and the task role's credentials carry one)."""
    from botocore.auth import S3SigV4Auth, SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    import hashlib

    creds = aws_requests.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "token/with+chars=")
    now = datetime(2026, 12, 6, 7, 0, 0, tzinfo=timezone.utc)
    cases = [
        ("s3", S3SigV4Auth, "PUT", "my-bucket.s3.eu-west-1.amazonaws.com",
         "/" + aws_requests.quote("map-items/job/run 1/é+x.jsonl", safe="/~"),
         {"Content-Type": "application/jsonl", "Content-Length": "12", "x-amz-meta-items": "3",
          "x-amz-content-sha256": hashlib.sha256(b"0123456789ab").hexdigest()}, None, b"0123456789ab"),
        ("secretsmanager", SigV4Auth, "POST", "secretsmanager.eu-west-1.amazonaws.com", "/",
         {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "secretsmanager.GetSecretValue"},
         None, b'{"SecretId": "arn"}'),
    ]
    for service, auth, method, host, path, headers, payload_hash, body in cases:
        ours = aws_requests.sign(method, host, path, "", headers, payload_hash or hashlib.sha256(body).hexdigest(),
                                 service, "eu-west-1", creds, now)
        # botocore's signer over the headers sent (what the local front does; add_auth would take
        # its own clock): the canonical request, the string to sign and the signature
        sent = {k: v for k, v in ours.items() if k != "Authorization"} | {"host": host}
        request = AWSRequest(method=method, url=f"https://{host}{path}", data=body, headers=sent)
        request.context["timestamp"] = now.strftime("%Y%m%dT%H%M%SZ")
        signer = auth(Credentials(creds.access_key_id, creds.secret_access_key, creds.session_token), service,
                      "eu-west-1")
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        assert ours["Authorization"].endswith(f"Signature={expected}"), service
        assert "x-amz-security-token" in ours["Authorization"] and ours["x-amz-security-token"] == creds.session_token
