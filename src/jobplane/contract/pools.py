"""Pools: slots of a shared resource (a database, a partner API) that every job's steps draw on.

``[pools.billing-db] size = 3, teams = ["billing"]`` in jobplane.toml; a step (or a whole job) of
one of those teams names the pool. What the
compiled state machine (compiler/pools.py) and the runtime (the reconciler, the periodic sweep,
``jobplane status``) agree on is here: the pool's items and their keys, the shape of a holder,
and how a run's history names what it claimed. The design and its costs: docs/pools.md.

Per pool, a small **admission counter** (``POOL#<name>`` / ``SLOTS``: ``used``, the slots held)
and **one item per holder** (``POOL#<name>#<ticket>`` / ``HOLDER``: its weight, since when),
written together in one TransactWriteItems: a claim adds its weight to ``used`` while ``used <=
size - weight`` and puts its holder item if it does not exist; a release deletes the holder item
(only if it exists) and subtracts its weight, so ``used`` is always the sum of the holders'
weights and no holder is subtracted twice. The counter stays ~60 bytes whatever the pool's size
or how many hold it (1 KB of write per item and try, where the single item of before grew ~230
bytes per holder). The ticket, ``<execution ARN>|<step key>|<UUID>``, lets whoever finds a
holder ask Step Functions whether its execution still runs.

Neither item is in gsi1 (the jobs pages' index): the counter is in no index at all (it is
written on every try), a holder item is in gsi2 ``POOLS`` (written once when it is claimed and
once when released; sort key ``<pool>#<since>``), which is how the sweep and ``jobplane status``
list holders without a scan.

Before this design one item per pool (``POOL#<name>`` / ``POOL``, in gsi1 ``POOLS``) held a
string set ``holders``: the runtime still reads and releases those (:class:`Pool`
``legacy``, :func:`held_in_history`) for runs started before the upgrade (docs/pools.md,
"Upgrading from the single pool item").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from jobplane.contract.types import JsonObject, JsonValue

POOL_PREFIX = "POOL#"
#: The admission counter's sort key (its pk is ``POOL#<name>``).
COUNTER_SK = "SLOTS"
#: A holder item's sort key (its pk is ``POOL#<name>#<ticket>``).
HOLDER_SK = "HOLDER"
#: gsi2 partition of the holder items (sort key ``<pool>#<ticket>``): the sweep and
#: ``jobplane status`` list every holder with one Query.
HOLDERS_PARTITION = "POOLS"
ATTR_USED = "used"  # the counter: slots held (the sum of its holders' weights)
ATTR_POOL = "pool"
ATTR_WEIGHT = "weight"
ATTR_SINCE = "since"
#: The single item of before (``POOL#<name>`` / ``POOL``, gsi1 ``POOLS``): read and released for
#: runs that started before the upgrade, never written by a claim compiled now.
LEGACY_SK = "POOL"
LEGACY_PARTITION = "POOLS"
ATTR_HOLDERS = "holders"

NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,39}")
#: The largest pool: a size is compiled into each claim, and 1,000 slots is far beyond any shared
#: resource a pool protects (the counter item's size does not depend on it).
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
    """The partition key of a pool's counter (and of the single item of before)."""
    return f"{POOL_PREFIX}{name}"


def holder_prefix(name: str) -> str:
    """What every holder item's partition key of pool ``name`` starts with (then the ticket).
    A name has no ``#`` (NAME_RE), so no pool's holders match another's prefix."""
    return f"{POOL_PREFIX}{name}#"


def counter_key(name: str) -> JsonObject:
    return {"pk": {"S": pool_pk(name)}, "sk": {"S": COUNTER_SK}}


def holder_key(name: str, ticket: str) -> JsonObject:
    return {"pk": {"S": holder_prefix(name) + ticket}, "sk": {"S": HOLDER_SK}}


def ticket_of(item: JsonObject) -> str | None:
    """A holder item's ticket: its key after ``POOL#<pool>#`` (the item does not repeat it, to
    stay small), None for an item of another shape."""
    pool, pk = (item.get(ATTR_POOL) or {}).get("S"), (item.get("pk") or {}).get("S")
    if not (isinstance(pool, str) and isinstance(pk, str) and (item.get("sk") or {}).get("S") == HOLDER_SK):
        return None
    ticket = pk.removeprefix(holder_prefix(pool))
    return ticket if ticket != pk else None


#: ``teams = ["*"]``: a pool open to every team, said explicitly (issue 64 item 3).
ANY_TEAM = "*"
_DURATION_RE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


@dataclass(frozen=True)
class PoolAccess:
    """Who may draw on a pool and for how long: ``teams`` (``("*",)``: every team, only when
    jobplane.toml says so) and ``max_hold``, the seconds one holder may keep a slot (None: the
    step's own timeout bounds it). Without an owner, one team's job could hold every slot of
    another team's pool for as long as its timeout (a year) and time the owner's steps out."""

    teams: tuple[str, ...]
    max_hold: int | None = None

    def allows(self, team: str) -> bool:
        return ANY_TEAM in self.teams or team in self.teams

    def describe(self) -> str:
        return "every team" if ANY_TEAM in self.teams else "team " + ", ".join(self.teams)


def _seconds(value: JsonValue) -> int | None:
    """A duration as the job files write one (90, '90s', '15m', '2h', '1d'), None if not one."""
    if type(value) is int:
        return value if value > 0 else None
    if isinstance(value, str) and value and (m := _DURATION_RE.fullmatch(value.strip())):
        d, h, mi, s = (int(x or 0) for x in m.groups())
        return (d * 86400 + h * 3600 + mi * 60 + s) or None
    return None


def _new_form(name: str, size: JsonValue) -> str:
    shown = size if type(size) is int else 3
    return (f'[pools.{name}] size = {shown}, teams = ["<team>", ...] (or teams = ["*"] to keep it open to every team)')


def parse_pools(raw: JsonValue, teams: set[str] | None = None) -> tuple[list[str], dict[str, int], dict[str, PoolAccess]]:
    """``[pools]`` of jobplane.toml: (every problem, each pool's size, who may use each). A pool
    is a table, ``[pools.billing-db]`` with ``size`` (a whole number of slots, 1-MAX_SIZE),
    ``teams`` (the teams whose jobs may name it; ``["*"]`` for every team) and optionally
    ``max_hold`` (a duration). The form of before, ``billing-db = 3``, said nothing of who may use
    the pool: it is refused with the line to write instead, so no pool stays open to every team
    without saying so. ``teams``: jobplane.toml's teams, to check the names (None: unchecked)."""
    if not isinstance(raw, dict):
        return ["[pools] must be a table of pools, e.g. " + _new_form("billing-db", 3)], {}, {}
    problems: list[str] = []
    pools: dict[str, int] = {}
    access: dict[str, PoolAccess] = {}
    for name, spec in raw.items():
        if not NAME_RE.fullmatch(name):
            problems.append(f"[pools] {name!r}: a pool name is 1-40 lower-case letters, digits and '-', "
                            "starting with a letter")
            continue
        if not isinstance(spec, dict):
            problems.append(f"[pools] {name} = {spec!r}: a pool now says which teams may use it; write "
                            + _new_form(name, spec) + " (docs/pools.md)")
            continue
        unknown = sorted(set(spec) - {"size", "teams", "max_hold"})
        size, members, hold = spec.get("size"), spec.get("teams"), spec.get("max_hold")
        where = f"[pools.{name}]"
        bad = len(problems)
        if unknown:
            problems.append(f"{where} {', '.join(unknown)}: unknown; a pool has size, teams and max_hold")
        if type(size) is not int or not 1 <= size <= MAX_SIZE:
            problems.append(f"{where} size = {size!r}: a pool's size is a whole number of slots, 1-{MAX_SIZE}")
        if (not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members)):
            problems.append(f'{where} teams = {members!r}: the teams whose jobs may use the pool, e.g. '
                            f'teams = ["billing"] (teams = ["*"] opens it to every team)')
        elif teams is not None and (strangers := [m for m in members if m != ANY_TEAM and m not in teams]):
            problems.append(f"{where} teams: {', '.join(map(repr, strangers))} is no team of jobplane.toml [teams]")
        max_hold = _seconds(hold) if hold is not None else None
        if hold is not None and max_hold is None:
            problems.append(f"{where} max_hold = {hold!r}: a duration, e.g. '2h' or 900 (seconds)")
        if len(problems) == bad:
            pools[name] = size  # type: ignore[assignment]  # checked above
            access[name] = PoolAccess(tuple(members), max_hold)  # type: ignore[arg-type]
    return problems, pools, access


@dataclass(frozen=True)
class Holder:
    """Who holds slots of a pool: a holder item's ticket (or an element of the single item of
    before, weight 1 each), which execution, for which step."""

    element: str  # the ticket (``<execution ARN>|<step key>|<UUID>``; before: ``...#<i>``)
    execution_arn: str
    step: str
    weight: int = 1
    since: str | None = None

    @classmethod
    def parse(cls, element: str, weight: int = 1, since: str | None = None) -> Holder | None:
        parts = element.split(SEP)
        if len(parts) != 3 or not parts[0].startswith("arn:"):
            return None
        return cls(element, parts[0], parts[1], weight, since)

    @classmethod
    def from_item(cls, item: JsonObject) -> Holder | None:
        """A holder item (None for an item of another shape)."""
        ticket = ticket_of(item)
        try:
            weight = int((item.get(ATTR_WEIGHT) or {}).get("N", "1"))
        except ValueError:
            return None
        return cls.parse(ticket, weight, (item.get(ATTR_SINCE) or {}).get("S")) if ticket is not None else None

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
    """A pool as the runtime reads it: its counter (``used``: None without one yet), its holder
    items, and the elements still held in the single item of before (``legacy``)."""

    name: str
    holders: tuple[Holder, ...] = ()
    counted: int | None = None
    legacy: tuple[Holder, ...] = ()

    @classmethod
    def from_legacy_item(cls, item: JsonObject) -> Pool:
        name = item.get(ATTR_POOL, {}).get("S") or item["pk"]["S"].removeprefix(POOL_PREFIX)
        elements = sorted(item.get(ATTR_HOLDERS, {}).get("SS", []))
        return cls(name, legacy=tuple(h for e in elements if (h := Holder.parse(e)) is not None))

    @property
    def used(self) -> int:
        """Slots held: the counter's (what admission checks), plus the elements of before."""
        counted = self.counted if self.counted is not None else sum(h.weight for h in self.holders)
        return counted + len(self.legacy)

    @property
    def everyone(self) -> tuple[Holder, ...]:
        return self.holders + self.legacy


@dataclass(frozen=True)
class Claimed:
    """A claim a run's history shows: the holder item it asked for, of which pool, how heavy."""

    pool: str
    ticket: str
    weight: int

    @property
    def key(self) -> JsonObject:
        return holder_key(self.pool, self.ticket)


def _scheduled(events: list[JsonObject], resource_type: str, resource: str) -> list[JsonObject]:
    """The parameters of every Task of that integration the history shows scheduled (Step
    Functions records them as sent)."""
    out = []
    for e in events:
        details = e.get("taskScheduledEventDetails") or {} if e.get("type") == "TaskScheduled" else {}
        if details.get("resourceType") != resource_type or details.get("resource") != resource:
            continue
        try:
            params = json.loads(details.get("parameters") or "{}")
        except ValueError:
            continue
        if isinstance(params, dict):
            out.append(params)
    return out


def claims_in_history(events: list[JsonObject]) -> list[Claimed]:
    """The holder items a run's claims asked for (each ticket once, whatever the number of its
    tries): a claim is a TransactWriteItems that puts a ``HOLDER`` item (the SDK integration's
    history names it ``aws-sdk:dynamodb`` / ``transactWriteItems``). Releasing all of them is safe
    whatever each claim answered: a release acts only on a holder item that exists."""
    seen: dict[str, Claimed] = {}
    for params in _scheduled(events, "aws-sdk:dynamodb", "transactWriteItems"):
        items = params.get("TransactItems")
        for write in items if isinstance(items, list) else []:
            put = write.get("Put") if isinstance(write, dict) else None
            item = put.get("Item") if isinstance(put, dict) else None
            if not isinstance(item, dict):
                continue
            pool, ticket = (item.get(ATTR_POOL) or {}).get("S"), ticket_of(item)
            try:
                weight = int((item.get(ATTR_WEIGHT) or {}).get("N", ""))
            except ValueError:
                continue
            if isinstance(pool, str) and isinstance(ticket, str) and NAME_RE.fullmatch(pool):
                seen.setdefault(ticket, Claimed(pool, ticket, weight))
    return list(seen.values())


def held_in_history(events: list[JsonObject]) -> dict[str, set[str]]:
    """What a run compiled before the upgrade claimed in the single item of before: pool pk ->
    the holder elements its claims (and their retries) asked for, from the claims' TaskScheduled
    parameters (an UpdateItem ``ADD holders``); deleting an absent element changes nothing."""
    out: dict[str, set[str]] = {}
    for params in _scheduled(events, "dynamodb", "updateItem"):
        key = params.get("Key") or {}
        pk = (key.get("pk") or {}).get("S", "")
        sk = (key.get("sk") or {}).get("S", "")
        claimed = ((params.get("ExpressionAttributeValues") or {}).get(":hs") or {}).get("SS")
        if (pk.startswith(POOL_PREFIX) and sk == LEGACY_SK and isinstance(claimed, list)
                and "ADD" in str(params.get("UpdateExpression"))):
            out.setdefault(pk, set()).update(c for c in claimed if isinstance(c, str))
    return out
