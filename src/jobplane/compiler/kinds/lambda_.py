"""``jp.lambda(name, 'package.module:function', kwargs)``: a python function run by the same
runner inside a Lambda function built from the runner image (contract/lambda_step.py).

Why a second place to run: a Fargate task takes tens of seconds to start and is billed for at
least a minute, while a warm Lambda starts in about a second and bills by the millisecond; a
Lambda runs at most 15 minutes. docs/dsl.md "Lambda or ECS" says when to choose which.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from jobplane.compiler.kinds.base import StepKind
from jobplane.compiler.kinds.python import PYTHON_TARGET
from jobplane.contract import lambda_step
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.model import Step


class LambdaKind(StepKind):
    name = "lambda"
    spec = PYTHON_TARGET
    takes_kwargs = True
    helper = "lambda(name, target, kwargs={}, opts={})"
    #: what a Lambda step has instead of the common defaults: Lambda's own limit as its timeout
    defaults: JsonObject = {"timeout": lambda_step.MAX_TIMEOUT}

    def problems(self, step: Step) -> Iterator[str]:
        yield from self.executor.problems(step)
