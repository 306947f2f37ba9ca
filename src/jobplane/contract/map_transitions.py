"""What one map item costs in state transitions, the unit Standard workflows bill ($0.025 per
1,000 in us-east-1, https://aws.amazon.com/step-functions/pricing/): one place for the plan's
price per item (compiler/map_cost.py) and a run's count of its items' transitions (the portal's
cost line, platform/map_records.py), so what is priced before a run is what is counted after.

A Distributed Map is billed one transition per child execution it starts ("Transitions in
Distributed Map state", https://docs.aws.amazon.com/step-functions/latest/dg/concepts-transitions.html),
and each child (a STANDARD execution) its own: the each step's Task, its check and the item's
record, so 4 per item that succeeds at once; every retry of the item adds its retry loop (retry,
wait, Task, check: 4 more). A pooled each step adds its pool's ticket, claim and release to every
attempt (3); an attempt that finds its pool full adds its item record's two writes (WAITING, then
RUNNING once it holds) and 3 per try while it waits (back-off, wait, claim: docs/pools.md).
"""

from __future__ import annotations

PER_ITEM = 4  # the child's start, its Task, its check, its record
PER_RETRY = 4  # retry, wait, Task, check
PER_POOLED_ATTEMPT = 3  # ticket, claim, release, when the claim finds room at once
PER_WAITING_ATTEMPT = 2  # the item record WAITING, then RUNNING (one write each), when it finds no room
PER_POOL_TRY = 3  # back-off, wait, claim again: each try while it waits
PRICE_PER_TRANSITION = 0.025 / 1000


def item_transitions(attempts: int, pooled: bool = False) -> int:
    """Transitions of an item whose record says it made ``attempts`` attempts (at least: a pooled
    item's tries while it waited for a slot leave no count on its record)."""
    attempts = max(attempts, 1)
    return PER_ITEM + PER_RETRY * (attempts - 1) + (PER_POOLED_ATTEMPT * attempts if pooled else 0)
