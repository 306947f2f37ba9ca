"""Each job's last runs (contract/recent_runs.py): noted where a run ends, read a page of jobs
at a time.

Writers: the reconciler notes every run's end (it handles every terminal status, whether the
run recorded itself or not), the fire ledger a missed fire, the deadline watch a breached fire.
Each write reads the item (strongly consistent), merges, and puts it back only if its version
is still the one read; a lost race reads again. The first note of a job (a job that ran before
the item existed) starts from its executions index, so its marks are whole from then on.

Reader: :meth:`RunHistory.recent_of`, one BatchGetItem per 100 jobs (the jobs page: one a page).

The same writers append each run to its day's items (contract/run_days.py: the fleet's timeline,
:meth:`RunHistory.note_day`), which :meth:`RunHistory.day` reads back (its 192 items by key), and
:meth:`RunHistory.day_versions` / :meth:`RunHistory.day_items` for a reader that keeps a day
(portal/timeline_days.py): the day's counters, then only the items whose counter moved.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Sequence
from functools import lru_cache

from jobplane.contract import recent_runs as rr
from jobplane.contract import run_days
from jobplane.contract.attempts import Attempt
from jobplane.contract.pools import Claimed
from jobplane.contract.run_days import DayRun, PoolUse
from jobplane.contract.states import step_key
from jobplane.contract.recent_runs import KEPT, RecentRun
from jobplane.contract.records import ExecutionRecord
from jobplane.contract.types import Client, JsonObject
from jobplane.platform.repository import BATCH_GET_MAX, Repository  # 100 keys a BatchGetItem

#: Tries of one note against concurrent writers of the same job's item (two runs ending at once).
TRIES = 8

Runs = tuple[RecentRun, ...]
#: A change of a job's item: its runs and breached fires, new.
_Change = Callable[[Runs, tuple[str, ...]], tuple[Runs, tuple[str, ...]]]


class RunHistory:
    def __init__(self, ddb: Client, table: str):
        self.ddb, self.table = ddb, table

    # -- writes ---------------------------------------------------------------------------------
    def note(self, record: ExecutionRecord) -> None:
        """Put ``record``'s run among its job's recent runs (once: noting it again changes
        nothing but a newer status of the same run)."""
        self._update(record.job, lambda runs, fires: (rr.merged(runs, RecentRun.of(record)), fires),
                     seed=lambda: self._seed(record.job))

    def note_breach(self, job: str, fire: str) -> None:
        """Remember that ``fire``'s deadline was breached: its run's mark says so."""
        self._update(job, lambda runs, fires: (runs, tuple(sorted({fire, *fires}, reverse=True))[:KEPT]),
                     seed=lambda: self._seed(job))

    def _seed(self, job: str) -> tuple[RecentRun, ...]:
        """A job's newest runs from its executions index (gsi1 ``JOB#<job>``, newest first): the
        first note of a job that ran before its item existed."""
        return tuple(RecentRun.of(x) for x in Repository(self.ddb, self.table).executions(job, KEPT).items)

    def _update(self, job: str, change: _Change, seed: Callable[[], Runs]) -> None:
        for attempt in itertools.count():
            item = self.ddb.get_item(TableName=self.table, Key=rr.recent_key(job), ConsistentRead=True).get("Item")
            version = int(item[rr.ATTR_VERSION]["N"]) if item else None
            runs = rr.decode(item.get(rr.ATTR_RUNS, {}).get("S")) if item else seed()
            fires = rr.decode_fires(item.get(rr.ATTR_BREACHED, {}).get("S")) if item else ()
            new_runs, new_fires = change(runs, fires)
            if item and (new_runs, new_fires) == (runs, fires):
                return  # a second delivery of the same end
            put: JsonObject = {
                "TableName": self.table,
                "Item": rr.recent_key(job) | {"job": {"S": job}, rr.ATTR_RUNS: {"S": rr.encode(new_runs)},
                                              rr.ATTR_BREACHED: {"S": _fires_text(new_fires)},
                                              rr.ATTR_VERSION: {"N": str((version or 0) + 1)}}}
            if version is None:
                put["ConditionExpression"] = "attribute_not_exists(pk)"
            else:
                put |= {"ConditionExpression": "#v = :v", "ExpressionAttributeNames": {"#v": rr.ATTR_VERSION},
                        "ExpressionAttributeValues": {":v": {"N": str(version)}}}
            try:
                self.ddb.put_item(**put)
                return
            except self.ddb.exceptions.ConditionalCheckFailedException:
                if attempt + 1 >= TRIES:
                    raise
                time.sleep(0.01 * 2 ** attempt)  # another end of the same job wrote first: read again

    def note_day(self, record: ExecutionRecord, attempts: Sequence[Attempt] = (), claims: Sequence[Claimed] = (),
                 expires_at: int | None = None) -> None:
        """Add the run's line to its day's items (one UpdateItem, no read: ``ADD`` to a string
        set, so the same end noted twice is one line), with
        the slots its pooled attempts waited for and held (``claims``: the pool holders its
        history shows, each ticket naming its step, contract/pools.py). A run without a start
        (none) is not on any day."""
        if not record.started_at:
            return
        pooled = _pool_uses(attempts, claims)
        line = DayRun(record.execution, record.job, record.team, record.status, record.started_at,
                      record.finished_at, record.scheduled_time or record.input.scheduled_time, pooled).to_json()
        values: JsonObject = {":one": {"SS": [line]}}
        update = "ADD #l :one"
        if expires_at or record.expires_at:  # the day goes when its runs' records go (TTL)
            update += " SET expires_at = :e"
            values[":e"] = {"N": str(expires_at or record.expires_at)}
        day, sk = record.started_at[:10], run_days.day_sk(record.job, record.started_at)
        self.ddb.update_item(TableName=self.table, Key={"pk": {"S": run_days.day_pk(day)}, "sk": {"S": sk}},
                             UpdateExpression=update, ExpressionAttributeNames={"#l": run_days.ATTR_LINES},
                             ExpressionAttributeValues=values)
        # then (never before: a reader reads the counters first, then the items) the item's
        # counter: a reader that kept the day's items reads again the ones whose counter moved
        # (portal/timeline_days.py). A retried end (the reconciler's event again) adds the same
        # line (nothing) and moves the counter again (one read more): never a line unseen.
        counted = "ADD #v :one" + (" SET expires_at = :e" if ":e" in values else "")
        self.ddb.update_item(TableName=self.table, Key=run_days.versions_key(day), UpdateExpression=counted,
                             ExpressionAttributeNames={"#v": run_days.version_attribute(sk)},
                             ExpressionAttributeValues={":one": {"N": "1"}}
                             | ({":e": values[":e"]} if ":e" in values else {}))

    def day(self, day: str) -> list[DayRun]:
        """Every run noted on ``day`` (YYYY-MM-DD, UTC), by start: its items are known by key
        (24 hours x :data:`run_days.BUCKETS`), read by BatchGetItem, two requests of 100 keys
        (a Query of the partition reads the same items; on the local engine a Query of the table
        costs as much as its whole content, a BatchGetItem its keys). A run with two different
        lines: the one that has its end."""
        runs = [r for item in self._batch_get(run_days.day_keys(day), (run_days.ATTR_LINES,)) for r in _item_runs(item)]
        return sorted(runs, key=lambda r: (r.started_at, r.execution))

    def day_versions(self, day: str) -> dict[str, int] | None:
        """``day``'s counters (contract/run_days.py ``VERSIONS_SK``): each of its items' sort key
        -> how many appends it has had (an item not counted: 0); None when the day has no
        counters item (no run noted on it since the counters were written). One GetItem of a
        small item, strongly consistent: a count it answers is one whose line is already in its
        item (``note_day`` writes the line first)."""
        item = self.ddb.get_item(TableName=self.table, Key=run_days.versions_key(day), ConsistentRead=True).get("Item")
        if item is None:
            return None
        return {sk: int(item[a]["N"]) for sk in run_days.day_sks() if (a := run_days.version_attribute(sk)) in item}

    def day_items(self, day: str, sks: Sequence[str]) -> dict[str, tuple[DayRun, ...]]:
        """The runs of ``day``'s items ``sks`` (each by start; an item that does not exist: none),
        read strongly consistent (BatchGetItem, 100 keys a request): read after the counters,
        they hold at least every line the counters count."""
        keys = [{"pk": {"S": run_days.day_pk(day)}, "sk": {"S": sk}} for sk in sks]
        out: dict[str, tuple[DayRun, ...]] = dict.fromkeys(sks, ())
        for item in self._batch_get(keys, ("sk", run_days.ATTR_LINES), consistent=True):
            out[item["sk"]["S"]] = tuple(sorted(_item_runs(item), key=lambda r: (r.started_at, r.execution)))
        return out

    # -- reads ----------------------------------------------------------------------------------
    def recent_of(self, jobs: Sequence[str]) -> dict[str, tuple[tuple[RecentRun, ...], tuple[str, ...]]]:
        """Each named job's recent runs (newest first) and breached fires, by job; a job with no
        item is left out. One BatchGetItem per 100 jobs (eventually consistent: a mark a second
        late is fine, and it costs half)."""
        out: dict[str, tuple[tuple[RecentRun, ...], tuple[str, ...]]] = {}
        keys = [rr.recent_key(j) for j in dict.fromkeys(jobs)]
        for item in self._batch_get(keys, ("job", rr.ATTR_RUNS, rr.ATTR_BREACHED)):
            job = item.get("job", {}).get("S")
            if job:
                out[job] = (_recent_runs(item.get(rr.ATTR_RUNS, {}).get("S")),
                            _breached(item.get(rr.ATTR_BREACHED, {}).get("S")))
        return out

    def _batch_get(self, keys: Sequence[JsonObject], attributes: tuple[str, ...],
                   consistent: bool = False) -> list[JsonObject]:
        """The items of ``keys`` that exist (``attributes`` of each), BATCH_GET_MAX keys a request,
        throttled keys asked again after a pause; ``consistent``: strongly consistent reads
        (BatchGetItem's ConsistentRead, per table: twice the read units)."""
        names = {f"#a{i}": a for i, a in enumerate(attributes)}
        found: list[JsonObject] = []
        for i in range(0, len(keys), BATCH_GET_MAX):
            request: JsonObject = {self.table: {"Keys": list(keys[i:i + BATCH_GET_MAX]),
                                                "ProjectionExpression": ", ".join(names),
                                                "ExpressionAttributeNames": names}
                                   | ({"ConsistentRead": True} if consistent else {})}
            for retry in itertools.count():
                answer = self.ddb.batch_get_item(RequestItems=request)
                found += answer.get("Responses", {}).get(self.table, [])
                request = answer.get("UnprocessedKeys") or {}
                if not request:
                    break
                # "we strongly recommend that you use an exponential backoff algorithm" (BatchGetItem,
                # https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html)
                time.sleep(min(0.05 * 2 ** retry, 1.0))
        return found


@lru_cache(maxsize=32768)
def _day_run(text: str) -> DayRun | None:
    """A day's line, parsed once: a line never changes (a run's end adds a new one), and parsing
    a busy day's 5,000 lines again on every request was a third of the timeline's time."""
    return DayRun.from_json(text)


@lru_cache(maxsize=4096)
def _recent_runs(text: str | None) -> tuple[RecentRun, ...]:
    """A job's recent runs, parsed once per text (the jobs page reads the same 100 items on each
    view; an item's text only changes when a run of its job ends): the same tuple back, which
    the marks' own cache (portal/run_marks.py) then finds by identity first."""
    return rr.decode(text)


@lru_cache(maxsize=4096)
def _breached(text: str | None) -> tuple[str, ...]:
    return rr.decode_fires(text)


def _item_runs(item: JsonObject) -> list[DayRun]:
    """A day's item's runs: a run with two different lines (noted again with a newer status, or
    once without its end), the one that has its end. A run's lines are all in one item (its
    item is its job's and its start's)."""
    runs: dict[str, DayRun] = {}
    for text in sorted(item.get(run_days.ATTR_LINES, {}).get("SS", [])):
        run = _day_run(text)
        if run is not None and (run.execution not in runs or run.finished_at):
            runs[run.execution] = run
    return list(runs.values())


def _fires_text(fires: tuple[str, ...]) -> str:
    return json.dumps(list(fires))



def _pool_uses(attempts: Sequence[Attempt], claims: Sequence[Claimed]) -> tuple[PoolUse, ...]:
    """Each pooled attempt's wait and hold: a claim's ticket is ``<execution ARN>|<step key>|<id>``
    (contract/pools.py Holder), so a step's claims say its pool and weight."""
    by_step: dict[str, Claimed] = {}
    for c in claims:
        parts = c.ticket.split("|")
        if len(parts) == 3:
            by_step.setdefault(parts[1], c)
    out = []
    for a in attempts:
        claim = by_step.get(step_key(a.step))
        if claim is not None and (a.started_at or a.waiting_since):
            out.append(PoolUse(claim.pool, claim.weight, a.step, a.waiting_since, a.started_at, a.finished_at))
    return tuple(out)
