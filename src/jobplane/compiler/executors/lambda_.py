"""Lambda: each attempt is a ``lambda:invoke`` (request-response) of the job's runner function,
built from the runner image, which runs the step with the same runner as ECS
(contract/lambda_step.py, runner/lambda_handler.py).

The Task's own retries are the Lambda service's transient errors, as AWS recommends for the
Lambda integration, and a few quick tries of the errors that say the function cannot run now
(not ready after weeks idle, being updated, throttled, out of network interfaces:
contract/lambda_step.py INFRA_ERRORS), which then go to the check and the bounded infrastructure
retry ECS steps use (executors/base.py infra_states), never to the step's failure while it
lasts; the step's own failures arrive as the handler's error (its name says
retryable or permanent, its message the exit code and log stream) and, for a step that may be
retried, go to the check, which retries them through the same loop as an ECS step's; anything
else the function raised (it could not even import the runner) fails the step at once. A
success goes straight on to the next state (no check: the handler returns only on success).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from jobplane.compiler.choice_rules import Test, When, all_of
from jobplane.compiler.executors.base import Attempt, AttemptBuilder, TerraformContext, error_is, infra_left, infra_states
from jobplane.compiler.overrides import function_environment, longest_source, step_environment
from jobplane.compiler.state_data import ERROR
from jobplane.compiler.states import Catch, Choice, Graph, Retry, Task
from jobplane.compiler.terraform_iam import ACCOUNT, PARTITION, REGION, assume, progress_statements, resolved_params_statement, secret_scope_tags, secret_statements, statement
from jobplane.contract import lambda_step
from jobplane.contract import states as sn
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.model import Job, Step
    from jobplane.compiler.peak import Peak
    from jobplane.contract.catalog import CatalogStep

# AWS's recommended retry of the service's transient errors (contract/lambda_step.py), with jitter
# so many steps throttled at once do not retry in step.
LAMBDA_SERVICE_RETRY = Retry(lambda_step.SERVICE_ERRORS, 6, interval=2, backoff=2.0, max_delay=60, full_jitter=True)
# The function cannot run now (not ready, being updated, throttled, out of ENIs or addresses:
# lambda_step.INFRA_ERRORS): a few quick tries, jittered, then the bounded infrastructure retry.
LAMBDA_INFRA_RETRY = Retry(lambda_step.INFRA_ERRORS, 3, interval=5, backoff=2.0, max_delay=60, full_jitter=True)
#: Lambda function memory, MB ("Configure Lambda function memory": 128 to 10,240 MB,
#: https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
MEMORY_RANGE = (128, 10240)
#: How long a Lambda step's logs are kept (as the runner's log group on ECS: runner.tf).
LOG_RETENTION_DAYS = 365


def replace_problems(job: Job, steps: list[Step]) -> Iterator[tuple[str, str]]:
    """(field, message): REPLACE is refused for a job with Lambda steps (``steps``).

    REPLACE promises that the newer run runs *in place of* the older one (docs/dsl.md,
    Policies): the older execution is stopped, and with it its step's work. An ECS step's task is
    stopped with it (a .sync Task stops the task it started when its execution stops: SIGTERM,
    then SIGKILL after the container's stop timeout, 30 s by default: the overlap REPLACE
    accepts). A Lambda step is a synchronous ``lambda:invoke``: stopping the execution does not
    stop the invocation, which runs to its end (up to 15 minutes) beside the newer run, the
    overlap REPLACE exists to prevent ("Invoke": an invocation cannot be cancelled,
    https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html; contract/executor_runtime.py
    ``LambdaRuntime.stops_with_execution``). Having the handler poll its own execution and kill
    the step would stop it seconds late, and give every runner function a grant on Step
    Functions and a path to its endpoint: refused instead, with what to do."""
    from jobplane.contract.statuses import Policy

    if job.policy is not Policy.REPLACE or not steps:
        return
    yield ("policy", f"REPLACE cannot stop a Lambda step ({', '.join(repr(s.name) for s in steps)}): stopping a run does "
                     "not stop its Lambda invocation, which would run on beside the newer run; run those steps on "
                     "ECS (jp.python), or choose SKIP_IF_RUNNING (docs/dsl.md, Policies)")


def environment_problems(job: Job, steps: list[Step]) -> Iterator[tuple[str, str]]:
    """(field, message) when the job's runner function's environment (for ``steps``, its Lambda
    steps), as its Terraform sets it and measured as Lambda measures it, would be over Lambda's
    4 KB: Lambda would refuse the function at apply (issue 62 finding 6)."""
    if not steps:
        return
    sources = {k: longest_source(v) for s in steps for k, v in sorted(s.secrets.items())}
    # the table's name is the deployment's name prefix: measured at its longest, as each ARN
    from jobplane.contract import progress
    from jobplane.contract.config import NAME_PREFIX_MAX

    environment = function_environment(job, steps, sources) | {progress.ENV_TABLE: "x" * NAME_PREFIX_MAX}
    size = lambda_step.environment_size(environment)
    if size <= lambda_step.ENVIRONMENT_LIMIT:
        return
    yield ("steps", f"its runner function's environment would take {size:,} bytes, over Lambda's "
                    f"{lambda_step.ENVIRONMENT_LIMIT:,} for a function's environment, which cannot be raised "
                    f"({lambda_step.ENV_STEP_DIGESTS}: {len(steps)} Lambda steps, {lambda_step.ENV_SECRET_SOURCES}: "
                    f"{len(sources)} secrets, each ARN at its longest): move some of its Lambda steps to "
                    "another job, or run them on ECS")


def payload(b: AttemptBuilder, step: Step, counter: str | None) -> JsonObject:
    """The invocation's payload: the environment an ECS step's container gets, as a map."""
    env: JsonObject = {}
    for var in step_environment(b.job, step, counter):
        if "Value.$" in var:
            env[f"{var['Name']}.$"] = var["Value.$"]
        else:
            env[var["Name"]] = var["Value"]
    return {lambda_step.PAYLOAD_ENVIRONMENT: env}


class LambdaExecutor:
    name = "lambda"
    runs_map_items = False  # a map's each step runs on ECS
    #: checkov findings a runner function cannot fix, with why: written into the team root's
    #: .checkov.yaml by the compiler (checkov reads no inline skip in a .tf.json), so the root
    #: passes `make tfcheck` with each reason on record. Only Lambda functions have these checks,
    #: and the runner functions are a team root's only ones.
    checkov_skips = {
        "CKV_AWS_272": "a container-image function cannot be code-signed (Lambda signs .zip packages only: "
                       "https://docs.aws.amazon.com/lambda/latest/dg/configuration-codesigning.html); "
                       "the image is the runner image the pipeline built and pushed",
        "CKV_AWS_116": "invoked synchronously by Step Functions (lambda:invoke, request-response), which "
                       "catches and records every failure; a dead-letter queue only receives asynchronous events",
        "CKV_AWS_50": "the runner continues each run's W3C trace context (TRACEPARENT) in its logs, as on ECS; "
                      "X-Ray would need a grant on every resource (its write actions have no resource-level "
                      "permissions), and a job's roles name their resources",
        "CKV_AWS_115": "a reservation per job would take from the account's unreserved concurrency, of which "
                       "100 must stay free (a new account may have 10 in all): "
                       "https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html",
    }

    def problems(self, step: Step) -> Iterator[str]:
        if step.timeout > lambda_step.MAX_TIMEOUT:
            yield (f"timeout {step.timeout}s is longer than Lambda's limit of {lambda_step.MAX_TIMEOUT}s (15m); "
                   "run a longer step on ECS (jp.python)")
        low, high = MEMORY_RANGE
        if not low <= step.memory <= high:
            yield f"memory {step.memory} MB is outside Lambda's {low}-{high} MB"
        if step.cpu != 256:
            yield "cpu does not apply to a lambda step: Lambda gives CPU in proportion to memory"

    def raw_problems(self, step: JsonObject) -> Iterator[str]:
        return iter(())

    def job_problems(self, job: Job, steps: list[Step]) -> Iterator[tuple[str, str]]:
        yield from replace_problems(job, steps)
        yield from environment_problems(job, steps)

    def plan_lines(self, steps: list[CatalogStep]) -> list[str]:
        """Which steps run on Lambda, and which short steps of another executor could: those
        whose runner dispatch a runner function runs too (a python step), with a timeout Lambda
        allows. The choice docs/dsl.md "Lambda or ECS" explains (a Fargate task starts in tens
        of seconds, a warm Lambda in about one; a Lambda attempt lasts at most 15 minutes)."""
        from jobplane.contract.step_kinds import Executor, kind_info

        on_lambda = [s.name for s in steps if kind_info(s.kind).executor.value == self.name]
        could = [s.name for s in steps if kind_info(s.kind).executor not in (Executor.GROUP, Executor(self.name))
                 and kind_info(s.kind).runner_kind in lambda_step.KINDS and s.timeout is not None
                 and s.timeout <= lambda_step.MAX_TIMEOUT]
        lines = []
        if on_lambda:
            lines.append(f"on Lambda: {', '.join(on_lambda)} (at most 15 min an attempt, starts in about a second; "
                         "docs/dsl.md \"Lambda or ECS\")")
        if could:
            lines.append(f"could run on Lambda (python, timeout <= 15m): {', '.join(could)} (jp.lambda starts in about a "
                         "second, a Fargate task in tens of seconds; docs/dsl.md \"Lambda or ECS\")")
        return lines

    def peak(self, step: Step) -> Peak:
        """One invocation of the account's Lambda concurrency."""
        from jobplane.compiler.peak import Peak

        return Peak(lambda_concurrency=1)

    def attempt_states(self, b: AttemptBuilder, step: Step, nxt: str, is_last: bool, into: Graph, record: bool) -> str:
        a = Attempt.of(b, step, into, record)
        attempts, result, counter, failed, timed_out = a.attempts, a.result, a.counter, a.failed, a.timed_out
        at_step, name, check, retried = a.at_step, a.name, a.check, a.retried
        into.add(name, Task(
            comment=f"lambda step, up to {attempts} attempt{'s' if retried else ''}",
            resource=lambda_step.INVOKE_RESOURCE,
            parameters={"FunctionName": lambda_step.function_name(b.prefix, b.job.name),
                        "Payload": payload(b, step, counter if retried else None)},
            result_selector={"Payload.$": "$.Payload"},
            result_path=result,
            timeout_seconds=step.timeout,
            retry=[LAMBDA_SERVICE_RETRY, LAMBDA_INFRA_RETRY],
            # Only a success returns (the handler raises every failure): it goes straight on. The
            # function that could not run (lambda_step.INFRA_ERRORS) goes to the check, which
            # runs the same attempt again while the run's infrastructure budget lasts; a step
            # that may be retried sends its own failures there too; anything else is recorded.
            catch=[Catch(["States.Timeout"], timed_out, ERROR, assign=at_step),
                   Catch([*lambda_step.INFRA_ERRORS, *(lambda_step.ERRORS if retried else ())], check, ERROR),
                   Catch(["States.ALL"], failed, ERROR)],
            next=nxt))
        choices = [When(all_of(error_is(lambda_step.INFRA_ERRORS), infra_left()), infra_states(step, into))]
        if retried:
            # past the infrastructure budget an infrastructure error is the attempt's failure,
            # retried as one (the ECS executor does the same with RunTask's capacity failures)
            choices += [When(Test(counter, "NumericGreaterThanEquals", attempts), failed),
                        When(error_is((lambda_step.ERROR_RETRYABLE, *lambda_step.INFRA_ERRORS)),
                             b.retry_loop(step, into))]
        into.add(check, Choice(choices=choices, default=failed))
        return name

    # -- Terraform ---------------------------------------------------------------------------
    def role_statements(self, tf: TerraformContext, steps: list[Step]) -> list[JsonObject]:
        function = lambda_step.function_name(tf.config.name_prefix, tf.job.name)
        arn = f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:{function}"
        # InvokeFunction on the function and its versions ("IAM policies for invoking AWS Lambda",
        # https://docs.aws.amazon.com/step-functions/latest/dg/lambda-iam.html)
        return [statement("InvokeRunnerFunction", ["lambda:InvokeFunction"], [arn, f"{arn}:*"])]

    def token_bindings(self, tf_id: str, steps: list[Step]) -> dict[str, str]:
        return {}  # its function's name is compiled into the Task, not bound

    def resources(self, tf: TerraformContext, steps: list[Step]) -> None:
        """The job's runner function, from the runner image, with a role of its own that reads
        only the secrets its Lambda steps name, in the platform's subnets like an ECS task."""
        tid, job, docs = tf.tid, tf.job, tf.docs
        prefix = tf.config.name_prefix
        function = lambda_step.function_name(prefix, job.name)
        role = f"{tid}_lambda"
        secrets = {k: v for s in steps for k, v in sorted(s.secrets.items())}
        docs[f"{role}_assume"] = assume("lambda.amazonaws.com")
        sources, reads = secret_statements(role, secrets, tf)
        statements: list[JsonObject] = [
            statement("WriteItsLogs", ["logs:CreateLogStream", "logs:PutLogEvents"],
                      [f"arn:{PARTITION}:logs:{REGION}:{ACCOUNT}:log-group:/aws/lambda/{function}:*"]),
            *reads,
            # its steps' jobplane.progress / metric / resume_from, as the ECS runner role's
            *progress_statements("${local.platform.table_arn}", job.name),
            # a scheduled fire's calendar defaults, recorded as its runner resolved them
            *([resolved_params_statement("${local.platform.table_arn}", job.name)] if job.param_set.calendar_defaults() else []),
        ]
        docs[role] = {"statement": statements}
        tf.roles[role] = {"name": lambda_step.role_name(prefix, job.name),
                          "description": f"Lambda role of jobplane job {job.name}'s runner function",
                          "assume_role_policy": f"${{data.aws_iam_policy_document.{role}_assume.json}}",
                          **({"tags": secret_scope_tags(job)} if secrets else {})}
        tf.role_policies[role] = {"name": "runner", "role": f"${{aws_iam_role.{role}.id}}",
                                  "policy": f"${{data.aws_iam_policy_document.{role}.json}}"}
        # ENIs in the platform's subnets ("Giving Lambda functions access to resources in an
        # Amazon VPC": the AWSLambdaVPCAccessExecutionRole managed policy)
        tf.attachments[f"{role}_vpc"] = {
            "role": f"${{aws_iam_role.{role}.name}}",
            "policy_arn": f"arn:{PARTITION}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"}
        tf.resource["aws_cloudwatch_log_group"] = {role: {
            "name": f"/aws/lambda/{function}", "retention_in_days": LOG_RETENTION_DAYS,
            "kms_key_id": "${local.platform.kms_key_arn}",
            "tags": {"jobplane:job": job.name, "jobplane:team": job.team}}}
        environment = function_environment(job, steps, sources)
        timeout = min(lambda_step.MAX_TIMEOUT, max(s.timeout for s in steps) + lambda_step.FUNCTION_TIMEOUT_MARGIN)
        tf.resource["aws_lambda_function"] = {role: {
            "function_name": function,
            "description": f"jobplane runner of job {job.name} ({job.team}): its lambda steps",
            "role": f"${{aws_iam_role.{role}.arn}}",
            "package_type": "Image",
            "image_uri": "${local.platform.runner_image}",
            # the runtime interface client runs the handler ("Using an alternative base image
            # with the runtime interface client",
            # https://docs.aws.amazon.com/lambda/latest/dg/python-image.html#python-image-clients)
            "image_config": {"entry_point": list(lambda_step.IMAGE_ENTRY_POINT),
                             "command": [lambda_step.HANDLER]},
            "memory_size": max(s.memory for s in steps),
            "timeout": timeout,
            "environment": {"variables": environment},
            "kms_key_arn": "${local.platform.kms_key_arn}",
            # the runner continues the run's W3C trace context in its logs, as on ECS; X-Ray would
            # need a grant on "*" (its write actions have no resource-level permissions)
            "tracing_config": {"mode": "PassThrough"},
            "vpc_config": {"subnet_ids": "${split(\",\", local.platform.subnets)}",
                           "security_group_ids": "${split(\",\", local.platform.security_groups)}"},
            "depends_on": [f"aws_cloudwatch_log_group.{role}"],
            "tags": {"jobplane:job": job.name, "jobplane:team": job.team},
        }}


LAMBDA = LambdaExecutor()
