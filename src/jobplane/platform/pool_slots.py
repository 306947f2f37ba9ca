"""Pool slots a run that ended still holds, given back (docs/pools.md: never leaked).

A pooled attempt releases its slots on every outcome of its Task (compiler/pools.py), but an
execution that is stopped, times out as a whole or fails in an unexpected place runs no more
states. Two things cover it:

* :func:`release_run` — the reconciler, on every execution's end: the run's history lists every
  slot its claims asked for (their TaskScheduled parameters, contract/pools.py
  ``held_in_history``); each is deleted from its pool's ``holders`` (a no-op for one released
  already). Only UpdateItem on the table, which the reconciler's role has.
* :class:`PoolSweep` — the periodic check (every 5 minutes; a thread under ``jobplane dev``): a
  status event Step Functions never delivered (best effort), or a holder whose history was not
  read, is found by listing the pools (gsi1 ``POOLS``) and asking Step Functions about each
  holder's execution (its ARN starts the holder); one that no longer runs is released.
"""

from __future__ import annotations

import logging

from jobplane.contract import datamodel as dm
from jobplane.contract import pools as pc
from jobplane.contract.types import Client, JsonObject

log = logging.getLogger(__name__)


def _delete(ddb: Client, table: str, pk: str, elements: list[str]) -> None:
    ddb.update_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": pc.POOL_SK}},
                    UpdateExpression="DELETE #holders :hs", ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeNames={"#holders": pc.ATTR_HOLDERS},
                    ExpressionAttributeValues={":hs": {"SS": sorted(elements)}})


def release_run(ddb: Client, table: str, events: list[JsonObject]) -> int:
    """Give back every slot the run's claims asked for; how many elements were named."""
    count = 0
    for pk, elements in sorted(pc.held_in_history(events).items()):
        try:
            _delete(ddb, table, pk, list(elements))
        except ddb.exceptions.ConditionalCheckFailedException:
            continue  # the pool item is gone (nothing to release, and no empty item made)
        count += len(elements)
    return count


def pools(ddb: Client, table: str) -> list[pc.Pool]:
    """Every pool item (gsi1 ``POOLS``: a claim writes it there)."""
    out: list[pc.Pool] = []
    kwargs: JsonObject = {"TableName": table, "IndexName": dm.GSI_BY_OWNER,
                          "KeyConditionExpression": "gsi1pk = :p",
                          "ExpressionAttributeValues": {":p": {"S": pc.POOLS_PARTITION}}}
    while True:
        page = ddb.query(**kwargs)
        out += [pc.Pool.from_item(item) for item in page.get("Items", [])]
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class PoolSweep:
    """The periodic check's part: release the slots of holders whose execution has ended."""

    def __init__(self, ddb: Client, table: str, sfn: Client):
        self.ddb, self.table, self.sfn = ddb, table, sfn

    def check(self) -> list[str]:
        """The holder elements released."""
        released: list[str] = []
        for pool in pools(self.ddb, self.table):
            ended: list[str] = []
            for holder in pool.holders:
                try:
                    status = self.sfn.describe_execution(executionArn=holder.execution_arn)["status"]
                except self.sfn.exceptions.ExecutionDoesNotExist:
                    status = "GONE"
                if status != "RUNNING":
                    ended.append(holder.element)
            if ended:
                _delete(self.ddb, self.table, pc.pool_pk(pool.name), ended)
                log.warning("pool %s: released %d slots of runs that ended without giving them back",
                            pool.name, len(ended))
                released += ended
        return released
