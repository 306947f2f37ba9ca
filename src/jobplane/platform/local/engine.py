"""The embedded local AWS: provision what the base module provisions, deploy compiled jobs,
start and await executions, all on moto in this process.

The deployed state machine definition is the compiler's ASL with the deployment tokens bound to
the local resources (:func:`jobplane.contract.bindings.bind`), exactly as Terraform binds them
to the base module's outputs in production.

Steps run for real: each executor's local agent (:mod:`jobplane.platform.local.agents`: the ECS
agent starts ``jobplane-runner`` as a subprocess for each ``ecs:runTask``, the Lambda agent runs
the runner's handler for each runner function's Invoke). When an execution ends, the engine does
what AWS does around it: has the agents of the executors whose attempts stop with their
execution stop those of a stopped or timed-out one, and feeds the reconciler as the base
module's EventBridge rule would.

Two modes: in-process (``LocalAWS()``, for tests: boto3 calls in this process are intercepted)
and server (``LocalAWS(server_port=4566)``, for ``jobplane dev``: moto's HTTP server runs in
this process, so the fixes, the agent and the reconciler apply to every client that points at
``http://127.0.0.1:<port>``, the portal and the CLI included). The server sits behind
:mod:`jobplane.platform.local.front`: only clients on this machine that sign with the access key
generated for this start (``LocalAWS.credentials``) get through; ``server_port=0`` takes a free
port.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import posixpath
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable, Protocol

from jobplane.contract.arns import ExecutionArn
from jobplane.contract import asl_shape
from jobplane.contract.bindings import asl_of_document, bind
from jobplane.contract import datamodel as dm
from jobplane.contract import names
from jobplane.contract import progress
from jobplane.contract import runner as rc
from jobplane.contract.catalog import Catalog, CatalogJob
from jobplane.contract.catalog_brief import JobBrief, find_job
from jobplane.contract.layout import catalog_parts
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.output_files import OutputFiles
from jobplane.contract.types import Client, JsonObject, JsonValue
from jobplane.platform.local import faults as local_faults
from jobplane.platform.local import moto_patches
from jobplane.platform.local.front import Credentials

if TYPE_CHECKING:  # imported where used: the reconciler's module is the Lambda's, loaded only for it
    from jobplane.platform.local.agents import LocalAgent
    from jobplane.platform.local.ecs_agent import LocalEcsAgent
    from jobplane.platform.local.lambda_agent import LocalLambdaAgent
    from jobplane.platform.logs import StepLogs
    from jobplane.platform.reconciler import Reconciler
    from jobplane.platform.repository import Repository

log = logging.getLogger(__name__)

REGION = "us-east-1"
#: How many ended executions LocalAWS.wait_reconciled can still be asked about.
ENDED_KEPT = 100_000
#: seconds between two DescribeExecution of :meth:`LocalAWS.wait` when no end was announced (an
#: end moto does not announce, e.g. of an engine started without the status patch, is still seen,
#: only up to this much later)
WAIT_POLL = 0.25
ACCOUNT = moto_patches.ACCOUNT


if TYPE_CHECKING:
    from jobplane.platform.local.compiled_roles import ScheduleRoles

#: What deploy_output asks of each job: its ASL (unbound) and the role its schedules pass.
JobSource = Callable[[OutputFiles, CatalogJob, "ScheduleRoles"], tuple[str, str | None]]


class KeptDefinitions(Protocol):
    """The definitions earlier deploys recorded, kept outside the local AWS (moto starts empty):
    `jobplane dev`'s devserver/definition_archive.py."""

    def restore(self, deployed: Mapping[str, tuple[str | None, str | None]]) -> list[tuple[str, bytes | memoryview]]:
        """Each kept object (key, bytes) to put back; ``deployed``: job -> (its definition's
        digest, the ARN of the version this deploy published of it)."""

    def add(self, key: str, job: str, digest: str, version: str | None, body: bytes) -> None:
        """An object this deploy recorded."""


#: The runner image the local task definition names (the runner runs as a local process).
LOCAL_RUNNER_IMAGE = "jobplane-runner:local"


def job_source(output: OutputFiles | Path, job: CatalogJob, roles: ScheduleRoles) -> tuple[str, str | None]:
    """A job's ASL and schedule role, read from its file in a compiler output directory."""
    output = OutputFiles.of(output)
    stored = output.read_text(job.asl)
    if job.asl.endswith(".tf.json"):  # parsed once: its ASL and its schedules' role
        document = json.loads(stored)
        return asl_of_document(document), roles.name(document, output, posixpath.dirname(job.asl))
    return stored, None


@dataclass
class Execution:
    arn: str
    status: str
    error: str | None
    cause: str | None
    output: JsonValue
    states_entered: list[str]


@dataclass
class LocalAWS:
    """One embedded AWS account. Use as a context manager: ``with LocalAWS() as aws: ...``."""

    prefix: str = "jobplane"
    region: str = REGION
    log_dir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # added to every task's environment
    reconcile: bool = True
    fixes: tuple[str, ...] | None = None  # moto fixes to apply (default: all; tests omit one to show stock behaviour)
    #: AWS's documented faults to inject (docs/local-engine.md "Limits and faults"): a profile
    #: name or an injector, installed for this engine's life; None leaves the process's injector
    #: as it is (the tests' ``faults`` fixture installs one; without it, none)
    faults: str | local_faults.Faults | None = None
    #: the divisor of every Retrier interval and Wait-state duration while this engine runs (the
    #: moto patch time_scale: the same ASL, the same tries, shorter sleeps; timeouts are not
    #: scaled); for tests of retry and wait paths. None leaves the process's scale as it is
    #: (1, real time, unless a test's ``time_scale`` fixture set one)
    time_scale: float | None = None
    server_port: int | None = None  # serve over HTTP on 127.0.0.1:<port> (0: any free port) instead of in-process only
    credentials: Credentials = field(default_factory=lambda: Credentials("local", "local"))
    #: where the reconciler's metric lines go (platform/run_metrics.py): a file the lines are
    #: appended to, as the reconciler Lambda's log holds them on AWS; None: not written
    metrics_file: Path | None = None
    #: the time new schedules are created at (``jobplane dev``'s clock); None: the real time
    clock: Callable[[], datetime] | None = None
    state_machines: dict[str, str] = field(default_factory=dict)
    resources: dict[str, str] = field(default_factory=dict)
    #: execution ARN -> the status it ended with, newest last, for wait_reconciled; the oldest
    #: go beyond ENDED_KEPT (a long `jobplane dev` ends ~17,500 runs a day at 1,000 jobs)
    ended: collections.OrderedDict[str, str] = field(default_factory=collections.OrderedDict)
    # upstream state machine name -> [(downstream job, on)]: the compiled `after` rules (contract/upstream.py)
    after_rules: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    #: job -> the digest of its deployed definition (CatalogJob.definition): what the `after`
    #: rules' inputs carry, as their compiled input templates do
    job_definitions: dict[str, str | None] = field(default_factory=dict)
    #: job -> the ARN of its state machine's newest published version (each deploy publishes,
    #: as the compiled Terraform's ``publish = true`` does: platform/sfn_versions.py)
    versions: dict[str, str] = field(default_factory=dict)
    _clients: JsonObject = field(default_factory=dict, repr=False, compare=False)
    _clients_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _group_ready: bool = field(default=False, repr=False, compare=False)  # the schedule group exists
    _roles: dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # IAM roles known: name -> ARN
    _terraform: moto_patches.Terraform | None = field(default=None, repr=False, compare=False)  # deploy_output's
    #: the catalog deploy_output last deployed (`jobplane dev` hands it to its control plane: a
    #: second read of the catalog files was ~1 s of a start at 5,000 jobs)
    catalog: Catalog | None = field(default=None, repr=False, compare=False)
    #: where that catalog's parts are: the reconciler reads a job's entry from them as its Lambda
    #: reads the parts the team roots upload (contract/catalog_brief.py find_job)
    catalog_dir: Path | None = field(default=None, repr=False, compare=False)
    #: how many definitions deploy_output last had the create check (the others were known checked)
    definitions_checked: int = field(default=0, repr=False, compare=False)
    #: the definitions store's objects deploy_output last put back (kept by earlier starts) and
    #: the keys it recorded (platform/definitions.py)
    definitions_restored: int = field(default=0, repr=False, compare=False)
    definitions_recorded: list[str] = field(default_factory=list, repr=False, compare=False)

    def __enter__(self) -> LocalAWS:
        """Started with Python's cyclic collector paused: the start imports moto's modules
        (~250,000 objects) and parses the service models it keeps, objects that live as long
        as the process, and their allocations set off 3-4 full collections, each walking the
        whole heap, and ~60 younger ones: ~0.3 of the start's ~1.2 CPU s at 1,500 and 5,000
        jobs (gc callbacks around ``__enter__``), freeing nothing. Reference counting frees the
        requests' garbage as before; the next collection after the start takes any cycle."""
        import gc

        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._enter()
        finally:
            if collecting:
                gc.enable()

    def _enter(self) -> LocalAWS:
        from moto import mock_aws

        from jobplane.platform.local.agents import AgentSetup, start_agents

        moto_patches.apply(*(self.fixes or ()))
        self._faults_before = local_faults.active()
        if self.faults is not None:
            local_faults.install(local_faults.Faults(self.faults) if isinstance(self.faults, str) else self.faults)
        self._scale_before = moto_patches.time_scale_of()
        if self.time_scale is not None:
            moto_patches.set_time_scale(self.time_scale)
        self._clients.clear()  # bound to an endpoint and credentials: this start's
        self._group_ready = False
        self._roles.clear()
        if self.server_port is None:
            for name, value in {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
                                "AWS_DEFAULT_REGION": self.region}.items():
                os.environ.setdefault(name, value)
            self._mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})
            self._mock.start()
        else:
            self.credentials = Credentials.generate()
            self._start_server()
        self.provision()
        if self.log_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="jobplane-tasks-")
            self.log_dir = Path(self._tmp.name)
        self.restore_logs()
        task_role = ({"AWS_ENDPOINT_URL": str(self.endpoint_url), "AWS_ACCESS_KEY_ID": self.credentials.access_key_id,
                      "AWS_SECRET_ACCESS_KEY": self.credentials.secret_access_key, "AWS_DEFAULT_REGION": self.region}
                     if self.endpoint_url else {})
        #: executor name -> its local agent (platform/local/agents.py), one for each executor
        self.agents: dict[str, LocalAgent] = start_agents(AgentSetup(Path(self.log_dir), self.prefix, self.env, task_role))
        self._listener: Callable[[str, str, str], None] = self._on_status
        moto_patches.STATUS_LISTENERS.append(self._listener)
        self._ended = threading.Condition()
        self._inflight = 0
        #: executions whose end moto has announced (any state machine's), for :meth:`wait`
        self._terminated: collections.OrderedDict[str, None] = collections.OrderedDict()
        return self

    def __exit__(self, *exc: object) -> None:

        self.stop_all()
        for agent in self.agents.values():
            agent.deactivate()
        with self._ended:  # let status handlers that already started finish against the mock
            self._ended.wait_for(lambda: self._inflight == 0, timeout=30)
        if self._listener in moto_patches.STATUS_LISTENERS:
            moto_patches.STATUS_LISTENERS.remove(self._listener)
        if self.faults is not None:
            local_faults.install(self._faults_before)
        if self.time_scale is not None:
            moto_patches.set_time_scale(self._scale_before)
        if self.server_port is None:
            self._mock.stop()
        else:
            # moto's backends are process-global: empty them, so the next LocalAWS in this
            # process (a restarted `jobplane dev`, the next test) starts from nothing, like AWS.
            from moto.moto_api._internal.models import moto_api_backend

            self._server.stop()
            moto_api_backend.reset()
            moto_patches.use_server_credentials(None)

    def _start_server(self) -> None:
        import logging

        from moto.moto_api._internal.models import moto_api_backend

        from jobplane.platform.local.front import FrontServer

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per AWS call otherwise
        # Empty moto's process-global backends before serving, not only at the last stop: an
        # earlier engine whose stop did not reach its reset (an exception on the way out) would
        # otherwise hand this one its schedules and tables, and a schedule kept from it keeps its
        # old CreationDate (moto_patches.put_schedule's ScheduleExists path), so the fire ledger
        # of a `jobplane dev` started now would count fires from before it as MISSED.
        moto_api_backend.reset()
        self._server = FrontServer(self.server_port or 0, self.credentials)
        self.server_port = self._server.port
        # The interpreter's service integrations call back to localhost:$MOTO_PORT, signed with
        # this start's key (the moto patch client_reuse), or the front refuses them too.
        os.environ["MOTO_PORT"] = str(self.server_port)
        moto_patches.use_server_credentials(self.credentials)
        moto_api_backend.set_config({"stepfunctions": {"execute_state_machine": True}})
        self._server.start()

    @property
    def agent(self) -> LocalEcsAgent:
        """The ECS executor's agent (tests reach its tasks and processes)."""
        from jobplane.platform.local.ecs_agent import LocalEcsAgent

        return next(a for a in self.agents.values() if isinstance(a, LocalEcsAgent))

    @property
    def lambda_agent(self) -> LocalLambdaAgent:
        """The Lambda executor's agent (tests reach its running invocations)."""
        from jobplane.platform.local.lambda_agent import LocalLambdaAgent

        return next(a for a in self.agents.values() if isinstance(a, LocalLambdaAgent))

    @property
    def endpoint_url(self) -> str | None:
        return f"http://127.0.0.1:{self.server_port}" if self.server_port else None

    # -- what AWS does when an execution ends ------------------------------------------------
    def _on_status(self, execution_arn: str, status: str, state_machine_arn: str) -> None:
        with self._ended:  # moto has set the end status (DescribeExecution shows it): wake wait()
            self._terminated[execution_arn] = None
            while len(self._terminated) > ENDED_KEPT:
                self._terminated.popitem(last=False)
            self._ended.notify_all()
        if state_machine_arn not in self.state_machines.values():
            return
        with self._ended:
            self._inflight += 1
        try:
            self._handle_status(execution_arn, status)
        finally:
            with self._ended:
                self._inflight -= 1
                self.ended[execution_arn] = status
                while len(self.ended) > ENDED_KEPT:
                    self.ended.popitem(last=False)
                self._ended.notify_all()

    def _handle_status(self, execution_arn: str, status: str) -> None:
        if status in ("ABORTED", "TIMED_OUT"):
            from jobplane.platform.local.agents import stop_execution

            stop_execution(self.agents, ExecutionArn.parse(execution_arn).name)
        try:
            self.deliver_status_event(execution_arn, status)
        except Exception:  # EventBridge retries a failed target, then dead-letters: say so loudly
            log.exception("starting the jobs after %s (%s) failed", execution_arn, status)
        if not self.reconcile:
            return
        reconciler = self.reconciler()
        # As Lambda does for an asynchronous invocation that fails: two more tries, backing off.
        for attempt in range(3):
            try:
                reconciler.handle(execution_arn, status)
                return
            except Exception:
                log.exception("reconciling %s (%s) failed, attempt %d of 3", execution_arn, status, attempt + 1)
                time.sleep(1 + 2 * attempt)

    def deliver_status_event(self, execution_arn: str, status: str) -> list[str]:
        """What the compiled `after` rules do with an execution's status event: start each job
        that runs after this one with the rule's transformed input (contract/upstream.py). Public,
        so a test can deliver an event twice, as EventBridge may."""
        from jobplane.contract import execution_input, upstream

        arn = ExecutionArn.parse(execution_arn)
        machine = arn.state_machine
        started = []
        for downstream, on in self.after_rules.get(machine, []):
            if status not in upstream.EVENT_STATUSES[on] or downstream not in self.state_machines:
                continue
            payload = upstream.transformed_input(arn.name, execution_input.iso(datetime.now(timezone.utc)),
                                                 self.job_definitions.get(downstream))
            started.append(self.client("stepfunctions").start_execution(
                stateMachineArn=self.state_machines[downstream], input=json.dumps(payload.to_json()))["executionArn"])
        return started

    def reconciler(self) -> Reconciler:
        """The reconciler as the base module's Lambda runs it, on this local AWS."""
        from jobplane.platform.reconciler import Reconciler

        return Reconciler(self.repository(), self.client("sns"), self.resources["topic_arn"],
                          self.client("stepfunctions"), self.prefix, logs=self.step_logs(), job_brief=self.job_brief,
                          metrics=self.metric_sink())

    def metric_sink(self) -> Callable[[str], None] | None:
        """Where the platform's metric lines go on this local AWS (the reconciler's, the fire
        ledger's, the deadline check's): ``metrics_file``, one appender for them all, as on AWS
        each Lambda's log holds its own; None when no file is set."""
        if self.metrics_file is None:
            return None
        return _appender(self.metrics_file)

    def job_brief(self, job: str) -> JobBrief | None:
        """``job``'s entry in the catalog last deployed, read from its parts' bytes as the base
        module's reconciler reads the parts the team roots upload (None: no such job deployed)."""
        if self.catalog_dir is None:
            return None
        return find_job((part.read_bytes() for part in catalog_parts(self.catalog_dir)), job)

    def repository(self) -> Repository:
        from jobplane.platform.repository import Repository

        return Repository(self.client("dynamodb"), self.resources["table_name"])

    def wait_reconciled(self, arn: str, timeout: float = 30.0) -> str:
        """Wait until the engine has handled the end of an execution (its status event)."""
        deadline = time.monotonic() + timeout
        with self._ended:
            while True:
                if arn in self.ended:
                    return self.ended[arn]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no status event for {arn}")
                self._ended.wait(left)

    def client(self, service: str) -> Client:
        """One client per service for this engine: creating one costs ~15 ms (its service model
        loaded and its handlers built), which deploying 1,000 jobs paid ~3,000 times
        (bench/dev_scale.py). Clients are thread-safe to call; creating them is not, hence the lock.
        Made from the process's one botocore session (platform/aws_clients.py): a session of
        their own each re-read the endpoint data and the shared model files, ~1 s of a restart's
        CPU for the engine's ten clients (cProfile, bench/dev_scale.py)."""
        with self._clients_lock:
            client = self._clients.get(service)
            if client is None:
                from jobplane.platform import aws_clients

                client = self._clients[service] = aws_clients.client(
                    service, region_name=self.region, aws_access_key_id=self.credentials.access_key_id,
                    aws_secret_access_key=self.credentials.secret_access_key, endpoint_url=self.endpoint_url)
            return client

    # -- what terraform/platform creates -----------------------------------------------------
    def provision(self) -> None:
        ddb = self.client("dynamodb")
        keys = ["pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", dm.ATTR_STATUS_PK, dm.ATTR_STATUS_SK]
        ddb.create_table(
            TableName=self.prefix, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in keys],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            GlobalSecondaryIndexes=[
                {"IndexName": gsi, "Projection": {"ProjectionType": "ALL"},
                 "KeySchema": [{"AttributeName": f"{gsi}pk", "KeyType": "HASH"},
                               {"AttributeName": f"{gsi}sk", "KeyType": "RANGE"}]}
                for gsi in (dm.GSI_BY_OWNER, dm.GSI_BY_KIND, dm.GSI_BY_STATUS)])
        topic = self.client("sns").create_topic(Name=f"{self.prefix}-events")["TopicArn"]
        # as terraform/platform/notifications.tf: the fires EventBridge Scheduler could not start
        sqs = self.client("sqs")
        dlq_url = sqs.create_queue(QueueName=f"{self.prefix}-scheduler-dlq")["QueueUrl"]
        sqs.create_queue(QueueName=f"{self.prefix}-events-dlq")  # alerts and events not delivered (dead_letters.py)
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        ec2 = self.client("ec2")
        vpc = ec2.create_vpc(CidrBlock="10.90.0.0/16")["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.90.1.0/24")["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName=f"{self.prefix}-runner", Description="runner tasks",
                                          VpcId=vpc)["GroupId"]
        ecs = self.client("ecs")
        cluster = ecs.create_cluster(clusterName=self.prefix)["cluster"]["clusterArn"]
        self.log_group = names.runner_log_group(self.prefix)
        self.client("logs").create_log_group(logGroupName=self.log_group)
        task_def = ecs.register_task_definition(  # as terraform/platform/runner.tf, log driver included
            family=f"{self.prefix}-runner", requiresCompatibilities=["FARGATE"], networkMode="awsvpc",
            cpu="256", memory="512",
            containerDefinitions=[{
                "name": rc.CONTAINER_NAME, "image": LOCAL_RUNNER_IMAGE, "memoryReservation": 128, "essential": True,
                # where a step's progress goes (contract/progress.py), as the base module's task definition
                "environment": [{"name": progress.ENV_TABLE, "value": self.prefix}],
                "logConfiguration": {"logDriver": "awslogs", "options": {
                    "awslogs-group": self.log_group, "awslogs-region": self.region,
                    "awslogs-stream-prefix": rc.LOG_STREAM_PREFIX}}}],
        )["taskDefinition"]["taskDefinitionArn"]
        role = self.client("iam").create_role(
            RoleName=f"{self.prefix}-local-sfn",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole"}]}),
        )["Role"]["Arn"]
        # the ECS task role a job's tasks run with (RunTask's override, compiler/task_roles.py): on AWS its
        # team's; the local engine runs every task as the same local process, so one role stands for them
        task_role = self.client("iam").create_role(
            RoleName=f"{self.prefix}-local-task",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}),
        )["Role"]["Arn"]
        # as the base module's catalog bucket, where a map's items step writes its list (contract/map_items.py)
        items_bucket = f"{self.prefix}-catalog"
        self.client("s3").create_bucket(Bucket=items_bucket, **(
            {"CreateBucketConfiguration": {"LocationConstraint": self.region}} if self.region != "us-east-1" else {}))
        self.resources = {
            "items_bucket": items_bucket,
            "table_name": self.prefix, "topic_arn": topic, "cluster_arn": cluster,
            "task_definition": f"{self.prefix}-runner", "task_definition_arn": task_def, "subnets": subnet, "security_groups": group,
            "role_arn": role, "scheduler_dlq_arn": dlq_arn, "task_role_arn": task_role,
        }

    def restore_logs(self) -> int:
        """The step logs of earlier starts on this data directory back into CloudWatch Logs
        (moto keeps them in memory only), straight into moto's logs backend
        (``moto_patches.LogStreams``: the API's two calls a stream cost ~4.7 ms of CPU each
        stream, ~5 s of a restart per 1,000 steps run); read back through the API as before."""
        from jobplane.platform.local.awslogs import LogCache

        return LogCache(Path(self.log_dir)).restore(moto_patches.LogStreams(self.region).put) if self.log_dir else 0

    def step_logs(self) -> StepLogs:
        from jobplane.platform.logs import StepLogs

        return StepLogs(self.client("logs"), self.log_group)

    # -- what terraform/jobs creates ----------------------------------------------------------
    def bindings(self, **overrides: str) -> dict[str, str]:
        values = {k: v for k, v in self.resources.items() if k != "role_arn"}
        values.update(overrides)
        return values

    def deploy(self, job: str, asl_text: str, checked: bool = False, digest: str | None = None,
               shape_checked: bool = False, **overrides: str) -> str:
        """Create (or update) a job's state machine from its compiled ASL, publishing a version
        of it (``versions``; ``digest``, the definition's, is the version's description: what
        the console shows of it). ``checked``: this ASL passed the create's definition check at
        an earlier deploy (moto_patches/backends.py); ``shape_checked``: ``asl_text`` passed
        contract/asl_shape.py's check, whose verdict the bound definition keeps when every bound
        value is plain (asl_shape.plain; else it is checked again). A version is published as the compiled
        Terraform's ``publish = true`` publishes one (CreateStateMachine and UpdateStateMachine
        with ``publish``); an update that changes nothing answers the newest version again
        (AWS's publish is idempotent per revision: API_PublishStateMachineVersion)."""
        values = self.bindings(**overrides)
        definition = bind(asl_text, values)
        self.deploy_step_resources(definition)
        description = digest or ""
        if job in self.state_machines:
            answer = self.client("stepfunctions").update_state_machine(
                stateMachineArn=self.state_machines[job], definition=definition, publish=True,
                versionDescription=description)
            if answer.get("stateMachineVersionArn"):
                self.versions[job] = answer["stateMachineVersionArn"]
        else:  # as terraform apply creates it: not through our code's API calls (moto_patches/backends.py)
            terraform = self._terraform or moto_patches.Terraform(self.region)
            self.state_machines[job] = terraform.state_machine(
                names.state_machine_name(self.prefix, job), definition, self.resources["role_arn"], checked=checked,
                publish=description, shape_checked=shape_checked and asl_shape.plain(values))
            version = terraform.latest_version(self.state_machines[job])
            if version is not None:
                self.versions[job] = version
        return self.state_machines[job]

    def deploy_step_resources(self, definition: str) -> list[str]:
        """What a definition's steps need besides the state machine, each executor's agent
        deploying its own (a Lambda step's runner function: lambda_agent.py), as the compiled
        Terraform creates them."""
        return [name for agent in self.agents.values() for name in agent.deploy(definition, self)]

    def deploy_output(self, output_dir: OutputFiles | Path | str, source: JobSource | None = None,
                      checked: Callable[[CatalogJob], bool] | None = None,
                      definitions: KeptDefinitions | None = None,
                      shape_checked: Callable[[CatalogJob], bool] | None = None,
                      documents: Callable[[CatalogJob], str | None] | None = None, **overrides: str) -> list[str]:
        """Deploy every job of a compiler output directory: its state machine from the ASL its
        Terraform file holds (bound here to the local resources, as Terraform binds it to what
        the base module publishes), and its schedules (stored with timezone, state and target
        input, as Terraform creates them; moto never fires them — the local scheduler reads them).
        ``source`` reads a job's ASL and schedule role (default :func:`job_source`: from its
        file); `jobplane dev` passes one that keeps what an unchanged file gave at the last start
        (devserver/deploy_record.py), and ``checked``, asked after ``source``, tells the jobs
        whose ASL passed the create's definition check at that start (not parsed again),
        ``shape_checked``, also asked after ``source``, those whose ASL its compile ran the shape
        check on (:meth:`deploy`), and ``definitions``, the definitions its earlier starts
        recorded (:meth:`record_definitions`), and ``documents``, asked there, the definition
        documents its compile made (DefinitionStore.to_record). ``output_dir`` may be an OutputFiles that
        also holds the texts of files still being written (contract/output_files.py)."""
        output = OutputFiles.of(output_dir)
        source = source or job_source
        catalog = self.catalog = Catalog.load_output(output)
        from jobplane.platform.local.declared_secrets import declared_names

        declared = declared_names(catalog)  # issue 65 item 2
        for agent in self.agents.values():
            agent.declared_secrets = declared
        self.catalog_dir = output.directory
        self.after_rules = {}
        self.job_definitions = {job.name: job.definition for job in catalog.jobs}
        for job in catalog.jobs:
            for a in job.after:
                self.after_rules.setdefault(names.state_machine_name(self.prefix, a.job), []).append((job.name, a.on))
        # One job at a time: moto's IAM backend answered 500 to concurrent CreateRole/GetRole
        # calls when four deployed at once (bench/dev_scale.py, 1,000 jobs), and gained little.
        from jobplane.platform.local.compiled_roles import ScheduleRoles

        roles = ScheduleRoles()
        # One Terraform for all: what exists is looked up once, not once per create
        # (moto's creates walked every object that exists: quadratic, moto_patches/backends.py).
        terraform = self._terraform = moto_patches.Terraform(self.region)
        deployed: list[tuple[CatalogJob, str]] = []
        try:
            for job in catalog.jobs:
                asl_text, role = source(output, job, roles)
                arn = self.deploy(job.name, asl_text, checked=checked is not None and checked(job),
                                  digest=job.definition,
                                  shape_checked=shape_checked is not None and shape_checked(job), **overrides)
                self.deploy_schedules(job, arn, role)
                deployed.append((job, asl_text))
        finally:
            self._terraform = None
        self.definitions_checked = terraform.checked
        self.record_definitions(deployed, definitions, documents)
        return [j.name for j in catalog.jobs]

    def record_definitions(self, deployed: list[tuple[CatalogJob, str]],
                           kept: KeptDefinitions | None = None,
                           documents: Callable[[CatalogJob], str | None] | None = None) -> list[str]:
        """Every deployed definition kept by its digest, as the pipeline's record-definitions
        does after the apply (platform/definitions.py: the same objects, the same checks, never
        one replaced), written straight into the local S3 (moto_patches.Objects): this is the
        pipeline's step, not the runtime's. ``kept``: what earlier starts recorded, put back
        first, so only definitions new to this data directory are written; ``documents``:
        DefinitionStore.to_record's. The keys written."""
        from jobplane.platform.definitions import CONTENT_TYPE, PREFIX, DefinitionStore

        bucket = self.resources["items_bucket"]  # the catalog bucket
        objects = moto_patches.Objects(self.region, bucket)
        self.definitions_restored = 0
        if kept is not None:
            current = {j.name: (j.definition, self.versions.get(j.name)) for j, _ in deployed}
            self.definitions_restored = sum(objects.put_new(where, body, CONTENT_TYPE)
                                            for where, body in kept.restore(current))
        images = {j.runner_image for j, _ in deployed if j.runner_image}  # the compile's (`jobplane dev`'s identity)
        new = DefinitionStore(self.client("s3"), bucket).to_record(
            deployed, objects.keys(PREFIX), image=images.pop() if len(images) == 1 else LOCAL_RUNNER_IMAGE,
            versions={j.name: self.versions[j.name] for j, _ in deployed if j.name in self.versions},
            documents=documents)
        written = []
        for where, stored in new:
            body = stored.body()
            if objects.put_new(where, body, CONTENT_TYPE):
                written.append(where)
                if kept is not None:
                    kept.add(where, stored.job, stored.digest, stored.version, body)
        self.definitions_recorded = written
        return written

    def _ensure_schedule_group(self) -> str:
        group = self.prefix
        if not self._group_ready:  # once per engine, not once per job
            scheduler = self.client("scheduler")
            if not any(g["Name"] == group for g in scheduler.list_schedule_groups().get("ScheduleGroups", [])):
                scheduler.create_schedule_group(Name=group)
            self._group_ready = True
        return group

    def deploy_schedules(self, job: CatalogJob, state_machine_arn: str, role_name: str | None = None) -> list[str]:
        from jobplane.contract import execution_input
        from jobplane.contract.names import schedule_name, team_role_name

        group = self._ensure_schedule_group()
        names = []
        target_input = json.dumps(execution_input.scheduled(execution_input.SCHEDULER_TIME, job.params,
                                                            job.definition).to_json(), sort_keys=True)
        # the schedule's role, named as the compiled Terraform names it (its team's shared role:
        # platform/local/compiled_roles.py), so a schedule here carries what it carries on AWS (an
        # UpdateSchedule passes that role again); a job deployed from its ASL alone, one of its
        # team's of the same shape
        iam = self.client("iam")
        role_name = role_name or team_role_name(self.prefix, job.team, "scheduler", "local", 1)
        if not self._roles:  # the roles that exist, listed once (a GetRole per job was ~7 ms each)
            for page in iam.get_paginator("list_roles").paginate():
                self._roles.update({r["RoleName"]: r["Arn"] for r in page["Roles"]})
        role_arn = self._roles.get(role_name)
        if role_arn is None:
            role_arn = self._roles[role_name] = (self._terraform or moto_patches.Terraform(self.region)).role(role_name, json.dumps({
                "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                        "Principal": {"Service": "scheduler.amazonaws.com"}}]}))
        for i, expression in enumerate(job.schedule):
            name = schedule_name(self.prefix, job.name, i)
            spec = dict(Name=name, GroupName=group, ScheduleExpression=expression,
                        ScheduleExpressionTimezone=job.timezone, State="ENABLED" if job.enabled else "DISABLED",
                        FlexibleTimeWindow={"Mode": "OFF"},
                        Target={"Arn": state_machine_arn, "RoleArn": role_arn, "Input": target_input,
                                # as the compiled Terraform: a fire that cannot start goes there
                                "DeadLetterConfig": {"Arn": self.resources["scheduler_dlq_arn"]}})
            created_at = self.clock() if self.clock else None
            if self._terraform is not None:  # a deploy's: the backend looked up once
                self._terraform.schedule(spec, created_at)
            else:
                moto_patches.put_schedule(self.region, spec, created_at=created_at)
            names.append(name)
        return names

    # -- executions ---------------------------------------------------------------------------
    def start(self, job: str, execution_input: ExecutionInput | JsonObject, name: str | None = None) -> str:
        """Start the job's state machine with a jobplane input, or with any JSON object (what
        a console start or a hostile caller may send)."""
        sent = execution_input.to_json() if isinstance(execution_input, ExecutionInput) else execution_input
        arn: str = self.client("stepfunctions").start_execution(
            stateMachineArn=self.state_machines[job], name=name or str(uuid.uuid4()),
            input=json.dumps(sent))["executionArn"]
        return arn

    def wait(self, arn: str, timeout: float = 60.0) -> Execution:
        sfn = self.client("stepfunctions")
        deadline = time.monotonic() + timeout
        while True:
            d = sfn.describe_execution(executionArn=arn)
            if d["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{arn} still RUNNING after {timeout}s")
            # woken when moto announces the end (the execution_status_events patch), else asked
            # again every WAIT_POLL seconds: a DescribeExecution every 20 ms cost ~3 ms of CPU
            # each, 15% of a core for every run a caller waited on, taken from the runs themselves
            # under the GIL (issue 66 item 7)
            with self._ended:
                self._ended.wait_for(lambda: arn in self._terminated, timeout=WAIT_POLL)
        from jobplane.platform.timeline import Patience, history

        # read as the reconciler reads it: a throttled page (a fault profile's) is waited for
        events = history(sfn, arn, Patience())
        entered = [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]
        output = json.loads(d["output"]) if d.get("output") else None
        return Execution(arn, d["status"], d.get("error"), d.get("cause"), output, entered)

    def run(self, job: str, execution_input: ExecutionInput | JsonObject, timeout: float = 60.0) -> Execution:
        return self.wait(self.start(job, execution_input), timeout)

    def running_executions(self) -> list[str]:
        """The ARNs of the deployed jobs' executions RUNNING now, read from the engine's own
        backend: the API would take one ListExecutions per job (moto_patches/backends.py)."""
        return moto_patches.running_executions(self.region, set(self.state_machines.values()))

    def forget_ended_executions(self, ended_before: datetime) -> int:
        """Let moto drop the deployed jobs' executions that ended before ``ended_before``
        (moto_patches.forget_ended_executions says when that is safe)."""
        return moto_patches.forget_ended_executions(self.region, set(self.state_machines.values()), ended_before)

    def stop_all(self) -> None:
        """Stop what still runs, so no execution thread outlives the mock (see notes)."""
        sfn = self.client("stepfunctions")
        for arn in self.running_executions():
            sfn.stop_execution(executionArn=arn)
        self.state_machines.clear()


#: one line at a time across every appender of the process (the reconciler's, the checks')
_APPENDING = threading.Lock()


def _appender(path: Path) -> Callable[[str], None]:
    """Each line appended to ``path`` (one write a line: a reader never sees half of one)."""
    lock = threading.Lock()

    def append(text: str) -> None:
        with lock, _APPENDING, open(path, "a", encoding="utf-8") as f:
            f.write(text + "\n")

    return append
