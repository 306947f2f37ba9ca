"""Pools as DynamoDB really behaves (issue 62, finding 1): a claim or a release that meets
DynamoDB's throttling still ends as the run would without it, a holder is released exactly once
whoever releases it, and a claim's try writes two small items whatever the pool's size
(docs/pools.md "Costs"). The faults are scripted with the local AWS's fault injector
(jobplane.platform.local.faults), each step is the real runner as a subprocess.

The throttles are scripted on whatever the compiled claim or release calls (the test reads the
compiled Resource), so the same tests ran against the single-item design of before: there the
claim's throttles after its retries failed the step and the run (FAILED), and a throttled release
left the slot held until the reconciler ran."""

from __future__ import annotations

import json
import math
import threading
import uuid
from pathlib import Path
from typing import Any, Mapping

import pytest
from test_pools_on_moto import HOLD, finish, holders, start, until

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import pools as pc
from jobplane.contract import states as sn
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.faults import Faults
from jobplane.platform.pool_slots import PoolSweep, pools, release_run

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def aws():
    with LocalAWS(env={"PYTHONPATH": str(HERE), "JOBPLANE_STOP_GRACE_SECONDS": "3"}) as local:
        yield local


def deploy(aws: LocalAWS, steps: list[dict[str, Any]], sizes: dict[str, int], **fields: Any) -> tuple[str, dict[str, Any]]:
    """Deploy a job; its name and its compiled definition's states."""
    name = f"pf-{uuid.uuid4().hex[:8]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "policy": "ALWAYS_RUN",
                               "steps": steps} | fields)
    definition = asl.compile_job(job, aws.prefix, sizes)
    aws.deploy(name, definition)
    return name, json.loads(definition)["States"]


def operation(state: Mapping[str, Any]) -> str:
    """The DynamoDB API operation a compiled Task calls (``...:updateItem`` -> UpdateItem)."""
    action = state["Resource"].rsplit(":", 1)[1]
    return action[0].upper() + action[1:]


def on_pool(pool: str, what: str):  # type: ignore[no-untyped-def]
    """A request of the claim (``what="claim"``) or the release of ``pool``'s slots, in either
    design: the transaction putting (deleting) a holder item, or the UpdateItem ADD (DELETE) of
    the single item of before."""
    def match(params: Mapping[str, Any]) -> bool:
        text = json.dumps(params)
        if pc.pool_pk(pool) not in text:
            return False
        if "TransactItems" in params:
            kinds = {k for item in params["TransactItems"] for k in item}
            return ("Put" if what == "claim" else "Delete") in kinds
        return str(params.get("UpdateExpression", "")).startswith("ADD" if what == "claim" else "DELETE")
    return match


def entered(aws: LocalAWS, arn: str) -> list[str]:
    events = aws.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]


def counter(aws: LocalAWS, pool: str) -> int | None:
    item = aws.client("dynamodb").get_item(TableName=aws.resources["table_name"], Key=pc.counter_key(pool),
                                           ConsistentRead=True).get("Item")
    return int(item[pc.ATTR_USED]["N"]) if item and pc.ATTR_USED in item else None


def test_a_throttled_claim_waits_and_the_run_succeeds(aws: LocalAWS, faults: Faults, tmp_path: Path,
                                                      fast_waits: float) -> None:
    """More throttles than the claim's own retries: the try goes to the wait loop (through the
    check of its holder item) and a later try holds the slot; the run SUCCEEDED, the step ran
    once, nothing is left held. (Before: after the UpdateItem's retries the claim's States.ALL
    Catch failed the step: the run FAILED and paged.)"""
    log = tmp_path / "held.log"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    job, states = deploy(aws, [{"name": "load", "python": HOLD, "pool": pool,
                                "kwargs": {"log": str(log), "seconds": 0.1}}], {pool: 2})
    claim = states[sn.pool_claim("load")]
    retries = sum(r["MaxAttempts"] for r in claim.get("Retry", []))
    throttles = retries + 2  # every retry of the first try, and the next try too
    faults.script("dynamodb", operation(claim), "ThrottlingException", times=throttles, match=on_pool(pool, "claim"))
    arn = start(aws, job)
    ex, rec = finish(aws, arn)
    assert (ex.status, rec.status) == ("SUCCEEDED", "SUCCEEDED"), rec.error
    assert faults.count("dynamodb", operation(claim), "ThrottlingException") == throttles
    names = entered(aws, arn)
    assert names.count("load") == 1 and sn.pool_wait("load") in names  # it waited, then ran once
    assert names.count(sn.pool_check("load")) == 1  # its first try's answer was checked: not held
    assert log.read_text().count("start") == 1
    assert holders(aws, pool) == () and counter(aws, pool) == 0


def test_a_throttled_release_still_lands_before_the_run_ends(aws: LocalAWS, faults: Faults, tmp_path: Path,
                                                              fast_waits: float) -> None:
    """A release throttled more times than a write's usual 5 retries is retried until it lands:
    the slot is given back by the run itself (the reconciler is off here), and the next holder
    gets it. (Before: the release's Catch went on after 6 throttles, the slot stayed held until
    the run's end was reconciled.)"""
    log = tmp_path / "held.log"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    job, states = deploy(aws, [{"name": "load", "python": HOLD, "pool": pool,
                                "kwargs": {"log": str(log), "seconds": 0.1}}], {pool: 1})
    release = states[sn.pool_release("load")]
    faults.script("dynamodb", operation(release), "ThrottlingException", times=6, match=on_pool(pool, "release"))
    aws.reconcile = False  # only the run itself may give the slot back
    try:
        arn = start(aws, job)
        ex, rec = finish(aws, arn)
    finally:
        aws.reconcile = True
    assert faults.count("dynamodb", operation(release), "ThrottlingException") == 6
    assert ex.status == "SUCCEEDED"
    assert holders(aws, pool) == ()
    assert counter(aws, pool) in (0, None)  # (None: the design of before had no counter)
    events = aws.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]
    assert not any("release_error" in (e.get("stateExitedEventDetails") or {}).get("output", "") for e in events)


def test_the_sweep_releases_a_dead_holder_exactly_once(aws: LocalAWS, tmp_path: Path) -> None:
    """A run stopped while it holds, whose end nobody reconciled: two sweeps at once, a third,
    and the reconciler's late release of the same history give the slots back once: the
    counter goes from the holder's weight to 0, never below."""
    log = tmp_path / "held.log"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    job, _ = deploy(aws, [{"name": "load", "python": HOLD, "pool": {"name": pool, "weight": 2},
                           "kwargs": {"log": str(log), "seconds": 120}}], {pool: 3})
    aws.reconcile = False  # its status event was lost
    try:
        arn = start(aws, job)
        until("the run holds its slots", lambda: log.exists())
        assert counter(aws, pool) == 2
        aws.client("stepfunctions").stop_execution(executionArn=arn)
        aws.wait(arn)
        # its end handled (its task stopped first) while the event is still lost: the reconciler
        # restored before that released the holder ahead of the sweeps (it did once, in CI)
        aws.wait_reconciled(arn, timeout=120)
    finally:
        aws.reconcile = True
    [holder] = holders(aws, pool)
    assert (holder.execution_arn, holder.weight) == (arn, 2)
    ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
    sweeps = [PoolSweep(aws.client("dynamodb"), table, aws.client("stepfunctions")) for _ in range(2)]
    released: list[list[str]] = [[], []]
    threads = [threading.Thread(target=lambda i=i: released[i].extend(sweeps[i].check()))  # type: ignore[misc]
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(released[0] + released[1]) == [holder.element]  # one of them released it
    assert counter(aws, pool) == 0 and holders(aws, pool) == ()
    assert sweeps[0].check() == []
    events = aws.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)["events"]
    assert release_run(ddb, table, events) == 0  # the reconciler, late: nothing left to release
    assert counter(aws, pool) == 0


def item_bytes(item: Mapping[str, Any]) -> int:
    """An item's size as DynamoDB bills it: each attribute's name and value in UTF-8, a number
    about 1 byte per 2 significant digits plus 1, a set its elements
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html)."""
    def value(v: Mapping[str, Any]) -> int:
        (kind, x), = v.items()
        if kind == "S":
            return len(x.encode())
        if kind == "N":
            return math.ceil(len(x.strip("-").replace(".", "").strip("0") or "0") / 2) + 1
        if kind == "SS":
            return sum(len(e.encode()) for e in x)
        raise AssertionError(f"not in a pool item: {kind}")
    return sum(len(k.encode()) + value(v) for k, v in item.items())


def test_a_claims_try_writes_two_small_items_whatever_the_pools_size(aws: LocalAWS, tmp_path: Path) -> None:
    """The items a claim's transaction writes, read back while 6 steps hold a pool of 1,000 and
    1 step a pool of 1: each is under 1 KB, so a try costs 2 WCU per item (a transaction's
    prepare and commit, https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html)
    whatever the pool's size and however many hold it; the one item of before held every
    holder's elements, and a failed conditional write is billed by the item's size
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)."""
    log, go = tmp_path / "held.log", tmp_path / "release"
    wide, narrow = f"wide-{uuid.uuid4().hex[:6]}", f"narrow-{uuid.uuid4().hex[:6]}"
    hold = {"python": HOLD, "kwargs": {"log": str(log), "release": str(go)}}
    many, _ = deploy(aws, [{"name": "all", "parallel": [{"name": f"m{i}", **hold} for i in range(6)]}], {wide: 1000},
                     pool=wide)
    one, _ = deploy(aws, [{"name": "load", "pool": narrow, **hold}], {narrow: 1})
    arns = [start(aws, many), start(aws, one)]
    until("seven steps hold", lambda: log.exists() and log.read_text().count("start") == 7)
    ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
    found = {p.name: p for p in pools(ddb, table)}
    assert (found[wide].used, found[narrow].used) == (6, 1)
    sizes = {}
    for pool in (wide, narrow):
        count = ddb.get_item(TableName=table, Key=pc.counter_key(pool), ConsistentRead=True)["Item"]
        items = [ddb.get_item(TableName=table, Key=pc.holder_key(pool, h.element), ConsistentRead=True)["Item"]
                 for h in found[pool].holders]
        sizes[pool] = (item_bytes(count), [item_bytes(i) for i in items])
    for pool, (count_size, holder_sizes) in sizes.items():
        assert count_size < 1024 and all(s < 1024 for s in holder_sizes), (pool, count_size, holder_sizes)
        wcu_per_try = 2 * (math.ceil(count_size / 1024) + max(math.ceil(s / 1024) for s in holder_sizes))
        assert wcu_per_try == 4
    # the counter does not grow with its holders: 6 holders of 1,000 weigh what 1 of 1 does,
    # but for its name (in its key and its ``pool``)
    assert sizes[wide][0] - 2 * len(wide) == sizes[narrow][0] - 2 * len(narrow)
    # before, one item held every holder's element (its ticket and '#i', ~150 bytes here, ~230
    # with AWS's longer ARNs), and every try, failed or not, was billed by its size: the same
    # holders' elements at 100 holders cost several times a try now, at 1,000 dozens of times
    element = max(len((h.element + "#1").encode()) for h in found[wide].holders)
    assert math.ceil(100 * element / 1024) > 2 * 4 and math.ceil(1000 * element / 1024) > 20 * 4
    go.write_text("go")
    assert [finish(aws, arn)[1].status for arn in arns] == ["SUCCEEDED", "SUCCEEDED"]
    assert counter(aws, wide) == 0 and counter(aws, narrow) == 0


def test_the_single_item_of_before_is_still_released_and_then_dropped(aws: LocalAWS) -> None:
    """A deployment upgraded while runs held slots in the single item of before (``POOL#<name>``
    / ``POOL``, a ``holders`` set, in gsi1 ``POOLS``, as those runs' claims wrote it): `jobplane
    status` counts its elements, the reconciler releases a run's old claims from its history, the
    sweep releases the elements of ended runs and then deletes the emptied item (docs/pools.md,
    "Upgrading from the single pool item")."""
    ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
    pool = f"old-{uuid.uuid4().hex[:6]}"
    gone = f"arn:aws:states:us-east-1:123456789012:execution:{aws.prefix}-gone:{uuid.uuid4()}"
    reconciled = f"arn:aws:states:us-east-1:123456789012:execution:{aws.prefix}-done:{uuid.uuid4()}"
    elements = [f"{gone}|load|t1#1", f"{reconciled}|load|t2#1", f"{reconciled}|load|t2#2"]
    key = {"pk": {"S": pc.pool_pk(pool)}, "sk": {"S": pc.LEGACY_SK}}
    ddb.update_item(TableName=table, Key=key, UpdateExpression="ADD #h :hs SET #p = :p, gsi1pk = :g, gsi1sk = :p",
                    ExpressionAttributeNames={"#h": pc.ATTR_HOLDERS, "#p": pc.ATTR_POOL},
                    ExpressionAttributeValues={":hs": {"SS": elements}, ":p": {"S": pool},
                                               ":g": {"S": pc.LEGACY_PARTITION}})
    [old] = [p for p in pools(ddb, table) if p.name == pool]
    assert (old.used, old.holders, len(old.legacy)) == (3, (), 3)
    # the reconciler: the old claim as its TaskScheduled event recorded it
    claim = {"TableName": table, "Key": key, "UpdateExpression": "ADD #holders :hs SET #pool = :pool",
             "ExpressionAttributeValues": {":hs": {"SS": elements[1:]}}}
    history = [{"id": 1, "type": "TaskScheduled", "taskScheduledEventDetails": {
        "resourceType": "dynamodb", "resource": "updateItem", "parameters": json.dumps(claim)}}]
    assert release_run(ddb, table, history) == 2
    [old] = [p for p in pools(ddb, table) if p.name == pool]
    assert [h.element for h in old.legacy] == elements[:1]
    # the sweep: the run that no longer exists gives its element back, then the item goes
    sweep = PoolSweep(ddb, table, aws.client("stepfunctions"))
    assert sweep.check() == elements[:1]
    assert sweep.check() == []
    assert "Item" not in ddb.get_item(TableName=table, Key=key, ConsistentRead=True)
    assert pool not in {p.name for p in pools(ddb, table)}
