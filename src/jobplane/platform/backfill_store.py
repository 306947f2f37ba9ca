"""Backfills and fire leases in the table (key design: contract/datamodel.py).

Two kinds of item, each written only with a condition:

* the backfill, saved whole with ``version = <the one read>``: a driver that lost a race to
  another driver of the same backfill re-reads instead of overwriting its progress;
* a fire lease, ``FIRE#<job>#<time>``, put before a past fire's execution starts: only one
  backfill starts a fire at a time, and ``--only-missed`` never starts a fire another backfill
  already ran. The lease stays after its run ends (state ``done``), as the record that a backfill
  covered the fire.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from jobplane.contract import datamodel as dm
from jobplane.contract.attribute_values import item_of, plain
from jobplane.platform.backfill_model import Backfill, Fire, Mode, Status, fires_json
from jobplane.contract.clock import now_iso
from jobplane.platform.repository import query_items
from jobplane.contract.types import Client, JsonObject

@dataclass(frozen=True)
class Lease:
    fire: str
    backfill: str
    execution: str
    state: str  # "running" until its run ends, then "done"
    leased_at: str


class BackfillStore:
    def __init__(self, ddb: Client, table: str):
        self.ddb = ddb
        self.table = table

    # -- backfills ------------------------------------------------------------------------------
    def _to_item(self, bf: Backfill) -> JsonObject:
        values: JsonObject = {
            "pk": dm.backfill_pk(bf.id), "sk": dm.BACKFILL_SK, "id": bf.id, "job": bf.job, "team": bf.team,
            "window_start": bf.start, "window_end": bf.end, "mode": bf.mode.value,
            "max_concurrent": bf.max_concurrent, "params": json.dumps(bf.params, sort_keys=True),
            "requested_by": bf.requested_by, "reason": bf.reason, "created_at": bf.created_at,
            "status": bf.status.value, "fires": fires_json(bf.fires), "version": bf.version,
            "updated_at": bf.updated_at, "finished_at": bf.finished_at, "note": bf.note,
            "gsi2pk": dm.job_backfill_partition(bf.job), "gsi2sk": bf.created_at}
        if bf.driven:  # only backfills with work left are in the drivers' partition
            values |= {"gsi1pk": dm.BACKFILLS_PARTITION, "gsi1sk": f"{bf.created_at}#{bf.id}"}
        return item_of(values)

    @staticmethod
    def _from_item(item: JsonObject) -> Backfill:
        d = plain(item)
        return Backfill(
            id=d["id"], job=d["job"], team=d["team"], start=d["window_start"], end=d["window_end"],
            mode=Mode(d["mode"]), max_concurrent=int(d["max_concurrent"]), params=json.loads(d["params"]),
            requested_by=d["requested_by"], reason=d["reason"], created_at=d["created_at"],
            status=Status(d["status"]), fires=[Fire.from_json(f) for f in json.loads(d["fires"])],
            version=int(d["version"]), updated_at=d.get("updated_at"), finished_at=d.get("finished_at"),
            note=d.get("note"))

    def create(self, bf: Backfill) -> None:
        self.ddb.put_item(TableName=self.table, Item=self._to_item(bf), ConditionExpression="attribute_not_exists(pk)")

    def delete(self, backfill_id: str) -> None:
        """Only for a create whose audit entry could not be completed (all or nothing)."""
        self.ddb.delete_item(TableName=self.table, Key=item_of({"pk": dm.backfill_pk(backfill_id), "sk": dm.BACKFILL_SK}))

    def get(self, backfill_id: str) -> Backfill | None:
        out = self.ddb.get_item(TableName=self.table, ConsistentRead=True,
                                Key=item_of({"pk": dm.backfill_pk(backfill_id), "sk": dm.BACKFILL_SK}))
        return self._from_item(out["Item"]) if "Item" in out else None

    def save(self, bf: Backfill) -> bool:
        """Write ``bf`` if nobody saved it since it was read (then its version moves on);
        False if somebody did: read it again."""
        old = bf.version
        bf.version, bf.updated_at = old + 1, now_iso()
        try:
            self.ddb.put_item(TableName=self.table, Item=self._to_item(bf), ConditionExpression="version = :v",
                              ExpressionAttributeValues={":v": {"N": str(old)}})
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            bf.version = old
            return False

    def active_ids(self) -> list[str]:
        return [i["id"]["S"] for i in self._query(dm.GSI_BY_OWNER, "gsi1pk", dm.BACKFILLS_PARTITION, True)]

    def of_job(self, job: str, limit: int = 20) -> list[Backfill]:
        return [self._from_item(i) for i in self._query(dm.GSI_BY_KIND, "gsi2pk", dm.job_backfill_partition(job),
                                                        False, limit)]

    def _query(self, index: str, key: str, value: str, forward: bool, limit: int | None = None,
               between: tuple[str, str] | None = None, sort_key: str = "") -> list[JsonObject]:
        kwargs: JsonObject = {"TableName": self.table, "IndexName": index, "ScanIndexForward": forward,
                                  "KeyConditionExpression": "#k = :v", "ExpressionAttributeNames": {"#k": key},
                                  "ExpressionAttributeValues": {":v": {"S": value}}}
        if between:
            kwargs["KeyConditionExpression"] += " AND #s BETWEEN :a AND :b"
            kwargs["ExpressionAttributeNames"]["#s"] = sort_key
            kwargs["ExpressionAttributeValues"] |= {":a": {"S": between[0]}, ":b": {"S": between[1]}}
        return query_items(self.ddb, kwargs, limit)[0]

    # -- fire leases ----------------------------------------------------------------------------
    def leases(self, job: str, start: str, end: str) -> dict[str, Lease]:
        """The job's leased fires from ``start`` to ``end`` (UTC ISO, both included)."""
        rows = self._query(dm.GSI_BY_OWNER, "gsi1pk", dm.job_fires_partition(job), True,
                           between=(start, end), sort_key="gsi1sk")
        return {lease.fire: lease for lease in map(self._lease_of, rows)}

    @staticmethod
    def _lease_of(item: JsonObject) -> Lease:
        d = plain(item)
        return Lease(d["fire"], d["backfill"], d["execution"], d["state"], d["leased_at"])

    def lease(self, job: str, fire: str, backfill_id: str, execution: str, *, over_done: bool,
              replacing: str | None = None) -> Lease | None:
        """Lease ``fire`` for ``execution``: None when it is ours, else the lease that holds it.

        Granted when nobody leased the fire, when this execution holds it and its run has not
        ended (a second driver of the same backfill), with ``over_done`` when another
        execution's run has ended, and with ``replacing`` when the holder is still that execution
        (whose run is known to be over or never started).

        This execution's own ended lease is never granted again: a driver that read the backfill
        before that run ended would set the lease back to running, and the fire would look in
        flight for ever (a later backfill, ``--all`` too, would leave it out)."""
        conditions = ["attribute_not_exists(pk)", "(execution = :e AND #state = :running)"]
        values: JsonObject = {":e": execution, ":running": "running"}
        if over_done:
            conditions.append("(#state = :done AND execution <> :e)")
            values[":done"] = "done"
        if replacing:
            conditions.append("execution = :old")
            values[":old"] = replacing
        item = item_of({"pk": dm.fire_pk(job, fire), "sk": dm.FIRE_SK, "job": job, "fire": fire, "backfill": backfill_id,
                      "execution": execution, "state": "running", "leased_at": now_iso(),
                      "gsi1pk": dm.job_fires_partition(job), "gsi1sk": fire})
        try:
            self.ddb.put_item(TableName=self.table, Item=item, ConditionExpression=" OR ".join(conditions),
                              ExpressionAttributeValues=item_of(values), ExpressionAttributeNames={"#state": "state"})
            return None
        except self.ddb.exceptions.ConditionalCheckFailedException:
            out = self.ddb.get_item(TableName=self.table, ConsistentRead=True,
                                    Key=item_of({"pk": dm.fire_pk(job, fire), "sk": dm.FIRE_SK}))
            if "Item" not in out:  # released in between: try once more
                return self.lease(job, fire, backfill_id, execution, over_done=over_done)
            return self._lease_of(out["Item"])

    def finish_lease(self, job: str, fire: str, execution: str, *, keep: bool) -> None:
        """The run of ``execution`` ended: keep the lease as done (the fire is covered) or, for a
        run the policy skipped, drop it (the fire is still missing). Only if it is still ours."""
        key = item_of({"pk": dm.fire_pk(job, fire), "sk": dm.FIRE_SK})
        try:
            if keep:
                self.ddb.update_item(TableName=self.table, Key=key, UpdateExpression="SET #state = :done",
                                     ConditionExpression="execution = :e", ExpressionAttributeNames={"#state": "state"},
                                     ExpressionAttributeValues=item_of({":done": "done", ":e": execution}))
            else:
                self.ddb.delete_item(TableName=self.table, Key=key, ConditionExpression="execution = :e",
                                     ExpressionAttributeValues=item_of({":e": execution}))
        except self.ddb.exceptions.ConditionalCheckFailedException:
            pass  # another backfill took it over: its lease is its own
