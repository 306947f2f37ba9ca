"""A pooled step's attempts: each waits for a slot of its pool, holds it while its Task runs, and
gives it back whatever the Task ended with (docs/pools.md; the pool item: contract/pools.py).

Wrapped around whatever the step's executor compiled (compiler/executors/), so it holds for every
place a step runs, inside a parallel branch or a map's item as at the top:

    <step>: pool  ->  <step>: pool claim  --no room-->  <step>: pool backoff -> <step>: pool wait --+
                           |   ^-------------------------------------------------------------------+
                           v
                        <step> (the attempt's Task, its timeout its own)
                           |  each outcome (next, every Catch) goes through its own release first
                           v
                        <step>: pool release[ (check|failed|timed out)]  ->  where the Task went

* ``pool`` (a Pass) takes the attempt's ticket, ``<execution ARN>|<step key>|<UUID>``, at
  ``$.pool.<step key>``: the claim's retries and the release name the same slots, so a claim
  whose answer was lost and that is tried again holds nothing twice.
* ``pool claim``: one conditional UpdateItem adds the ticket's ``weight`` elements to the pool's
  ``holders`` while ``size(holders) <= size - weight`` (or the ticket is in already). A refusal
  (ConditionalCheckFailedException) goes to the back-off; any other error, after the DynamoDB
  retries, fails the step as its attempt would.
* ``pool backoff`` / ``pool wait``: a random sleep between POLL_BASES[n] and twice it (1-2, 2-4,
  4-8 s, then 3-6 s for about five minutes, then 20-40 s; contract/pools.py): the jitter spreads
  the waiters' tries, so a freed slot is found by the first of them to try, not by all at once
  every cap seconds (a table lookup makes the counter stop at the end: the intrinsics have no min).
* ``pool release``: DELETE the ticket's elements (idempotent); its own failure still goes on
  (the reconciler and the periodic sweep release what a run left behind).

A map's item (``records``: its child execution writes the item's record, compiler/map_states.py)
also says it waits: its first refusal goes through ``pool waiting`` (the item record WAITING,
one PutItem) to the back-off, and its tries after a wait are ``pool claim again``, whose success
goes through ``pool running`` (the record RUNNING, one UpdateItem) to the Task. An item that finds
room at once writes neither; one that waits writes two records, whatever the number of tries.

The step's ``timeout`` is the Task's TimeoutSeconds: waiting does not consume it (the job's whole
timeout does). Each attempt of a retried step waits again; the back-off between attempts holds
no slot.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobplane.compiler.choice_rules import When
from jobplane.compiler.states import DISCARD, Catch, Choice, Graph, Pass, Retry, State, Task, Wait, _Catching, _Flowing
from jobplane.compiler.terraform_iam import statement
from jobplane.contract import pools as pc
from jobplane.contract import states as sn
from jobplane.contract.bindings import token
from jobplane.contract.statuses import ExecutionStatus
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import AttemptBuilder
    from jobplane.compiler.model import Job, Step

UPDATE_ITEM = "arn:aws:states:::dynamodb:updateItem"
_TRANSIENT = ("ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerErrorException",
              "RequestLimitExceeded", "AmazonDynamoDBException")
DDB_RETRY_ERRORS = tuple(f"DynamoDB.{e}" for e in _TRANSIENT)
REFUSED = "DynamoDB.ConditionalCheckFailedException"


def slot(step: Step) -> str:
    """Where an attempt's ticket and its poll counter live in the state data."""
    return f"$.pool.{step.key}"


def _elements(step: Step) -> str:
    """The ticket's holder elements, as an intrinsic (one per slot of its weight)."""
    assert step.pool is not None
    key = f"{slot(step)}.key"
    return "States.Array(" + ", ".join(f"States.Format('{{}}#{i}', {key})"
                                       for i in range(1, step.pool.weight + 1)) + ")"


def _key(name: str) -> JsonObject:
    return {"pk": {"S": pc.pool_pk(name)}, "sk": {"S": pc.POOL_SK}}


def _retry() -> list[Retry]:
    return [Retry(DDB_RETRY_ERRORS, 5, interval=1, backoff=2.0, max_delay=20, full_jitter=True)]


def _retarget(state: State, old: str, new: str) -> State:
    """``state`` with every transition to ``old`` going to ``new`` instead."""
    if isinstance(state, Choice):
        return dataclasses.replace(state, choices=[When(c.rule, new) if c.next == old else c for c in state.choices],
                                   default=new if state.default == old else state.default)
    if isinstance(state, _Catching):
        state = dataclasses.replace(state, catch=[dataclasses.replace(c, next=new) if c.next == old else c
                                                  for c in state.catch])
    if isinstance(state, _Flowing) and state.next == old:
        state = dataclasses.replace(state, next=new)
    return state


def _outcome(target: str, task_next: str | None) -> str:
    """Which release (``sn.POOL_RELEASE_OUTCOMES``) goes on to ``target``."""
    if target == task_next:
        return ""
    try:
        role = sn.classify(target).role
    except ValueError:
        return "failed"
    return {sn.Role.CHECK: "check", sn.Role.STEP_TIMED_OUT: "timed out"}.get(role, "failed")


@dataclass(frozen=True)
class ItemRecords:
    """A map item's record writes (compiler/map_states.py), each a Task without its Next: the
    item WAITING when it first finds no room, RUNNING when a try after a wait holds its slots."""

    waiting: Task
    running: Task


def wrap(b: AttemptBuilder, step: Step, into: Graph, record: bool, size: int,
         records: ItemRecords | None = None) -> str:
    """Put the pool's states around the attempt Task the executor added to ``into``; return the
    state every attempt now starts at (the ticket). ``records``: a map item's (see above)."""
    pool = step.pool
    assert pool is not None
    task_name = sn.attempt(step.name)
    task = into[task_name]
    assert isinstance(task, Task), f"{task_name} is not a Task"
    ticket, claim, backoff, wait = (sn.pool(step.name), sn.pool_claim(step.name), sn.pool_backoff(step.name),
                                    sn.pool_wait(step.name))
    # every way into an attempt (the first, a retry after its back-off, an infrastructure retry,
    # a re-run's Route) now queues for a slot first
    for name in list(into):
        if name != task_name:
            into.states[name] = _retarget(into[name], task_name, ticket)
    failed = b.step_failure_state(step, ExecutionStatus.FAILED, into, record)
    at = slot(step)
    table = token("table_name")
    hs = _elements(step)

    def release(target: str, outcome: str) -> str:
        name = sn.pool_release(step.name, outcome)
        if name not in into:
            into.add(name, Task(
                comment="Give the attempt's slots back (a no-op if they are not held)",
                resource=UPDATE_ITEM,
                parameters={"TableName": table, "Key": _key(pool.name), "UpdateExpression": "DELETE #holders :hs",
                            "ExpressionAttributeNames": {"#holders": pc.ATTR_HOLDERS},
                            "ExpressionAttributeValues": {":hs": {"SS.$": hs}}},
                result_path=DISCARD, retry=_retry(),
                # a release that still fails goes on: the reconciler and the sweep release it
                catch=[Catch(["States.ALL"], target, f"{at}.release_error")],
                next=target))
        return name

    task_next = task.next
    catches = [dataclasses.replace(c, next=release(c.next, _outcome(c.next, task_next))) for c in task.catch]
    into.states[task_name] = dataclasses.replace(
        task, catch=catches, next=release(task_next, "") if task_next is not None else None)

    into.add(ticket, Pass(
        comment=f"Queue for {pool.weight} slot{'s' if pool.weight > 1 else ''} of pool {pool.name} (WAITING)",
        parameters={"key.$": f"States.Format('{{}}{pc.SEP}{step.key}{pc.SEP}{{}}', $$.Execution.Id, States.UUID())",
                    "n": 0},
        result_path=at, next=claim))
    claim_task = Task(
        comment=f"Hold the slots if pool {pool.name} ({size}) has room: one conditional write",
        resource=UPDATE_ITEM,
        parameters={
            "TableName": table, "Key": _key(pool.name),
            "UpdateExpression": "ADD #holders :hs SET #pool = :pool, gsi1pk = :pools, gsi1sk = :pool",
            "ConditionExpression": "contains(#holders, :first) OR attribute_not_exists(#holders) "
                                   "OR size(#holders) <= :limit",
            "ExpressionAttributeNames": {"#holders": pc.ATTR_HOLDERS, "#pool": pc.ATTR_POOL},
            "ExpressionAttributeValues": {
                ":hs": {"SS.$": hs}, ":first": {"S.$": f"States.Format('{{}}#1', {at}.key)"},
                ":limit": {"N": str(size - pool.weight)}, ":pool": {"S": pool.name},
                ":pools": {"S": pc.POOLS_PARTITION}}},
        result_path=DISCARD, retry=_retry(),
        catch=[Catch([REFUSED], backoff, f"{at}.refused"),  # the back-off rebuilds the slot without it
               Catch(["States.ALL"], failed, "$.run.error")],
        next=task_name)
    again = claim
    if records is None:
        into.add(claim, claim_task)
    else:
        # a map item: its record says WAITING from its first refusal, RUNNING once a later try holds
        waiting, running, again = sn.pool_waiting(step.name), sn.pool_running(step.name), sn.pool_retry_claim(step.name)
        into.add(claim, dataclasses.replace(claim_task, catch=[Catch([REFUSED], waiting, f"{at}.refused"),
                                                               claim_task.catch[1]]))
        into.add(again, dataclasses.replace(claim_task, comment=f"{claim_task.comment} (after a wait)", next=running))
        # a record that cannot be written does not fail the item: it is what the portal shows
        into.add(waiting, dataclasses.replace(records.waiting, result_path=DISCARD, retry=_retry(), next=backoff,
                                              catch=[Catch(["States.ALL"], backoff, f"{at}.record_error")]))
        into.add(running, dataclasses.replace(records.running, result_path=DISCARD, retry=_retry(), next=task_name,
                                              catch=[Catch(["States.ALL"], task_name, f"{at}.record_error")]))
    into.add(backoff, Pass(
        comment=f"No room: sleep a random {pc.POLL_BASES[0]}-{2 * pc.POLL_BASES[-1]} s, longer after a long wait",
        parameters={"key.$": f"{at}.key", "n.$": _lookup(pc.poll_nexts(), f"{at}.n"),
                    "wait.$": f"States.MathRandom({_lookup(pc.POLL_BASES, f'{at}.n')}, "
                              f"{_lookup(tuple(2 * b for b in pc.POLL_BASES), f'{at}.n')})"},
        result_path=at, next=wait))
    into.add(wait, Wait(seconds_path=f"{at}.wait", next=again))
    return ticket


def _lookup(table: tuple[int, ...], index: str) -> str:
    """``table[index]`` as an intrinsic."""
    return f"States.ArrayGetItem(States.Array({', '.join(map(str, table))}), {index})"


def pools_of(job: Job) -> list[str]:
    """The pools a job's steps hold, sorted."""
    return sorted({s.pool.name for s in job.runnable_steps() if s.pool is not None})


def role_statements(job: Job) -> list[JsonObject]:
    """What a pooled job's state machine calls on its pools: UpdateItem of each pool's item
    (claim and release), nothing else (tests/test_pools_iam.py)."""
    names = pools_of(job)
    if not names:
        return []
    return [statement("HoldPoolSlots", ["dynamodb:UpdateItem"], ["${local.platform.table_arn}"],
                      [{"test": "ForAllValues:StringEquals", "variable": "dynamodb:LeadingKeys",
                        "values": [pc.pool_pk(n) for n in names]}])]
