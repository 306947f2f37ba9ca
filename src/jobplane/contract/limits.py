"""AWS's documented size and count limits our compiled resources approach, in one table: each
with its value, the error AWS answers on excess and the page that says so. The local engine
enforces each (docs/local-engine.md "Limits and faults"), so a run that passes locally cannot
exceed one on AWS; contract/quotas.py holds the account quotas `jobplane plan` counts, and the
count limits here take their values from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

from jobplane.contract.quotas import BY_KEY as QUOTAS

#: The local AWS's fault profiles (jobplane.platform.local.faults; `jobplane dev --faults`, [dev] faults).
FAULT_PROFILES = ("none", "aws-typical", "storm")


@dataclass(frozen=True)
class Limit:
    name: str
    what: str
    value: int
    unit: str  # "bytes", "characters" or "count"
    error: str  # what AWS answers past it
    where: str  # the call or state that fails
    source: str  # the AWS page that states it
    #: who refuses it locally: "moto" (the pinned moto already does, proven by a test) or
    #: "engine" (the moto patch aws_limits, with a stock-vs-fixed probe)
    enforced_by: str


KIB = 1024
MIB = 1024 * KIB

LIMITS: tuple[Limit, ...] = (
    Limit("state_payload", "a state's input or output (UTF-8 JSON)", 256 * KIB, "bytes", "States.DataLimitExceeded",
          "any state, when it ends", "https://docs.aws.amazon.com/step-functions/latest/dg/limits-overview.html",
          "moto"),
    Limit("map_result", "a Map state's collected result (without a ResultWriter)", 256 * KIB, "bytes",
          "States.DataLimitExceeded", "the Map state, when its items have ended",
          "https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html", "moto"),
    Limit("ecs_overrides", "RunTask's overrides, JSON formatting characters included", 8192, "characters",
          "InvalidParameterException", "ecs:RunTask (the step's Task: ECS.InvalidParameterException)",
          "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_RunTask.html", "engine"),
    Limit("lambda_environment", "a function's environment variables, in aggregate", 4 * KIB, "bytes",
          "InvalidParameterValueException", "lambda:CreateFunction, lambda:UpdateFunctionConfiguration",
          "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html", "engine"),
    Limit("lambda_invoke_request", "a synchronous invocation's payload", 6 * MIB, "bytes",
          "RequestTooLargeException", "lambda:Invoke (the step's Task: Lambda.RequestTooLargeException)",
          "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html", "engine"),
    Limit("lambda_invoke_response", "a synchronous invocation's response", 6 * MIB, "bytes",
          "Function.ResponseSizeTooLarge", "lambda:Invoke (a function error: the step's Task fails with it)",
          "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html", "moto"),
    Limit("dynamodb_item", "an item, its attribute names and values", 400 * KIB, "bytes", "ValidationException",
          "dynamodb:PutItem, UpdateItem, TransactWriteItems",
          "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html", "moto"),
    Limit("sns_message", "a message (UTF-8)", 256 * KIB, "bytes", "InvalidParameter", "sns:Publish",
          "https://docs.aws.amazon.com/sns/latest/api/API_Publish.html", "engine"),
    Limit("schedules", "EventBridge Scheduler schedules", QUOTAS["schedules"].default, "count",
          "ServiceQuotaExceededException", "scheduler:CreateSchedule (terraform apply)", QUOTAS["schedules"].source,
          "engine"),
    Limit("event_rules", "rules on an event bus", QUOTAS["event_rules"].default, "count", "LimitExceededException",
          "events:PutRule (terraform apply)", QUOTAS["event_rules"].source, "engine"),
)
BY_NAME = {limit.name: limit for limit in LIMITS}


def environment_size(variables: Mapping[str, str]) -> int:
    """The size held to Lambda's "4 KB, for all environment variables associated with the
    function, in aggregate" (Lambda quotas, link in LIMITS): the variables as the API carries
    them, JSON in UTF-8. AWS does not publish its exact measure; this one counts every name and
    value byte plus the JSON punctuation, so it errs on the side of refusing."""
    return len(json.dumps(dict(variables), separators=(",", ":"), ensure_ascii=False).encode())


def overrides_size(overrides: object) -> int:
    """RunTask's overrides as ECS counts them: "A total of 8192 characters are allowed for
    overrides. This limit includes the JSON formatting characters of the override structure"
    (API_RunTask, ``overrides``)."""
    return len(json.dumps(overrides, separators=(",", ":"), ensure_ascii=False))
