"""What the local AWS does straight in moto's backends instead of through its HTTP API: Terraform's
part (create the compiled jobs' state machines, schedule roles and schedules), the pipeline's
record of definitions (``Objects``), `jobplane dev`'s putting back of the step logs its data
directory kept (``LogStreams``) and one question of the engine's own bookkeeping (which
executions run now).

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

from jobplane.platform.local.moto_patches import programs
from jobplane.platform.local.moto_patches.shared import check_version
from jobplane.contract.limits import BY_NAME
from jobplane.contract.types import JsonObject

# moto's default account: what it answers to any access key that does not name an account (ours)
ACCOUNT = "123456789012"


class Terraform:
    """One deploy's creates (what one ``terraform apply`` creates), straight into the backends.

    moto's own creates look for an object of the same name first by walking every one that exists
    (CreateStateMachine through ``describe_state_machine``, CreateRole through a list of all roles):
    5,000 jobs made 25 million comparisons, ~40% of `jobplane dev`'s deploy (cProfile,
    bench/dev_scale.py --jobs 5000). Here the names that exist are read once, when the deploy
    starts, and each create adds its own: the rest of each create is moto's (its checks, its
    objects). Like terraform apply, which holds the state's lock, a deploy is the only writer of
    these objects while it runs (`jobplane dev` deploys before anything else reaches the local
    AWS); an object someone else creates meanwhile is created again, not refused.
    """

    def __init__(self, region: str) -> None:
        check_version()
        from moto.iam.models import iam_backends
        from moto.stepfunctions.responses import get_backend

        self.region = region
        # get_backend picks the interpreting backend when execute_state_machine is configured,
        # exactly as the API layer does for each request
        self._sfn = get_backend(ACCOUNT, region)
        self._iam = iam_backends[ACCOUNT]["global"]
        self._machines: dict[str, Any] = {m.arn: m for m in list(self._sfn.state_machines)}
        self._roles: dict[str, Any] = {r.name: r for r in list(self._iam.roles.values())}
        self.checked = 0  # definitions this deploy had the backend check
        self._scheduler: Any = None  # the scheduler backend, once a schedule is put

    def state_machine(self, name: str, definition: str, role_arn: str, checked: bool = False,
                      publish: str | None = None, shape_checked: bool = False) -> str:
        """As CreateStateMachine with ``type=STANDARD``; returns the ARN (of the one that exists,
        unchanged, as moto answers a create of an existing name). A definition the backend refuses
        raises moto's own error (the same one the API would have answered).

        ``checked``: the caller knows this definition's shape (and the machine's name, which its
        compiled file holds) passed this very check before
        (`jobplane dev`'s deploy record: the same ASL, bound to other resource names, which are
        plain strings inside JSON strings, by the same moto and jobplane), so it is not parsed
        again: ~2.5 s of a 5,000-job restart (cProfile, bench/dev_scale.py). What it holds is
        still parsed in full when it first runs (validate_on_first_run).

        ``shape_checked``: this definition passed contract/asl_shape.py's check (`jobplane dev`'s
        compile runs it on the ASL it renders: compiler/rendered_jobs.py), which is not run again
        when it is this backend's check (``validate_on_first_run`` on); with moto's own check
        (the fix off) that one still runs. The name is still checked."""
        from moto.stepfunctions.models import StateMachine
        from moto.utilities.utils import get_partition

        backend = self._sfn
        # moto's create_state_machine, in its order, but the existing one found in the dict:
        # the parser backend's check of the definition (validate_on_first_run's shape check),
        # then the name and role checks
        validate = getattr(backend, "_validate_definition", None)
        if validate is not None and not checked and not (shape_checked and programs.checks_shape_only(backend)):
            validate(definition=definition)
            self.checked += 1
        if not checked:  # the name is the job's, in the same compiled file: checked with it
            check_state_machine_name(backend, name)
        backend._validate_role_arn(role_arn)
        arn = f"arn:{get_partition(self.region)}:states:{self.region}:{ACCOUNT}:stateMachine:{name}"
        machine = self._machines.get(arn)
        if machine is None:
            # moto's models declare CloudFormation's is_created abstract without being ABCs:
            # moto itself builds them as here
            machine = self._machines[arn] = StateMachine(  # type: ignore[abstract]
                arn, name, definition, role_arn, backend, sm_type="STANDARD")
            backend.state_machines.append(machine)
        if publish is not None:  # CreateStateMachine's publish=true with versionDescription=publish
            machine.publish(publish)
        return str(machine.arn)

    def latest_version(self, arn: str) -> str | None:
        """The ARN of the newest version published of state machine ``arn`` (None: none)."""
        machine = self._machines.get(arn)
        latest = getattr(machine, "latest_version", None)
        return None if latest is None else str(latest.arn)

    def schedule(self, spec: JsonObject, created_at: datetime | None = None) -> None:
        """:func:`put_schedule`, with the backend looked up once per deploy (moto's lookup of an
        account's backend was ~0.3 s of a 5,000-job restart's deploy)."""
        if self._scheduler is None:
            from moto.scheduler.models import scheduler_backends

            self._scheduler = scheduler_backends[ACCOUNT][self.region]
        _put_schedule(self._scheduler, spec, created_at)

    def role(self, name: str, trust_policy: str) -> str:
        """As CreateRole with only a trust policy (the API's defaults: path /, one hour sessions);
        a role of that name that exists is refused as moto refuses it (EntityAlreadyExists)."""
        from moto.iam.exceptions import EntityAlreadyExists
        from moto.iam.models import Role
        from moto.iam.utils import random_role_id

        if name in self._roles:
            raise EntityAlreadyExists(f"Role with name {name} already exists.")
        backend = self._iam
        # moto's create_role with its handler's defaults (no boundary, description or tags; 3600 s:
        # None and an int, what its handler passes, though its annotations say str)
        role = Role(account_id=ACCOUNT, partition=backend.partition,  # type: ignore[abstract]
                    role_id=random_role_id(ACCOUNT), name=name, assume_role_policy_document=trust_policy, path="/",
                    permissions_boundary=None, description=None, tags=[],  # type: ignore[arg-type]
                    max_session_duration=3600, linked_service=None)  # type: ignore[arg-type]
        backend.roles[role.id] = self._roles[name] = role
        return str(role.arn)


def create_state_machine(region: str, name: str, definition: str, role_arn: str) -> str:
    """One CreateStateMachine (a deploy of many: :class:`Terraform`)."""
    return Terraform(region).state_machine(name, definition, role_arn)


def create_role(name: str, trust_policy: str) -> str:
    """One CreateRole (a deploy of many: :class:`Terraform`)."""
    return Terraform("us-east-1").role(name, trust_policy)


def put_schedule(region: str, spec: JsonObject, created_at: datetime | None = None) -> None:
    """As CreateSchedule, or UpdateSchedule when the schedule exists; ``spec`` holds the API's
    request fields (Name, GroupName, ScheduleExpression, ..., Target). ``created_at``: the time a
    new schedule is stamped with (``jobplane dev``'s clock, which the local scheduler and the
    fire ledger keep: fires before a schedule's creation are never expected), not moto's."""
    check_version()
    from moto.scheduler.models import scheduler_backends

    _put_schedule(scheduler_backends[ACCOUNT][region], spec, created_at)


def _put_schedule(backend: Any, spec: JsonObject, created_at: datetime | None) -> None:
    from moto.scheduler.exceptions import ScheduleExists

    fields = dict(
        description=spec.get("Description"), end_date=spec.get("EndDate"),
        flexible_time_window=spec["FlexibleTimeWindow"], group_name=spec["GroupName"],
        kms_key_arn=spec.get("KmsKeyArn"), name=spec["Name"], schedule_expression=spec["ScheduleExpression"],
        schedule_expression_timezone=spec.get("ScheduleExpressionTimezone"), start_date=spec.get("StartDate"),
        state=spec.get("State"), target=spec["Target"])
    # a new schedule: as terraform apply's CreateSchedule, held to the account's quota. Looked up
    # in its group's dict: moto's get_schedule answers a missing one by building its error
    # response (an XML body), ~half of each new schedule's put at a 5,000-job deploy (cProfile)
    group = backend.schedule_groups.get(spec["GroupName"] or "default")
    if group is None or spec["Name"] not in group.schedules:
        refused = schedule_quota_error(sum(len(g.schedules) for g in list(backend.schedule_groups.values())))
        if refused is not None:
            raise refused
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
    check_version()
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
    check_version()
    from moto.stepfunctions.responses import get_backend

    def ended(execution: Any) -> datetime | None:
        stop = getattr(execution, "stop_date", None)
        if execution.status == "RUNNING" or not isinstance(stop, datetime):
            return None
        return stop if stop.tzinfo else stop.replace(tzinfo=timezone.utc)  # moto writes both kinds

    forgotten = 0
    gone: set[str] = set()
    for machine in list(get_backend(ACCOUNT, region).state_machines):
        if machine.arn not in state_machine_arns:
            continue
        for execution in list(machine.executions):
            stop = ended(execution)
            if stop is not None and stop < ended_before:
                machine.executions.remove(execution)
                gone.add(execution.execution_arn)
                forgotten += 1
    from jobplane.platform.local.moto_patches import map_child_executions

    map_child_executions.forget(gone)  # a map's child executions go with their parent
    return forgotten


def deploys_target(account: str, region: str, target: str) -> bool:
    """Whether a state machine of this account and region sends ``target`` (a step's
    JOBPLANE_TARGET, a JSON string written literally into its ASL) to the runner."""
    check_version()
    from moto.stepfunctions.responses import get_backend

    quoted = json.dumps(target)[1:-1]  # as the value sits in the definition's JSON text
    return any(quoted in (machine.definition or "") for machine in list(get_backend(account, region).state_machines))


def dynamodb_item(table_name: str, key: JsonObject) -> tuple[str, int]:
    """(the table's partition key attribute, the stored item's size in bytes, 0 if none) for the
    item ``key`` names in any region of the account: what the fault injector's per-key write budget
    charges a write by (jobplane.platform.local.fault_profiles). ("", 0) when there is no such table."""
    check_version()
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType

    for backend in list(dynamodb_backends[ACCOUNT].values()):
        table = backend.tables.get(table_name)
        if table is None:
            continue
        hash_value, range_value = key.get(table.hash_key_attr), key.get(table.range_key_attr or "")
        if not isinstance(hash_value, dict) or (table.range_key_attr and not isinstance(range_value, dict)):
            return table.hash_key_attr, 0
        try:
            item = table.get_item(DynamoType(hash_value), DynamoType(range_value) if range_value else None)
        except Exception:  # a key of the wrong shape: moto refuses the write itself
            return table.hash_key_attr, 0
        return table.hash_key_attr, int(item.size()) if item is not None else 0
    return "", 0


def count_schedules(region: str) -> int:
    """The schedules of the account in ``region`` (every group): what Scheduler's quota counts."""
    check_version()
    from moto.scheduler.models import scheduler_backends

    return sum(len(group.schedules) for group in list(scheduler_backends[ACCOUNT][region].schedule_groups.values()))


def event_rules(region: str, bus: str) -> set[str]:
    """The names of the rules on event bus ``bus`` (a name or ARN) in ``region``."""
    check_version()
    from moto.events.models import events_backends

    found = events_backends[ACCOUNT][region].event_buses.get(bus.rsplit("/", 1)[-1])
    return set(found.rules) if found is not None else set()


def schedule_quota_error(existing: int) -> Exception | None:
    """The error CreateSchedule answers when the account already has its quota of schedules (also
    moto_patches/limits.py's, for the call before moto sees it)."""
    limit = BY_NAME["schedules"]
    if existing < limit.value:
        return None
    from botocore.exceptions import ClientError

    refused: Exception = ClientError({"Error": {"Code": limit.error, "Message": f"The account's quota of {limit.value} "
                                  "schedules is reached (contract/quotas.py schedules)"},
                        "ResponseMetadata": {"HTTPStatusCode": 402}}, "CreateSchedule")
    return refused


def check_state_machine_name(backend: Any, name: str) -> None:
    """moto's StepFunctionBackend._validate_name, its two scans of the name per forbidden
    character (23 characters, 65 code points: ~0.25 ms a name, ~1.2 s of a 5,000-job first
    start under cProfile) as one set intersection: the same verdict and the same error, in
    moto's order, read from moto's own lists (a list entry longer than one character hands
    the name to moto's method itself; tests/test_moto_backends.py compares both)."""
    forbidden = _FORBIDDEN.get(type(backend))
    if forbidden is None:
        chars, unicodes = list(backend.invalid_chars_for_name), list(backend.invalid_unicodes_for_name)
        forbidden = _FORBIDDEN[type(backend)] = (frozenset(chars + unicodes)
                                                 if all(len(c) == 1 for c in chars + unicodes) else frozenset())
    if not forbidden:
        backend._validate_name(name)
        return
    if not forbidden.isdisjoint(name):
        from moto.stepfunctions.exceptions import InvalidName

        raise InvalidName("Invalid Name: '" + name + "'")
    if len(name) > 80:
        from moto.stepfunctions.exceptions import NameTooLongException

        raise NameTooLongException(name)


_FORBIDDEN: dict[type, frozenset[str]] = {}


class Objects:
    """One bucket's objects, written and listed straight in moto's S3 backend: what the deploy's
    record of definitions writes (platform/definitions.py), as the pipeline's record-definitions
    step writes them on AWS, not our runtime's code.

    Through the API each definition (~30 KB of JSON) was one PutObject over HTTP, ~11 ms of
    request signing, parsing and the front's check: 16.8 s of a 1,500-job `jobplane dev` restart
    and ~36 s of its first start (cProfile, bench/dev_scale.py, session 36). The rest is moto's
    own: its ``put_object`` (the key object, its metadata); what the portal and CLI then read
    (GetObject, ListObjectsV2) goes through the ordinary API. tests/test_moto_backends.py checks
    that an object written here reads the same through the API as one PutObject wrote."""

    def __init__(self, region: str, bucket: str) -> None:
        check_version()
        from moto.s3.models import s3_backends
        from moto.utilities.utils import get_partition

        self._backend = s3_backends[ACCOUNT][get_partition(region)]
        self.bucket = bucket
        self._bucket = self._backend.get_bucket(bucket)  # moto's MissingBucket when there is none

    def keys(self, prefix: str = "") -> set[str]:
        """The keys under ``prefix`` (ListObjectsV2 with that prefix, every page)."""
        return {name for name in list(self._bucket.keys.keys()) if name.startswith(prefix)}

    def put_new(self, key: str, body: bytes | memoryview, content_type: str) -> bool:
        """As PutObject with ``If-None-Match: *``: written unless the key exists (False then; AWS
        answers 412 Precondition Failed). As moto's own handler checks, then writes: a deploy is
        the only writer of what it records while it runs (as :class:`Terraform`)."""
        if self._backend.get_object(self.bucket, key) is not None:
            return False
        written = self._backend.put_object(self.bucket, key, body if isinstance(body, bytes) else bytes(body))
        written.set_metadata({"Content-Type": content_type})
        return True


class LogStreams:
    """The step logs of earlier starts put back into the local CloudWatch Logs, straight in moto's
    logs backend: `jobplane dev`'s replay of what its data directory kept (moto keeps logs in
    memory only; on AWS they are simply still there), not our runtime's code, which writes and
    reads logs through the API (the agents' awslogs driver, platform/logs.py).

    Through the API each kept stream was a CreateLogStream and a PutLogEvents over HTTP: ~4.7 ms
    of CPU a stream (botocore's request, the front's signature check, moto's request parsing and
    answer; 300 streams of 20 lines, LocalAWS enter), so ~5 s of every restart per 1,000 steps run
    since ``--reset``. The rest is moto's own: the backend methods its handlers call, with their
    checks (PutLogEvents keeps only the events of the last 14 days, in order, as AWS does).
    tests/test_moto_backends.py checks that a stream put here reads as one put through the API."""

    def __init__(self, region: str) -> None:
        check_version()
        from moto.logs.models import logs_backends

        self._backend = logs_backends[ACCOUNT][region]

    def put(self, group: str, stream: str, events: list[JsonObject]) -> None:
        """As CreateLogStream (a stream that exists kept as it is), its group made first when
        there is none (a Lambda step's: its function's first invocation made it, as Lambda does,
        so it is not there at a start), then PutLogEvents of ``events``."""
        from moto.logs.exceptions import ResourceAlreadyExistsException

        if group not in self._backend.groups:
            self._backend.create_log_group(group, {})
        try:
            self._backend.create_log_stream(group, stream)
        except ResourceAlreadyExistsException:
            pass
        self._backend.put_log_events(group, stream, events)
