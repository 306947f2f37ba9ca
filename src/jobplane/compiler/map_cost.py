"""What ``jobplane plan`` says a ``jp.map`` costs: state transitions per item (compiler/map_states.py),
by the arithmetic a run's count uses too (contract/map_transitions.py, where each figure is cited).
The run's own states (claim, the items step, finish) are the job's as before.
"""

from __future__ import annotations

from jobplane.contract.catalog import CatalogStep
from jobplane.contract.map_transitions import (PER_ITEM, PER_POOL_TRY, PER_RETRY, PER_WAITING_ATTEMPT,
                                               PRICE_PER_TRANSITION, item_transitions)
from jobplane.contract.pools import poll_schedule
from jobplane.contract.step_kinds import per_item_steps

__all__ = ["PER_ITEM", "PER_RETRY", "map_lines", "per_item"]


def per_item(each: CatalogStep) -> tuple[int, int]:
    """Transitions of one item: when its first attempt succeeds, and when it uses every attempt."""
    attempts = each.retry.attempts if each.retry else 1
    return item_transitions(1, bool(each.pool)), item_transitions(attempts, bool(each.pool))


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
