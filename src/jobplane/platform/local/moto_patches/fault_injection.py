"""The moto patch ``fault_injection``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_fault_injection`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any
from urllib.parse import parse_qs, unquote

#: The injector's decision: ``HOOK(service, operation, params) -> answer | None`` where
#: ``params()`` returns the request's PascalCase parameters (parsed only when asked) and an
#: answer has ``status``, ``code`` (None: a successful answer), ``message`` and ``body``. Set
#: through the facade (``moto_patches.set_fault_hook``) by jobplane.platform.local.faults.
HOOK: Any = None
#: ``LIMITS(service, operation, params) -> answer | None``: AWS's documented limits, asked before
#: the injector and whether or not one is installed (the moto patch ``aws_limits`` sets it)
LIMITS: Any = None
#: the services LIMITS has rows for (contract/limits.py): the others skip it without parsing
LIMITED = frozenset({"ecs", "lambda", "sns", "scheduler", "events"})
#: ``DONE(service, operation)``: told when moto has answered a call the hook let through (the
#: injector counts Lambda invocations in flight against the account's concurrency by it)
DONE: Any = None

#: botocore service name -> the moto module whose ``urls.url_paths`` routes its requests
SERVICES = {
    "dynamodb": "moto.dynamodb.urls", "ecs": "moto.ecs.urls", "lambda": "moto.awslambda.urls",
    "stepfunctions": "moto.stepfunctions.urls", "s3": "moto.s3.urls", "sns": "moto.sns.urls",
    "scheduler": "moto.scheduler.urls", "events": "moto.events.urls",
}

_routers: dict = {}
_routers_lock = threading.Lock()


def _model(service):
    from moto.core.responses import get_service_model

    return get_service_model(service)


def _router(service):
    from moto.core.routing import ServiceOperationRouter

    with _routers_lock:
        if service not in _routers:
            _routers[service] = ServiceOperationRouter(_model(service))
        return _routers[service]


def _protocol(service):
    return _model(service).metadata["protocol"]


def operation_of(service, request):
    """The API operation a request calls, as botocore names it (``UpdateItem``, ``Invoke``)."""
    protocol = _protocol(service)
    if protocol == "json":
        target = request.headers.get("X-Amz-Target") or ""
        return target.rsplit(".", 1)[-1] or None
    if protocol == "query":
        return _query(request).get("Action")
    if service == "s3":
        return _s3_operation(request)
    try:
        operation, _ = _router(service).match(request)
        return operation.name
    except Exception:  # not an operation of the model (moto's own extensions): never a fault
        return None


def _s3_where(request):
    """(bucket, key) of an S3 request, virtual-hosted (bucket.s3.amazonaws.com/key, botocore's
    default) or path-style (localhost:port/bucket/key): botocore's router knows the latter only."""
    import re

    host = (request.headers.get("Host") or "").split(":")[0]
    path = unquote(request.path)
    hosted = re.match(r"^(.+?)\.s3[.-]", host)
    if hosted:
        return hosted.group(1), path[1:]
    bucket, _, key = path[1:].partition("/")
    return bucket, key


def _s3_operation(request):
    """The S3 operations our code calls, by method, key and query (the S3 API reference's
    request syntax of each)."""
    bucket, key = _s3_where(request)
    args = request.args
    if key:
        if "uploadId" in args:
            return {"PUT": "UploadPart", "POST": "CompleteMultipartUpload", "DELETE": "AbortMultipartUpload",
                    "GET": "ListParts"}.get(request.method)
        if request.method == "PUT":
            return "CopyObject" if "x-amz-copy-source" in request.headers else "PutObject"
        if "uploads" in args and request.method == "POST":
            return "CreateMultipartUpload"
        return {"GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}.get(request.method)
    if bucket:
        if request.method == "GET":
            return "ListObjectsV2" if args.get("list-type") == "2" else "ListObjects"
        if request.method == "POST" and "delete" in args:
            return "DeleteObjects"
        return {"PUT": "CreateBucket", "HEAD": "HeadBucket", "DELETE": "DeleteBucket"}.get(request.method)
    return "ListBuckets" if request.method == "GET" else None


def _query(request):
    # get_data caches the body, so moto's own form parsing still sees it
    return {k: v[0] for k, v in parse_qs(request.get_data(cache=True).decode("utf-8", "replace")).items()}


def params_of(service, request):
    """The request's parameters by the API's own PascalCase names: the JSON body (json and
    rest-json), the form (query), the URI's labels (rest-json and rest-xml: FunctionName,
    Bucket, Key...), and a raw payload as ``Payload`` (Lambda Invoke) or ``Body`` (S3)."""
    protocol = _protocol(service)
    if protocol == "query":
        return _query(request)
    data = request.get_data(cache=True)
    params = {}
    if service == "s3":
        bucket, key = _s3_where(request)
        params.update({"Bucket": bucket, **({"Key": key} if key else {})})
    elif protocol in ("rest-json", "rest-xml"):
        try:
            _, labels = _router(service).match(request)
            params.update({k: unquote(v) for k, v in labels.items()})
        except Exception:
            pass
    if protocol in ("json", "rest-json"):
        try:
            body = json.loads(data or b"{}")
        except ValueError:
            body = None
        if isinstance(body, dict) and protocol == "json":
            params.update(body)
        elif protocol == "rest-json":
            if service == "lambda" and "/invocations" in request.path:
                params["Payload"] = data  # Invoke's payload is the body, whatever it holds
            elif isinstance(body, dict):
                params.update(body)
    elif protocol == "rest-xml":
        params["Body"] = data
    return params


def error_response(service, answer):
    """An error answer as the service's protocol writes one (what botocore parses into a
    ClientError with that code): the JSON ``__type``, the rest-json ``x-amzn-ErrorType`` header,
    the query protocol's ``ErrorResponse`` and S3's ``Error`` documents."""
    request_id = str(uuid.uuid4())
    protocol = _protocol(service)
    headers = {"x-amzn-RequestId": request_id, "x-amz-request-id": request_id, "status": answer.status}
    if answer.code is None:  # a successful answer the injector wrote (RunTask's failures)
        headers["Content-Type"] = "application/x-amz-json-1.1"
        return answer.status, headers, json.dumps(answer.body)
    if protocol == "json":
        headers["Content-Type"] = "application/x-amz-json-" + _model(service).metadata.get("jsonVersion", "1.0")
        prefix = _model(service).metadata.get("targetPrefix", service)
        return answer.status, headers, json.dumps({"__type": f"com.amazonaws.{prefix}#{answer.code}",
                                                   "message": answer.message})
    if protocol == "rest-json":
        headers.update({"Content-Type": "application/json", "x-amzn-ErrorType": answer.code})
        return answer.status, headers, json.dumps({"Type": "User", "message": answer.message})
    from xml.sax.saxutils import escape

    headers["Content-Type"] = "text/xml"
    if protocol == "query":
        return answer.status, headers, (
            f'<ErrorResponse xmlns="http://{service}.amazonaws.com/doc/{_model(service).metadata["apiVersion"]}/">'
            f"<Error><Type>Sender</Type><Code>{escape(answer.code)}</Code><Message>{escape(answer.message)}</Message>"
            f"</Error><RequestId>{request_id}</RequestId></ErrorResponse>")
    return answer.status, headers, (
        f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{escape(answer.code)}</Code>'
        f"<Message>{escape(answer.message)}</Message><RequestId>{request_id}</RequestId></Error>")


def _wrap(service, handler):
    def faulty(request, full_url, headers):
        hook, limits = HOOK, (LIMITS if service in LIMITED else None)
        if hook is not None or limits is not None:
            operation = operation_of(service, request)
            if operation:
                parsed = []

                def params():
                    if not parsed:
                        parsed.append(params_of(service, request))
                    return parsed[0]

                answer = limits(service, operation, params) if limits is not None else None
                if answer is None and hook is not None:
                    answer = hook(service, operation, params)
                if answer is not None:
                    return error_response(service, answer)
            if hook is not None and operation:
                done = DONE
                if done is not None:
                    try:
                        return handler(request, full_url, headers)
                    finally:
                        done(service, operation)
        return handler(request, full_url, headers)

    faulty.__wrapped__ = handler
    faulty.__name__ = getattr(handler, "__name__", "dispatch")
    if hasattr(handler, "__self__"):  # the server names a view by its response class
        faulty.__self__ = handler.__self__
    return faulty


def fix_fault_injection() -> None:
    """AWS answers any call with a throttle or a state error now and then, each documented per
    API (DynamoDB ThrottlingException, Lambda ResourceNotReadyException, S3 SlowDown, ...);
    moto 5.2.5 answers every call it implements with success. A test or `jobplane dev --faults`
    must meet those answers where our code meets them on AWS.

    Every request of a service, in-process (mock_aws: botocore's stubber, which the Step
    Functions interpreter's own clients go through too) or over moto's HTTP server (`jobplane
    dev`), is handed to the handler its ``urls.url_paths`` names: both modes read that table
    (the stubber per request through ``backend.urls``, the server when it builds a service's
    app, after the patches are applied; S3's through its response class, see below). Each handler is wrapped so that, while an injector is
    installed (``HOOK``), it is asked first, and its answer is written as the service's
    protocol writes an error; without one the wrapper costs one global read."""
    import importlib

    from moto.s3.responses import S3Response

    # moto's S3 backend re-imports its urls module for every request (moto/s3/models.py
    # ``_url_module``), which would drop a wrapped table: its entries' classmethods are wrapped
    for name in ("bucket_dispatch", "ambiguous_dispatch", "key_dispatch"):
        original = getattr(S3Response, name)
        if not hasattr(original, "__wrapped__"):
            setattr(S3Response, name, staticmethod(_wrap("s3", original)))
    for service, module in SERVICES.items():
        paths = importlib.import_module(module).url_paths
        for pattern, handler in list(paths.items()):
            if not hasattr(handler, "__wrapped__"):
                paths[pattern] = _wrap(service, handler)
