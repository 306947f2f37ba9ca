"""The Lambda runtimes jobplane may deploy, with the dates AWS has published for their end, in
one place: the base module's functions (terraform/platform), the Lambda package
(scripts/build_lambda.py builds its wheels for :data:`CURRENT_RUNTIME`) and any function the
compiler emits take their runtime from here, and tests/test_lambda_runtimes.py fails when one of
them is within :data:`MARGIN_DAYS` of its deprecation date.

Why a margin: after the deprecation date Lambda first blocks creating, then updating, functions
on the runtime ("Runtime deprecation policy",
https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html#runtime-support-policy), so an
apply that changes a function's code or settings fails from the "block function update" date on.

Dates: "Building Lambda functions with Python", its table of supported runtimes
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html): deprecation, block function
create, block function update. AWS has moved dates (python3.11's deprecation was published as
2026-06-30 and later as 2027-06-30; python3.10's as 2026-06-30, later 2026-10-31): the table
holds the latest published row, and the margin covers the next move.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class LambdaRuntime:
    identifier: str  # what aws_lambda_function.runtime says
    python: str  # the interpreter version the package's wheels are built for
    deprecation: date
    block_create: date
    block_update: date


RUNTIMES: dict[str, LambdaRuntime] = {r.identifier: r for r in (
    LambdaRuntime("python3.14", "3.14", date(2029, 6, 30), date(2029, 7, 31), date(2029, 8, 31)),
    LambdaRuntime("python3.13", "3.13", date(2029, 6, 30), date(2029, 7, 31), date(2029, 8, 31)),
    LambdaRuntime("python3.12", "3.12", date(2028, 10, 31), date(2028, 11, 30), date(2029, 1, 10)),
    LambdaRuntime("python3.11", "3.11", date(2027, 6, 30), date(2027, 7, 31), date(2027, 8, 31)),
    LambdaRuntime("python3.10", "3.10", date(2026, 10, 31), date(2026, 11, 30), date(2027, 1, 15)),
)}

#: The runtime of every function jobplane deploys (python3.13: every packaged dependency
#: publishes wheels for it at the locked versions).
CURRENT_RUNTIME = "python3.13"
CURRENT = RUNTIMES[CURRENT_RUNTIME]
#: How long before a runtime's deprecation date the test refuses it (about six months).
MARGIN_DAYS = 183


def too_close(identifier: str, today: date) -> str | None:
    """Why ``identifier`` may not be deployed any more on ``today`` (unknown, or within the
    margin of its deprecation date), or None."""
    runtime = RUNTIMES.get(identifier)
    if runtime is None:
        return f"{identifier} is not in jobplane.contract.lambda_runtimes.RUNTIMES (add its published dates)"
    left = (runtime.deprecation - today).days
    if left < MARGIN_DAYS:
        return (f"{identifier} is deprecated on {runtime.deprecation.isoformat()} ({left} days from {today.isoformat()}; "
                f"updates blocked from {runtime.block_update.isoformat()}): move to a newer runtime")
    return None
