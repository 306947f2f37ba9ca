"""What a step runs at once, per concurrent quota: ``jobplane plan``'s quota check
(compiler/quota_usage.py) adds steps up with it, and a group kind (compiler/kinds/) says how its
members add up. Its own module, so the kinds need not import the quota check, which asks them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Peak:
    """What one step (or job) runs at once at most, per concurrent quota (contract/quotas.py)."""

    fargate_vcpu: float = 0.0
    network_interfaces: int = 0  # ECS tasks: one interface each (awsvpc)
    lambda_concurrency: int = 0
    open_map_runs: int = 0
    #: pool -> slots held at once (docs/pools.md): not an AWS quota, but the same arithmetic
    #: (`jobplane plan --starts` sets it against each pool's size)
    pools: tuple[tuple[str, int], ...] = ()

    def __add__(self, other: Peak) -> Peak:
        return Peak(self.fargate_vcpu + other.fargate_vcpu, self.network_interfaces + other.network_interfaces,
                    self.lambda_concurrency + other.lambda_concurrency, self.open_map_runs + other.open_map_runs,
                    _pools(self.pools, other.pools, lambda a, b: a + b))

    def times(self, n: int) -> Peak:
        return Peak(self.fargate_vcpu * n, self.network_interfaces * n, self.lambda_concurrency * n,
                    self.open_map_runs * n, tuple((p, w * n) for p, w in self.pools))

    def most(self, other: Peak) -> Peak:
        """Each quota's larger figure: steps that run one after another never add up."""
        return Peak(max(self.fargate_vcpu, other.fargate_vcpu),
                    max(self.network_interfaces, other.network_interfaces),
                    max(self.lambda_concurrency, other.lambda_concurrency), max(self.open_map_runs, other.open_map_runs),
                    _pools(self.pools, other.pools, max))

    def of(self, key: str) -> float:
        return float(getattr(self, key))


def _pools(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...], join: Callable[[int, int], int]
           ) -> tuple[tuple[str, int], ...]:
    out = dict(a)
    for pool, slots in b:
        out[pool] = join(out[pool], slots) if pool in out else slots
    return tuple(sorted(out.items()))
