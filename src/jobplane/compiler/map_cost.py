"""What ``jobplane plan`` says a ``jp.map`` costs: state transitions per item (compiler/map_states.py).

Standard workflows bill per state transition ($0.025 per 1,000 in us-east-1,
https://aws.amazon.com/step-functions/pricing/). A Distributed Map is billed one transition per
child execution it starts ("Transitions in Distributed Map state",
https://docs.aws.amazon.com/step-functions/latest/dg/concepts-transitions.html), and each child
(a STANDARD execution) its own: the each step's Task, its check and the item's record, so 4 per
item that succeeds at once; every retry of the item adds its retry loop (retry, wait, Task,
check: 4 more). A pooled each step adds its pool's ticket, claim and release to every attempt
(3); an attempt that finds its pool full adds its item record's two writes (WAITING, then
RUNNING once it holds) and 3 per try while it waits (back-off, wait, claim: docs/pools.md). The
run's own states (claim, the items step, finish) are the job's as before.
"""

from __future__ import annotations

from jobplane.contract.catalog import CatalogStep
from jobplane.contract.pools import poll_schedule
from jobplane.contract.step_kinds import per_item_steps

PER_ITEM = 4  # the child's start, its Task, its check, its record
PER_RETRY = 4  # retry, wait, Task, check
PER_POOLED_ATTEMPT = 3  # ticket, claim, release, when the claim finds room at once
PER_WAITING_ATTEMPT = 2  # the item record WAITING, then RUNNING (one write each), when it finds no room
PER_POOL_TRY = 3  # back-off, wait, claim again: each try while it waits
PRICE_PER_TRANSITION = 0.025 / 1000


def per_item(each: CatalogStep) -> tuple[int, int]:
    """Transitions of one item: when its first attempt succeeds, and when it uses every attempt."""
    attempts = each.retry.attempts if each.retry else 1
    pooled = PER_POOLED_ATTEMPT if each.pool else 0
    return PER_ITEM + pooled, PER_ITEM + PER_RETRY * (attempts - 1) + pooled * attempts


def map_lines(steps: list[CatalogStep]) -> list[str]:
    lines = []
    for s in per_item_steps(steps):
        items, each = s.parallel or []
        low, high = per_item(each)
        cost = low * 1000 * PRICE_PER_TRANSITION
        spread = f"{low}" if low == high else f"{low} ({high} if every attempt fails)"
        line = (f"map {s.name}: {each.name} once per item that {items.name} lists, in a Distributed Map; "
                f"{spread} state transitions per item, ${cost:.2f} per 1,000 items "
                "(docs/state-machine.md \"A map\")")
        if each.pool:
            line += (f"; an item that waits for pool {each.pool}: {PER_WAITING_ATTEMPT} more (its record WAITING, "
                     f"then RUNNING) and {PER_POOL_TRY} per try, {poll_schedule()} (docs/pools.md)")
        lines.append(line)
    return lines
