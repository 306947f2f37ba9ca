"""The contract between a compiled Lambda step's Task and the runner's Lambda handler.

A Lambda step (``jp.lambda(name, 'pkg.mod:fn')``) runs the same runner as an ECS step, inside a
Lambda function built from the runner image: the state machine invokes the function with the
Step Functions Lambda integration (``arn:aws:states:::lambda:invoke``, request-response), the
payload carrying the very environment an ECS step's container gets (:mod:`jobplane.contract.runner`
``ENV_*``), and the handler (``jobplane.runner.lambda_handler.handler``) runs the step and answers:

* a success returns :class:`Answer`'s fields (``exit_code`` 0 and where its log went);
* a failure raises an error whose name (Lambda's ``errorType``, the Task's ``Error``) says its
  class, :data:`ERROR_RETRYABLE` or :data:`ERROR_PERMANENT`, and whose message (the ``Cause``'s
  ``errorMessage``) is the same JSON, so the state machine retries only what the runner would
  and the timeline reads the exit code and log stream back from the history.

Why a payload and not environment variables: a function's environment is fixed at deploy time,
while these values change per attempt. Lambda allows a 256 KB synchronous payload
(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html), far above the 8,192
characters ECS allows the same values (the step's params are budgeted for ECS's limit anyway).
"""

from __future__ import annotations

import json

from jobplane.contract.step_kinds import Executor, runner_kinds_on

TYPE_CHECKING = False  # standard library only on the Lambda handler's cold path (contract/step_kinds.py)
if TYPE_CHECKING:
    from collections.abc import Mapping

INVOKE_RESOURCE = "arn:aws:states:::lambda:invoke"
#: The payload's one key: the step's environment, name -> value (strings), as an ECS container's.
PAYLOAD_ENVIRONMENT = "environment"
#: Error names the handler raises (Python exception class names, so no dots).
ERROR_RETRYABLE = "JobplaneStepFailed"
ERROR_PERMANENT = "JobplaneStepFailedPermanently"
ERRORS = (ERROR_RETRYABLE, ERROR_PERMANENT)
#: The Lambda service's own transient errors, retried as AWS recommends for the Lambda
#: integration ("Handle Lambda service exceptions": ClientExecutionTimeoutException,
#: ServiceException, AWSLambdaException, SdkClientException, with IntervalSeconds 2, MaxAttempts
#: 6, BackoffRate 2, https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html).
#: An unhandled error (out of memory, the function's own timeout) is Lambda.Unknown: the step's failure.
SERVICE_ERRORS = ("Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException", "Lambda.AWSLambdaException",
                  "Lambda.SdkClientException")
#: Invoke's errors that say the function cannot run *now*, never that the step failed (Lambda API
#: reference, Invoke, "Errors": https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html):
#:
#: * ResourceNotReadyException: the function is Inactive or Pending. A VPC function idle for weeks
#:   goes Inactive (Lambda reclaims its network interfaces); "When you try to invoke a function
#:   that is inactive, the invocation fails and Lambda sets the function to pending state until
#:   the function resources are recreated" ("Lambda function states",
#:   https://docs.aws.amazon.com/lambda/latest/dg/functions-states.html): a monthly job's run.
#: * ResourceConflictException: the function is being updated (a deploy in progress).
#: * EC2ThrottledException, ENILimitReachedException, SubnetIPAddressLimitReachedException: EC2
#:   throttled the function's network set-up, or its VPC is out of interfaces or addresses.
#: * TooManyRequestsException: the account's concurrency (1,000 by default, "Lambda quotas",
#:   https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html) is in use.
#:
#: The Task retries them a few times itself, then the step's bounded infrastructure retry (the
#: ECS executor's: 15 s, 60 s, 180 s, not an attempt of the step) runs the same attempt again.
INFRA_ERRORS = ("Lambda.ResourceNotReadyException", "Lambda.ResourceConflictException",
                "Lambda.EC2ThrottledException", "Lambda.ENILimitReachedException",
                "Lambda.SubnetIPAddressLimitReachedException", "Lambda.TooManyRequestsException")
#: Lambda's hard limit on a function's timeout: 900 seconds
#: (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html).
MAX_TIMEOUT = 900
#: How much longer the function may run than the step's Task timeout, so the Task's own
#: TimeoutSeconds (States.Timeout, recorded TIMED_OUT) always fires first.
FUNCTION_TIMEOUT_MARGIN = 5


class Answer:
    """What the handler says about one attempt, on success (returned) or failure (the error's
    message, as JSON). ``log_group``/``log_stream``: where CloudWatch Logs holds its output.

    A plain immutable class, not a dataclass: the Lambda handler imports this module on its
    cold path, and ``dataclasses`` (with ``inspect``) was a third of its imports (issue 66
    item 2, bench/runner_start.py)."""

    __slots__ = ("exit_code", "log_group", "log_stream", "request_id")
    exit_code: int
    log_group: str
    log_stream: str
    request_id: str

    def __init__(self, exit_code: int, log_group: str, log_stream: str, request_id: str = ""):
        for name, value in zip(self.__slots__, (exit_code, log_group, log_stream, request_id)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Answer is read-only: cannot set {name!r}")

    def _fields(self) -> tuple[int, str, str, str]:
        return self.exit_code, self.log_group, self.log_stream, self.request_id

    def __eq__(self, other: object) -> bool:
        return self._fields() == other._fields() if isinstance(other, Answer) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "Answer(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

    def to_json(self) -> str:
        return json.dumps(dict(zip(self.__slots__, self._fields())), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Answer | None:
        """The answer in a handler's message, or None for anything else (an error raised before
        the handler ran: an import error of the package, a Lambda timeout)."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("exit_code"), int):
            return None
        return cls(exit_code=data["exit_code"], log_group=str(data.get("log_group", "")),
                   log_stream=str(data.get("log_stream", "")), request_id=str(data.get("request_id", "")))


def error_name(exit_code: int) -> str:
    """The error a failed attempt raises: permanent for the exit codes the runner never retries."""
    from jobplane.contract.runner import NOT_RETRIED_EXIT_CODES

    return ERROR_PERMANENT if exit_code in NOT_RETRIED_EXIT_CODES else ERROR_RETRYABLE


def function_name(prefix: str, job: str) -> str:
    """One function per job that has Lambda steps: its role is the job's own (the secrets and
    calls it declares), as an ECS step's task role is. At most 64 characters (names.LIMITS)."""
    return f"{prefix}-{job}-runner"


def role_name(prefix: str, job: str) -> str:
    """The function's execution role (names.LIMITS: 64 characters)."""
    return f"{prefix}-{job}-lambda"


#: The function's environment variable naming where each secret of its steps is read from
#: (JSON: ENV_NAME -> Secrets Manager secret ARN or SSM parameter ARN). ECS injects secrets into
#: the container; a Lambda function cannot, so the handler reads them with the function's role
#: (which may read exactly these) before it starts the runner.
ENV_SECRET_SOURCES = "JOBPLANE_SECRET_SOURCES"


#: The payload's list of the step's own secrets (comma-separated ENV_NAMEs, in the digested part):
#: the handler reads only these of :data:`ENV_SECRET_SOURCES`, so each Lambda step of a job gets
#: its own secrets, not those of the job's other Lambda steps. The runner redacts the values of
#: the variables it names (runner/logs.py), as an ECS task definition's list.
ENV_STEP_SECRETS = "JOBPLANE_SECRET_NAMES"

#: Lambda's limit on a function's environment: "The total size of all environment variables
#: doesn't exceed 4 KB" (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html;
#: "Function configuration ... Environment variables: 4 KB, for all environment variables
#: associated with the function, in aggregate",
#: https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). Over it, CreateFunction
#: and UpdateFunctionConfiguration fail with InvalidParameterValueException.
ENVIRONMENT_LIMIT = 4096


def environment_size(variables: Mapping[str, str]) -> int:
    """How Lambda measures a function's environment against :data:`ENVIRONMENT_LIMIT`: the bytes
    of the variables as one compact JSON object, names and values with their quotes, ':' and
    ','. Its refusal quotes that very string ("... exceeded the 4KB limit. String measured:
    {\"NAME\":\"value\",...}", as reported from UpdateFunctionConfiguration in
    github-aws-runners/terraform-aws-github-runner#3594): at least the names and values alone."""
    return len(json.dumps(dict(variables), separators=(",", ":"), ensure_ascii=False).encode())


def secret_sources_json(sources: dict[str, str]) -> str:
    return json.dumps(dict(sorted(sources.items())), separators=(",", ":"))


#: The image's entry point and handler when Lambda runs it: the runtime interface client, as in
#: AWS's "Using an alternative base image with the runtime interface client".
IMAGE_ENTRY_POINT = ("python", "-m", "awslambdaric")
HANDLER = "jobplane.runner.lambda_handler.handler"


# -- what the function's own environment carries (set at deploy time by the compiled Terraform) --

#: The digests (:func:`step_digest`, comma-separated) of the fixed part of each Lambda step's
#: environment: the handler runs only an invocation whose payload matches one of them. A payload
#: is input from whoever may invoke the function (hostile until proved otherwise): without this
#: check a caller could name any importable callable as the target (``subprocess:run``) and run it
#: with the job's role. ~65 characters a step, well inside Lambda's 4 KB for a function's
#: environment (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
ENV_STEP_DIGESTS = "JOBPLANE_LAMBDA_STEPS"
#: The payload's names whose values change from attempt to attempt (set with ``.$`` paths in the
#: Task): everything else in a payload is fixed by the compiled definition and digested.
RUN_TIME_NAMES = frozenset({"JOBPLANE_EXECUTION_ID", "JOBPLANE_SCHEDULED_TIME", "JOBPLANE_TRIGGER", "JOBPLANE_PARAMS",
                            "JOBPLANE_ATTEMPT", "TRACEPARENT"})
#: The runner dispatches a runner function runs (the target of ``jp.lambda(name, 'pkg.mod:fn')``):
#: those of the kinds contract/step_kinds.py declares on the Lambda executor, read from there.
KINDS: tuple[str, ...] = runner_kinds_on(Executor.LAMBDA)


def step_digest(environment: Mapping[str, object]) -> str:
    """SHA-256 (hex) of a step's fixed environment: every name but :data:`RUN_TIME_NAMES`, with
    its value, in canonical JSON. The handler computes it over the environment it was sent; the
    compiler (and the local engine) over the Task's ``Payload.environment``, whose paths (names
    ending ``.$``) are the run-time names and are left out here::

        ",".join(sorted(step_digest(payload["environment"]) for each Lambda step of the job))

    is the function's :data:`ENV_STEP_DIGESTS`."""
    fixed = {k: v for k, v in environment.items() if k not in RUN_TIME_NAMES and not k.endswith(".$")}
    text = json.dumps(fixed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return _sha256_hex(text.encode())


def _sha256_hex(data: bytes) -> str:
    """SHA-256 by CPython's own module (``_sha2`` from 3.12, ``_sha256`` before), which hashlib
    falls back to itself: hashlib's import loads OpenSSL, ~3 ms of every Lambda step's cold start
    (the handler checks each payload's digest: issue 66 item 2, bench/runner_start.py)."""
    for name in ("_sha2", "_sha256"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        return str(module.sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


def log_group(function: str) -> str:
    """Where Lambda writes a function's output by default
    (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html)."""
    return f"/aws/lambda/{function}"


def function_of_log_group(group: str) -> str | None:
    prefix = log_group("")
    return group[len(prefix):] or None if group.startswith(prefix) else None


#: Lambda marks each invocation in its log stream (one stream per execution environment, shared
#: by the invocations it serves one after another): ``START RequestId: <id> Version: $LATEST``
#: before the handler's output, ``END RequestId: <id>`` and ``REPORT RequestId: <id> ...`` after.
START_MARK = "START RequestId: "
END_MARK = "END RequestId: "
REPORT_MARK = "REPORT RequestId: "


def invocation_lines(lines: list[str], request_id: str) -> list[str]:
    """One invocation's lines of a stream: from its START line to its END line; the whole stream
    when it has no START line for that request (a stream written by something else)."""
    start = f"{START_MARK}{request_id}"
    begin = next((i for i, line in enumerate(lines) if line.startswith(start)), None)
    if not request_id or begin is None:
        return lines
    end = next((i for i in range(begin + 1, len(lines)) if lines[i].startswith(f"{END_MARK}{request_id}")), len(lines))
    return lines[begin + 1:end]


#: How the local AWS runs one invocation without Lambda (platform/local/lambda_agent.py): the
#: handler's module as a process of its own, standing in for the runtime interface client, with
#: the event on stdin, the context in these variables (besides Lambda's own
#: AWS_LAMBDA_LOG_GROUP_NAME / AWS_LAMBDA_LOG_STREAM_NAME / AWS_LAMBDA_FUNCTION_NAME) and the
#: answer written as JSON to the file named on its command line: ``{"result": ...}`` or
#: ``{"errorType", "errorMessage", "stackTrace"}``.
LOCAL_RUNTIME_MODULE = "jobplane.runner.lambda_handler"
ENV_LOCAL_REQUEST_ID = "JOBPLANE_LOCAL_REQUEST_ID"
ENV_LOCAL_DEADLINE = "JOBPLANE_LOCAL_DEADLINE"  # epoch seconds when the function's timeout runs out
