"""The moto patch ``lambda_local_functions``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_lambda_local_functions`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

from typing import Any


#: Who answers Invoke for the runner functions (fix_lambda_local_functions): the local Lambda
#: agents, newest last. Each has ``handles(fn) -> bool`` and ``invoke(fn, body, response_headers) -> bytes``.
LAMBDA_RUNNERS: list[Any] = []


def fix_lambda_local_functions() -> None:
    """moto's Lambda runs a function's code in Docker: without it an Invoke fails inside moto (an
    image function: ``AttributeError: 'LambdaFunction' object has no attribute 'code_digest'``,
    States.TaskFailed for the Task). Locally a Lambda step's function is the runner's handler
    (:mod:`jobplane.platform.local.lambda_agent`): Invoke hands a runner function to the newest
    agent in ``LAMBDA_RUNNERS`` and answers with what it says (the payload, and the
    function-error header a raised error sets, which the Step Functions interpreter reads). Any
    other function goes to moto as before."""
    from moto.awslambda.models import LambdaBackend

    original = LambdaBackend.invoke

    def invoke(self, function_name, qualifier, body, headers, response_headers):
        agent = LAMBDA_RUNNERS[-1] if LAMBDA_RUNNERS else None
        if agent is not None:
            fn = self.get_function(function_name, qualifier)
            if agent.handles(fn):
                payload = agent.invoke(fn, body, response_headers)
                response_headers["Content-Length"] = str(len(payload))
                return payload
        return original(self, function_name, qualifier, body, headers, response_headers)

    LambdaBackend.invoke = invoke
