"""Pool slots a run that ended still holds, given back (docs/pools.md: never leaked, never twice).

A pooled attempt releases its slots on every outcome of its Task (compiler/pools.py), but an
execution that is stopped, times out as a whole or fails in an unexpected place runs no more
states, and a release can still fail after its retries. Two things cover it:

* :func:`release_run` — the reconciler, on every execution's end: the run's history lists every
  holder item its claims asked for (their TaskScheduled parameters, contract/pools.py
  ``claims_in_history``); each that still exists is released.
* :class:`PoolSweep` — the periodic check (every 5 minutes; a thread under ``jobplane dev``): a
  status event Step Functions never delivered (best effort), or a map item's child stopped with
  its parent, is found by listing the holder items (gsi2 ``POOLS``) and asking Step Functions
  about each holder's execution (its ARN starts the ticket); one that no longer runs is released.

A release is one transaction: delete the holder item if it exists, and subtract its weight from
the pool's counter. Whoever releases a holder second (the state machine, the reconciler, the
sweep) has its transaction cancelled by that condition and changes nothing: the counter is
decremented exactly once per holder.

The single item of before (contract/pools.py ``LEGACY_SK``) is still read and released for runs
that started before the upgrade, and deleted by the sweep once nobody holds it.
"""

from __future__ import annotations

import logging
import random
import time

from botocore.exceptions import ClientError

from jobplane.contract import datamodel as dm
from jobplane.contract import pools as pc
from jobplane.contract.types import Client, JsonObject

log = logging.getLogger(__name__)

#: DynamoDB errors worth retrying (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html),
#: and the cancellation reasons that are not the release's own condition (a concurrent
#: transaction on the counter, a throttled item).
_RETRYABLE = {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
              "InternalServerError", "TransactionInProgressException", "TransactionConflictException"}
_TRANSIENT_REASONS = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
ATTEMPTS = 8


def _pause(attempt: int) -> None:
    time.sleep(random.uniform(0, min(2 ** attempt * 0.1, 5)))  # full jitter (a Lambda's own retry)


def release(ddb: Client, table: str, pool: str, ticket: str, weight: int) -> bool:
    """Release one holder: True if this call released it, False if it was not held (released
    already, or never claimed). Retried through throttling and conflicting transactions; raises
    the last error if it never lands (the next sweep tries again)."""
    items = [{"Delete": {"TableName": table, "Key": pc.holder_key(pool, ticket),
                         "ConditionExpression": "attribute_exists(pk)"}},
             {"Update": {"TableName": table, "Key": pc.counter_key(pool), "UpdateExpression": "ADD #used :minus",
                         "ExpressionAttributeNames": {"#used": pc.ATTR_USED},
                         "ExpressionAttributeValues": {":minus": {"N": str(-weight)}}}}]
    for attempt in range(ATTEMPTS):
        try:
            ddb.transact_write_items(TransactItems=items)
            return True
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code == "TransactionCanceledException":
                reasons = [r.get("Code") for r in e.response.get("CancellationReasons", [])]
                if reasons[:1] == ["ConditionalCheckFailed"]:
                    return False  # the holder item is gone: released already
                if not set(reasons) & _TRANSIENT_REASONS or attempt == ATTEMPTS - 1:
                    raise
            elif code not in _RETRYABLE or attempt == ATTEMPTS - 1:
                raise
        _pause(attempt)
    raise AssertionError("unreachable")


def _delete_legacy(ddb: Client, table: str, pk: str, elements: list[str]) -> None:
    ddb.update_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": pc.LEGACY_SK}},
                    UpdateExpression="DELETE #holders :hs", ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeNames={"#holders": pc.ATTR_HOLDERS},
                    ExpressionAttributeValues={":hs": {"SS": sorted(elements)}})


def release_run(ddb: Client, table: str, events: list[JsonObject]) -> int:
    """Give back every slot the run's claims asked for and still hold; how many holders (or
    elements of before) were released by this call."""
    count = 0
    for claim in pc.claims_in_history(events):
        held = ddb.get_item(TableName=table, Key=claim.key, ConsistentRead=True, ProjectionExpression="pk")
        if "Item" in held and release(ddb, table, claim.pool, claim.ticket, claim.weight):
            count += 1
    for pk, elements in sorted(pc.held_in_history(events).items()):
        try:
            _delete_legacy(ddb, table, pk, list(elements))
        except ddb.exceptions.ConditionalCheckFailedException:
            continue  # the item is gone (nothing to release, and no empty item made)
        count += len(elements)
    return count


def _query(ddb: Client, kwargs: JsonObject) -> list[JsonObject]:
    items: list[JsonObject] = []
    while True:
        page = ddb.query(**kwargs)
        items += page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs = {**kwargs, "ExclusiveStartKey": page["LastEvaluatedKey"]}


def holders(ddb: Client, table: str) -> dict[str, list[pc.Holder]]:
    """Every holder item, by pool (gsi2 ``POOLS``: a claim writes its holder item there)."""
    out: dict[str, list[pc.Holder]] = {}
    for item in _query(ddb, {"TableName": table, "IndexName": dm.GSI_BY_KIND, "KeyConditionExpression": "gsi2pk = :p",
                             "ExpressionAttributeValues": {":p": {"S": pc.HOLDERS_PARTITION}}}):
        holder, pool = pc.Holder.from_item(item), (item.get(pc.ATTR_POOL) or {}).get("S")
        if holder is not None and isinstance(pool, str):
            out.setdefault(pool, []).append(holder)
    return out


def legacy_items(ddb: Client, table: str) -> list[JsonObject]:
    """The single items of before (gsi1 ``POOLS``), while any is left."""
    return _query(ddb, {"TableName": table, "IndexName": dm.GSI_BY_OWNER, "KeyConditionExpression": "gsi1pk = :p",
                        "ExpressionAttributeValues": {":p": {"S": pc.LEGACY_PARTITION}}})


def pools(ddb: Client, table: str, names: list[str] | tuple[str, ...] = ()) -> list[pc.Pool]:
    """Every pool with a holder, or named: its counter, its holders and what the single item of
    before still holds."""
    found = holders(ddb, table)
    legacy = {p.name: p for p in map(pc.Pool.from_legacy_item, legacy_items(ddb, table))}
    out = []
    for name in sorted(set(found) | set(legacy) | set(names)):
        counter = ddb.get_item(TableName=table, Key=pc.counter_key(name), ConsistentRead=True).get("Item") or {}
        used = (counter.get(pc.ATTR_USED) or {}).get("N")
        out.append(pc.Pool(name, tuple(sorted(found.get(name, []), key=lambda h: h.element)),
                           int(used) if used is not None else None,
                           legacy[name].legacy if name in legacy else ()))
    return out


class PoolSweep:
    """The periodic check's part: release the slots of holders whose execution has ended."""

    def __init__(self, ddb: Client, table: str, sfn: Client):
        self.ddb, self.table, self.sfn = ddb, table, sfn

    def _running(self, arn: str, seen: dict[str, bool]) -> bool:
        if arn not in seen:
            try:
                seen[arn] = self.sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
            except self.sfn.exceptions.ExecutionDoesNotExist:
                seen[arn] = False
        return seen[arn]

    def check(self) -> list[str]:
        """The holders released (their tickets; elements of before)."""
        released: list[str] = []
        seen: dict[str, bool] = {}
        for pool, found in sorted(holders(self.ddb, self.table).items()):
            ended = [h for h in found if not self._running(h.execution_arn, seen)]
            done = [h.element for h in ended if release(self.ddb, self.table, pool, h.element, h.weight)]
            if done:
                log.warning("pool %s: released %d holders of runs that ended without giving them back", pool, len(done))
                released += done
        for item in legacy_items(self.ddb, self.table):
            old = pc.Pool.from_legacy_item(item)
            ended_elements = [h.element for h in old.legacy if not self._running(h.execution_arn, seen)]
            if ended_elements:
                _delete_legacy(self.ddb, self.table, pc.pool_pk(old.name), ended_elements)
                log.warning("pool %s: released %d slots (of before the upgrade) of runs that ended", old.name,
                            len(ended_elements))
                released += ended_elements
            elif not old.legacy:
                self._drop_legacy(item)
        return released

    def _drop_legacy(self, item: JsonObject) -> None:
        """Delete an item of before that nobody holds any more (it leaves gsi1). A run of before
        that claims again writes it anew, and a later sweep drops it again."""
        try:
            self.ddb.delete_item(TableName=self.table, Key={"pk": item["pk"], "sk": item["sk"]},
                                 ConditionExpression="attribute_not_exists(#holders)",
                                 ExpressionAttributeNames={"#holders": pc.ATTR_HOLDERS})
        except self.ddb.exceptions.ConditionalCheckFailedException:
            pass  # claimed again meanwhile
