"""The local AWS's side of contract/limits.py: a call past one of AWS's documented limits fails
here as AWS fails it (the same error code and HTTP status), before moto answers it. The moto
patch ``aws_limits`` asks :func:`excess` about every call of the services it wraps; the rows
moto already refuses (``enforced_by="moto"``) are not checked again.
"""

from __future__ import annotations

from typing import Callable

from jobplane.contract.limits import BY_NAME, environment_size, overrides_size
from jobplane.contract.types import JsonObject
from jobplane.platform.local.moto_patches.shared import FaultAnswer
from jobplane.platform.local.moto_patches.backends import count_schedules, event_rules, schedule_quota_error

REGION = "us-east-1"  # the engine's (engine.REGION): moto's backends are per region


def _over(name: str, size: int) -> bool:
    return size > BY_NAME[name].value


def excess(service: str, operation: str, params: Callable[[], JsonObject]) -> FaultAnswer | None:
    """AWS's answer to a call that exceeds a limit (None: within every limit)."""
    if service == "ecs" and operation == "RunTask":
        overrides = params().get("overrides")
        if overrides is not None and _over("ecs_overrides", overrides_size(overrides)):
            return FaultAnswer(400, "InvalidParameterException",
                               f"Container Overrides length must be at most {BY_NAME['ecs_overrides'].value}")
    elif service == "lambda" and operation in ("CreateFunction", "UpdateFunctionConfiguration"):
        variables = (params().get("Environment") or {}).get("Variables") or {}
        if isinstance(variables, dict) and _over("lambda_environment", environment_size(variables)):
            return FaultAnswer(400, "InvalidParameterValueException",
                               "Lambda was unable to configure your environment variables because the environment "
                               "variables you have provided exceeded the 4KB limit. String measured: "
                               f"{environment_size(variables)} bytes")
    elif service == "lambda" and operation == "Invoke":
        payload = params().get("Payload") or b""
        if isinstance(payload, (bytes, str)) and _over("lambda_invoke_request", len(payload)):
            return FaultAnswer(413, "RequestTooLargeException",
                               f"Request must be smaller than {BY_NAME['lambda_invoke_request'].value} bytes for "
                               "the InvokeFunction operation")
    elif service == "sns" and operation == "Publish":
        message = params().get("Message") or ""
        if isinstance(message, str) and _over("sns_message", len(message.encode())):
            return FaultAnswer(400, "InvalidParameter", "Invalid parameter: Message too long")
    elif service == "scheduler" and operation == "CreateSchedule":
        refused = schedule_quota_error(count_schedules(REGION))
        if refused is not None:
            return FaultAnswer(402, "ServiceQuotaExceededException", str(refused))
    elif service == "events" and operation == "PutRule":
        p = params()
        rules = event_rules(REGION, str(p.get("EventBusName") or "default"))
        if p.get("Name") not in rules and len(rules) >= BY_NAME["event_rules"].value:
            return FaultAnswer(400, "LimitExceededException",
                               f"The requested resource exceeds the maximum number allowed "
                               f"({BY_NAME['event_rules'].value} rules on an event bus).")
    return None
