"""Pools: slots of a shared resource (a database, a partner API) that every job's steps draw on.

``[pools] billing-db = 3`` in jobplane.toml; a step (or a whole job) names the pool. What the
compiled state machine (compiler/pools.py) and the runtime (the reconciler, the periodic sweep,
the portal) agree on is here: the pool item's key and attributes, the shape of a holder, and how
a run's history names what it held. The design and its costs: docs/pools.md.

One DynamoDB item per pool (``POOL#<name>`` / ``POOL``) holds ``holders``, a string set with one
element per slot held: ``<execution ARN>|<step key>|<ticket>#<i>`` for i in 1..weight. A claim
adds its elements only while ``size(holders)`` leaves room for them (one conditional UpdateItem);
a release deletes them (DELETE of absent elements is a no-op, so a release is idempotent). The
execution ARN at the front lets whoever finds a holder ask Step Functions whether it still runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jobplane.contract.types import JsonObject, JsonValue

POOL_PREFIX = "POOL#"
POOL_SK = "POOL"
#: gsi1 partition of the pool items, so the periodic sweep and the portal list them without a scan.
POOLS_PARTITION = "POOLS"
ATTR_HOLDERS = "holders"
ATTR_POOL = "pool"

NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,39}")
#: Elements of one string set in one item (400 KB): a holder is ~230 bytes, so 1,000 fit with room.
MAX_SIZE = 1000
MAX_WEIGHT = 100
#: A waiting step sleeps a random time between POLL_BASES[n] and twice it before its n-th next
#: try (n from 0, the last repeated): quick for a short wait, every 3-6 s for about five
#: minutes, then every 20-40 s (docs/pools.md weighs transitions per wait against an idle slot).
#: The jitter keeps waiters that began together from trying together.
POLL_FAST, POLL_SLOW = 3, 20
POLL_FAST_TRIES = 60
POLL_BASES = (1, 2, 4) + (POLL_FAST,) * POLL_FAST_TRIES + (POLL_SLOW,)
POLL_CAP = 2 * POLL_SLOW
#: Separates a holder's execution ARN, step key and ticket (none of them contains it).
SEP = "|"


def poll_nexts() -> tuple[int, ...]:
    """The poll counter's next value for each value: one more, stopping at the table's end."""
    last = len(POLL_BASES) - 1
    return tuple(min(i + 1, last) for i in range(len(POLL_BASES)))


def fast_minutes() -> int:
    """About how long a waiter keeps trying every POLL_FAST-2*POLL_FAST s (the mean sleeps of the
    table before its last entry)."""
    return round(sum(1.5 * b for b in POLL_BASES[:-1]) / 60)


def poll_schedule() -> str:
    """The wait loop's tries in words (``jobplane plan``, docs/pools.md)."""
    return (f"a try every {POLL_BASES[0]}-{2 * max(POLL_BASES[:-1])} s, {POLL_SLOW}-{2 * POLL_SLOW} s after about "
            f"{fast_minutes()} min")


def pool_pk(name: str) -> str:
    return f"{POOL_PREFIX}{name}"


def parse_pools(raw: JsonValue) -> tuple[list[str], dict[str, int]]:
    """``[pools]`` of jobplane.toml: (every problem, the pools). A size is a whole number of
    slots, 1-MAX_SIZE; a name is what a step's ``pool`` names (and part of a DynamoDB key)."""
    if not isinstance(raw, dict):
        return ["[pools] must be a table of pool names and sizes, e.g. billing-db = 3"], {}
    problems: list[str] = []
    pools: dict[str, int] = {}
    for name, size in raw.items():
        if not NAME_RE.fullmatch(name):
            problems.append(f"[pools] {name!r}: a pool name is 1-40 lower-case letters, digits and '-', "
                            "starting with a letter")
        elif type(size) is not int or not 1 <= size <= MAX_SIZE:
            problems.append(f"[pools] {name} = {size!r}: a pool's size is a whole number of slots, 1-{MAX_SIZE}")
        else:
            pools[name] = size
    return problems, pools


@dataclass(frozen=True)
class Holder:
    """One element of a pool's ``holders``: which execution holds it, for which step."""

    element: str
    execution_arn: str
    step: str

    @classmethod
    def parse(cls, element: str) -> Holder | None:
        parts = element.split(SEP)
        if len(parts) != 3 or not parts[0].startswith("arn:"):
            return None
        return cls(element, parts[0], parts[1])

    def job(self, name_prefix: str) -> str | None:
        """The job that holds it, or None for an ARN of no job of this deployment. A map item's
        child execution runs under ``<state machine>/<map run label>``
        (https://docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html): its
        job is the parent's."""
        from jobplane.contract.arns import ExecutionArn

        try:
            job = ExecutionArn.parse(self.execution_arn).job(name_prefix)
        except ValueError:
            return None
        return job.split("/", 1)[0] or None if job else None


@dataclass(frozen=True)
class Pool:
    """A pool item as the runtime reads it."""

    name: str
    holders: tuple[Holder, ...]

    @classmethod
    def from_item(cls, item: JsonObject) -> Pool:
        name = item.get(ATTR_POOL, {}).get("S") or item["pk"]["S"].removeprefix(POOL_PREFIX)
        elements = sorted(item.get(ATTR_HOLDERS, {}).get("SS", []))
        return cls(name, tuple(h for e in elements if (h := Holder.parse(e)) is not None))

    @property
    def used(self) -> int:
        return len(self.holders)


def held_in_history(events: list[JsonObject]) -> dict[str, set[str]]:
    """What a run's history says it claimed: pool pk -> the holder elements its claims (and
    their retries) asked for. Read from the claims' TaskScheduled parameters, which Step
    Functions records as sent; a release of all of them is safe whatever each claim answered
    (deleting an absent element changes nothing)."""
    import json

    out: dict[str, set[str]] = {}
    for e in events:
        if e.get("type") != "TaskScheduled":
            continue
        details = e.get("taskScheduledEventDetails") or {}
        if details.get("resourceType") != "dynamodb" or details.get("resource") != "updateItem":
            continue
        try:
            params = json.loads(details.get("parameters") or "{}")
        except ValueError:
            continue
        pk = ((params.get("Key") or {}).get("pk") or {}).get("S", "")
        claimed = ((params.get("ExpressionAttributeValues") or {}).get(":hs") or {}).get("SS")
        if pk.startswith(POOL_PREFIX) and isinstance(claimed, list) and "ADD" in str(params.get("UpdateExpression")):
            out.setdefault(pk, set()).update(c for c in claimed if isinstance(c, str))
    return out
