"""The states of a ``jp.map`` step (compiler/kinds/map_.py): its items step's attempts, then one
Distributed Map whose child executions each run the ``each`` step's attempts for one item and
write that item's record.

Why always Distributed (docs/state-machine.md "A map"): the list comes from S3 (steps return no
data to the state machine), and only a Distributed Map reads S3 with ``ItemReader``; an Inline
Map runs at most 40 iterations at once and adds every iteration's events to the run's history
(25,000 events at most), while Distributed runs up to 10,000 child executions, each with its own
history (https://docs.aws.amazon.com/step-functions/latest/dg/state-map.html). The children are
STANDARD executions: an ``ecs:runTask.sync`` Task is not supported in an Express workflow
(https://docs.aws.amazon.com/step-functions/latest/dg/connect-to-resource.html). Cost: one state
transition per child execution started (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-transitions.html,
"Transitions in Distributed Map state") plus the child's own, :func:`transitions_per_item`.

The child's ``$$.Execution`` is the child's own, so the run's identity (its execution name, the
input fields the Tasks read) reaches it in the ``ItemSelector``, evaluated in the parent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from jobplane.compiler import pools
from jobplane.compiler.choice_rules import When
from jobplane.compiler.state_data import ATTEMPT, ERROR
from jobplane.compiler.states import DISCARD, Catch, Graph, Pass, Retry, State, Task, _Catching
from jobplane.contract import items as it
from jobplane.contract import map_items
from jobplane.contract import states as sn
from jobplane.contract.bindings import token
from jobplane.contract.datamodel import EXEC_PREFIX
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.items import Ref
from jobplane.contract.statuses import Event, ExecutionStatus
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import GroupBuilder
    from jobplane.compiler.model import Job, Step

GET_OBJECT = "arn:aws:states:::s3:getObject"
PUT_OBJECT = "arn:aws:states:::s3:putObject"
PUT_ITEM = "arn:aws:states:::dynamodb:putItem"
#: what the child's Tasks read of the run (the ECS overrides: contract/execution_input.py)
_RUN_FIELDS = ("trigger", "scheduled_time", "requested_by", "params")
ITEM_FAILED_ERROR = "Job.ItemFailed"
#: The Map's read of the run's list: the Step Functions service's GetObject of it, which S3 may
#: answer ``503 SlowDown`` ("Please reduce your request rate",
#: https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html) or any transient error,
#: fails the Map with ``States.ItemReaderFailed`` ("Error names",
#: https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html). No child
#: has started when the list cannot be read, so the read is retried, with backoff and jitter; a
#: list that stays unreadable (gone, access denied) fails the map after these tries.
READ_RETRY = Retry(("States.ItemReaderFailed",), 5, interval=1, backoff=2.0, max_delay=20, full_jitter=True)
#: The Map's export of its children's results (:func:`result_writer`) runs once every child has
#: ended within the tolerance: nothing reads the export (each item's record is its outcome), and
#: a Retry of the Map would run every item again, so a write S3 refused (``States.ResultWriterFailed``)
#: is caught and the map goes on as succeeded, the error kept beside the run's data.
RESULTS_NOT_WRITTEN = "States.ResultWriterFailed"


@dataclass
class Map(_Catching):
    """A Distributed Map state (JSONPath)."""

    type: ClassVar[str] = "Map"
    processor: Graph
    item_reader: JsonObject
    item_selector: JsonObject
    max_concurrency: int
    tolerance: JsonObject
    result_writer: JsonObject
    result_path: object = DISCARD
    retry: list[Retry] = field(default_factory=list)

    def fields(self) -> JsonObject:
        return {"ItemReader": self.item_reader, "ItemSelector": self.item_selector,
                "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                                  **self.processor.to_dict()},
                "MaxConcurrency": self.max_concurrency, **self.tolerance, "ResultWriter": self.result_writer,
                "ResultPath": None} | ({"Retry": [r.to_dict() for r in self.retry]} if self.retry else {}) \
            | self.catch_fields()


def result_writer(job: Job) -> JsonObject:
    """Where the Map's collected results go: to the platform's bucket, not into the state.

    Without a ResultWriter a Distributed Map returns every child's output as one array, and a
    state's output is at most 256 KiB ("Maximum input or output size for a task, state, or
    execution", https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html), or the
    Map fails with ``States.DataLimitExceeded`` even with ``ResultPath: null`` (the result exists
    before ResultPath discards it): 100,000 children's ``{}`` are ~300 KB, and a failed child's
    result is its whole error and cause. With ``ResultWriter`` the results are exported to S3 and
    "the Map state's output is" a reference to the export's manifest
    (``{"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}``), a few hundred bytes whatever
    the count (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html).
    ``Transformation: COMPACT`` keeps each succeeded child's output only (the smallest files);
    JSONL like the list the map read. Nothing reads the export (each item's record, written by
    its child, is its outcome, and ``ResultPath: null`` discards the reference): the base module
    expires ``map-results/`` (terraform/platform/slow.tf); the role may write under the job's
    prefix only (:func:`role_statements`)."""
    return {"Resource": PUT_OBJECT,
            "Parameters": {"Bucket": token("items_bucket"), "Prefix": map_items.results_prefix(job.name)},
            "WriterConfig": {"Transformation": "COMPACT", "OutputType": "JSONL"}}


@dataclass
class _ItemFail(State):
    type: ClassVar[str] = "Fail"

    def fields(self) -> JsonObject:
        return {"Error": ITEM_FAILED_ERROR, "Cause": "the item's record says why"}


class Spec(Protocol):
    """What the states read of a map's spec (compiler/kinds/map_.py ``MapSpec``, which the map's
    kind hands over: this module does not import the kinds, which ask it for the states)."""

    items: Step
    each: Step
    max_concurrency: int

    def tolerance(self) -> JsonObject: ...


def spec_of(step: Step) -> Spec:
    spec: Spec = step.target
    return spec


def _item_key(m: Step) -> dict[str, it.Value]:
    return {"pk": it.formatted(EXEC_PREFIX, Ref("$.execution")),
            "sk": Ref(f"States.Format('{map_items.item_sk(m.name, '{}')}', $.index)")}


def item_record(job: Job, m: Step, status: str) -> it.Put:
    """The item's record, written by its child execution when the item ends (or, WAITING, when a
    pooled item finds its pool full: then ``waiting_since`` instead of ``finished_at``)."""
    when = "waiting_since" if status == map_items.WAITING else "finished_at"
    return it.Put(item={
        **_item_key(m),
        "execution": Ref("$.execution"), "job": job.name, "map": m.name,
        "index": Ref("States.Format('{}', $.index)"), "item": Ref("States.JsonToString($.item)"),
        "status": status, "detail": Ref("States.JsonToString($.run)"), when: Ref("$$.State.EnteredTime"),
        # the child execution's own ARN (a child's $$.Execution is its own): the item view reads
        # its history, where the item's Task's own retries are (platform/map_records.py)
        "child": Ref("$$.Execution.Id")})


def wait_records(job: Job, m: Step) -> pools.ItemRecords:
    """A pooled item's record while it waits for its pool's slot (WAITING) and once it holds it
    (RUNNING): what the portal, the API and ``jobplane status`` count (docs/pools.md)."""
    running = it.Update(key=_item_key(m), expression="SET #status = :s, started_at = :t", names={"#status": "status"},
                        values={":s": map_items.RUNNING, ":t": Ref("$$.State.EnteredTime")})
    table = token("table_name")
    return pools.ItemRecords(
        waiting=Task(comment="The item waits for its pool's slot: its record says WAITING", resource=PUT_ITEM,
                     parameters=item_record(job, m, map_items.WAITING).asl(table)),
        running=Task(comment="The item holds its slot after a wait: its record says RUNNING", resource=pools.UPDATE_ITEM,
                     parameters=running.asl(table)))


class _ItemBuilder:
    """The job's builder as the each step's attempts see it inside a child execution: a failure
    writes the item's record and fails the child (so the Map counts it)."""

    def __init__(self, outer: GroupBuilder, m: Step):
        self.outer = outer
        self.job: Job = outer.job
        self.prefix: str = outer.prefix
        self.events: set[Event] = set()
        self.m = m
        self.ddb_retry = outer.ddb_retry  # an item's expectations read its record (compiler/expect_states.py)

    def step_failure_state(self, step: Step, status: ExecutionStatus, into: Graph, record: bool) -> str:
        name = sn.step_failed(step.name) if status == ExecutionStatus.FAILED else sn.step_timed_out(step.name)
        if name not in into:
            into.add(name, _put(self.job, self.m, status.value, sn.item_failed(self.m.name), self.outer.ddb_retry))
        if sn.item_failed(self.m.name) not in into:
            into.add(sn.item_failed(self.m.name),
                     _ItemFail(comment="the item failed: the Map counts it against tolerated_failures"))
        return name

    def retry_loop(self, step: Step, into: Graph) -> str:
        return self.outer.retry_loop(step, into)


def _put(job: Job, m: Step, status: str, next_: str | None, ddb_retry: Retry) -> Task:
    # the child's output is {} (ResultSelector of nothing over the whole state): the smallest
    # result for the Map's ResultWriter to export (:func:`result_writer`)
    return Task(resource=PUT_ITEM, parameters=item_record(job, m, status).asl(token("table_name")),
                result_selector={}, result_path="$", retry=[ddb_retry], next=next_)


def map_states(b: GroupBuilder, m: Step, nxt: str) -> str:
    """Add the map's states to the job's graph; return the first one's name (its items step's).
    The Map goes straight on to ``nxt`` when it succeeds: whether the run ends a failure streak
    (RECOVERED) is the Finish transaction's to decide (compiler/asl.py ``finish_states``), after
    a map as after any step."""
    job, graph = b.job, b.graph
    spec = spec_of(m)
    each = spec.each
    processor = Graph()
    done = processor.add(sn.branch_done(each.name), _put(job, m, ExecutionStatus.SUCCEEDED.value, None, b.ddb_retry))
    ib = _ItemBuilder(b, m)
    after_map = nxt
    if each.expect:  # judged per item, in the item's child execution (compiler/expect_states.py)
        from jobplane.compiler import expect_states, item_warnings

        warned = None
        if item_warnings.can_warn(each):  # the warned items: one alert after the map (compiler/item_warnings.py)
            warned = item_warnings.item_states(m, each, done, processor, b.ddb_retry)
            after_map = item_warnings.after_map(job, m, each, nxt, graph, b.ddb_retry, b.publish_state)
        done = expect_states.add(ib, each, done, processor, False, publish=None, warned=warned)
    processor.start_at = each.kind.executor.attempt_states(ib, each, done, False, processor, False)
    if each.pool is not None:
        # each item's attempts hold a slot as a top-level step's do (docs/pools.md "A map's items"):
        # the ticket is the child's own ($$.Execution.Id: the child execution's ARN on AWS)
        processor.start_at = pools.wrap(ib, each, processor, False, b.pools[each.pool.name], wait_records(job, m))
    failed = b.step_failure_state(m, ExecutionStatus.FAILED, graph, True)
    graph.add(sn.attempt(m.name), Map(
        comment=f"each item of {spec.items.name} runs {each.name} in a child execution and records its outcome",
        # JSON Lines: the runner streams the list line by line (runner/items_out.py); InputType
        # JSONL, https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html
        item_reader={"Resource": GET_OBJECT, "ReaderConfig": {"InputType": "JSONL"},
                     "Parameters": {"Bucket": token("items_bucket"), "Key.$": f"{map_items.KEY_PATH}.key"}},
        item_selector={"item.$": "$$.Map.Item.Value.v", "index.$": "$$.Map.Item.Value.i",
                       "execution.$": "$$.Execution.Name",
                       **{f"{f}.$": ExecutionInput.ref(f).expr for f in _RUN_FIELDS},
                       # the attempt counter of a retried each step starts at 1, as asl._initial_slots does
                       "run": {"steps": {each.key: {ATTEMPT: 1} if each.retry.attempts > 1 else {}},
                               "infra": {"n": 0}}},
        processor=processor, max_concurrency=spec.max_concurrency, tolerance=spec.tolerance(),
        result_writer=result_writer(job),
        retry=[READ_RETRY],
        catch=[Catch([RESULTS_NOT_WRITTEN], after_map, "$.map_results_error"), Catch(["States.ALL"], failed, ERROR)],
        next=after_map))
    # The list's key, drawn before the items step and read by its runner and the ItemReader: a
    # UUID no reader can list (contract/map_items.py items_key); a re-run of the failed items
    # reads the list the control plane wrote under map-reruns/, which no runner may write.
    graph.add(sn.rerun_items_key(m.name), Pass(
        comment="a re-run of the failed items reads the list jobplane rerun wrote (map-reruns/)",
        parameters={"key.$": map_items.rerun_key_expr(job.name, m.name)}, result_path=map_items.KEY_PATH,
        next=sn.attempt(m.name)))
    first = b.step_states(spec.items, sn.attempt(m.name), False, graph, record=True)
    return graph.add(sn.items_key(m.name), Pass(
        comment="where the items step writes the list and the Map reads it: a fresh UUID per run",
        parameters={"key.$": map_items.items_key_expr(job.name, m.name)}, result_path=map_items.KEY_PATH,
        next=first))


def map_routes(m: Step, entries: dict[str, str] | None = None) -> list[When]:
    """Where a re-run goes: from the map (or its items step) the whole map again, with a fresh
    list; from its each step, the Map alone, over the list the re-run was given (``jobplane
    rerun --failed-items`` writes the failed items there: platform/control/map_rerun.py).
    ``entries``: a pooled step's first state (its pool ticket), so a pooled items step queues."""
    from jobplane.compiler.choice_rules import equals

    spec = spec_of(m)
    resume = ExecutionInput.ref("resume_from").expr
    # the items step (pooled or not) is entered through the map's key draw
    items_entry = sn.items_key(m.name)
    return [When(equals(resume, m.name), items_entry),
            When(equals(resume, spec.items.name), items_entry),
            When(equals(resume, spec.each.name), sn.rerun_items_key(m.name))]


def role_statements(job: Job, sm_name: str) -> list[JsonObject]:
    """What the job's state machine role calls for its maps (asked only for a job that has one: compiler/terraform.py): read
    its lists (S3, decrypted with the platform key that encrypts the catalog bucket), write its
    results (:func:`result_writer`), start its children and watch or stop them. "IAM policies for using Distributed Map states",
    https://docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html: a Distributed
    Map's role needs states:StartExecution on its own state machine and states:DescribeExecution
    and states:StopExecution on the child executions, whose ARNs are
    ``execution:<state machine>/<map run label>:<id>``."""
    from jobplane.compiler import item_warnings
    from jobplane.compiler.terraform_iam import ACCOUNT, PARTITION, REGION, statement

    arn = f"arn:{PARTITION}:states:{REGION}:{ACCOUNT}"
    return [
        statement("ReadMapItems", ["s3:GetObject"],
                  [f"arn:{PARTITION}:s3:::${{local.platform.catalog_bucket}}/{prefix}{job.name}/*"
                   for prefix in (map_items.ITEMS_PREFIX, map_items.RERUN_PREFIX)]),
        statement("DecryptMapItems", ["kms:Decrypt"], ["${local.platform.kms_key_arn}"]),
        # the Map's ResultWriter: "IAM policies for ResultWriter"
        # (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html)
        # lists these four on the results' prefix; the bucket encrypts with the platform key
        # (GenerateDataKey to write, Decrypt above for a multipart upload's parts)
        statement("WriteMapResults", ["s3:PutObject", "s3:GetObject", "s3:ListMultipartUploadParts",
                                      "s3:AbortMultipartUpload"],
                  [f"arn:{PARTITION}:s3:::${{local.platform.catalog_bucket}}/{map_items.results_prefix(job.name)}/*"]),
        statement("EncryptMapResults", ["kms:GenerateDataKey"], ["${local.platform.kms_key_arn}"]),
        statement("StartMapChildren", ["states:StartExecution"], [f"{arn}:stateMachine:{sm_name}"]),
        statement("WatchMapChildren", ["states:DescribeExecution", "states:StopExecution"],
                  [f"{arn}:execution:{sm_name}/*"]),
        *item_warnings.role_statements(job),  # a map whose items can warn: its one alert's reads
    ]


def transitions_per_item(each: Step) -> int:
    """State transitions one item costs when its first attempt succeeds: the child execution's
    start (billed as one), its Task, its check and its record; each retry adds the retry loop's
    two states and another Task and check (docs/state-machine.md)."""
    return 4

