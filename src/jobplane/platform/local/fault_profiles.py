"""The fault profiles' rules: which calls of the local AWS fail, how, and how often, under each
profile of jobplane.platform.local.faults (docs/local-engine.md "Limits and faults").

Two kinds of rule, both at the shape AWS documents:

- budgets, as AWS meters them (token buckets): a DynamoDB partition key's writes per second, by
  the write capacity each write consumes; RunTask calls per second; GetExecutionHistory calls; a
  Lambda account's invocations in flight; a function's idle age;
- seeded random draws, for what AWS documents as happening without a budget the local AWS can
  see (an on-demand table's throttle while it scales, a Fargate capacity shortfall, Lambda's VPC
  set-up errors, S3 asking a prefix to slow down).

``aws-typical`` keeps AWS's own budgets and draws rarely; ``storm`` shrinks the budgets to what
a laptop reaches and draws often, so every fault shows in a short run. Each setting can be
overridden by name (``Faults("storm", seed=7, lambda_idle_seconds=1)``).
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from dataclasses import dataclass, fields, replace
from typing import Any, Callable

from jobplane.contract.types import JsonObject

#: The operations that write DynamoDB items, charged to the per-key write budget.
DYNAMODB_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")


@dataclass(frozen=True)
class Settings:
    """A profile's numbers; every one can be overridden by name."""

    #: write capacity units one partition key takes per second: "a single partition can support a
    #: maximum of 3,000 read capacity units (RCUs) or 1,000 write capacity units (WCUs)"
    #: (DynamoDB developer guide, "Designing partition keys to distribute your workload",
    #: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html);
    #: a key past it answers ThrottlingException (on-demand) or ProvisionedThroughputExceededException
    key_wcu_per_second: float = 1000.0
    #: which of the two a throttled key answers: our table is PAY_PER_REQUEST (on-demand)
    key_throttle_error: str = "ThrottlingException"
    #: RunTask calls per second: "The rate quota for calls to the Amazon ECS RunTask API is 20
    #: calls per second (burst and sustained)" (Amazon ECS developer guide, "AWS Fargate
    #: throttling quotas", https://docs.aws.amazon.com/AmazonECS/latest/developerguide/throttling.html)
    run_task_per_second: float = 20.0
    #: GetExecutionHistory's token bucket: 250 calls, refilled at 5 a second (Step Functions
    #: developer guide, "Quotas related to API action throttling",
    #: https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html#service-limits-api-action-throttling-general)
    history_bucket: float = 250.0
    history_per_second: float = 5.0
    #: invocations in flight in the account: "By default, Lambda provides your account with a total
    #: concurrency limit of 1,000 concurrent executions across all functions in an AWS Region"
    #: (Lambda developer guide, "Understanding Lambda function scaling",
    #: https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html); past it Invoke answers
    #: TooManyRequestsException
    lambda_concurrency: int = 1000
    #: a function not invoked (nor updated) for this long is Inactive: its next invoke fails with
    #: ResourceNotReadyException and the function is Pending while Lambda recreates its resources
    #: (Lambda developer guide, "Lambda function states",
    #: https://docs.aws.amazon.com/lambda/latest/dg/functions-states.html). AWS gives no age ("idle
    #: long enough for Lambda to reclaim the external resources"); weeks are observed.
    lambda_idle_seconds: float = 14 * 86400.0
    #: how many invokes after that first one still fail while the function is Pending
    lambda_pending_invokes: int = 0
    #: S3 writes a prefix takes per second: "at least 3,500 PUT/COPY/POST/DELETE or 5,500
    #: GET/HEAD requests per second per partitioned Amazon S3 prefix" (S3 user guide, "Best
    #: practices design patterns: optimizing Amazon S3 performance",
    #: https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html); past it,
    #: 503 SlowDown
    s3_prefix_writes_per_second: float = 3500.0
    #: the probability of each random fault on each call it applies to (RANDOM_FAULTS)
    rate: float = 0.0


#: (service, operations, error): the faults drawn at random, each at Settings.rate per call.
RANDOM_FAULTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # an on-demand table scaling for a new peak ("Throughput exceeds the current capacity ...
    # DynamoDB is automatically scaling your table", DynamoDB developer guide, "Troubleshooting
    # throttling", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TroubleshootingThrottling.html)
    ("dynamodb", DYNAMODB_WRITES, "ThrottlingException"),
    # a Fargate capacity shortfall: RunTask answers `failures` ("Capacity is unavailable at this
    # time"), which fails an ecs:runTask Task with AmazonECS.Unknown
    ("ecs", ("RunTask",), "AmazonECS.Unknown"),
    ("ecs", ("RunTask",), "ThrottlingException"),
    # Lambda's VPC set-up errors of Invoke (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html)
    ("lambda", ("Invoke",), "EC2ThrottledException"),
    ("lambda", ("Invoke",), "ENILimitReachedException"),
    ("lambda", ("Invoke",), "TooManyRequestsException"),
    ("stepfunctions", ("GetExecutionHistory",), "ThrottlingException"),
    ("s3", ("PutObject", "GetObject"), "SlowDown"),
)

PROFILE_SETTINGS: dict[str, Settings] = {
    # no budget and no draw: only what a test scripts (an override turns one on)
    "none": Settings(key_wcu_per_second=math.inf, run_task_per_second=math.inf, history_bucket=math.inf,
                     lambda_concurrency=2**62, lambda_idle_seconds=math.inf, s3_prefix_writes_per_second=math.inf),
    # AWS's own budgets; a random fault on 1 call in 2,000 of those it applies to
    "aws-typical": Settings(rate=0.0005),
    # budgets a local run reaches, and a random fault on 1 call in 20
    "storm": Settings(key_wcu_per_second=50.0, run_task_per_second=5.0, history_bucket=20.0,
                      history_per_second=2.0, lambda_concurrency=20, lambda_idle_seconds=30.0,
                      s3_prefix_writes_per_second=50.0, rate=0.05),
}


class Bucket:
    """A token bucket: ``capacity`` tokens, refilled at ``per_second``; a call takes ``cost``."""

    def __init__(self, capacity: float, per_second: float, now: float) -> None:
        self.capacity, self.per_second, self.tokens, self.at = capacity, per_second, capacity, now

    def take(self, cost: float, now: float) -> bool:
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.per_second)
        self.at = now
        if self.tokens < cost:
            return False
        self.tokens -= cost
        return True


def write_units(size: int, transactional: bool = False) -> int:
    """Write capacity units a write of an item of ``size`` bytes consumes: one per 1 KB, rounded
    up, at least one; two per KB in a transaction (DynamoDB developer guide, "DynamoDB read and
    write operations", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)."""
    units = max(1, math.ceil(size / 1024))
    return 2 * units if transactional else units


def attribute_size(value: Any) -> int:
    """An approximation of DynamoDB's size of attribute values as sent (names and values' UTF-8
    bytes: "Item sizes", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html)."""
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


class Rules:
    """A profile's rules over one local AWS's calls. Thread-safe (``Faults`` calls it under no lock)."""

    def __init__(self, settings: Settings, seed: int | None, clock: Callable[[], float] = time.monotonic,
                 item: Callable[[str, JsonObject], tuple[str, int]] | None = None) -> None:
        self.settings = settings
        self.clock = clock
        self._item = item
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._lambda_in_flight = 0
        self._lambda_seen: dict[str, float] = {}  # function -> last invoke or update
        self._lambda_pending: dict[str, int] = {}  # function -> invokes still failing while Pending

    def _take(self, name: str, key: str, capacity: float, per_second: float, cost: float) -> bool:
        now = self.clock()
        bucket = self._buckets.get((name, key))
        if bucket is None:
            bucket = self._buckets[(name, key)] = Bucket(capacity, per_second, now)
        return bucket.take(cost, now)

    def decide(self, service: str, operation: str, params: Callable[[], JsonObject]) -> tuple[str, str] | None:
        """The error this call meets under the profile, with what it names (None: no fault)."""
        s = self.settings
        with self._lock:
            if service == "dynamodb" and operation in DYNAMODB_WRITES and s.key_wcu_per_second < math.inf:
                hit = self._dynamodb_budget(operation, params())
                if hit:
                    return s.key_throttle_error, hit
            elif service == "ecs" and operation == "RunTask":
                if not self._take("RunTask", "", s.run_task_per_second, s.run_task_per_second, 1):
                    return "ThrottlingException", "RunTask calls per second"
            elif service == "stepfunctions" and operation == "GetExecutionHistory":
                if not self._take("GetExecutionHistory", "", s.history_bucket, s.history_per_second, 1):
                    return "ThrottlingException", "GetExecutionHistory calls"
            elif service == "lambda":
                fault = self._lambda(operation, params)
                if fault:
                    return fault
            elif service == "s3" and operation in ("PutObject", "CopyObject", "DeleteObject"):
                p = params()
                prefix = f"{p.get('Bucket', '')}/{str(p.get('Key', '')).rpartition('/')[0]}"
                if not self._take("s3", prefix, s.s3_prefix_writes_per_second, s.s3_prefix_writes_per_second, 1):
                    return "SlowDown", prefix
            if s.rate > 0:
                for fault_service, operations, error in RANDOM_FAULTS:
                    if fault_service == service and operation in operations and self._random.random() < s.rate:
                        return error, "drawn"
        return None

    def _dynamodb_budget(self, operation: str, p: JsonObject) -> str | None:
        """Charge each item the write touches to its partition key's budget, by the write units it
        consumes: the larger of the item's size before and after, whether or not its condition
        holds ("If a ConditionExpression evaluates to false during a conditional write, DynamoDB
        still consumes write capacity from the table. The amount consumed is dependent on the
        size of the existing item (or a minimum of 1)": DynamoDB developer guide, "Working with
        items and attributes", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/WorkingWithItems.html).
        The key that runs out, or None."""
        writes: list[tuple[str, JsonObject, int, bool]] = []  # (table, key or item, size sent, transactional)
        if operation == "TransactWriteItems":
            for action in p.get("TransactItems") or []:
                for kind, body in (action or {}).items():
                    if isinstance(body, dict):
                        key = body.get("Key") or body.get("Item") or {}
                        sent = attribute_size(body.get("Item") or body.get("ExpressionAttributeValues") or {})
                        writes.append((str(body.get("TableName", "")), key, sent if kind != "ConditionCheck" else 0, True))
        elif operation == "BatchWriteItem":
            for table, requests in (p.get("RequestItems") or {}).items():
                for request in requests or []:
                    put, delete = (request or {}).get("PutRequest"), (request or {}).get("DeleteRequest")
                    if put:
                        writes.append((table, put.get("Item") or {}, attribute_size(put.get("Item")), False))
                    elif delete:
                        writes.append((table, delete.get("Key") or {}, 0, False))
        else:
            key = p.get("Key") or p.get("Item") or {}
            sent = attribute_size(p.get("Item") or p.get("ExpressionAttributeValues") or {})
            writes.append((str(p.get("TableName", "")), key, sent, False))
        s = self.settings
        for table, key, sent, transactional in writes:
            partition_attr, stored = self._item(table, key) if self._item else ("pk", 0)
            partition = json.dumps(key.get(partition_attr or "pk"), sort_keys=True)
            units = write_units(max(stored, stored + sent if operation == "UpdateItem" else sent), transactional)
            if not self._take("dynamodb", f"{table} {partition}", s.key_wcu_per_second, s.key_wcu_per_second, units):
                return f"{table} {partition_attr}={partition}"
        return None

    def _lambda(self, operation: str, params: Callable[[], JsonObject]) -> tuple[str, str] | None:
        s = self.settings
        if operation in ("CreateFunction", "UpdateFunctionConfiguration", "UpdateFunctionCode"):
            name = str(params().get("FunctionName", ""))
            self._lambda_seen[name] = self.clock()  # Lambda (re)creates its resources: Active
            return None
        if operation != "Invoke":
            return None
        name = str(params().get("FunctionName", ""))
        now = self.clock()
        last = self._lambda_seen.get(name)
        if self._lambda_pending.get(name, 0) > 0:
            self._lambda_pending[name] -= 1
            return "ResourceNotReadyException", name
        if last is not None and now - last > s.lambda_idle_seconds:
            # Inactive: this invoke fails; Lambda sets the function to Pending and recreates it
            self._lambda_seen[name] = now
            self._lambda_pending[name] = s.lambda_pending_invokes
            return "ResourceNotReadyException", name
        self._lambda_seen[name] = now
        if self._lambda_in_flight >= s.lambda_concurrency:
            return "TooManyRequestsException", f"{self._lambda_in_flight} invocations in flight"
        self._lambda_in_flight += 1
        return None

    def done(self, service: str, operation: str) -> None:
        """moto answered a call the rules let through."""
        if service == "lambda" and operation == "Invoke":
            with self._lock:
                self._lambda_in_flight = max(0, self._lambda_in_flight - 1)


def settings_for(profile: str, **overrides: Any) -> Settings:
    """A profile's settings with ``overrides`` by name (a wrong name is refused, naming the right ones)."""
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown fault setting(s) {', '.join(unknown)}: one of {', '.join(sorted(known))}")
    return replace(PROFILE_SETTINGS[profile], **overrides)


def rules_for(profile: str, *, seed: int | None = None, clock: Callable[[], float] | None = None,
              **overrides: Any) -> Rules:
    from jobplane.platform.local import moto_patches

    return Rules(settings_for(profile, **overrides), seed, clock or time.monotonic, moto_patches.dynamodb_item)
