"""A pooled step's attempts: each waits for a slot of its pool, holds it while its Task runs, and
gives it back whatever the Task ended with (docs/pools.md; the pool's items: contract/pools.py).

Wrapped around whatever the step's executor compiled (compiler/executors/), so it holds for every
place a step runs, inside a parallel branch or a map's item as at the top:

    <step>: pool  ->  <step>: pool claim  --no room-->  <step>: pool backoff -> <step>: pool wait --+
                           |   ^-------------------------------------------------------------------+
                           |--throttled, answer lost--> <step>: pool check -> <step>: pool held? --+
                           v                                                                       |
                        <step> (the attempt's Task, its timeout its own)  <--- held ---------------+
                           |  each outcome (next, every Catch) goes through its own release first
                           v
                        <step>: pool release[ (check|failed|timed out)]  ->  where the Task went

* ``pool`` (a Pass) takes the attempt's ticket, ``<execution ARN>|<step key>|<UUID>``, at
  ``$.pool.<step key>``, and the first try's ``token`` (a UUID: the transaction's
  ClientRequestToken, so the Task's own retries of one try are idempotent).
* ``pool claim``: ONE TransactWriteItems (the AWS SDK integration; Step Functions' optimised
  DynamoDB integration has no transaction) that adds the ticket's ``weight`` to the pool's
  counter while ``used <= size - weight`` and puts the ticket's holder item if it does not exist.
  A cancelled transaction (no room, a concurrent transaction on the counter, throttling of one of
  its items: nothing was written) goes to the back-off; a throttle or a server error that outlasts
  the Task's retries goes to ``pool check``: a strongly consistent GetItem of the holder item
  (the try may have landed with its answer lost), whose Choice ``pool held`` goes to the Task if
  it exists and to the back-off if not. Only what retrying cannot cure (access denied, a missing
  table, an invalid request: a misconfiguration) fails the step. Nothing on the claim's way ends
  in ``failed`` for a throttle, however long it lasts: the wait loop absorbs it.
* ``pool backoff`` / ``pool wait``: a random sleep between POLL_BASES[n] and twice it (1-2, 2-4,
  4-8 s, then 3-6 s for about five minutes, then 20-40 s; contract/pools.py), and a new token for
  the next try: the jitter spreads the waiters' tries, so a freed slot is found by the first of
  them to try, not by all at once (a table lookup makes the counter stop at the end: the
  intrinsics have no min).
* ``pool release``: ONE TransactWriteItems that deletes the holder item if it exists and
  subtracts its weight from the counter, so a release retried after its answer was lost, or one
  the reconciler or the sweep repeats, changes nothing the second time. It is retried through
  throttling and cancelled transactions for about seven minutes (RELEASE_RETRY); one that still
  fails goes on (the reconciler at the run's end and the periodic sweep release what a run left).

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

from jobplane.compiler.choice_rules import When, all_of, number_equals, present
from jobplane.compiler.states import (DISCARD, Catch, Choice, Graph, Kept, Pass, Retry, State, Task, Wait, _Catching,
                                      _Flowing)
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
GET_ITEM = "arn:aws:states:::dynamodb:getItem"
#: The AWS SDK integration: Step Functions' optimised DynamoDB integration has getItem, putItem,
#: updateItem and deleteItem only (https://docs.aws.amazon.com/step-functions/latest/dg/connect-ddb.html);
#: every API action is an SDK integration (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html).
TRANSACT = "arn:aws:states:::aws-sdk:dynamodb:transactWriteItems"
_TRANSIENT = ("ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerErrorException",
              "RequestLimitExceeded", "AmazonDynamoDBException")
#: The optimised integration's names (``DynamoDB.<error>``): the item records' writes and the check.
DDB_RETRY_ERRORS = tuple(f"DynamoDB.{e}" for e in _TRANSIENT)
#: The SDK integration names an error ``<Service>.<Error>`` in PascalCase with the ``Exception``
#: suffix always added ("DynamoDb", as the integration spells the service: supported-services-awssdk
#: above). Retrying each cures it (DynamoDB "Error handling": "OK to retry? Yes",
#: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html);
#: DynamoDbException is the SDK's own name for an error of no modelled type (a 5xx).
SDK_TRANSIENT = tuple(f"DynamoDb.{e}" for e in (
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceededException",
    "InternalServerErrorException", "TransactionInProgressException", "TransactionConflictException",
    "DynamoDbException"))
#: A transaction DynamoDB cancelled, every write undone: a condition failed (no room, a holder
#: item already there or already gone), a concurrent transaction on one of its items, or one of
#: them throttled (its CancellationReasons, in the order of the items: TransactWriteItems,
#: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
CANCELLED = "DynamoDb.TransactionCanceledException"


def slot(step: Step) -> str:
    """Where an attempt's ticket and its poll counter live in the state data."""
    return f"$.pool.{step.key}"


def _holder_key(name: str, at: str) -> JsonObject:
    """The attempt's holder item (contract/pools.py ``holder_key``, from the ticket in the state)."""
    return {"pk": {"S.$": f"States.Format('{pc.holder_prefix(name)}{{}}', {at}.key)"}, "sk": {"S": pc.HOLDER_SK}}


def _retry() -> list[Retry]:
    return [Retry(DDB_RETRY_ERRORS, 5, interval=1, backoff=2.0, max_delay=20, full_jitter=True)]


#: A claim's try: a few quick retries of the same request (same ClientRequestToken: idempotent,
#: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-apis-txwriteitems),
#: then the wait loop takes over.
CLAIM_RETRY = Retry(SDK_TRANSIENT, 3, interval=1, backoff=2.0, max_delay=10, full_jitter=True)
#: A release: retried until it lands, for about 7 minutes at worst (1+2+...+32+60x6 s, each
#: drawn at random below that: full jitter), through throttling and cancellations (a concurrent
#: claim on the counter); a cancellation because the holder item is gone (a retry of a release
#: that landed) is retried too, harmlessly: it is cancelled again.
RELEASE_RETRY = Retry((*SDK_TRANSIENT, CANCELLED), 12, interval=1, backoff=2.0, max_delay=60, full_jitter=True)


def claim_parameters(pool_name: str, weight: int, size: int, at: str) -> JsonObject:
    """One try: the counter's ADD under its room condition, and the holder item if absent."""
    table = token("table_name")
    return {
        "ClientRequestToken.$": f"{at}.token",
        "TransactItems": [
            {"Update": {
                "TableName": table, "Key": pc.counter_key(pool_name),
                "UpdateExpression": "ADD #used :weight SET #pool = :pool",
                "ConditionExpression": "attribute_not_exists(#used) OR #used <= :limit",
                "ExpressionAttributeNames": {"#used": pc.ATTR_USED, "#pool": pc.ATTR_POOL},
                "ExpressionAttributeValues": {":weight": {"N": str(weight)}, ":limit": {"N": str(size - weight)},
                                              ":pool": {"S": pool_name}}}},
            {"Put": {
                "TableName": table,
                # small: the ticket is in the key only (~400 bytes with AWS's longest ARNs, < 1 KB)
                "Item": {**_holder_key(pool_name, at), pc.ATTR_POOL: {"S": pool_name},
                         pc.ATTR_WEIGHT: {"N": str(weight)}, pc.ATTR_SINCE: {"S.$": "$$.State.EnteredTime"},
                         "gsi2pk": {"S": pc.HOLDERS_PARTITION},
                         "gsi2sk": {"S.$": f"States.Format('{pool_name}#{{}}', $$.State.EnteredTime)"}},
                "ConditionExpression": "attribute_not_exists(pk)"}}]}


def release_parameters(pool_name: str, weight: int, at: str) -> JsonObject:
    """Delete the holder item if it is there, and only then subtract its weight."""
    table = token("table_name")
    return {"TransactItems": [
        {"Delete": {"TableName": table, "Key": _holder_key(pool_name, at),
                    "ConditionExpression": "attribute_exists(pk)"}},
        {"Update": {"TableName": table, "Key": pc.counter_key(pool_name),
                    "UpdateExpression": "ADD #used :minus",
                    "ExpressionAttributeNames": {"#used": pc.ATTR_USED},
                    "ExpressionAttributeValues": {":minus": {"N": str(-weight)}}}}]}


def _retarget(state: State, old: str, new: str) -> State:
    """``state`` with every transition to ``old`` going to ``new`` instead."""
    if isinstance(state, Kept):  # kept for many jobs: its own retargeted copy, if it changes
        retargeted = _retarget(state.state, old, new)
        return state if retargeted == state.state else retargeted
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

    def release(target: str, outcome: str) -> str:
        name = sn.pool_release(step.name, outcome)
        if name not in into:
            into.add(name, Task(
                comment="Give the attempt's slots back: its holder item and its weight, once",
                resource=TRANSACT, parameters=release_parameters(pool.name, pool.weight, at),
                result_path=DISCARD, retry=[RELEASE_RETRY],
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
                    "n": 0, "token.$": "States.UUID()"},
        result_path=at, next=claim))
    check, held = sn.pool_check(step.name), sn.pool_held(step.name)
    claim_task = Task(
        comment=f"Hold the slots if pool {pool.name} ({size}) has room: one transaction, a small counter and "
                "the attempt's holder item",
        resource=TRANSACT, parameters=claim_parameters(pool.name, pool.weight, size, at),
        result_path=DISCARD, retry=[CLAIM_RETRY],
        catch=[Catch([CANCELLED], backoff, f"{at}.refused"),  # the back-off rebuilds the slot without it
               Catch(list(SDK_TRANSIENT), check, f"{at}.claim_error"),
               Catch(["States.ALL"], failed, "$.run.error")],  # a misconfiguration: no retry cures it
        next=task_name)
    # the try's answer may be lost (a throttle or a server error after the write): is it held?
    into.add(check, Task(
        comment="A try that ended in an error may have landed: read its holder item",
        resource=GET_ITEM,
        parameters={"TableName": table, "Key": _holder_key(pool.name, at), "ConsistentRead": True,
                    "ProjectionExpression": "pk"},
        result_path=f"{at}.found", retry=_retry(),
        catch=[Catch(["States.ALL"], backoff, f"{at}.check_error")], next=held))
    found = present(f"{at}.found.Item")
    again = claim
    if records is None:
        into.add(claim, claim_task)
        into.add(held, Choice(comment="Held: run the attempt; not held: wait and try again",
                              choices=[When(found, task_name)], default=backoff))
    else:
        # a map item: its record says WAITING from its first refusal, RUNNING once a later try holds
        waiting, running, again = sn.pool_waiting(step.name), sn.pool_running(step.name), sn.pool_retry_claim(step.name)
        into.add(claim, dataclasses.replace(claim_task, catch=[Catch([CANCELLED], waiting, f"{at}.refused"),
                                                               *claim_task.catch[1:]]))
        into.add(again, dataclasses.replace(claim_task, comment=f"{claim_task.comment} (after a wait)", next=running))
        first = number_equals(f"{at}.n", 0)  # no wait yet: the record does not say WAITING
        into.add(held, Choice(comment="Held: run the attempt (RUNNING if it waited); not held: wait (WAITING if first)",
                              choices=[When(all_of(found, first), task_name), When(found, running),
                                       When(first, waiting)], default=backoff))
        # a record that cannot be written does not fail the item: it is what the portal shows
        into.add(waiting, dataclasses.replace(records.waiting, result_path=DISCARD, retry=_retry(), next=backoff,
                                              catch=[Catch(["States.ALL"], backoff, f"{at}.record_error")]))
        into.add(running, dataclasses.replace(records.running, result_path=DISCARD, retry=_retry(), next=task_name,
                                              catch=[Catch(["States.ALL"], task_name, f"{at}.record_error")]))
    into.add(backoff, Pass(
        comment=f"No room: sleep a random {pc.POLL_BASES[0]}-{2 * pc.POLL_BASES[-1]} s, longer after a long wait",
        parameters={"key.$": f"{at}.key", "n.$": _lookup(pc.poll_nexts(), f"{at}.n"),
                    "wait.$": f"States.MathRandom({_lookup(pc.POLL_BASES, f'{at}.n')}, "
                              f"{_lookup(tuple(2 * b for b in pc.POLL_BASES), f'{at}.n')})",
                    "token.$": "States.UUID()"},
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
    """What a pooled job's state machine calls on its pools, nothing else (tests/test_pools.py):
    UpdateItem of each pool's counter (in the claim's and the release's transactions), and
    PutItem, DeleteItem and GetItem of its own holder items (claim, release, check). A
    transaction needs the permission of each of its writes
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html);
    ``dynamodb:LeadingKeys`` names the keys: a pool's counter exactly, its holders by prefix."""
    names = pools_of(job)
    if not names:
        return []
    table = ["${local.platform.table_arn}"]
    return [statement("HoldPoolSlots", ["dynamodb:UpdateItem"], table,
                      [{"test": "ForAllValues:StringEquals", "variable": "dynamodb:LeadingKeys",
                        "values": [pc.pool_pk(n) for n in names]}]),
            statement("PoolHolders", ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"], table,
                      [{"test": "ForAllValues:StringLike", "variable": "dynamodb:LeadingKeys",
                        "values": [f"{pc.holder_prefix(n)}*" for n in names]}])]
