"""ECS on Fargate: each attempt is an ``ecs:runTask.sync`` Task of the runner image; a task that
ran to its end with exit code 0 goes straight on, and a failed one reaches a **check** Choice on
its StopCode and exit code.

On AWS a non-zero exit of an essential container fails the ``.sync`` Task (States.TaskFailed,
the stopped task's JSON as Cause): an AWS Copilot maintainer in aws/copilot-cli#3160 ("If an
essential container exits with a non-zero exit code, then the States.TaskFailed error status is
returned"), AWS Copilot's own state machine (Retry on States.ALL, no exit-code check) and
LocalStack's AWS-recorded snapshot of a failed ``runTask.sync`` (shared notes, aws-facts). So a
Task that succeeded needs no check (issue 54: one state less per step); the local engine fails
the Task the same way (platform/local/moto_patches/sync_task_exit_code.py). A stop that neither
the step nor an operator chose is the infrastructure's, retried on its own bounded budget
without counting as an attempt.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from jobplane.compiler.choice_rules import Not, Rule, Test, When, all_of, any_of, equals, matches, present
from jobplane.compiler.executors.base import Attempt, AttemptBuilder, TerraformContext, error_is, infra_left, infra_states
from jobplane.compiler.overrides import container_overrides
from jobplane.compiler.state_data import ERROR, INFRA, INFRA_WAITS
from jobplane.compiler.states import Catch, Choice, Graph, Kept, Retry, Task
from jobplane.compiler.terraform_iam import ACCOUNT, PARTITION, REGION, execution_roles_arns, statement
from jobplane.compiler import task_roles
from jobplane.compiler.task_roles import task_roles_arns
from jobplane.contract import names
from jobplane.contract import progress
from jobplane.contract import runner as rc
from jobplane.contract import states as sn
from jobplane.contract.bindings import terraform_expressions, token
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.model import Job, Step
    from jobplane.compiler.peak import Peak
    from jobplane.contract.catalog import CatalogStep

RUN_TASK = "arn:aws:states:::ecs:runTask.sync"
# Launch failures, capacity and throttling: not the step's fault, retried with backoff, then
# (their quick retries spent) sent to the step's bounded infrastructure retry, as RunTask's
# capacity failures are (below), never straight to `failed`. RunTask is limited to 20 calls a
# second per account and Region, and Fargate launches to a bucket of 100 tasks refilled at 20 a
# second ("AWS Fargate throttling quotas",
# https://docs.aws.amazon.com/AmazonECS/latest/developerguide/throttling.html; "Request
# throttling for the Amazon ECS API",
# https://docs.aws.amazon.com/AmazonECS/latest/APIReference/request-throttling.html): a map
# of a few hundred items, or many jobs firing at the same minute, exhausts a Task's own four
# tries in well under the minutes a refilled bucket takes to serve them all.
ECS_INFRA_ERRORS = ("ECS.AmazonECSException", "ECS.ServerException", "ECS.ThrottlingException",
                    "ECS.LimitExceededException", "ECS.ServiceUnavailableException")
ECS_INFRA_RETRY = Retry(ECS_INFRA_ERRORS, 4, interval=5, backoff=2.0, max_delay=60, full_jitter=True)
# A task that ran and failed (States.TaskFailed, its exit code or StopCode in the Cause) goes to
# the check, and a timeout to its record: neither is retried here. Any other error of the RunTask
# call is the call's, not the step's: when RunTask answers with `failures` (no capacity, ...) the
# Task fails with `AmazonECS.Unknown` ("Key features of Optimized Amazon ECS/Fargate integration",
# https://docs.aws.amazon.com/step-functions/latest/dg/connect-ecs.html), and other call errors
# are not all documented by name, so whatever remains is retried with the same backoff before
# the Catch records it.
# Errors that a retry cannot mend are not retried either: a misconfiguration (the cluster, the
# parameters, the role) fails at once and is recorded. States.Runtime is never retriable on AWS
# (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html); moto's
# interpreter would retry it with States.ALL, so it is listed to behave the same in both places.
#: A misconfiguration: no retry mends it, and it is recorded at once (its own Catch, before the
#: States.TaskFailed one, which would match it too: see the Task's retry order).
ECS_MISCONFIGURED = ("States.Runtime", "States.Permissions", "ECS.ClusterNotFoundException",
                     "ECS.InvalidParameterException", "ECS.AccessDeniedException")
ECS_TASK_OUTCOMES = Retry(("States.TaskFailed", "States.Timeout", *ECS_MISCONFIGURED), 0)
#: RunTask's ``Failures`` (capacity, quota, ENI): "If a non-empty Failures field is encountered,
#: the task is failed with an AmazonECS.Unknown error" (Step Functions developer guide, "Run
#: Amazon ECS or Fargate tasks", https://docs.aws.amazon.com/step-functions/latest/dg/connect-ecs.html).
RUN_TASK_FAILURES = "AmazonECS.Unknown"
ECS_CALL_RETRY = Retry(("States.ALL",), 4, interval=5, backoff=2.0, max_delay=60, full_jitter=True)

#: Fargate CPU units -> allowed memory (MiB) as (low, high, step).
FARGATE_SIZES = {
    256: [(512, 512, 1), (1024, 2048, 1024)],
    512: [(1024, 4096, 1024)],
    1024: [(2048, 8192, 1024)],
    2048: [(4096, 16384, 1024)],
    4096: [(8192, 30720, 1024)],
    8192: [(16384, 61440, 4096)],
    16384: [(32768, 122880, 8192)],
}


def fargate_size_problem(cpu: int, memory: int) -> str | None:
    """What is wrong with a cpu/memory pair on Fargate, or None (also checked on the raw
    definition, so it is reported even when the step has other errors)."""
    sizes = FARGATE_SIZES.get(cpu)
    if sizes is None:
        return f"cpu {cpu} is not a Fargate size ({', '.join(map(str, FARGATE_SIZES))})"
    if not any(lo <= memory <= hi and (memory - lo) % step == 0 for lo, hi, step in sizes):
        allowed = "; ".join(f"{lo}-{hi} in steps of {step}" if lo != hi else str(lo) for lo, hi, step in sizes)
        return f"memory {memory} does not fit cpu {cpu} on Fargate (allowed: {allowed})"
    return None


def _stop_code_rules(cause: str, codes: tuple[str, ...]) -> list[Rule]:
    """The task JSON in ``cause`` has one of these StopCodes (compact or spaced JSON)."""
    return [matches(cause, f'*"StopCode":{sep}"{code}"*') for code in codes for sep in ("", " ")]


# The check's rules that are the same for every step of every job, made once (frozen objects:
# each step's check renders them as it did when it made its own, ~40 objects a step).
# On AWS a failed task arrives as States.TaskFailed whose Cause is the task's JSON.
_CAUSE = f"{ERROR}.Cause"
#: a stop neither the step (its container exited) nor an operator chose: infrastructure
#: (rc.INFRA_STOP_CODES and any code AWS adds: a Fargate task retirement's)
_INFRA_STOPPED = all_of(present(_CAUSE),
                        any_of(*_stop_code_rules(_CAUSE, ("*",))),  # any StopCode at all
                        Not(any_of(*_stop_code_rules(_CAUSE, (rc.RUNNER_STOP_CODE, rc.OPERATOR_STOP_CODE)))),
                        Test(f"{INFRA}.n", "NumericLessThan", len(INFRA_WAITS)))
#: RunTask answered with Failures (no Fargate capacity, the vCPU quota, no ENI): after the
#: call's own quick retries, the same bounded infrastructure retry as a task that could not
#: start; past its budget the step fails with the reason in its attempt's error.
_RUN_TASK_FAILED = all_of(present(f"{ERROR}.Error"), equals(f"{ERROR}.Error", RUN_TASK_FAILURES),
                          Test(f"{INFRA}.n", "NumericLessThan", len(INFRA_WAITS)))
#: RunTask throttled (or ECS unavailable) past the Task's own retries: the same bounded retry,
#: waiting 15 s, 60 s, 180 s while the launch bucket refills (ECS_INFRA_RETRY)
_ECS_UNAVAILABLE = all_of(error_is(ECS_INFRA_ERRORS), infra_left())
_OPERATOR_STOPPED = all_of(present(_CAUSE), any_of(*_stop_code_rules(_CAUSE, (rc.OPERATOR_STOP_CODE,))))
_EXITED_PERMANENTLY = all_of(present(_CAUSE), any_of(*(matches(_CAUSE, f'*"ExitCode":{sep}{code},*')
                                                      for code in rc.NOT_RETRIED_EXIT_CODES for sep in ("", " "))))


@functools.lru_cache(maxsize=1024)
def _check(counter: str, attempts: int, _: str, infra: str, failed: str, retry: str) -> Kept:
    """A failed attempt's check: a function of these alone (its attempt counter's path, the
    step's attempts and, ``_``, their type's name: 3 and 3.0 are one key, not one JSON; the
    states it goes to; every rule else is a constant), the same in every job whose step has
    the same name and attempts, so made once, its dict too (~12% of a compiled job's bytes)."""
    retried = attempts > 1
    choices = [
        # a stop neither the step (its container exited) nor an operator chose: infrastructure
        # (_INFRA_STOPPED); RunTask answered with Failures (_RUN_TASK_FAILED); RunTask
        # throttled past the Task's own retries (_ECS_UNAVAILABLE): the same bounded retry
        When(_INFRA_STOPPED, infra), When(_RUN_TASK_FAILED, infra), When(_ECS_UNAVAILABLE, infra),
        When(_OPERATOR_STOPPED, failed),  # someone stopped the task: never retried
    ]
    if retried:
        choices += [When(Test(counter, "NumericGreaterThanEquals", attempts), failed),
                    When(_EXITED_PERMANENTLY, failed),
                    When(present(f"{ERROR}.Error"), retry)]
    return Kept(Choice(choices=choices, default=failed))


class EcsExecutor:
    name = "ecs"
    runs_map_items = True  # the item in the task's environment (compiler/map_states.py)

    def problems(self, step: Step) -> Iterator[str]:
        if size_problem := fargate_size_problem(step.cpu, step.memory):
            yield size_problem

    def raw_problems(self, step: JsonObject) -> Iterator[str]:
        cpu, memory = step.get("cpu", 256), step.get("memory", 512)
        if type(cpu) is int and type(memory) is int and (size := fargate_size_problem(cpu, memory)):
            yield size

    def job_problems(self, job: Job, steps: list[Step]) -> Iterator[tuple[str, str]]:
        return iter(())

    def plan_lines(self, steps: list[CatalogStep]) -> list[str]:
        return []  # where a step runs unless it says otherwise

    def peak(self, step: Step) -> Peak:
        """A Fargate task: its cpu (Fargate CPU units / 1,024) and its one network interface (awsvpc)."""
        from jobplane.compiler.peak import Peak

        return Peak(fargate_vcpu=step.cpu / 1024, network_interfaces=1)

    def run_task_parameters(self, b: AttemptBuilder, step: Step, counter: str | None) -> JsonObject:
        """RunTask's parameters; ``counter``: where the attempt number is (None: one attempt)."""
        return {
            "Cluster": token("cluster_arn"),
            "TaskDefinition": token("task_definition"),
            "LaunchType": "FARGATE",
            "Group": f"jobplane:{b.job.name}"[:255],
            "NetworkConfiguration": {"AwsvpcConfiguration": {
                "Subnets.$": f"States.StringSplit('{token('subnets')}', ',')",
                "SecurityGroups.$": f"States.StringSplit('{token('security_groups')}', ',')",
                "AssignPublicIp": "DISABLED"}},
            "Overrides": {
                # the job's team's task role, scoped to its own jobs' progress (compiler/task_roles.py)
                "TaskRoleArn": token("task_role_arn"),
                "Cpu": str(step.cpu),
                "Memory": str(step.memory),
                "ContainerOverrides": container_overrides(b.job, step, counter),
            },
        }

    def attempt_states(self, b: AttemptBuilder, step: Step, nxt: str, is_last: bool, into: Graph, record: bool) -> str:
        """The attempt loop of one step, going on to ``nxt`` when it succeeds.

        One Task runs every attempt: a failure that may be retried goes through ``<step>: retry``
        (count the attempt, pick its back-off) and ``<step>: wait`` back to it. Unrolling one
        Task and one check per attempt repeated the Task's overrides and the check's rules in
        every attempt, most of a 1,000-job project's bytes (issue 19); a loop costs one more
        state transition per retry, never on a run that succeeds at once.

        ``record`` False means inside a parallel branch: failures end the branch instead of the job.
        """
        a = Attempt.of(b, step, into, record)
        attempts, result, counter, failed, timed_out = a.attempts, a.result, a.counter, a.failed, a.timed_out
        at_step, name, check, retried = a.at_step, a.name, a.check, a.retried
        into.add(name, Task(
            comment=f"{step.kind} step, up to {attempts} attempt{'s' if retried else ''}",
            resource=RUN_TASK,
            parameters=self.run_task_parameters(b, step, counter if retried else None),
            result_selector={"Container.$": "States.ArrayGetItem($.Containers, 0)", "TaskArn.$": "$.TaskArn"},
            result_path=result,
            timeout_seconds=step.timeout,
            # ECS_INFRA_RETRY first: in a Retry (or Catch) "States.TaskFailed acts as a wildcard
            # that matches any known error name except for States.Timeout" ("Error names",
            # https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html),
            # and the first retrier that matches is the one used, so behind ECS_TASK_OUTCOMES
            # (MaxAttempts 0) a throttled RunTask was never retried by the Task at all
            retry=[ECS_INFRA_RETRY, ECS_TASK_OUTCOMES, ECS_CALL_RETRY],
            # A failed task always reaches the check: it tells the step's own failures from
            # the infrastructure's and from an operator's stop. Its error (the task's whole
            # JSON) goes to the one ERROR slot, which the next failure overwrites, so the
            # state data stays bounded however many attempts fail. A Task that succeeded ran
            # its container to exit code 0 (a non-zero exit fails it: aws/copilot-cli#3160,
            # module docstring) and goes straight on.
            catch=[Catch(["States.Timeout"], timed_out, ERROR, assign=at_step),
                   # (States.Runtime is not listed: AWS never lets a Catch take it)
                   Catch([e for e in ECS_MISCONFIGURED if e != "States.Runtime"], failed, ERROR),
                   Catch(["States.TaskFailed", RUN_TASK_FAILURES, *ECS_INFRA_ERRORS], check, ERROR),
                   Catch(["States.ALL"], failed, ERROR)],
            next=nxt))
        retry = sn.retry(step.name)
        infra = self.infra_states(step, into)
        if retried:
            b.retry_loop(step, into)
        into.add(check, _check(counter, attempts, type(attempts).__name__, infra, failed, retry))
        return name

    def infra_states(self, step: Step, into: Graph) -> str:
        """Count an infrastructure retry of the attempt, wait, run the same attempt again."""
        return infra_states(step, into)

    # -- Terraform ---------------------------------------------------------------------------
    @staticmethod
    def own_task_definition(steps: list[Step]) -> bool:
        """A job whose ECS steps need secrets runs a task definition of its own (its execution
        role reads them); every other runs the base module's."""
        return any(s.secrets for s in steps)

    def role_statements(self, tf: TerraformContext, steps: list[Step]) -> list[JsonObject]:
        tid = tf.tid
        # The state machine runs a task definition family, whose latest ACTIVE revision ECS picks,
        # and may run any revision of it ("family:*"): RunTask "If a revision isn't specified, the
        # latest ACTIVE revision is used ... you must either specify a specific revision, or all
        # revisions in the ARN" (https://docs.aws.amazon.com/AmazonECS/latest/APIReference/API_RunTask.html).
        # A new runner image then changes no state machine and no team root.
        own = self.own_task_definition(steps)
        family = (f"aws_ecs_task_definition.{tid}.family" if own else "local.platform.runner_family")
        task_def_arn = f"arn:{PARTITION}:ecs:{REGION}:{ACCOUNT}:task-definition/${{{family}}}:*"
        # the task execution role of a job with secrets is one of its team root's shared exec roles
        # (compiler/shared_roles.py), whichever its grant falls in: the pattern of their names, so
        # the state machine's grant does not depend on which (issue 62 finding 5: a grant naming it
        # made a role of its own for every job whose secrets were its own)
        exec_role_arns = (execution_roles_arns(tf.config, tf.job) if own else ["${local.platform.runner_execution_role_arn}"])
        return [
            statement("RunRunnerTasks", ["ecs:RunTask"], [task_def_arn],
                      [{"test": "ArnEquals", "variable": "ecs:cluster", "values": ["${local.platform.cluster_arn}"]}]),
            statement("WatchRunnerTasks", ["ecs:DescribeTasks", "ecs:StopTask"],
                      [f"arn:{PARTITION}:ecs:{REGION}:{ACCOUNT}:task/${{local.platform.cluster_name}}/*"]),
            statement("SyncTaskEvents", ["events:DescribeRule", "events:PutRule", "events:PutTargets"],
                      [f"arn:{PARTITION}:events:{REGION}:{ACCOUNT}:rule/StepFunctionsGetEventsForECSTaskRule"]),
            # the task role: one of its team root's shared task roles (compiler/task_roles.py), by pattern
            statement("PassRunnerRoles", ["iam:PassRole"], [*task_roles_arns(tf.config, tf.job), *exec_role_arns],
                      [{"test": "StringEquals", "variable": "iam:PassedToService", "values": ["ecs-tasks.amazonaws.com"]}]),
        ]

    def token_bindings(self, tf_id: str, steps: list[Step]) -> dict[str, str]:
        """The task definition token: the job's own family when its ECS steps need secrets."""
        if not self.own_task_definition(steps):
            return {}
        return {"task_definition": terraform_expressions(tf_id, own_task_definition=True)["task_definition"]}

    def resources(self, tf: TerraformContext, steps: list[Step]) -> None:
        """Its task role's grant (compiler/task_roles.py); a task definition of its own, only
        when steps need secrets."""
        task_roles.add(tf)
        if not self.own_task_definition(steps):
            return
        from jobplane.compiler.terraform_iam import assume, secret_scope_tags, secret_statements

        tid, job, docs = tf.tid, tf.job, tf.docs
        prefix = tf.config.name_prefix
        # job scope on ECS: a job's ECS steps share its task definition, so each of them gets the
        # secrets any of them declares (docs/dsl.md; validation refuses one name for two secrets)
        secrets = {k: v for s in steps for k, v in sorted(s.secrets.items())}
        exec_role_arn = f"${{aws_iam_role.{tid}_exec.arn}}"
        docs[f"{tid}_exec_assume"] = assume("ecs-tasks.amazonaws.com")
        value_from, reads = secret_statements(tid, secrets, tf)
        statements = [statement("PullImageAndLog",
                                ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                                ["${local.platform.runner_repository_arn}"]), *reads]
        docs[f"{tid}_exec"] = {"statement": statements}
        tf.roles[f"{tid}_exec"] = {"name": names.task_execution_role_name(prefix, job.name),
                                   "description": f"ECS task execution role of jobplane job {job.name} (reads its secrets)",
                                   "assume_role_policy": f"${{data.aws_iam_policy_document.{tid}_exec_assume.json}}",
                                   "tags": secret_scope_tags(job)}
        tf.role_policies[f"{tid}_exec"] = {"name": "secrets", "role": f"${{aws_iam_role.{tid}_exec.id}}",
                                           "policy": f"${{data.aws_iam_policy_document.{tid}_exec.json}}"}
        tf.attachments[f"{tid}_exec_logs"] = {"role": f"${{aws_iam_role.{tid}_exec.name}}",
                                              "policy_arn": "${local.platform.runner_logging_policy_arn}"}
        container = [{
            "name": rc.CONTAINER_NAME,
            "image": "${local.platform.runner_image}",
            "essential": True,
            "memoryReservation": 128,  # soft: the step's task-level Memory is its limit (runner.tf)
            "readonlyRootFilesystem": True,
            "mountPoints": [{"sourceVolume": "tmp", "containerPath": "/tmp", "readOnly": False}],
            "secrets": [{"name": k, "valueFrom": value_from[k]} for k in sorted(secrets)],
            # the runner never prints these variables' values (runner/logs.py); where a step's
            # progress goes, as the base module's task definition says (contract/progress.py)
            "environment": [{"name": "JOBPLANE_SECRET_NAMES", "value": ",".join(sorted(secrets))},
                            {"name": progress.ENV_TABLE, "value": "${local.platform.table_name}"}],
            "logConfiguration": {"logDriver": "awslogs", "options": {
                "awslogs-group": "${local.platform.log_group_name}",
                "awslogs-region": REGION,
                # the readers find a task's stream by its id alone (contract/runner.py: log_stream)
                "awslogs-stream-prefix": rc.LOG_STREAM_PREFIX}},
        }]
        tf.resource["aws_ecs_task_definition"] = {tid: {
            "family": names.task_family(prefix, job.name),
            "requires_compatibilities": ["FARGATE"],
            "network_mode": "awsvpc",
            "cpu": "256",
            "memory": "512",
            "execution_role_arn": exec_role_arn,
            "task_role_arn": f"${{aws_iam_role.{tid}_{task_roles.KIND}.arn}}",
            "volume": [{"name": "tmp"}],
            "container_definitions": json.dumps(container, sort_keys=True),
        }}


ECS = EcsExecutor()
