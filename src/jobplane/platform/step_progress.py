"""A run's step progress as the execution page, the API and the CLI show it: each step's record
(contract/progress.py, written by the runner) read with one Query of the run's partition, and
what it says: the fraction done, the rate since the attempt started, the time left at that
rate, when it was last reported. docs/progress.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from jobplane.contract import progress as cp
from jobplane.contract.types import Client, Item, JsonObject


@dataclass(frozen=True)
class StepProgress:
    step: str
    attempt: int
    started_at: float  # epoch seconds: the attempt's start, the rate's origin
    updated_at: float  # epoch seconds: when these values were reported
    done: float | None = None
    total: float | None = None
    unit: str | None = None
    cursor: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    ended: bool = False  # the step's last write (it ended)

    @property
    def fraction(self) -> float | None:
        """done / total, at most 1; None without a total."""
        if self.done is None or not self.total:
            return None
        return min(self.done / self.total, 1.0)

    @property
    def rate(self) -> float | None:
        """Units done per second since the attempt started (None before any time passed)."""
        elapsed = self.updated_at - self.started_at
        if self.done is None or elapsed <= 0:
            return None
        return self.done / elapsed

    @property
    def eta_seconds(self) -> float | None:
        """Seconds left at :attr:`rate` after the last report; None without a total or a rate."""
        rate = self.rate
        if self.ended or self.done is None or self.total is None or not rate:
            return None
        return max(self.total - self.done, 0) / rate

    def eta_at(self) -> str | None:
        """When the step ends at this rate (UTC, ISO), or None."""
        eta = self.eta_seconds
        if eta is None:
            return None
        return _iso(self.updated_at + eta)

    @property
    def updated_iso(self) -> str:
        return _iso(self.updated_at)

    def headline(self) -> str:
        """ "3,400 of 10,000 tenants (34%)", "12 rows done", or "no progress reported"."""
        unit = f" {self.unit}" if self.unit else ""
        if self.done is None:
            return "no progress reported"
        if self.total is not None:
            pct = f" ({self.fraction * 100:.0f}%)" if self.fraction is not None else ""
            return f"{_num(self.done)} of {_num(self.total)}{unit}{pct}"
        return f"{_num(self.done)}{unit} done"

    def words(self) -> str:
        """One line: "3,400 of 10,000 tenants (34%), 12.5 tenants/s, ETA 12:40 UTC, at t-3400,
        rows=12, updated 12:31:02"."""
        unit = f" {self.unit}" if self.unit else ""
        text = self.headline()
        if self.rate is not None and not self.ended:
            text += f", {_rate(self.rate)}{unit}/s"
        if (eta := self.eta_at()) is not None:
            text += f", ETA {eta[11:16]} UTC"
        if self.cursor:
            text += f", at {self.cursor}"
        if self.metrics:
            text += ", " + ", ".join(f"{k}={_num(v)}" for k, v in sorted(self.metrics.items()))
        return text + (" (final)" if self.ended else f", updated {self.updated_iso[11:19]}")

    def to_json(self) -> JsonObject:
        return {"step": self.step, "attempt": self.attempt, "done": self.done, "total": self.total, "unit": self.unit,
                "cursor": self.cursor, "metrics": dict(self.metrics), "fraction": self.fraction, "rate": self.rate,
                "eta": self.eta_at(), "started_at": _iso(self.started_at), "updated_at": self.updated_iso,
                "ended": self.ended}


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.2f}"


def _rate(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.2g}" if v < 1 else f"{v:.1f}"


def _n(item: Item, name: str) -> float | None:
    value = item.get(name, {}).get("N")
    if value is None:
        return None
    number = float(value)
    return int(number) if number.is_integer() else number


def from_item(item: Item) -> StepProgress:
    metrics = {k: float(v["N"]) for k, v in (item.get(cp.ATTR_METRICS, {}).get("M") or {}).items() if "N" in v}
    return StepProgress(
        step=item["sk"]["S"], attempt=int(_n(item, cp.ATTR_ATTEMPT) or 1),
        started_at=float(_n(item, cp.ATTR_STARTED_AT) or 0.0), updated_at=float(_n(item, cp.ATTR_UPDATED_AT) or 0.0),
        done=_n(item, cp.ATTR_DONE), total=_n(item, cp.ATTR_TOTAL), unit=item.get(cp.ATTR_UNIT, {}).get("S"),
        cursor=item.get(cp.ATTR_CURSOR, {}).get("S"),
        metrics={k: (int(v) if v.is_integer() else v) for k, v in metrics.items()},
        ended=bool(item.get(cp.ATTR_ENDED, {}).get("BOOL")))


def read(ddb: Client, table: str, job: str, execution: str) -> list[StepProgress]:
    """Each step's progress of ``job``'s run, by step name: one Query of ``PROGRESS#<job>#<execution>``
    (a run's steps fit one page: an item is well under 1 KB without a long cursor)."""
    out: list[StepProgress] = []
    kwargs: JsonObject = {"TableName": table, "KeyConditionExpression": "pk = :pk",
                          "ExpressionAttributeValues": {":pk": {"S": cp.pk(job, execution)}}}
    while True:
        page = ddb.query(**kwargs)
        # not a step's: the run's params, a map item's own record (its item view's; a run of 10,000
        # items would list each here)
        out += [from_item(i) for i in page.get("Items", [])
                if i["sk"]["S"] != cp.PARAMS_SK and cp.ITEM_SEPARATOR not in i["sk"]["S"]]
        if not page.get("LastEvaluatedKey"):
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def resolved_params(ddb: Client, table: str, job: str, execution: str) -> JsonObject:
    """The calendar defaults the runner resolved at the run's scheduled fire ({} if none: a run
    given them in its input, or of a job that has none); one GetItem."""
    import json

    item = ddb.get_item(TableName=table, Key={"pk": {"S": cp.pk(job, execution)}, "sk": {"S": cp.PARAMS_SK}},
                        ConsistentRead=True).get("Item") or {}
    try:
        value = json.loads(item.get(cp.ATTR_PARAMS, {}).get("S") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


#: BatchGetItem's most keys a request (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html).
BATCH_KEYS = 100


def read_steps(ddb: Client, table: str, keys: list[tuple[str, str, str]], tries: int = 3) -> dict[str, list[StepProgress]]:
    """The progress records of the named (job, execution, step) triples, by execution: BatchGetItem, a
    request per 100 keys, eventually consistent (a view, not a decision). When the caller knows
    the runs' steps (the catalog does) this reads a page of runs in one request where a Query a
    run would take one each. Keys still unprocessed after ``tries`` (throttled) are left out."""
    import time

    out: dict[str, list[StepProgress]] = {}
    unique = list(dict.fromkeys(keys))
    for i in range(0, len(unique), BATCH_KEYS):
        chunk = unique[i:i + BATCH_KEYS]
        of_partition = {cp.pk(j, e): e for j, e, _ in chunk}
        request: JsonObject = {table: {"Keys": [{"pk": {"S": cp.pk(j, e)}, "sk": {"S": s}} for j, e, s in chunk]}}
        for attempt in range(tries):
            answer = ddb.batch_get_item(RequestItems=request)
            for item in answer.get("Responses", {}).get(table, []):
                out.setdefault(of_partition[item["pk"]["S"]], []).append(from_item(item))
            request = answer.get("UnprocessedKeys") or {}
            if not request:
                break
            time.sleep(0.05 * 2 ** attempt)  # AWS: back off before asking for unprocessed keys again
    return out
