"""The platform repository: every read and write of job state, executions, skips and audit
entries outside the state machines goes through here (reconciler, CLI, portal, tests), so the
key design of :mod:`jobplane.contract.datamodel` is used in one place. No query scans.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from dataclasses import dataclass
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

from jobplane.contract.audit_event import AuditEvent
from jobplane.contract import datamodel as dm
from jobplane.contract import items
from jobplane.contract.statuses import AbortReason, ExecutionStatus
from jobplane.contract.attribute_values import json_object
from jobplane.contract.clock import now_iso
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.attempts import Attempt
from jobplane.contract.records import PAUSE_SCHEDULE, AuditEntry, ExecutionRecord, JobState
from jobplane.contract.types import Client, Item, JsonObject

@dataclass(frozen=True)
class StateFilter:
    """A DynamoDB filter on job states: ``expression`` names each attribute as ``#f_<name>``
    (``names``: those attributes) and each value as ``:f_<key>`` (``values``: strings)."""

    expression: str
    names: tuple[str, ...]
    values: dict[str, str]


def query_items(ddb: Client, kwargs: JsonObject, limit: int | None = None) -> tuple[list[Item], Item | None]:
    """A Query read page by page (DynamoDB answers at most 1 MB at a time) until ``limit`` items,
    or all of them: the items, and the key a next read would go on from (None at the end)."""
    kwargs = dict(kwargs)
    items: list[Item] = []
    while True:
        if limit is not None:
            kwargs["Limit"] = limit - len(items)
        out = ddb.query(**kwargs)
        items += out.get("Items", [])
        last = out.get("LastEvaluatedKey")
        if not last or (limit is not None and len(items) >= limit):
            return items, last
        kwargs["ExclusiveStartKey"] = last


def status_index_keys(item: Item) -> Item | None:
    """The index keys a job state item should carry and does not, as attribute values: gsi3 as
    :func:`jobplane.contract.datamodel.status_filed` files it (RUNNING while a run holds the
    claim, else its last status) and gsi2 ``PAUSED`` while it is paused; None when it carries
    them (or is no job state). Only additions: a state written before the index existed (or a
    snapshot saved then) has none to remove; :meth:`Repository.refile_status` moves a filed one."""
    job = item.get("job", {}).get("S")
    if item.get("sk", {}).get("S", dm.STATE_SK) != dm.STATE_SK or not job:
        return None
    status = item.get(dm.ATTR_LAST_STATUS, {}).get("S")
    want = dm.status_filed(bool(item.get(dm.ATTR_RUNNING, {}).get("SS")), status if isinstance(status, str) else None)
    keys: Item = {}
    if want is not None and item.get(dm.ATTR_STATUS_PK, {}).get("S") != want:
        keys |= {dm.ATTR_STATUS_PK: {"S": want}, dm.ATTR_STATUS_SK: {"S": job}}
    if dm.ATTR_PAUSED_AT in item and item.get("gsi2pk", {}).get("S") != dm.PAUSED_PARTITION:
        keys |= {"gsi2pk": {"S": dm.PAUSED_PARTITION}, "gsi2sk": {"S": job}}
    return keys or None


def _job_key(job: str) -> Item:
    return items.as_boto(items.job_key(job))


def _exec_key(execution: str) -> Item:
    return items.as_boto(items.execution_key(execution))


T = TypeVar("T")

#: The keys one BatchGetItem may ask for. DynamoDB API reference, BatchGetItem
#: (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html): "A single
#: operation can retrieve up to 16 MB of data, which can contain as many as 100 items"; more keys
#: are refused ("Too many items requested for the BatchGetItem call"), and a partial answer names
#: the rest in UnprocessedKeys.
BATCH_GET_MAX = 100


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    cursor: str | None  # pass back to get the next page


_SNOOZE_NAMES = {"#until": dm.ATTR_SNOOZED_UNTIL, "#by": dm.ATTR_SNOOZED_BY, "#why": dm.ATTR_SNOOZE_REASON,
                 "#held": dm.ATTR_SNOOZE_HELD, "#counts": dm.ATTR_SNOOZE_COUNTS, "#fin": dm.ATTR_SNOOZE_FINISHING}


class Repository:
    def __init__(self, dynamodb: Client, table: str):
        self.ddb = dynamodb
        self.table = table

    # -- reads ------------------------------------------------------------------------------
    def job_state(self, job: str) -> JobState | None:
        item = self.ddb.get_item(TableName=self.table, Key=_job_key(job), ConsistentRead=True).get("Item")
        return JobState.from_item(item) if item else None

    def job_states(self, attributes: tuple[str, ...] = JobState.ATTRIBUTES, where: StateFilter | None = None
                   ) -> list[JobState]:
        """Every job that has a state (it ran, was claimed or paused), by name. Each writer that
        puts a state in the JOBS partition also sets its ``job``, so the projection holds it.
        ``attributes``: a reader that shows fewer (the jobs page) reads fewer; the fields of the
        others keep their defaults. ``where``: only the states it holds, chosen by DynamoDB.
        "A filter expression is applied after a Query finishes, but before the results are
        returned. Therefore, a Query consumes the same amount of read capacity" (DynamoDB
        developer guide, Query.FilterExpression.html): what it saves is the answer's size and
        its parsing here, and the 1 MB page limit still counts the states left out."""
        page = self._query(dm.GSI_BY_OWNER, "gsi1pk", dm.JOBS_PARTITION, None, True, attributes=attributes,
                           where=where)
        return [JobState.from_item(i) for i in page.items]

    def job_states_ended(self, status: str, attributes: tuple[str, ...] = JobState.ATTRIBUTES) -> list[JobState]:
        """The states filed under ``status`` in the status index (gsi3, :func:`dm.status_filed`),
        by name: the jobs whose last run ended ``status`` (written with ``last_status`` by
        contract/items.py ``release_job``), or for RUNNING the jobs a run claimed (the claim
        writes it), not every job's state. A reader decides each by its ``running`` and
        ``last_status``: a run ending while another of its job still runs files the job under
        its status until :meth:`refile_status` (the reconciler) files it back. One written
        before the index existed is in none, until :meth:`index_job_statuses` has filed it
        (docs/deploy.md)."""
        page = self._query(dm.GSI_BY_STATUS, dm.ATTR_STATUS_PK, dm.status_partition(status), None, True,
                           attributes=attributes)
        return [JobState.from_item(i) for i in page.items]

    def jobs_filed(self, status: str) -> list[str]:
        """The names of the jobs filed under ``status`` in the status index, and nothing else of
        them (the answer is the names, not the states: the jobs page's NEVER_RUN filter reads
        which jobs a run ever claimed). Every writer that files a state also sets its ``job``."""
        page = self._query(dm.GSI_BY_STATUS, dm.ATTR_STATUS_PK, dm.status_partition(status), None, True,
                           attributes=("job",))
        return [i["job"]["S"] for i in page.items if "S" in i.get("job", {})]

    def jobs_filed_idle(self, status: str) -> list[str]:
        """The names of the jobs filed under ``status`` in the status index that no run holds the
        claim of (no ``running``), by name: the jobs page's filter by a status a run ends with
        (a job filed under it while another of its runs still holds the claim is RUNNING until
        :meth:`refile_status` files it back). Only ``job`` and ``running`` are read, and the
        answer's items are read as they come, no state built of each (at 5,000 jobs, SUCCEEDED's
        ~4,400: bench/portal.py)."""
        page = self._query(dm.GSI_BY_STATUS, dm.ATTR_STATUS_PK, dm.status_partition(status), None, True,
                           attributes=("job", dm.ATTR_RUNNING))
        return [i["job"]["S"] for i in page.items
                if "S" in i.get("job", {}) and not i.get(dm.ATTR_RUNNING, {}).get("SS")]

    def count_filed_idle(self, status: str) -> int:
        """How many job states are filed under ``status`` in the status index with no run holding
        their claim: the number :meth:`jobs_filed_idle` would list, counted by DynamoDB without
        sending them. ``Select=COUNT`` answers the number of items instead of the items, and
        ``Count`` is the number left after the filter expression ("Count — The number of items
        that remain after a filter expression (if present) was applied", DynamoDB developer guide,
        Query.Other.html#Query.Count); a page still stops at 1 MB read ("If the size of the Query
        result set is larger than 1 MB, ScannedCount and Count represent only a partial count of
        the total items"), so each page's count is added until no LastEvaluatedKey is left. At
        5,000 jobs, SUCCEEDED's ~4,400 names parsed by botocore were most of that filter's page
        (cProfile, bench/portal.py: issue 66 item 3); its count is one small answer a page."""
        kwargs: JsonObject = {"TableName": self.table, "IndexName": dm.GSI_BY_STATUS, "Select": "COUNT",
                              "KeyConditionExpression": "#k = :v", "FilterExpression": "attribute_not_exists(#r)",
                              "ExpressionAttributeNames": {"#k": dm.ATTR_STATUS_PK, "#r": dm.ATTR_RUNNING},
                              "ExpressionAttributeValues": {":v": {"S": dm.status_partition(status)}}}
        count = 0
        while True:
            out = self.ddb.query(**kwargs)
            count += int(out.get("Count", 0))
            last = out.get("LastEvaluatedKey")
            if not last:
                return count
            kwargs["ExclusiveStartKey"] = last

    def job_names(self) -> list[str]:
        """The name of every job that has a state (gsi1 ``JOBS``, the names alone): what the jobs
        page's status filter subtracts from an index count, the states of jobs no longer in the
        catalog (Reads.job_window; a job's state is never deleted with the job)."""
        page = self._query(dm.GSI_BY_OWNER, "gsi1pk", dm.JOBS_PARTITION, None, True, attributes=("job",))
        return [i["job"]["S"] for i in page.items if "S" in i.get("job", {})]

    def job_states_paused(self, attributes: tuple[str, ...] = JobState.ATTRIBUTES) -> list[JobState]:
        """The paused jobs' states, by name: gsi2 ``PAUSED``, written and removed with the pause
        (:meth:`set_paused`, :meth:`clear_paused`)."""
        page = self._query(dm.GSI_BY_KIND, "gsi2pk", dm.PAUSED_PARTITION, None, True, attributes=attributes)
        return [JobState.from_item(i) for i in page.items]

    def refile_status(self, job: str, tries: int = 5) -> bool:
        """File the job's state where :func:`dm.status_filed` says from what it holds now, if it
        is filed elsewhere: after a write that could not know (a run's end while another run of
        the job still holds the claim files it under the ended status; a dead run's claim
        dropped by :meth:`release_claim` leaves it under RUNNING). Each move is conditional on
        ``running`` and ``last_status`` being as read, so a claim or a release landing meanwhile
        is never undone (read again, up to ``tries`` times). True if it moved."""
        for _ in range(tries):
            item = self.ddb.get_item(TableName=self.table, Key=_job_key(job), ConsistentRead=True,
                                     ProjectionExpression="#r, #l, #p",
                                     ExpressionAttributeNames={"#r": dm.ATTR_RUNNING, "#l": dm.ATTR_LAST_STATUS,
                                                               "#p": dm.ATTR_STATUS_PK}).get("Item")
            if item is None:
                return False
            last = item.get(dm.ATTR_LAST_STATUS, {}).get("S")
            running = bool(item.get(dm.ATTR_RUNNING, {}).get("SS"))
            want, have = dm.status_filed(running, last), item.get(dm.ATTR_STATUS_PK, {}).get("S")
            if want == have:
                return False
            names = {"#r": dm.ATTR_RUNNING, "#l": dm.ATTR_LAST_STATUS, "#p": dm.ATTR_STATUS_PK,
                     "#s": dm.ATTR_STATUS_SK}
            values: Item = {}
            condition = "attribute_exists(#r)" if running else "attribute_not_exists(#r)"
            if isinstance(last, str):
                condition += " AND #l = :l"
                values[":l"] = {"S": last}
            else:
                condition += " AND attribute_not_exists(#l)"
            if want is None:
                update = "REMOVE #p, #s"
            else:
                update = "SET #p = :p, #s = :job"
                values |= {":p": {"S": want}, ":job": {"S": job}}
            try:
                self.ddb.update_item(TableName=self.table, Key=_job_key(job), UpdateExpression=update,
                                     ConditionExpression=condition, ExpressionAttributeNames=names,
                                     **({"ExpressionAttributeValues": values} if values else {}))
                return True
            except self.ddb.exceptions.ConditionalCheckFailedException:
                continue  # a claim or a release landed since the read: read again
        return False

    def index_job_statuses(self) -> list[str]:
        """File every job state in the indexes it is missing from (a state written before the
        status index existed, or before it filed running and paused jobs): the jobs filed, by
        name. Each is set only if the attributes it was decided from are still as read (a
        claim, a release or a pause meanwhile files it itself), so it can run at any time, more
        than once. Reads every state once: a one-off after an upgrade (``jobplane
        index-statuses``), not a reader's path."""
        attributes = ("job", dm.ATTR_RUNNING, dm.ATTR_LAST_STATUS, dm.ATTR_PAUSED_AT, dm.ATTR_STATUS_PK, "gsi2pk")
        page = self._query(dm.GSI_BY_OWNER, "gsi1pk", dm.JOBS_PARTITION, None, True, attributes=attributes)
        filed = []
        for item in page.items:
            keys = status_index_keys(item)
            if keys is None:
                continue
            job = item["job"]["S"]
            names = {f"#k{i}": k for i, k in enumerate(keys)}
            values: Item = {f":k{i}": v for i, v in enumerate(keys.values())}
            conditions = []
            for attribute, tag in ((dm.ATTR_RUNNING, "r"), (dm.ATTR_LAST_STATUS, "l"), (dm.ATTR_PAUSED_AT, "p")):
                names[f"#{tag}"] = attribute
                if attribute in item:
                    conditions.append(f"#{tag} = :{tag}")
                    values[f":{tag}"] = item[attribute]
                else:
                    conditions.append(f"attribute_not_exists(#{tag})")
            try:
                self.ddb.update_item(
                    TableName=self.table, Key=_job_key(job),
                    UpdateExpression="SET " + ", ".join(f"#k{i} = :k{i}" for i in range(len(keys))),
                    ConditionExpression=" AND ".join(conditions), ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values)
            except self.ddb.exceptions.ConditionalCheckFailedException:
                continue  # changed since the read: that write filed it
            filed.append(job)
        return filed

    def job_states_of(self, jobs: Sequence[str], attributes: tuple[str, ...] = JobState.ATTRIBUTES
                      ) -> dict[str, JobState]:
        """The states of the named jobs that have one, by job (BatchGetItem, 100 keys a request,
        strongly consistent): a page of the jobs list reads its own jobs' states, not every job's.
        ``attributes`` as :meth:`job_states` (it must hold ``job``)."""
        out: dict[str, JobState] = {}
        for item in self.job_items_of(jobs, attributes).values():
            state = JobState.from_item(item)
            if state.job:
                out[state.job] = state
        return out

    def job_items_of(self, jobs: Sequence[str], attributes: tuple[str, ...]) -> dict[str, Item]:
        """The state items of the named jobs that have one, as DynamoDB answers them, by job
        (as :meth:`job_states_of`, which builds a state of each): a reader that decides by an
        attribute no state holds (the status index's partition) and builds the states it keeps."""
        names = {f"#a{i}": a for i, a in enumerate(dict.fromkeys(("job", *attributes)))}
        out: dict[str, Item] = {}
        unique = list(dict.fromkeys(jobs))
        for i in range(0, len(unique), BATCH_GET_MAX):
            request: JsonObject = {self.table: {"Keys": [_job_key(j) for j in unique[i:i + BATCH_GET_MAX]],
                                                "ConsistentRead": True, "ProjectionExpression": ", ".join(names),
                                                "ExpressionAttributeNames": names}}
            for retry in itertools.count():
                answer = self.ddb.batch_get_item(RequestItems=request)
                for item in answer.get("Responses", {}).get(self.table, []):
                    job = item.get("job", {}).get("S")
                    if isinstance(job, str) and job:
                        out[job] = item
                request = answer.get("UnprocessedKeys") or {}  # throttled keys: asked again, after a pause
                if not request:
                    break
                # "we strongly recommend that you use an exponential backoff algorithm" (BatchGetItem,
                # https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html)
                time.sleep(min(0.05 * 2 ** retry, 1.0))
        return out

    def execution(self, name: str) -> ExecutionRecord | None:
        item = self.ddb.get_item(TableName=self.table, Key=_exec_key(name), ConsistentRead=True).get("Item")
        return ExecutionRecord.from_item(item) if item else None

    def executions(self, job: str, limit: int = 20, cursor: str | None = None) -> Page[ExecutionRecord]:
        """A job's executions (runs and skips), newest first."""
        return self._executions(dm.GSI_BY_OWNER, "gsi1pk", dm.job_partition(job), limit, cursor)

    def executions_started(self, job: str, since: str, until: str) -> Iterator[ExecutionRecord]:
        """A job's records started from ``since`` to ``until`` (ISO 8601 UTC, both included),
        newest first, page by page: a key condition on the index's sort key (the start), so an
        old month reads its own records, not every one since."""
        kwargs: JsonObject = {"TableName": self.table, "IndexName": dm.GSI_BY_OWNER,
                              "KeyConditionExpression": "gsi1pk = :v AND gsi1sk BETWEEN :a AND :b",
                              "ExpressionAttributeValues": {":v": {"S": dm.job_partition(job)}, ":a": {"S": since},
                                                            ":b": {"S": until}},
                              "ScanIndexForward": False}
        while True:
            page = self.ddb.query(**kwargs)
            yield from (ExecutionRecord.from_item(i) for i in page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def recent_failures(self, limit: int = 50, cursor: str | None = None) -> Page[ExecutionRecord]:
        return self._executions(dm.GSI_BY_KIND, "gsi2pk", dm.FAILURES_PARTITION, limit, cursor)

    def recent_skips(self, limit: int = 50, cursor: str | None = None) -> Page[ExecutionRecord]:
        return self._executions(dm.GSI_BY_KIND, "gsi2pk", dm.SKIPS_PARTITION, limit, cursor)

    def _executions(self, index: str, key: str, value: str, limit: int, cursor: str | None) -> Page[ExecutionRecord]:
        page = self._query(index, key, value, limit, False, cursor)
        return Page([ExecutionRecord.from_item(i) for i in page.items], page.cursor)

    def _query(self, index: str, key: str, value: str, limit: int | None, forward: bool,
               cursor: str | None = None, attributes: tuple[str, ...] = (), where: StateFilter | None = None
               ) -> Page[Item]:
        kwargs: JsonObject = {"TableName": self.table, "IndexName": index,
                                  "KeyConditionExpression": "#k = :v", "ExpressionAttributeNames": {"#k": key},
                                  "ExpressionAttributeValues": {":v": {"S": value}}, "ScanIndexForward": forward}
        if attributes:  # by placeholder: some attribute names are DynamoDB reserved words
            names = {f"#a{i}": a for i, a in enumerate(attributes)}
            kwargs["ProjectionExpression"] = ", ".join(names)
            kwargs["ExpressionAttributeNames"] |= names
        if where is not None:
            kwargs["FilterExpression"] = where.expression
            kwargs["ExpressionAttributeNames"] |= {f"#f_{n}": n for n in where.names}
            kwargs["ExpressionAttributeValues"] |= {f":f_{k}": {"S": v} for k, v in where.values.items()}
        if cursor:
            kwargs["ExclusiveStartKey"] = json.loads(cursor)
        items, last = query_items(self.ddb, kwargs, limit)
        return Page(items, json.dumps(last) if last else None)

    # -- writes outside the state machine ------------------------------------------------------
    def finish_without_cleanup(self, *, job: str, team: str, execution: str, execution_arn: str, status: str,
                               started_at: str, finished_at: str, input_json: str, failed_step: str | None,
                               error: str | None) -> bool:
        """Record the end of an execution that could not run its own cleanup, and release its
        claim, in one transaction: the same two writes its state machine would have made
        (:mod:`jobplane.contract.items`), the record marked ``alert_pending`` until
        :meth:`alert_published`. False if a final record already exists (nothing changed)."""
        given = ExecutionInput.read(json_object(input_json), started_at)
        record = items.execution_record(
            execution=execution, execution_arn=execution_arn, job=job, team=team, status=status,
            trigger=given.trigger, scheduled_time=given.scheduled_time,
            requested_by=given.requested_by, input_json=input_json, started_at=started_at,
            finished_at=finished_at, steps="{}", failed_step=failed_step, error=error, only_if_new=True,
            alert_pending=True)
        release = items.release_job(job, execution=execution, status=status, started_at=started_at,
                                    finished_at=finished_at)
        return self._record_and_release(record, release, job, execution_arn)

    def _record_and_release(self, record: items.Put, release: items.Update, job: str, execution_arn: str) -> bool:
        """The final record and the claim's release in one transaction, then the holder mark;
        False when a final record already exists (the write is ``only_if_new``)."""
        try:
            self.ddb.transact_write_items(TransactItems=[{"Put": record.boto(self.table)},
                                                         {"Update": release.boto(self.table)}])
        except self.ddb.exceptions.TransactionCanceledException:
            return False
        self.release_holder(job, execution_arn)
        return True

    def record_replaced(self, *, job: str, team: str, execution: str, execution_arn: str, started_at: str,
                        finished_at: str, input_json: str, step: str | None, replaced_by: str) -> bool:
        """Record a run a newer run of its REPLACE job stopped: ABORTED, reason REPLACED, no
        alert (nothing failed), and drop its claim only (``items.release_claim``: the job's last
        status and failure block are the replacing run's to set). One transaction; False if a
        final record already exists (it ended on its own just before the stop)."""
        given = ExecutionInput.read(json_object(input_json), started_at)
        record = items.execution_record(
            execution=execution, execution_arn=execution_arn, job=job, team=team, status=ExecutionStatus.ABORTED,
            trigger=given.trigger, scheduled_time=given.scheduled_time, requested_by=given.requested_by,
            input_json=input_json, started_at=started_at, finished_at=finished_at, steps="{}", failed_step=step,
            error=f"replaced by {replaced_by}", abort_reason=AbortReason.REPLACED.value, only_if_new=True)
        release = items.release_claim(job, execution=execution)
        return self._record_and_release(record, release, job, execution_arn)

    def alert_published(self, execution: str) -> None:
        """The record's alert went out (finish_without_cleanup left it pending)."""
        self.ddb.update_item(TableName=self.table, Key=_exec_key(execution),
                             UpdateExpression=f"REMOVE {dm.ATTR_ALERT_PENDING}",
                             ConditionExpression="attribute_exists(pk)")

    def release_holder(self, job: str, execution_arn: str) -> bool:
        """Clear ``holder`` if it still names this execution (the fence: never someone else's)."""
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job), UpdateExpression="REMOVE holder",
                                 ConditionExpression="holder = :me", ExpressionAttributeValues={":me": {"S": execution_arn}})
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def finalize(self, execution: str, expires_at: int, timeline: list[Attempt], transitions: int,
                 error: str | None = None) -> bool:
        """Add what the execution history (and the failed step's log) knows to a final record,
        and its TTL. False if there is no record; any other error is raised."""
        values = {":e": {"N": str(expires_at)}, ":t": {"S": json.dumps([a.to_json() for a in timeline])}, ":n": {"N": str(transitions)}}
        update = "SET expires_at = :e, timeline = :t, transitions = :n"
        if error:
            update += ", #error = if_not_exists(#error, :err)"
            values[":err"] = {"S": error}
        try:
            self.ddb.update_item(TableName=self.table, Key=_exec_key(execution), UpdateExpression=update,
                                 ConditionExpression="attribute_exists(pk)", ExpressionAttributeValues=values,
                                 **({"ExpressionAttributeNames": {"#error": "error"}} if error else {}))
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def seed_checkpoint(self, job: str, execution: str, step: str, cursor: str, source: str, now: float,
                        expires_at: int) -> bool:
        """A re-run's checkpoint: ``step``'s progress record of the new ``execution``, before it
        starts, holding the cursor the run it re-runs (``source``) last reported, as attempt 0,
        so its first attempt's ``jobplane.resume_from()`` answers it (docs/progress.md). Never
        over a record that exists (False then)."""
        from jobplane.contract import progress as cp

        try:
            self.ddb.put_item(TableName=self.table, Item={
                "pk": {"S": cp.pk(job, execution)}, "sk": {"S": step}, cp.ATTR_ATTEMPT: {"N": "0"},
                cp.ATTR_CURSOR: {"S": cursor}, cp.ATTR_RESUMED_FROM: {"S": source},
                cp.ATTR_STARTED_AT: {"N": repr(now)}, cp.ATTR_UPDATED_AT: {"N": repr(now)},
                cp.ATTR_EXPIRES_AT: {"N": str(expires_at)}}, ConditionExpression="attribute_not_exists(pk)")
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def unmark_stalled(self, job: str, execution: str, step: str, updated_at: float) -> None:
        """Take back the mark of a stall whose alert was not published (only that mark)."""
        from jobplane.contract import progress as cp

        try:
            self.ddb.update_item(TableName=self.table, Key={"pk": {"S": cp.pk(job, execution)}, "sk": {"S": step}},
                                 UpdateExpression="REMOVE #stalled", ConditionExpression="#stalled = :u",
                                 ExpressionAttributeNames={"#stalled": cp.ATTR_STALLED_FOR},
                                 ExpressionAttributeValues={":u": {"N": repr(updated_at)}})
        except self.ddb.exceptions.ConditionalCheckFailedException:
            pass  # marked since for newer values: not ours to take back

    def mark_stalled(self, job: str, execution: str, step: str, updated_at: float) -> bool:
        """True the first time only for these values of the step's progress (its ``updated_at``),
        and only while they are still the newest and the step has not ended: whoever writes the
        mark announces the stall. A step that moves and then stalls again is announced again."""
        from jobplane.contract import progress as cp

        try:
            self.ddb.update_item(
                TableName=self.table, Key={"pk": {"S": cp.pk(job, execution)}, "sk": {"S": step}},
                UpdateExpression="SET #stalled = :u",
                ConditionExpression="#updated = :u AND attribute_not_exists(#ended) AND "
                                    "(attribute_not_exists(#stalled) OR #stalled <> :u)",
                ExpressionAttributeNames={"#stalled": cp.ATTR_STALLED_FOR, "#updated": cp.ATTR_UPDATED_AT,
                                          "#ended": cp.ATTR_ENDED},
                ExpressionAttributeValues={":u": {"N": repr(updated_at)}})
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def mark_slow(self, execution: str, expires_at: int) -> bool:
        """True the first time only: whoever writes the marker announces the slow run."""
        try:
            self.ddb.put_item(TableName=self.table, Item={"pk": {"S": dm.slow_pk(execution)}, "sk": {"S": dm.SLOW_SK},
                                                          "expires_at": {"N": str(expires_at)}},
                              ConditionExpression="attribute_not_exists(pk)")
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def mark_reminded(self, job: str, execution: str) -> bool:
        """True the first time only, and only while ``execution`` is still the job's failure
        block: whoever writes ``reminded`` on the job's state announces it again
        (platform/renotify.py), so a failure is re-announced once, however long it stands."""
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job), UpdateExpression="SET #r = :e",
                                 ConditionExpression="#b = :e AND (attribute_not_exists(#r) OR #r <> :e)",
                                 ExpressionAttributeNames={"#r": dm.ATTR_REMINDED, "#b": dm.ATTR_BLOCKED_BY},
                                 ExpressionAttributeValues={":e": {"S": execution}})
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def link_rerun(self, original: str, rerun: str) -> None:
        """Remember on the original that ``rerun`` re-ran it (lineage both ways, no scan)."""
        try:
            self.ddb.update_item(TableName=self.table, Key=_exec_key(original),
                                 UpdateExpression="ADD rerun_by :r", ConditionExpression="attribute_exists(pk)",
                                 ExpressionAttributeValues={":r": {"SS": [rerun]}})
        except self.ddb.exceptions.ConditionalCheckFailedException:
            pass

    def set_paused(self, job: str, team: str, actor: str, reason: str, at: str) -> None:
        """Pause the job; the same write files its state in gsi2 ``PAUSED`` (the jobs page's
        PAUSED filter queries it), which :meth:`clear_paused` removes with the pause."""
        self.ddb.update_item(TableName=self.table, Key=_job_key(job),
                             UpdateExpression="SET paused_by = :a, paused_reason = :r, paused_at = :t, #pause = :t, "
                                              "team = if_not_exists(team, :team), job = if_not_exists(job, :job), "
                                              "gsi1pk = :jobs, gsi1sk = :job, gsi2pk = :paused, gsi2sk = :job",
                             ExpressionAttributeNames={"#pause": PAUSE_SCHEDULE},
                             ExpressionAttributeValues={":a": {"S": actor}, ":r": {"S": reason}, ":t": {"S": at},
                                                        ":team": {"S": team}, ":job": {"S": job},
                                                        ":jobs": {"S": dm.JOBS_PARTITION},
                                                        ":paused": {"S": dm.PAUSED_PARTITION}})

    def set_snooze(self, job: str, team: str, until: str, actor: str, reason: str) -> bool:
        """Hold the job's alerts until ``until``; a snooze already on is replaced, keeping what it
        held (its summary then covers both). False while the last snooze's summary is being sent
        (``snooze_finishing``): its end would otherwise remove this one."""
        try:
            self.ddb.update_item(
                TableName=self.table, Key=_job_key(job),
                UpdateExpression="SET #until = :u, #by = :a, #why = :r, #counts = if_not_exists(#counts, :none), "
                                 "team = if_not_exists(team, :team), job = if_not_exists(job, :job), "
                                 "gsi1pk = :jobs, gsi1sk = :job",
                ConditionExpression="attribute_not_exists(#fin)",
                ExpressionAttributeNames={k: v for k, v in _SNOOZE_NAMES.items() if k != "#held"},
                ExpressionAttributeValues={":u": {"S": until}, ":a": {"S": actor}, ":r": {"S": reason}, ":none": {"M": {}},
                                           ":team": {"S": team}, ":job": {"S": job}, ":jobs": {"S": dm.JOBS_PARTITION}})
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def end_snooze_now(self, job: str, now: str) -> bool:
        """Bring a snooze's end forward to ``now`` (the periodic check then summarises it);
        False when the job was not snoozed at ``now``."""
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job), UpdateExpression="SET #until = :now",
                                 ConditionExpression="#until > :now", ExpressionAttributeNames={"#until": dm.ATTR_SNOOZED_UNTIL},
                                 ExpressionAttributeValues={":now": {"S": now}})
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def hold_in_snooze(self, job: str, kind: str, execution: str, now: str) -> str | None:
        """Keep an alert (``kind``: '<EVENT>[ recovered]') for the summary if the job is snoozed at
        ``now``: its snooze's end when held, None when not snoozed. One conditional write decides
        (an alert racing the end is either held and summarised, or delivered). The same alert
        delivered again (SNS retries) is held once while the snooze names it; past the first
        :data:`~jobplane.contract.datamodel.SNOOZE_NAMED` it is only counted, perhaps twice."""
        entry = f"{kind} {execution}"
        names = {"#until": dm.ATTR_SNOOZED_UNTIL, "#held": dm.ATTR_SNOOZE_HELD, "#counts": dm.ATTR_SNOOZE_COUNTS,
                 "#kind": kind}
        named = {":now": {"S": now}, ":one": {"N": "1"}}
        try:  # named: counted and kept by name, while it is new and there is room
            answer = self.ddb.update_item(
                TableName=self.table, Key=_job_key(job), UpdateExpression="ADD #counts.#kind :one, #held :entry",
                ConditionExpression="#until > :now AND attribute_exists(#counts) AND "
                                    "(attribute_not_exists(#held) OR (size(#held) < :cap AND NOT contains(#held, :s)))",
                ExpressionAttributeNames=names, ReturnValues="ALL_NEW",
                # the item as it was when the condition failed: why, without another read (and
                # without a read right on the notifier's role), "ReturnValuesOnConditionCheckFailure"
                # https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateItem.html
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ExpressionAttributeValues={**named, ":entry": {"SS": [entry]}, ":s": {"S": entry},
                                           ":cap": {"N": str(dm.SNOOZE_NAMED)}})
            return str(answer["Attributes"][dm.ATTR_SNOOZED_UNTIL]["S"])
        except self.ddb.exceptions.ConditionalCheckFailedException as e:
            old = e.response.get("Item")
        state = JobState.from_item(old) if old else None
        if state is None or not state.snoozed(now):  # the common case: not snoozed, delivered
            return None
        if entry in state.snooze_held:  # delivered again: held already
            return state.snoozed_until
        try:  # no room left by name: counted
            answer = self.ddb.update_item(
                TableName=self.table, Key=_job_key(job), UpdateExpression="ADD #counts.#kind :one",
                ConditionExpression="#until > :now AND attribute_exists(#counts)",
                ExpressionAttributeNames={k: v for k, v in names.items() if k != "#held"},
                ExpressionAttributeValues=named, ReturnValues="ALL_NEW")
            return str(answer["Attributes"][dm.ATTR_SNOOZED_UNTIL]["S"])
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return None

    def claim_snooze_summary(self, job: str, until: str, now: str, stale_before: str) -> JobState | None:
        """Take on the summary of a snooze that ended (its end ``until`` as read): the snooze with
        what it held, or None when another checker has it (or it was changed meanwhile). A claim
        older than ``stale_before`` (a checker that died before sending) is taken over."""
        try:
            answer = self.ddb.update_item(
                TableName=self.table, Key=_job_key(job), UpdateExpression="SET #fin = :now",
                ConditionExpression="#until = :until AND #until <= :now AND "
                                    "(attribute_not_exists(#fin) OR #fin < :stale)",
                ExpressionAttributeNames={"#until": dm.ATTR_SNOOZED_UNTIL, "#fin": dm.ATTR_SNOOZE_FINISHING},
                ExpressionAttributeValues={":until": {"S": until}, ":now": {"S": now}, ":stale": {"S": stale_before}},
                ReturnValues="ALL_NEW")
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return None
        return JobState.from_item(answer["Attributes"])

    def finish_snooze(self, job: str, claimed_at: str) -> bool:
        """Remove the snooze whose summary was sent under the claim made at ``claimed_at``."""
        try:
            self.ddb.update_item(
                TableName=self.table, Key=_job_key(job), UpdateExpression="REMOVE #until, #by, #why, #held, #counts, #fin",
                ConditionExpression="#fin = :claimed", ExpressionAttributeNames=_SNOOZE_NAMES,
                ExpressionAttributeValues={":claimed": {"S": claimed_at}})
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def clear_paused(self, job: str) -> bool:
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job),
                                 UpdateExpression="REMOVE paused_by, paused_reason, paused_at, #pause, gsi2pk, gsi2sk",
                                 ExpressionAttributeNames={"#pause": PAUSE_SCHEDULE},
                                 ConditionExpression="attribute_exists(paused_at)")
            return True
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False

    def release_claim(self, job: str, execution: str, execution_arn: str | None) -> bool:
        """Drop a dead execution's claim: its name from ``running`` and, if it is the holder,
        ``holder``. The caller has checked that the execution is no longer running."""
        names = {"#running": dm.ATTR_RUNNING}
        values: Item = {":meset": {"SS": [execution]}, ":me": {"S": execution}}
        update = "DELETE #running :meset"
        condition = "contains(#running, :me)"
        if execution_arn:
            values[":arn"] = {"S": execution_arn}
            update = "REMOVE holder " + update
            condition = f"({condition}) OR holder = :arn"
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job), UpdateExpression=update,
                                 ConditionExpression=condition, ExpressionAttributeNames=names,
                                 ExpressionAttributeValues=values)
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False
        self.refile_status(job)  # no run left holding the claim: no longer under RUNNING
        return True

    def add_audit(self, actor: str, event: AuditEvent, reason: str = "", authority: str = "") -> str:
        entry = AuditEntry.of(event, id=uuid.uuid4().hex, at=now_iso(), actor=actor, reason=reason,
                              authority=authority)
        self.ddb.put_item(TableName=self.table, Item=entry.to_item())
        return entry.id

    def delete_audit(self, entry_id: str) -> None:
        """Only for an action that failed after its entry was written (ControlPlane.audited)."""
        self.ddb.delete_item(TableName=self.table, Key={"pk": {"S": dm.audit_pk(entry_id)}, "sk": {"S": dm.AUDIT_SK}})

    def audit_log(self, limit: int = 100) -> list[AuditEntry]:
        """The newest operator actions first."""
        return [AuditEntry.from_item(i) for i in self._query(dm.GSI_BY_OWNER, "gsi1pk", dm.AUDIT_PARTITION, limit,
                                                              False).items]

    def acknowledge_failure(self, job: str, blocked_by: str | None = None, actor: str = "") -> bool:
        """Unblock a SKIP_IF_FAILED job without a successful run (the control plane audits it):
        scheduled runs go ahead again; the failure stays recorded as acknowledged, so the next
        success still announces RECOVERED (docs/notifications.md). With ``blocked_by``, only if
        that execution is still the one blocking, unacknowledged."""
        if blocked_by is None:
            state = self.job_state(job)
            if state is None or not state.blocked:
                return False
            blocked_by = state.blocked_by
        try:
            self.ddb.update_item(TableName=self.table, Key=_job_key(job),
                                 UpdateExpression=f"REMOVE {', '.join(dm.ATTR_BLOCKS)} SET {dm.ATTR_ACKNOWLEDGED_BY} = :a",
                                 ConditionExpression=f"{dm.ATTR_BLOCKED_BY} = :b AND attribute_not_exists({dm.ATTR_ACKNOWLEDGED_BY})",
                                 ExpressionAttributeValues={":b": {"S": blocked_by}, ":a": {"S": actor or "unknown"}})
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False
        return True
