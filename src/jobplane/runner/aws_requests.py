"""The runner's own AWS calls, signed by the standard library: no boto3 in the application image.

The runner is added to *your* application image with ``--no-deps`` (runner/Dockerfile), so it
may not assume boto3 or botocore there. Two of its paths call AWS themselves: a Lambda step's
handler reads the step's declared secrets (Secrets Manager GetSecretValue, SSM GetParameters),
and a map's items step writes its list to S3 (PutObject). Those three calls are made here with
``http.client`` and a Signature Version 4 signature
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html),
so they work in an image without any AWS SDK (tests/test_runner_without_boto3.py runs both with
``import boto3``/``import botocore`` failing, against the local AWS, whose front checks each
signature with botocore's own signer).

Credentials and region, as the SDKs find them where the runner runs:

* Lambda sets the execution role's ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_SESSION_TOKEN`` and ``AWS_REGION`` in the function's environment
  (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime);
* ECS sets ``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`` (the task role's credentials, served at
  ``http://169.254.170.2<uri>``) and ``AWS_REGION``/``AWS_DEFAULT_REGION``
  (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/ecs-environment-variables.html;
  the container credential provider, with ``AWS_CONTAINER_CREDENTIALS_FULL_URI`` and its
  authorization token: https://docs.aws.amazon.com/sdkref/latest/guide/feature-container-credentials.html);
* the local AWS gives the same variables, and ``AWS_ENDPOINT_URL`` for its one endpoint (the
  SDKs' service-specific endpoint setting,
  https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html).

Retries: a throttled, 5xx or unreachable call is tried again (4 attempts in all, exponential
backoff with full jitter, as the SDKs' standard mode), a PutObject re-sent from its file.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import random
import re
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import quote, urlsplit

if TYPE_CHECKING:
    from typing import BinaryIO, Mapping

    from jobplane.contract.types import JsonObject

ATTEMPTS = 4
TIMEOUT_SECONDS = 60.0
CONTAINER_CREDENTIALS_HOST = "http://169.254.170.2"
#: error codes the SDKs retry besides any 5xx (their "throttling errors" of the standard mode)
RETRYABLE_CODES = frozenset({"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
                             "TooManyRequestsException", "ProvisionedThroughputExceededException",
                             "TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
                             "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
                             "EC2ThrottledException", "RequestTimeout", "RequestTimeoutException"})


class AwsError(Exception):
    """AWS refused the call: its error code and message (e.g. ``ResourceNotFoundException``)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.status, self.code, self.message = status, code, message


class Credentials(NamedTuple):
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None


def credentials(env: Mapping[str, str] | None = None) -> Credentials:
    """The credentials the environment gives: its keys, else the container credential endpoint."""
    env = os.environ if env is None else env
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return Credentials(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_SESSION_TOKEN") or None)
    relative, full = env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
    if not relative and not full:
        raise AwsError(0, "NoCredentials", "no AWS credentials in the environment (AWS_ACCESS_KEY_ID or "
                                           "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)")
    url = CONTAINER_CREDENTIALS_HOST + relative if relative else str(full)
    headers = {}
    token = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN")
    if env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"):
        with open(env["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"]) as f:
            token = f.read().strip()
    if token:
        headers["Authorization"] = token
    status, body = _send("GET", url, headers, b"")
    if status != 200:
        raise AwsError(status, "CredentialsUnavailable", f"the container credential endpoint answered {status}")
    doc = json.loads(body)
    return Credentials(doc["AccessKeyId"], doc["SecretAccessKey"], doc.get("Token") or None)


def region(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    found = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if not found:
        raise AwsError(0, "NoRegion", "no AWS region in the environment (AWS_REGION or AWS_DEFAULT_REGION)")
    return found


def endpoint(service: str, env: Mapping[str, str] | None = None) -> str | None:
    """The configured endpoint for ``service`` (AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL), or
    None for AWS's own (``https://<service>.<region>.amazonaws.com``, ``.com.cn`` in China)."""
    env = os.environ if env is None else env
    return env.get(f"AWS_ENDPOINT_URL_{service.upper().replace('-', '_')}") or env.get("AWS_ENDPOINT_URL") or None


def _aws_host(service: str, where: str) -> str:
    return f"{service}.{where}.amazonaws.com" + (".cn" if where.startswith("cn-") else "")


# -- Signature Version 4 ---------------------------------------------------------------------
def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sign(method: str, host: str, path: str, query: str, headers: dict[str, str], payload_hash: str,
         service: str, where: str, creds: Credentials, now: datetime | None = None) -> dict[str, str]:
    """``headers`` with ``x-amz-date``, the session token and ``Authorization`` added: SigV4 over
    the method, the canonical URI (``path`` as sent: already URI-encoded), the query, every
    header given and the payload's SHA-256."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    signed = {k.lower(): " ".join(str(v).split()) for k, v in headers.items()}
    signed["host"] = host
    signed["x-amz-date"] = stamp
    if creds.session_token:
        signed["x-amz-security-token"] = creds.session_token
    names = sorted(signed)
    canonical = "\n".join([method, path, query, "".join(f"{n}:{signed[n]}\n" for n in names), ";".join(names),
                           payload_hash])
    scope = f"{stamp[:8]}/{where}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{creds.secret_access_key}".encode(), stamp[:8]), where), service),
                "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out = dict(headers)
    out["x-amz-date"] = stamp
    if creds.session_token:
        out["x-amz-security-token"] = creds.session_token
    out["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds.access_key_id}/{scope}, "
                            f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return out


# -- sending ---------------------------------------------------------------------------------
def _send(method: str, url: str, headers: dict[str, str], body: bytes | BinaryIO) -> tuple[int, bytes]:
    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.netloc, timeout=TIMEOUT_SECONDS)
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def _error(status: int, body: bytes) -> AwsError:
    text = body.decode("utf-8", "replace")
    try:  # the JSON protocols: {"__type": "...#Code", "message": "..."}
        doc = json.loads(text)
        code = str(doc.get("__type", "")).rsplit("#", 1)[-1] or str(doc.get("code", ""))
        return AwsError(status, code or f"HTTP{status}", str(doc.get("message") or doc.get("Message") or ""))
    except ValueError:
        pass
    # S3's XML: <Error><Code>...</Code><Message>...</Message></Error>
    found_code, found_message = re.search(r"<Code>([^<]*)</Code>", text), re.search(r"<Message>([^<]*)</Message>", text)
    return AwsError(status, found_code.group(1) if found_code else f"HTTP{status}",
                    found_message.group(1) if found_message else text[:200])


def _call(service: str, method: str, url: str, path: str, headers: dict[str, str], body: bytes | BinaryIO,
          payload_hash: str, env: Mapping[str, str] | None) -> bytes:
    """Send a signed request, re-signed and retried on throttling, 5xx and connection errors."""
    creds, where = credentials(env), region(env)
    host = urlsplit(url).netloc
    for attempt in range(1, ATTEMPTS + 1):
        if not isinstance(body, bytes):
            body.seek(0)
        sent = sign(method, host, path, "", headers, payload_hash, service, where, creds)
        try:
            status, answer = _send(method, url, sent, body)
        except OSError as e:  # refused, reset, timed out: the SDKs retry these too
            if attempt == ATTEMPTS:
                raise AwsError(0, "ConnectionError", f"{type(e).__name__}: {e}") from None
        else:
            if 200 <= status < 300:
                return answer
            error = _error(status, answer)
            if attempt == ATTEMPTS or not (status >= 500 or error.code in RETRYABLE_CODES):
                raise error
        time.sleep(random.uniform(0, min(20.0, 0.05 * 2 ** attempt)))  # full jitter
    raise AssertionError("unreachable")


def json_call(service: str, target: str, request: JsonObject, env: Mapping[str, str] | None = None,
              content_type: str = "application/x-amz-json-1.1") -> JsonObject:
    """One call of a JSON-protocol API (``X-Amz-Target``, ``application/x-amz-json-1.1``):
    Secrets Manager (target ``secretsmanager.GetSecretValue``), SSM (``AmazonSSM.GetParameters``);
    DynamoDB speaks ``application/x-amz-json-1.0`` (a step's progress: runner/progress.py)."""
    where = region(env)
    url = endpoint(service, env) or f"https://{_aws_host(service, where)}"
    url = url.rstrip("/") + "/"
    body = json.dumps(request).encode()
    headers = {"Content-Type": content_type, "X-Amz-Target": target}
    answer = _call(service, "POST", url, "/", headers, body, hashlib.sha256(body).hexdigest(), env)
    out: JsonObject = json.loads(answer or b"{}")
    return out


def put_object(bucket: str, key: str, body: BinaryIO, content_type: str, metadata: Mapping[str, str],
               env: Mapping[str, str] | None = None) -> None:
    """S3 PutObject of a seekable binary file, streamed (never held in memory), its SHA-256 signed
    (read once before sending). Virtual-hosted addressing on AWS
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html); path-style on a
    configured endpoint (the local AWS)."""
    where = region(env)
    digest, size = hashlib.sha256(), 0
    body.seek(0)
    while chunk := body.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    path_key = quote(key, safe="/~")
    custom = endpoint("s3", env)
    if custom:
        base = custom.rstrip("/")
        path = f"{urlsplit(base).path}/{quote(bucket, safe='')}/{path_key}"
        url = f"{urlsplit(base).scheme}://{urlsplit(base).netloc}{path}"
    else:
        path = f"/{path_key}"
        url = f"https://{bucket}.{_aws_host('s3', where)}{path}"
    headers = {"Content-Type": content_type, "Content-Length": str(size), "x-amz-content-sha256": digest.hexdigest(),
               **{f"x-amz-meta-{k}": v for k, v in metadata.items()}}
    _call("s3", "PUT", url, path, headers, body, digest.hexdigest(), env)
