"""Expand a job into its Step Functions state machine (Amazon States Language, JSONPath).

The expansion is the product's core guarantee, so its shape is dictated by SPEC.md "The compiled
state machine" and by cost (Standard workflows bill per state transition):

* **Claim** is one DynamoDB conditional UpdateItem. Its condition holds the whole policy table
  and duplicate-fire detection, so deciding and claiming cost one state and can never race.
* **Route** sends a re-run to ``resume_from``.
* Each step attempt is an ``ecs:runTask.sync`` Task followed by a **check** Choice on the
  container's exit code (on AWS a non-zero exit fails the Task; on moto it does not; both
  shapes arrive at the same check). Retries of the step's own failures are unrolled into one
  Task per attempt, so each attempt's result is kept and no counter state is needed.
* **Finish** / **record failure** are one DynamoDB transaction each: release the claim and write
  the execution record together.
* The skip path loads the job state once to say *why* (duplicate, running, last failed) and asks
  Step Functions whether a running holder is really running; a stale holder is taken over.

State data: the input fields (:mod:`jobplane.contract.execution_input`), ``$.run.old`` (the job
state before the claim), ``$.run.steps.<step_key>.a<N>`` (attempt N's task result or error).

Transitions (see docs/state-machine.md): one-step success 5, each further step +2, skip 4-6,
failure 6-7.
"""

from __future__ import annotations

import json
from typing import Any

from jobplane.contract.bindings import token
from jobplane.compiler.model import Job, Step
from jobplane.contract import datamodel as dm
from jobplane.contract import runner as rc
from jobplane.contract.statuses import Event, ExecutionStatus, SkipReason, Trigger

_TRANSIENT = ("ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerErrorException",
              "RequestLimitExceeded")
_BACKOFF = {"IntervalSeconds": 1, "MaxAttempts": 5, "BackoffRate": 2.0, "MaxDelaySeconds": 20, "JitterStrategy": "FULL"}
# The optimised DynamoDB integration names errors "DynamoDB.X"; the aws-sdk one "DynamoDb.X".
DDB_RETRY = {"ErrorEquals": [f"DynamoDB.{e}" for e in _TRANSIENT] + ["DynamoDB.AmazonDynamoDBException"], **_BACKOFF}
# A transaction without conditions is only cancelled by a conflicting concurrent write: retry it.
SDK_DDB_RETRY = {"ErrorEquals": [f"DynamoDb.{e}" for e in _TRANSIENT]
                 + ["DynamoDb.TransactionCanceledException", "DynamoDb.TransactionConflictException"], **_BACKOFF}
ECS_INFRA_RETRY = {
    # Launch failures, capacity and throttling: not the step's fault, retried with backoff.
    "ErrorEquals": ["ECS.AmazonECSException", "ECS.ServerException", "ECS.ThrottlingException",
                    "ECS.LimitExceededException", "ECS.ServiceUnavailableException"],
    "IntervalSeconds": 5, "MaxAttempts": 4, "BackoffRate": 2.0, "MaxDelaySeconds": 60, "JitterStrategy": "FULL",
}
SNS_RETRY = {
    "ErrorEquals": ["SNS.ThrottledException", "SNS.InternalErrorException", "SNS.AmazonSNSException",
                    "SNS.KMSThrottlingException"],
    "IntervalSeconds": 1, "MaxAttempts": 5, "BackoffRate": 2.0, "JitterStrategy": "FULL",
}
TRANSACT = "arn:aws:states:::aws-sdk:dynamodb:transactWriteItems"
FAIL_ERRORS = {ExecutionStatus.FAILED: "Job.Failed", ExecutionStatus.TIMED_OUT: "Job.TimedOut"}


def _s(path: str) -> dict[str, str]:
    return {"S.$": path}


def _lit(value: str) -> dict[str, str]:
    return {"S": value}


class _Builder:
    def __init__(self, job: Job, prefix: str):
        self.job = job
        self.prefix = prefix
        self.states: dict[str, dict[str, Any]] = {}
        self.events = set(job.notify.events)

    # -- names ----------------------------------------------------------------------------
    @staticmethod
    def task_state(step: Step, attempt: int = 1) -> str:
        return step.name if attempt == 1 else f"{step.name} #{attempt}"

    def add(self, name: str, state: dict[str, Any]) -> str:
        assert name not in self.states, name
        assert len(name) <= 80, name
        self.states[name] = state
        return name

    # -- the whole machine ------------------------------------------------------------------
    def build(self) -> dict[str, Any]:
        first = self.steps_chain(self.job.steps, final=self.finish_states())
        self.add("Claim", self.claim_state())
        self.add("Route", self.route_state(first))
        self.skip_states()
        self.failure_tail()
        ordered = {k: self.states[k] for k in sorted(self.states, key=self._order)}
        return {
            "Comment": f"jobplane job {self.job.name} (team {self.job.team}); compiled, do not edit",
            "StartAt": "Claim",
            "TimeoutSeconds": self.job.timeout,
            "States": ordered,
        }

    def _order(self, name: str) -> tuple[int, str]:
        # Stable, readable order: claim, route, steps (in definition order), finish, skip, failure.
        if name in ("Claim", "Route"):
            return (0 if name == "Claim" else 1, "")
        for i, step in enumerate(self.job.steps):
            members = [step, *(step.parallel or [])]
            if any(name == m.name or name.startswith(m.name + " ") or name.startswith(m.name + ":") for m in members):
                return (2 + i, name)
        return (1000, name)

    # -- claim ------------------------------------------------------------------------------
    def claim_update(self, extra_condition: str = "") -> dict[str, Any]:
        policy = self.job.policy
        # Duplicate fires: a scheduled fire must be newer than the newest claimed. The stored key
        # is "<is manual or rerun>|<time>", so it orders by time among scheduled fires, while a
        # manual run or re-run ("true|...") always sorts after them and is never a duplicate;
        # it is stored under its own trigger's name, so it never moves the scheduled key.
        conditions = ["(attribute_not_exists(#sched) OR #sched < :fire)"]
        names = {"#sched": f"{dm.ATTR_FIRE_PREFIX}{Trigger.SCHEDULE.value}",
                 "#fire.$": f"States.Format('{dm.ATTR_FIRE_PREFIX}{{}}', $.trigger)",
                 "#fired.$": f"States.Format('{dm.ATTR_FIRED_PREFIX}{{}}', $.trigger)",
                 "#running": dm.ATTR_RUNNING}
        values: dict[str, Any] = {
            ":t": _s("$.scheduled_time"),
            ":fire": _s("States.Format('{}|{}', States.ArrayContains(States.Array('manual', 'rerun'), $.trigger), "
                        "$.scheduled_time)"),
            ":me": {"SS.$": "States.Array($$.Execution.Name)"},
            ":job": _lit(self.job.name),
            ":team": _lit(self.job.team),
            ":jobs": _lit(dm.JOBS_PARTITION),
        }
        update = "SET #fire = :fire, #fired = :t, job = :job, team = :team, gsi1pk = :jobs, gsi1sk = :job"
        if policy.skips_if_running:
            conditions.append("attribute_not_exists(#running)")
            update += ", holder = :arn"
            values[":arn"] = _s("$$.Execution.Id")
        if policy.skips_if_failed:
            # Only scheduled fires are blocked: a manual run or a re-run is how operators recover.
            conditions.append("attribute_not_exists(#blocked)")
            names["#blocked.$"] = "States.Format('block_{}', $.trigger)"
        if extra_condition:
            conditions.append(extra_condition)
        update += " ADD #running :me"
        return {
            "TableName": token("table_name"),
            "Key": {"pk": _lit(f"JOB#{self.job.name}"), "sk": _lit(dm.STATE_SK)},
            "UpdateExpression": update,
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValues": "ALL_OLD",
        }

    def run_selector(self) -> dict[str, Any]:
        return {"old.$": "$", "steps": {}}

    def claim_state(self) -> dict[str, Any]:
        return {
            "Type": "Task",
            "Comment": f"Policy {self.job.policy.value} and duplicate-fire check in one conditional write",
            "Resource": "arn:aws:states:::dynamodb:updateItem",
            "Parameters": self.claim_update(),
            "ResultSelector": self.run_selector(),
            "ResultPath": "$.run",
            "Retry": [DDB_RETRY],
            "Catch": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"],
                       "ResultPath": "$.claim_error", "Next": "Skip: load state"}],
            "Next": "Route",
        }

    def route_state(self, first: str) -> dict[str, Any]:
        choices = [{"Variable": "$.resume_from", "StringEquals": s.name, "Next": self.task_state(s)}
                   for s in self.job.steps]
        for group in self.job.steps:
            for member in group.parallel or []:
                # Resuming from a member of a parallel group re-runs the whole group.
                choices.append({"Variable": "$.resume_from", "StringEquals": member.name,
                                "Next": self.task_state(group)})
        # A resume_from naming no step must not silently run the whole job.
        choices.append({"Variable": "$.resume_from", "IsString": True, "Next": "Unknown resume_from"})
        self.add("Unknown resume_from", self.record_state(ExecutionStatus.FAILED, None))
        return {"Type": "Choice", "Choices": choices, "Default": first}

    # -- steps ------------------------------------------------------------------------------
    def steps_chain(self, steps: list[Step], final: tuple[str, str]) -> str:
        """Add states for ``steps`` in order; return the first state's name."""
        nxt = final
        for i in range(len(steps) - 1, -1, -1):
            step = steps[i]
            is_last = i == len(steps) - 1
            if step.parallel is not None:
                first = self.parallel_states(step, nxt, is_last)
            else:
                first = self.step_states(step, nxt, is_last, self.states, record=True)
            nxt = (first, first)
        return nxt[0]

    def container_env(self, step: Step, attempt: int) -> list[dict[str, str]]:
        env = [
            {"Name": rc.ENV_JOB, "Value": self.job.name},
            {"Name": rc.ENV_TEAM, "Value": self.job.team},
            {"Name": rc.ENV_STEP, "Value": step.name},
            {"Name": rc.ENV_ATTEMPT, "Value": str(attempt)},
            {"Name": rc.ENV_TARGET, "Value": json.dumps(step.target_spec(), sort_keys=True, separators=(",", ":"))},
            {"Name": rc.ENV_EXECUTION_ID, "Value.$": "$$.Execution.Name"},
            {"Name": rc.ENV_SCHEDULED_TIME, "Value.$": "$.scheduled_time"},
            {"Name": rc.ENV_TRIGGER, "Value.$": "$.trigger"},
            {"Name": rc.ENV_PARAMS, "Value.$": "States.JsonToString($.params)"},
            # W3C trace context: the trace id is the MD5 of the execution ARN (32 hex, shared by
            # every step of the run); the parent id is 16 hex from a fresh UUID's last group.
            {"Name": rc.ENV_TRACEPARENT,
             "Value.$": "States.Format('00-{}-0000{}-01', States.Hash($$.Execution.Id, 'MD5'), "
                        "States.ArrayGetItem(States.StringSplit(States.UUID(), '-'), 4))"},
        ]
        env += [{"Name": k, "Value": v} for k, v in sorted(step.env.items())]
        return env

    def run_task_parameters(self, step: Step, attempt: int) -> dict[str, Any]:
        return {
            "Cluster": token("cluster_arn"),
            "TaskDefinition": token("task_definition_arn"),
            "LaunchType": "FARGATE",
            "Group": f"jobplane:{self.job.name}"[:255],
            "NetworkConfiguration": {"AwsvpcConfiguration": {
                "Subnets.$": f"States.StringSplit('{token('subnets')}', ',')",
                "SecurityGroups.$": f"States.StringSplit('{token('security_groups')}', ',')",
                "AssignPublicIp": "DISABLED"}},
            "Overrides": {
                "Cpu": str(step.cpu),
                "Memory": str(step.memory),
                "ContainerOverrides": [{
                    "Name": rc.CONTAINER_NAME,
                    "Command": rc.container_command(step.kind),
                    "Environment": self.container_env(step, attempt),
                }],
            },
        }

    def step_states(self, step: Step, nxt: tuple[str, str], is_last: bool,
                    into: dict[str, Any], record: bool) -> str:
        """Attempt chain of one step. ``nxt`` is (next on success, next on success after a failure).

        ``record`` False means inside a parallel branch: failures end the branch instead of the job.
        """
        attempts = step.retry.attempts
        delays = step.retry.delays()
        slot = f"$.run.steps.{step.key}"
        failed = self.step_failure_state(step, ExecutionStatus.FAILED, into, record)
        timed_out = self.step_failure_state(step, ExecutionStatus.TIMED_OUT, into, record)
        for n in range(1, attempts + 1):
            name = self.task_state(step, n)
            result = f"{slot}.a{n}"
            last_attempt = n == attempts
            check = f"{name}: check"
            catch = [{"ErrorEquals": ["States.Timeout"], "ResultPath": result, "Next": timed_out},
                     {"ErrorEquals": ["States.TaskFailed"], "ResultPath": result,
                      "Next": failed if last_attempt else check},
                     {"ErrorEquals": ["States.ALL"], "ResultPath": result, "Next": failed}]
            into[name] = {
                "Type": "Task",
                "Comment": f"{step.kind} step, attempt {n} of {attempts}",
                "Resource": "arn:aws:states:::ecs:runTask.sync",
                "Parameters": self.run_task_parameters(step, n),
                "ResultSelector": {
                    "Container.$": "States.ArrayGetItem($.Containers, 0)",
                    "TaskArn.$": "$.TaskArn",
                    "Attempt": n,
                },
                "ResultPath": result,
                "TimeoutSeconds": step.timeout,
                "Retry": [ECS_INFRA_RETRY],
                "Catch": catch,
                "Next": check,
            }
            exit_code = f"{result}.Container.ExitCode"
            ok = {"And": [{"Variable": exit_code, "IsPresent": True},
                          {"Variable": exit_code, "NumericEquals": rc.EXIT_OK}]}
            choices: list[dict[str, Any]] = []
            success_next = nxt[0] if n == 1 else nxt[1]
            if is_last and record and Event.RECOVERED in self.events:
                choices.append({"And": [ok, {"Variable": f"$.run.old.Attributes.{dm.ATTR_BLOCKED_BY}", "IsPresent": True}],
                                "Next": "Finish (recovered)"})
            choices.append({**ok, "Next": success_next})
            if not last_attempt:
                permanent = [{"Variable": exit_code, "NumericEquals": code} for code in rc.NOT_RETRIED_EXIT_CODES]
                # On AWS a non-zero exit arrives as States.TaskFailed whose Cause is the task JSON.
                cause = f"{result}.Cause"
                cause_permanent = [{"Variable": cause, "StringMatches": f'*"ExitCode":{sep}{code},*'}
                                   for code in rc.NOT_RETRIED_EXIT_CODES for sep in ("", " ")]
                choices.append({"And": [{"Variable": exit_code, "IsPresent": True}, {"Or": permanent}], "Next": failed})
                choices.append({"And": [{"Variable": cause, "IsPresent": True}, {"Or": cause_permanent}], "Next": failed})
                wait = f"{name}: wait"
                choices.append({"Variable": f"{result}.Attempt", "IsPresent": True, "Next": wait})
                choices.append({"Variable": f"{result}.Error", "IsPresent": True, "Next": wait})
                into[wait] = {"Type": "Wait", "Seconds": delays[n - 1], "Next": self.task_state(step, n + 1)}
            into[check] = {"Type": "Choice", "Choices": choices, "Default": failed}
        return self.task_state(step, 1)

    def step_failure_state(self, step: Step, status: ExecutionStatus, into: dict[str, Any], record: bool) -> str:
        label = "failed" if status == ExecutionStatus.FAILED else "timed out"
        name = f"{step.name}: {label}"
        if name in into:
            return name
        if record:
            into[name] = self.record_state(status, step.name)
        else:
            into[name] = {"Type": "Pass", "Parameters": {"attempts.$": f"$.run.steps.{step.key}", "status": status.value},
                          "End": True}
        return name

    def parallel_states(self, group: Step, nxt: tuple[str, str], is_last: bool) -> str:
        branches = []
        for member in group.parallel or []:
            states: dict[str, Any] = {}
            done = f"{member.name}: done"
            states[done] = {"Type": "Pass", "Parameters": {"attempts.$": f"$.run.steps.{member.key}", "status": "SUCCEEDED"},
                            "End": True}
            first = self.step_states(member, (done, done), False, states, record=False)
            branches.append({"StartAt": first, "States": states})
        check = f"{group.name}: check"
        failed = self.step_failure_state(group, ExecutionStatus.FAILED, self.states, record=True)
        self.add(group.name, {
            "Type": "Parallel",
            "Comment": "steps run concurrently; each branch records its outcome instead of failing",
            # Each branch gets only what its tasks read, not the whole state data.
            "Parameters": {f"{f}.$": f"$.{f}" for f in ("trigger", "scheduled_time", "params")} | {"run": {"steps": {}}},
            "Branches": branches,
            "ResultSelector": {f"{m.key}.$": f"States.ArrayGetItem($, {i})" for i, m in enumerate(group.parallel or [])},
            "ResultPath": f"$.run.steps.{group.key}",
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": f"$.run.steps.{group.key}", "Next": failed}],
            "Next": check,
        })
        failures = [{"Variable": f"$.run.steps.{group.key}.{m.key}.status", "StringEquals": "SUCCEEDED"}
                    for m in group.parallel or []]
        choices: list[dict[str, Any]] = []
        if is_last and Event.RECOVERED in self.events:
            choices.append({"And": failures + [{"Variable": f"$.run.old.Attributes.{dm.ATTR_BLOCKED_BY}", "IsPresent": True}],
                            "Next": "Finish (recovered)"})
        choices.append({"And": failures, "Next": nxt[0]})
        self.add(check, {"Type": "Choice", "Choices": choices, "Default": failed})
        return group.name

    # -- records ----------------------------------------------------------------------------
    def execution_item(self, status: ExecutionStatus, extra: dict[str, Any]) -> dict[str, Any]:
        item = {
            "pk": {"S.$": "States.Format('EXEC#{}', $$.Execution.Name)"},
            "sk": _lit(dm.EXEC_SK),
            "execution": _s("$$.Execution.Name"),
            "execution_arn": _s("$$.Execution.Id"),
            "job": _lit(self.job.name),
            "team": _lit(self.job.team),
            "status": _lit(status.value),
            "trigger": _s("$.trigger"),
            "scheduled_time": _s("$.scheduled_time"),
            "requested_by": _s("$.requested_by"),
            "input": _s("States.JsonToString($$.Execution.Input)"),
            "started_at": _s("$$.Execution.StartTime"),
            "finished_at": _s("$$.State.EnteredTime"),
            "gsi1pk": _lit(dm.job_partition(self.job.name)),
            "gsi1sk": _s("$$.Execution.StartTime"),
        }
        item.update(extra)
        return item

    def record_state(self, status: ExecutionStatus, step: str | None) -> dict[str, Any]:
        """Release the claim and write the final execution record in one transaction."""
        succeeded = status == ExecutionStatus.SUCCEEDED
        # A success ends the block (acknowledged or not); a failure starts a new one, unacknowledged.
        job_update = ("SET last_status = :st, last_execution = :me, last_finished_at = :now"
                      + (f" REMOVE blocked_by, block_schedule, {dm.ATTR_ACKNOWLEDGED_BY}" if succeeded
                         else f", blocked_by = :me, block_schedule = :me REMOVE {dm.ATTR_ACKNOWLEDGED_BY}")
                      + " DELETE #running :meset")
        extra: dict[str, Any] = {"steps": _s("States.JsonToString($.run.steps)")}
        if not succeeded:
            extra |= {"gsi2pk": _lit(dm.FAILURES_PARTITION), "gsi2sk": _s("$$.State.EnteredTime")}
            extra["failed_step"] = _lit(step) if step else _s("$.resume_from")
        state: dict[str, Any] = {
            "Type": "Task",
            "Resource": TRANSACT,
            "Parameters": {"TransactItems": [
                {"Update": {
                    "TableName": token("table_name"),
                    "Key": {"pk": _lit(f"JOB#{self.job.name}"), "sk": _lit(dm.STATE_SK)},
                    "UpdateExpression": job_update,
                    "ExpressionAttributeNames": {"#running": dm.ATTR_RUNNING},
                    "ExpressionAttributeValues": {
                        ":st": _lit(status.value), ":me": _s("$$.Execution.Name"),
                        ":now": _s("$$.State.EnteredTime"), ":meset": {"SS.$": "States.Array($$.Execution.Name)"}},
                }},
                {"Put": {"TableName": token("table_name"), "Item": self.execution_item(status, extra)}},
            ]},
            "ResultSelector": {"status": status.value, "step": step},
            "ResultPath": "$.outcome",
            "Retry": [SDK_DDB_RETRY],
        }
        if succeeded:
            state["End"] = True
        else:
            state["Next"] = "Notify failure"
        return state

    def finish_states(self) -> tuple[str, str]:
        self.add("Finish", self.record_state(ExecutionStatus.SUCCEEDED, None))
        if Event.RECOVERED in self.events:
            rec = self.record_state(ExecutionStatus.SUCCEEDED, None)
            rec.pop("End")
            rec["Next"] = "Notify recovered"
            self.add("Finish (recovered)", rec)
            self.add("Notify recovered", self.publish_state("RECOVERED", end=True))
        return ("Finish", "Finish")

    def publish_state(self, event: str | None, end: bool = False, next_: str | None = None) -> dict[str, Any]:
        """One SNS message per event; attributes let subscribers filter by team, job, status."""
        event_field = {"event": event} if event else {"event.$": "$.outcome.status"}
        message = {
            "version": 1,
            **event_field,
            "job": self.job.name,
            "team": self.job.team,
            "execution.$": "$$.Execution.Name",
            "execution_arn.$": "$$.Execution.Id",
            "trigger.$": "$.trigger",
            "scheduled_time.$": "$.scheduled_time",
            "requested_by.$": "$.requested_by",
            "started_at.$": "$$.Execution.StartTime",
            "finished_at.$": "$$.State.EnteredTime",
            "outcome.$": "$.outcome",
            "channels": self.job.notify.channels,
            "events": [e.value for e in self.job.notify.events],
            "runbook": self.job.runbook.model_dump() if self.job.runbook else None,
        }
        status_attr = {"DataType": "String", "StringValue": event} if event else {"DataType": "String", "StringValue.$": "$.outcome.status"}
        state: dict[str, Any] = {
            "Type": "Task",
            "Resource": "arn:aws:states:::sns:publish",
            "Parameters": {
                "TopicArn": token("topic_arn"),
                "Message": message,
                "MessageAttributes": {
                    "team": {"DataType": "String", "StringValue": self.job.team},
                    "job": {"DataType": "String", "StringValue": self.job.name},
                    "status": status_attr,
                },
            },
            "ResultPath": None,
            "Retry": [SNS_RETRY],
        }
        if end:
            state["End"] = True
        else:
            state["Next"] = next_
        return state

    def failure_tail(self) -> None:
        # Failures are always published: the notifier routes by the job's events, and other
        # subscribers (the portal's feed, paging) must not depend on a Slack subscription.
        self.add("Notify failure", self.publish_state(None, next_="Fail"))
        self.add("Fail", {"Type": "Fail", "ErrorPath": "States.Format('Job.{}', $.outcome.status)",
                          "CausePath": "States.JsonToString($.outcome)"})

    # -- skip path --------------------------------------------------------------------------
    def skip_states(self) -> None:
        policy = self.job.policy
        self.add("Skip: load state", {
            "Type": "Task",
            "Comment": "The claim was refused: read the job state once to record why",
            "Resource": "arn:aws:states:::dynamodb:getItem",
            "Parameters": {"TableName": token("table_name"),
                           "Key": {"pk": _lit(f"JOB#{self.job.name}"), "sk": _lit(dm.STATE_SK)},
                           "ConsistentRead": True},
            "ResultPath": "$.state",
            "Retry": [DDB_RETRY],
            "Next": "Skip: why",
        })
        choices: list[dict[str, Any]] = []
        fired = f"$.state.Item.{dm.ATTR_FIRED_PREFIX}{Trigger.SCHEDULE.value}.S"
        choices.append({"And": [
            {"Variable": "$.trigger", "StringEquals": Trigger.SCHEDULE.value},
            {"Variable": fired, "IsPresent": True},
            {"Variable": fired, "StringGreaterThanEqualsPath": "$.scheduled_time"}],
            "Next": self.skip_record(SkipReason.DUPLICATE)})
        if policy.skips_if_running:
            choices.append({"Variable": f"$.state.Item.{dm.ATTR_RUNNING}", "IsPresent": True, "Next": "Skip: check holder"})
            self.add("Skip: check holder", {
                "Type": "Task",
                "Comment": "Is the execution holding the claim still running? A stale claim is taken over",
                "Resource": "arn:aws:states:::aws-sdk:sfn:describeExecution",
                "Parameters": {"ExecutionArn.$": f"$.state.Item.{dm.ATTR_HOLDER}.S"},
                "ResultSelector": {"Status.$": "$.Status"},
                "ResultPath": "$.holder",
                "Retry": [{"ErrorEquals": ["Sfn.ThrottlingException", "Sfn.SfnException"], "IntervalSeconds": 1,
                           "MaxAttempts": 3, "BackoffRate": 2.0}],
                "Catch": [{"ErrorEquals": ["Sfn.ExecutionDoesNotExistException"], "ResultPath": "$.holder",
                           "Next": "Take over stale claim"},
                          {"ErrorEquals": ["States.ALL"], "ResultPath": "$.holder",
                           "Next": self.skip_record(SkipReason.RUNNING)}],
                "Next": "Skip: holder running?",
            })
            self.add("Skip: holder running?", {
                "Type": "Choice",
                "Choices": [{"Variable": "$.holder.Status", "StringEquals": "RUNNING", "Next": self.skip_record(SkipReason.RUNNING)}],
                "Default": "Take over stale claim",
            })
            takeover = self.claim_update()
            takeover["ConditionExpression"] = takeover["ConditionExpression"].replace(
                "attribute_not_exists(#running)", "holder = :stale")
            takeover["ExpressionAttributeValues"][":stale"] = _s(f"$.state.Item.{dm.ATTR_HOLDER}.S")
            takeover["UpdateExpression"] = takeover["UpdateExpression"].replace(" ADD #running :me", ", #running = :me")
            self.add("Take over stale claim", {
                "Type": "Task",
                "Comment": "The holder is no longer running: replace its claim if nobody else did",
                "Resource": "arn:aws:states:::dynamodb:updateItem",
                "Parameters": takeover,
                "ResultSelector": self.run_selector(),
                "ResultPath": "$.run",
                "Retry": [DDB_RETRY],
                "Catch": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"], "ResultPath": "$.claim_error",
                           "Next": self.skip_record(SkipReason.CLAIM_CONFLICT)}],
                "Next": "Route",
            })
        if policy.skips_if_failed:
            choices.append({"And": [{"Variable": "$.trigger", "StringEquals": Trigger.SCHEDULE.value},
                                    {"Variable": "$.state.Item.block_schedule", "IsPresent": True}],
                            "Next": self.skip_record(SkipReason.LAST_FAILED)})
        self.add("Skip: why", {"Type": "Choice", "Choices": choices,
                               "Default": self.skip_record(SkipReason.CLAIM_CONFLICT)})

    def skip_record(self, reason: SkipReason) -> str:
        name = f"Skip: {reason.value.lower().replace('_', ' ')}"
        if name in self.states:
            return name
        extra = {"skip_reason": _lit(reason.value), "gsi2pk": _lit(dm.SKIPS_PARTITION), "gsi2sk": _s("$$.State.EnteredTime")}
        blocker = f"$.state.Item.{dm.ATTR_BLOCKED_BY}.S"
        if reason == SkipReason.LAST_FAILED:  # name the failed run that blocks (set with block_schedule)
            extra[dm.ATTR_BLOCKED_BY] = _s(blocker)
        item = self.execution_item(ExecutionStatus.SKIPPED, extra)
        state: dict[str, Any] = {
            "Type": "Task",
            "Comment": "Skips are recorded, never counted as failures",
            "Resource": "arn:aws:states:::dynamodb:putItem",
            "Parameters": {"TableName": token("table_name"), "Item": item},
            "ResultSelector": {"status": ExecutionStatus.SKIPPED.value, "step": None, "reason": reason.value},
            "ResultPath": "$.outcome",
            "Retry": [DDB_RETRY],
        }
        if Event.SKIPPED in self.events and reason == SkipReason.LAST_FAILED:
            # its own message: the outcome names the blocking run (a ResultSelector sees only the
            # putItem's result, so the publish state builds the outcome from the state input)
            state["Next"] = "Notify skipped (last failed)"
            notify = self.publish_state("SKIPPED", end=True)
            message = notify["Parameters"]["Message"]
            del message["outcome.$"]
            message["outcome"] = {"status": ExecutionStatus.SKIPPED.value, "step": None, "reason": reason.value,
                                  f"{dm.ATTR_BLOCKED_BY}.$": blocker}
            self.states["Notify skipped (last failed)"] = notify
        elif Event.SKIPPED in self.events:
            state["Next"] = "Notify skipped"
            if "Notify skipped" not in self.states:
                self.states["Notify skipped"] = self.publish_state("SKIPPED", end=True)
        else:
            state["End"] = True
        self.states[name] = state
        return name


def build_definition(job: Job, prefix: str) -> dict[str, Any]:
    return _Builder(job, prefix).build()


def render(definition: dict[str, Any]) -> str:
    """Deterministic, compact bytes: the very string deployed (after binding), so its size is
    what counts against the 1 MB definition quota. ``jq .`` or the portal show it indented."""
    return json.dumps(definition, separators=(",", ":"), ensure_ascii=False)


def compile_job(job: Job, prefix: str) -> str:
    return render(build_definition(job, prefix))
