"""A run's map items as their records tell them (contract/map_items.py): one Query of the run's
partition (``EXEC#<execution>``, sort keys ``ITEM#<map>#...``), never a scan, and the summary
the portal, the CLI and the failure alert show (done, failed, running, waiting of N; the failed
items). A pooled item waiting for its pool's slot has a WAITING record (contract/map_items.py)
until it holds one: it is counted waiting, not running. One item's tries, its Task's own retries
included, are in its child execution's history (:func:`item_attempts`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from botocore.exceptions import ClientError

from jobplane.contract import datamodel as dm
from jobplane.contract import map_items
from jobplane.contract.attribute_values import plain
from jobplane.contract.attempts import Attempt
from jobplane.contract.map_items import ItemOutcome
from jobplane.contract.map_transitions import item_transitions
from jobplane.contract.types import Client, JsonObject
from jobplane.platform.logs import LogSource, LogStream, error_excerpt
from jobplane.platform.repository import query_items
from jobplane.platform.timeline import Patience, history, timeline

#: how many failed items an alert or a summary names (the records name them all)
FIRST_FEW = 5


def item_outcomes(ddb: Client, table: str, execution: str, map_name: str | None = None) -> list[ItemOutcome]:
    """Every item record of ``execution`` (of one map, if named), by map and index."""
    prefix = map_items.item_sk(map_name, "") if map_name else map_items.ITEM_SK_PREFIX
    rows, _ = query_items(ddb, {"TableName": table, "ConsistentRead": True,
                                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :items)",
                                "ExpressionAttributeValues": {":pk": {"S": f"{dm.EXEC_PREFIX}{execution}"},
                                                              ":items": {"S": prefix}}})
    outcomes = [map_items.item_outcome(plain(r)) for r in rows]
    return sorted(outcomes, key=lambda o: (o.map, o.index))


@dataclass(frozen=True)
class MapProgress:
    """One map of one run: how many items of ``total`` (None: not known, the list is not read)
    ended each way, how many wait for a pool's slot, and the failed ones."""

    map: str
    succeeded: int
    failed: int
    retried: int
    failed_items: list[ItemOutcome] = field(default_factory=list)
    total: int | None = None
    waiting: int = 0
    waiting_since: str | None = None  # the longest-waiting item's
    #: the state transitions its items' child executions used, as their records count attempts
    #: (contract/map_transitions.py: what `jobplane plan` prices; a run's own history has none of them)
    transitions: int = 0

    @property
    def done(self) -> int:
        return self.succeeded + self.failed

    @property
    def running(self) -> int | None:
        """Neither ended nor waiting: running, or not started yet."""
        return None if self.total is None else max(self.total - self.done - self.waiting, 0)

    def to_json(self) -> JsonObject:
        return {"map": self.map, "total": self.total, "succeeded": self.succeeded, "failed": self.failed,
                "running": self.running, "waiting": self.waiting, "waiting_since": self.waiting_since,
                "retried": self.retried, "transitions": self.transitions,
                "failed_items": [o.to_json() for o in self.failed_items]}

    def summary(self) -> str:
        """One line: what the alert and the CLI say."""
        of = f" of {self.total}" if self.total is not None else ""
        waiting = f", {self.waiting} WAITING for a pool's slot" if self.waiting else ""
        line = f"{self.map}: {self.succeeded} succeeded, {self.failed} failed{waiting}{of}"
        if self.failed_items:
            named = ", ".join(_shown(o) for o in self.failed_items[:FIRST_FEW])
            more = f" and {self.failed - FIRST_FEW} more" if self.failed > FIRST_FEW else ""
            line += f" (failed: {named}{more})"
        return line

    def error_lines(self) -> list[str]:
        """The failed items' errors, one line each (the first few): what the alert and
        `jobplane run` show under the summary."""
        return [f"{_shown(o)}: {o.error}" for o in self.failed_items[:FIRST_FEW] if o.error]


def with_own_errors(outcomes: list[ItemOutcome], logs: LogSource | None, limit: int = FIRST_FEW) -> list[ItemOutcome]:
    """Each map's first ``limit`` failed ECS items with the each step's own error line, as a top-level
    step's failure shows it (``RuntimeError: ledger locked (exit code 75)``, not the task's
    ``States.TaskFailed: exit code 75 (Essential container in task exited)``): the state
    machine cannot read logs, so the line is read where the runner wrote it, the log stream of
    the item's last task (one GetLogEvents each; issue 65 item 8). An item whose log cannot be
    read keeps what its record says: the line is detail, never a reason to lose the item."""
    if logs is None:
        return outcomes
    out: list[ItemOutcome] = []
    read: dict[str, int] = {}
    for o in outcomes:
        if o.failed and o.task_id and read.get(o.map, 0) < limit:
            read[o.map] = read.get(o.map, 0) + 1
            try:
                line = error_excerpt([LogStream(o.map, o.attempts, o.task_id, logs)])
            except Exception:  # noqa: BLE001 - throttled or gone: the record's words stand
                line = None
            if line:
                code = f" (exit code {o.exit_code})" if o.exit_code is not None else ""
                o = replace(o, error=(line.splitlines()[-1] + code)[:map_items.ERROR_EXCERPT])
        out.append(o)
    return out


def _shown(o: ItemOutcome) -> str:
    import json

    item = o.item if isinstance(o.item, str) else json.dumps(o.item, separators=(",", ":"))
    return f"#{o.index} {item[:60]}"


def progress(outcomes: list[ItemOutcome], totals: dict[str, int] | None = None,
             live: bool = True, pooled: frozenset[str] = frozenset()) -> list[MapProgress]:
    """Per map, in the order the outcomes come (by map name). ``live``: the run still runs (a
    WAITING record of an ended run is an item its end stopped: not waiting any more).
    ``pooled``: the maps whose each step holds a pool (its attempts cost more transitions)."""
    maps: dict[str, list[ItemOutcome]] = {}
    for o in outcomes:
        maps.setdefault(o.map, []).append(o)
    for name in totals or {}:
        maps.setdefault(name, [])
    out = []
    for name, items in sorted(maps.items()):
        failed = [o for o in items if o.failed]
        succeeded = sum(1 for o in items if o.status == "SUCCEEDED")
        waits = [o.waiting_since or "" for o in items if o.status == map_items.WAITING] if live else []
        transitions = sum(item_transitions(o.attempts, name in pooled) for o in items)
        out.append(MapProgress(name, succeeded, len(failed), sum(1 for o in items if o.ended and o.retried),
                               failed, (totals or {}).get(name), len(waits), min(waits) if waits else None,
                               transitions))
    return out


def item_total(s3: Client, bucket: str, job: str, execution: str, map_name: str) -> int | None:
    """How many items the run's list for ``map_name`` holds (None: no list, or no count): its
    object's metadata, written with it (contract/map_items.py ``COUNT_METADATA``), so a list of
    100,000 lines is never read to count it."""
    key = list_key(s3, bucket, job, execution, map_name)
    if key is None:
        return None
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
        return int(head.get("Metadata", {})[map_items.COUNT_METADATA])
    except Exception:  # not readable, or no count: not known
        return None


def list_key(s3: Client, bucket: str, job: str, execution: str, map_name: str) -> str | None:
    """The key of the run's list for ``map_name``: under its prefix with the UUID the run drew
    (contract/map_items.py items_key; ListObjectsV2 by prefix), else the list a re-run of failed
    items was given (``rerun_key``); None when there is neither (the items step has not run)."""
    try:
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=map_items.items_prefix(job, execution, map_name), MaxKeys=1)
        found = [o["Key"] for o in listed.get("Contents", [])]
        if found:
            return str(found[0])
        s3.head_object(Bucket=bucket, Key=map_items.rerun_key(job, execution, map_name))
        return map_items.rerun_key(job, execution, map_name)
    except Exception:  # no list yet, or none at all
        return None


def item_record(ddb: Client, table: str, execution: str, map_name: str, index: int) -> ItemOutcome | None:
    """One item's record (a strongly consistent GetItem of its key), or None."""
    got = ddb.get_item(TableName=table, ConsistentRead=True,
                       Key={"pk": {"S": f"{dm.EXEC_PREFIX}{execution}"}, "sk": {"S": map_items.item_sk(map_name, index)}})
    return map_items.item_outcome(plain(got["Item"])) if got.get("Item") else None


@dataclass(frozen=True)
class ItemAttempts:
    """Every try of one item's step, from its child execution's history: each attempt (the
    step's own retries) and each of its Task's own retries (a throttled RunTask or Invoke, an
    ECS capacity failure, a function not ready: a row with the error, then the retry's row),
    as an execution's timeline shows a top-level step's (platform/timeline.py). ``history``:
    ``read``; ``gone`` (the child's history is no longer kept: Step Functions keeps a closed
    execution's history 90 days); ``unknown`` (a record written before it named its child)."""

    outcome: ItemOutcome
    attempts: list[Attempt]
    history: str


def item_attempts(sfn: Client, outcome: ItemOutcome, patience: Patience | None = None) -> ItemAttempts:
    """The item's tries, read from its child execution's history: GetExecutionHistory of the
    child, as of any execution (a Distributed Map's child workflow executions are listed by
    ListExecutions with ``mapRunArn`` and each has its own history:
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html,
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_GetExecutionHistory.html;
    the item's record names its child, so no listing is needed)."""
    if outcome.child is None:
        return ItemAttempts(outcome, [], "unknown")
    try:
        events = history(sfn, outcome.child, patience)
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in ("ExecutionDoesNotExist", "InvalidArn"):
            return ItemAttempts(outcome, [], "gone")
        raise
    return ItemAttempts(outcome, timeline(events), "read")
