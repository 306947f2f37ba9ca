"""The local AWS's fault injector: AWS's documented transient and state errors, on request.

moto answers every call with success; AWS throttles a hot DynamoDB key, lets an idle Lambda
function go Inactive, refuses RunTask capacity, and so on. An injector answers a call of the
local AWS (in-process or over `jobplane dev`'s server: both pass through the moto patch
``fault_injection``) with the error AWS documents for it, as AWS writes it (its HTTP status and
error code), so a Task sees ``DynamoDB.ThrottlingException`` and our own boto3 calls an
ordinary ClientError with that code (and botocore's own retries).

Two sources of faults: what a test scripts (``Faults.script``), and a profile's rules
(``none``, ``aws-typical``, ``storm``: jobplane.platform.local.fault_profiles), whose random
draws are seeded. Every fault answered is recorded (``Faults.injected``), so a test can hold
each one to the attempt that met it. The API is docs/local-engine.md "Limits and faults".
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from jobplane.contract.limits import FAULT_PROFILES
from jobplane.contract.runner import ENV_ITEM_INDEX, ENV_STEP
from jobplane.contract.types import JsonObject
from jobplane.platform.local import moto_patches
from jobplane.platform.local.moto_patches import FaultAnswer

PROFILES = FAULT_PROFILES  # ("none", "aws-typical", "storm"): fault_profiles.py says what each does

#: What a Task sees for a RunTask answered with ``failures`` and no task ("If a non-empty Failures
#: field is encountered, the task is failed with an AmazonECS.Unknown error",
#: https://docs.aws.amazon.com/step-functions/latest/dg/connect-ecs.html): script it as the
#: ``error`` of ("ecs", "RunTask") to have RunTask answer a capacity failure.
ECS_CAPACITY = "AmazonECS.Unknown"
#: RunTask's failure reason for it ("Capacity is unavailable at this time. Please try again later
#: or in a different availability zone": Amazon ECS developer guide, "Amazon ECS stopped tasks
#: errors", https://docs.aws.amazon.com/AmazonECS/latest/developerguide/stopped-task-error-codes.html)
ECS_CAPACITY_REASON = "Capacity is unavailable at this time. Please try again later or in a different availability zone"

#: (service, error code) -> (HTTP status, message) as each API reference documents the error
#: (the status from the service's model in botocore where it declares one).
ERRORS: dict[tuple[str, str], tuple[int, str]] = {
    # DynamoDB API reference, "Common errors" and UpdateItem's errors:
    # https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/CommonErrors.html
    ("dynamodb", "ThrottlingException"): (400, "Throughput exceeds the current capacity for one or more "
                                          "partitions of your table or index. DynamoDB is automatically "
                                          "scaling your table or index so please try again shortly."),
    ("dynamodb", "ProvisionedThroughputExceededException"): (
        400, "The level of configured provisioned throughput for the table was exceeded. "
             "Consider increasing your provisioning level with the UpdateTable API."),
    ("dynamodb", "ValidationException"): (400, "Item size has exceeded the maximum allowed size"),
    # ECS: "ThrottlingException ... Rate exceeded" (Amazon ECS API reference, "Common errors",
    # https://docs.aws.amazon.com/AmazonECS/latest/APIReference/CommonErrors.html)
    ("ecs", "ThrottlingException"): (400, "Rate exceeded"),
    ("ecs", "InvalidParameterException"): (400, "Container Overrides length must be at most 8192"),
    # Lambda Invoke's errors (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html)
    ("lambda", "ResourceNotReadyException"): (502, "The function is currently in the following state: Inactive"),
    ("lambda", "TooManyRequestsException"): (429, "Rate Exceeded."),
    ("lambda", "EC2ThrottledException"): (502, "Lambda was throttled by Amazon EC2 during Lambda function "
                                          "initialization using the execution role provided for the function."),
    ("lambda", "ENILimitReachedException"): (502, "Lambda couldn't create an elastic network interface in the "
                                             "VPC, specified as part of Lambda function configuration, because "
                                             "the limit for network interfaces has been reached."),
    ("lambda", "SubnetIPAddressLimitReachedException"): (502, "Lambda couldn't set up VPC access for the Lambda "
                                                         "function because one or more configured subnets has "
                                                         "no available IP addresses."),
    ("lambda", "RequestTooLargeException"): (413, "Request must be smaller than 6291456 bytes for the InvokeFunction operation"),
    ("lambda", "InvalidParameterValueException"): (400, "Lambda was unable to configure your environment variables "
                                                   "because the environment variables you have provided exceeded "
                                                   "the 4KB limit."),
    # Step Functions API reference, "Common errors"
    # (https://docs.aws.amazon.com/step-functions/latest/apireference/CommonErrors.html)
    ("stepfunctions", "ThrottlingException"): (400, "Rate exceeded"),
    # S3: "SlowDown ... Please reduce your request rate." 503
    # (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html)
    ("s3", "SlowDown"): (503, "Please reduce your request rate."),
    # SNS Publish (https://docs.aws.amazon.com/sns/latest/api/API_Publish.html)
    ("sns", "InvalidParameter"): (400, "Invalid parameter: Message too long"),
    ("sns", "Throttling"): (400, "Rate exceeded"),
}


#: How many injected faults ``Faults.injected`` keeps (the newest).
INJECTED_KEPT = 100_000


@dataclass(frozen=True)
class Injected:
    """One fault the local AWS answered with."""

    service: str  # botocore service name: "dynamodb", "ecs", "lambda", "stepfunctions", "s3", "sns"
    operation: str  # API operation: "UpdateItem", "RunTask", "Invoke", "GetExecutionHistory", ...
    error: str  # AWS's documented error code ("ThrottlingException"), or ECS_CAPACITY
    detail: str  # the DynamoDB key, the function name, ...
    at: float  # time.time()


Params = Callable[[], JsonObject]


@dataclass
class _Script:
    service: str
    operation: str
    error: str
    times: int
    match: Callable[[Mapping[str, Any]], bool] | None


def detail_of(service: str, operation: str, params: JsonObject) -> str:
    """What a fault names beside its error: the item's key, the function, the execution, ..."""
    import json

    if service == "dynamodb":
        key = params.get("Key") or params.get("Item") or params.get("TransactItems")
        return f"{params.get('TableName', '')} {json.dumps(key, sort_keys=True, default=str)[:300]}"
    if service == "ecs" and operation == "RunTask":
        # its group names the job (``jobplane:<job>``, compiler/executors/ecs.py), its overrides the step
        env = [e for c in (params.get("overrides") or {}).get("containerOverrides") or []
               for e in c.get("environment") or []]
        step = next((str(e.get("value")) for e in env if e.get("name") == ENV_STEP), "")
        # a map item's step also names its item (its index): the item view shows its tries
        item = next((f" #{e.get('value')}" for e in env if e.get("name") == ENV_ITEM_INDEX), "")
        return f"{params.get('group') or params.get('taskDefinition', '')} {step}{item}".strip()
    for name in ("FunctionName", "executionArn", "ExecutionArn", "taskDefinition", "TopicArn", "Key", "Name"):
        if name in params:
            return str(params[name])
    return ""


def answer_of(service: str, operation: str, error: str) -> FaultAnswer:
    """``error`` as ``service`` answers it: its documented status and message; RunTask's
    capacity failure as a successful answer with ``failures`` and no task."""
    if service == "ecs" and error == ECS_CAPACITY:
        return FaultAnswer(200, None, body={"tasks": [], "failures": [{"reason": ECS_CAPACITY_REASON}]})
    status, message = ERRORS.get((service, error), (400, error))
    return FaultAnswer(status, error, message)


class Faults:
    """One local AWS's faults: what tests script, and a profile's rules. Thread-safe: the local
    AWS asks it from the server's, the interpreter's and the agents' threads."""

    def __init__(self, profile: str = "none", *, seed: int | None = None, **overrides: Any) -> None:
        from jobplane.platform.local.fault_profiles import rules_for

        if profile not in PROFILES:
            raise ValueError(f"unknown fault profile {profile!r}: one of {', '.join(PROFILES)}")
        self.profile = profile
        self.seed = seed
        self._lock = threading.Lock()
        self._scripts: list[_Script] = []
        # the newest INJECTED_KEPT: a long `jobplane dev --faults storm` injects without end
        self._injected: collections.deque[Injected] = collections.deque(maxlen=INJECTED_KEPT)
        self._rules = rules_for(profile, seed=seed, **overrides)

    def script(self, service: str, operation: str, error: str, *, times: int = 1,
               match: Callable[[Mapping[str, Any]], bool] | None = None) -> None:
        """The next ``times`` calls of service/operation whose request parameters (the API's own
        PascalCase request dict, e.g. {"TableName":..., "Key": {...}}) satisfy ``match`` fail
        with AWS's documented error ``error`` (its documented HTTP status and message shape)."""
        with self._lock:
            self._scripts.append(_Script(service, operation, error, times, match))

    @property
    def injected(self) -> list[Injected]:
        with self._lock:
            return list(self._injected)

    def count(self, service: str | None = None, operation: str | None = None, error: str | None = None) -> int:
        return sum(1 for i in self.injected if (service is None or i.service == service)
                   and (operation is None or i.operation == operation) and (error is None or i.error == error))

    def answer(self, service: str, operation: str, params: Params) -> FaultAnswer | None:
        """The local AWS's answer to one call, when it is a fault (None: moto answers)."""
        parsed: JsonObject | None = None

        def read() -> JsonObject:
            nonlocal parsed
            if parsed is None:
                parsed = params()
            return parsed

        error: str | None = None
        detail: str | None = None
        with self._lock:
            for s in self._scripts:
                if s.times > 0 and s.service == service and s.operation == operation \
                        and (s.match is None or s.match(read())):
                    s.times -= 1
                    error = s.error
                    break
            self._scripts = [s for s in self._scripts if s.times > 0]
        if error is None:
            ruled = self._rules.decide(service, operation, read)
            if ruled is None:
                return None
            error, detail = ruled
        # the call's own detail (the key, the function, the job and step of a RunTask) always, so
        # a fault names what it met whichever rule drew it; a budget's reason after it
        named = detail_of(service, operation, read())
        if detail and detail not in ("drawn", named):
            named = f"{named} ({detail})" if named else detail
        injected = Injected(service, operation, error, named, time.time())
        with self._lock:
            self._injected.append(injected)
        return answer_of(service, operation, error)

    def idle(self, function: str) -> None:
        """Let a Lambda function go Inactive now, as weeks without an invoke leave it ("Lambda
        function states"): its next invoke meets ResourceNotReadyException under any profile
        whose idle age is finite. What a test of a monthly job's first run of the month needs,
        without waiting out the age."""
        self._rules.idle(function)

    def done(self, service: str, operation: str) -> None:
        """moto has answered a call ``answer`` let through (Lambda's invocations in flight)."""
        self._rules.done(service, operation)


_active: Faults | None = None


def install(faults: Faults | None) -> None:
    """Make ``faults`` the process's injector (None: no faults). moto's backends are
    process-global, so is this: every local AWS in the process answers through it."""
    global _active
    _active = faults
    moto_patches.set_fault_hook(faults.answer if faults is not None else None,
                                faults.done if faults is not None else None)


def active() -> Faults | None:
    return _active
