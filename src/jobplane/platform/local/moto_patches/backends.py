"""What the local AWS does straight in moto's backends instead of through its HTTP API: Terraform's
part (create the compiled jobs' state machines, schedule roles and schedules) and one question of
the engine's own bookkeeping (which executions run now).

Why: on AWS these objects are created by `terraform apply`, not by jobplane's code, so nothing of
ours has to reach them through boto3 here either; what our code then *reads* (DescribeStateMachine,
GetSchedule, StartExecution, ...) still goes through the ordinary API. Through the API each create
cost 5-14 ms of HTTP round trip and request parsing: 1,000 jobs took ~28 s of `jobplane dev`'s start
(bench/dev_scale.py, issue 13); straight into the backends it is ~2.5 s. Likewise AWS lists
executions one state machine at a time: at 1,000 jobs the snapshot saver's 1,000 ListExecutions
every 5 s kept a core busy, and a stop listed them twice more.

These calls reach into moto internals, so they are pinned with the patches (``MOTO_VERSION``), and
tests/test_moto_backends.py checks each against the API: the same job created both ways reads and
runs the same, and the running executions are those ListExecutions answers. An upgrade that
changes a backend fails there, not in a user's `jobplane dev`. Unlike the patches this module is
type-checked (moto's backends carry annotations); it is reached through the package's facade.
"""

from __future__ import annotations

import json

from datetime import datetime, timezone
from typing import Any

from jobplane.platform.local import moto_patches
from jobplane.contract.types import JsonObject

# moto's default account: what it answers to any access key that does not name an account (ours)
ACCOUNT = "123456789012"


def create_state_machine(region: str, name: str, definition: str, role_arn: str) -> str:
    """As CreateStateMachine with ``type=STANDARD``; returns the ARN. A definition the backend
    refuses raises moto's own error (the same one the API would have answered)."""
    moto_patches.check_version()
    from moto.stepfunctions.responses import get_backend

    # get_backend picks the interpreting backend when execute_state_machine is configured,
    # exactly as the API layer does for each request
    return get_backend(ACCOUNT, region).create_state_machine(
        name=name, definition=definition, roleArn=role_arn, sm_type="STANDARD").arn


def create_role(name: str, trust_policy: str) -> str:
    """As CreateRole with only a trust policy (the API's defaults: path /, one hour sessions)."""
    moto_patches.check_version()
    from moto.iam.models import iam_backends

    # None and 3600 are what moto's own CreateRole handler passes for an absent Description and the
    # default MaxSessionDuration; its annotations (str, str | None) are narrower than its use
    return iam_backends[ACCOUNT]["global"].create_role(
        name, trust_policy, "/", None, None, [], 3600).arn  # type: ignore[arg-type]


def put_schedule(region: str, spec: JsonObject, created_at: datetime | None = None) -> None:
    """As CreateSchedule, or UpdateSchedule when the schedule exists; ``spec`` holds the API's
    request fields (Name, GroupName, ScheduleExpression, ..., Target). ``created_at``: the time a
    new schedule is stamped with (``jobplane dev``'s clock, which the local scheduler and the
    fire ledger keep: fires before a schedule's creation are never expected), not moto's."""
    moto_patches.check_version()
    from moto.scheduler.exceptions import ScheduleExists
    from moto.scheduler.models import scheduler_backends

    backend = scheduler_backends[ACCOUNT][region]
    fields = dict(
        description=spec.get("Description"), end_date=spec.get("EndDate"),
        flexible_time_window=spec["FlexibleTimeWindow"], group_name=spec["GroupName"],
        kms_key_arn=spec.get("KmsKeyArn"), name=spec["Name"], schedule_expression=spec["ScheduleExpression"],
        schedule_expression_timezone=spec.get("ScheduleExpressionTimezone"), start_date=spec.get("StartDate"),
        state=spec.get("State"), target=spec["Target"])
    try:
        created = backend.create_schedule(**fields, action_after_completion=spec.get("ActionAfterCompletion"))
    except ScheduleExists:
        backend.update_schedule(**fields)
        return
    if created_at is not None:
        created.creation_date = created.last_modified_date = created_at.timestamp()


def running_executions(region: str, state_machine_arns: set[str]) -> list[str]:
    """The ARNs of the RUNNING executions of these state machines (ListExecutions with
    statusFilter RUNNING, for all of them at once)."""
    moto_patches.check_version()
    from moto.stepfunctions.responses import get_backend

    return [execution.execution_arn for machine in list(get_backend(ACCOUNT, region).state_machines)
            if machine.arn in state_machine_arns
            for execution in list(machine.executions) if execution.status == "RUNNING"]


def forget_ended_executions(region: str, state_machine_arns: set[str], ended_before: datetime) -> int:
    """Drop these state machines' executions that ended before ``ended_before``; return how many.

    moto keeps every execution, its whole history included (~81 KiB for a one-step run), for the
    life of the process, and finds one by walking its machine's list: a `jobplane dev` with 1,000
    jobs grew by ~1.4 GB a day. AWS keeps a closed execution 90 days; locally nothing needs one
    once it is reconciled (its record holds its timeline) and older than the catch-up window
    (platform/catchup.py asks DescribeExecution about runs that ended up to a day ago), so the dev
    server calls this with a cutoff beyond that. Each is removed on its own (``list.remove``), so
    an execution moto appends meanwhile is never lost."""
    moto_patches.check_version()
    from moto.stepfunctions.responses import get_backend

    def ended(execution: Any) -> datetime | None:
        stop = getattr(execution, "stop_date", None)
        if execution.status == "RUNNING" or not isinstance(stop, datetime):
            return None
        return stop if stop.tzinfo else stop.replace(tzinfo=timezone.utc)  # moto writes both kinds

    forgotten = 0
    for machine in list(get_backend(ACCOUNT, region).state_machines):
        if machine.arn not in state_machine_arns:
            continue
        for execution in list(machine.executions):
            stop = ended(execution)
            if stop is not None and stop < ended_before:
                machine.executions.remove(execution)
                forgotten += 1
    return forgotten


def deploys_target(account: str, region: str, target: str) -> bool:
    """Whether a state machine of this account and region sends ``target`` (a step's
    JOBPLANE_TARGET, a JSON string written literally into its ASL) to the runner."""
    moto_patches.check_version()
    from moto.stepfunctions.responses import get_backend

    quoted = json.dumps(target)[1:-1]  # as the value sits in the definition's JSON text
    return any(quoted in (machine.definition or "") for machine in list(get_backend(account, region).state_machines))
