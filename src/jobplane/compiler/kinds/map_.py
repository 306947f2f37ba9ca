"""``jp.map(name, items=<step>, each=<step>, opts)``: fan a step out over a list of items.

``items`` is a python step whose function returns the list (tenant ids, small objects); the
runner writes it to the platform's bucket (contract/map_items.py) and a Distributed Map reads it
back with ``ItemReader``, running ``each`` once per item as a child workflow execution, at most
``max_concurrency`` at a time, with the item in its params (``item``) and JOBPLANE_ITEM. Each
item's attempts are the ``each`` step's own (its retry, timeout, size), and each item's outcome
is written by the state machine as a record of its own (``ITEM#<map>#<index>`` under the run's
partition). The map fails once more than ``tolerated_failures`` items failed (a count, or a
percentage such as ``'1%'``). docs/dsl.md "Fan-out", docs/state-machine.md "A map".

A map has no attempt of its own (like a parallel group): its two members are the steps.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobplane.compiler.fields import Anything, Bool, FieldSpec, Int, Model, Nested, Nullable, field
from jobplane.compiler.kinds.base import GroupKind
from jobplane.contract import map_items
from jobplane.contract.quoting import quoted
from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from jobplane.compiler.choice_rules import When
    from jobplane.compiler.executors.base import GroupBuilder
    from jobplane.compiler.model import Job, Step
    from jobplane.compiler.peak import Peak

_PERCENT_RE = re.compile(r"^(100|[1-9]?[0-9])(\.[0-9]+)?%$")



def _tolerated(v: JsonValue, _: JsonObject) -> Iterator[str]:
    if isinstance(v, bool) or not (isinstance(v, int) and v >= 0 or isinstance(v, str) and _PERCENT_RE.fullmatch(v)):
        yield (f"{quoted(v)} is neither a count of items (0 or more) nor a percentage such as '1%' (0-100): "
               "how many items may fail before the map fails")


#: The default cap on a map's max_concurrency. Every item is a Fargate task: RunTask serves 20
#: calls a second and Fargate launches from a bucket of 100 tasks refilled at 20 a second per
#: account and Region ("AWS Fargate throttling quotas",
#: https://docs.aws.amazon.com/AmazonECS/latest/developerguide/throttling.html), and each
#: running task holds its vCPU of the account's Fargate quota and a network interface. 500 at
#: once is already 25 seconds of the whole account's launch rate and 125 vCPU at the smallest
#: size: a wider map is allowed, but as a choice its reviewers see (max_concurrency_override).
CONCURRENCY_CAP = 500


def _capped(v: JsonValue, values: JsonObject) -> Iterator[str]:
    if isinstance(v, int) and v > CONCURRENCY_CAP and not values.get("max_concurrency_override"):
        yield (f"{v} is above {CONCURRENCY_CAP}, the cap on items running at once: each is a Fargate task, launched "
               "at most 20 a second for the whole account; set max_concurrency_override: true beside it to run more "
               "(docs/fan-out.md, how wide a map)")


@dataclass(frozen=True, kw_only=True)
class MapSpec(Model):
    """What ``jp.map`` fans out: the step that lists the items, the step run per item, and how."""

    items: Any = field(Nested.named("Step"), description="A python step whose function returns the items (a list).")
    each: Any = field(Nested.named("Step"), description="The step run once per item, the item in its params as 'item'.")
    # before max_concurrency: its check reads it (a field's check sees the fields checked before it)
    max_concurrency_override: bool = field(Bool(), False, description=(
        f"Allow max_concurrency above {CONCURRENCY_CAP} (up to {map_items.MAX_CONCURRENCY:,}): a deliberate, reviewed "
        "choice; jobplane plan still measures the map against the account's Fargate vCPU quota."))
    max_concurrency: int = field(Int(ge=1, le=map_items.MAX_CONCURRENCY), 10, check=_capped,
                                 description=f"Items running at once (Distributed Map MaxConcurrency); at most "
                                             f"{CONCURRENCY_CAP} without max_concurrency_override.")
    tolerated_failures: JsonValue = field(Anything(), 0, check=_tolerated, description=(
        "Items that may fail before the map fails: a count (ToleratedFailureCount) or 'N%' "
        "(ToleratedFailurePercentage)."))

    def tolerance(self) -> JsonObject:
        """The Map state's tolerance field."""
        v = self.tolerated_failures
        if isinstance(v, str):
            return {"ToleratedFailurePercentage": float(v[:-1])}  # a float: moto's grammar refuses an integer here
        return {"ToleratedFailureCount": v}


class MapKind(GroupKind):
    name = "map"
    spec = FieldSpec(Nullable(Nested(lambda: MapSpec)), "Fan-out: {items, each, max_concurrency, tolerated_failures}.")
    helper = "map(name, items, each, opts={})"
    #: a re-run from the map draws a fresh list first (:meth:`resume_routes`)
    resumed_at_attempt = False
    _MEMBERS = ("items", "each")

    def problems(self, step: Step) -> Iterator[str]:
        spec: MapSpec = step.target
        items, each = spec.items, spec.each
        if items.kind.name != "python":
            yield f"a map's items step must be a python step (its function returns the items), not {items.kind.name}"
        if isinstance(each.kind, GroupKind) or not each.kind.executor.runs_map_items:
            yield (f"a map's each step runs on ECS (python, celery, django or shell), not {each.kind.name}: "
                   "its item reaches it in the task's environment")
        if step.retry.attempts > 1:
            yield "a map has no attempts of its own: give retry to its items or each step"
        if any(e.uses_baseline for e in each.expect):
            yield ("a map's each step takes expectations of a number ('>= 1'), not of a baseline: each item is "
                   "judged on its own, and a baseline per item is not kept (docs/expectations.md)")

    def raw_members(self, step: JsonObject) -> list[tuple[str, JsonValue]]:
        spec = step.get(self.name)
        return [(self.member_path(j), spec.get(f)) for j, f in enumerate(self._MEMBERS)] if isinstance(spec, dict) else []

    def per_item(self, step: Step) -> Step | None:
        return self.members(step)[1]

    def members(self, step: Step) -> list[Step]:
        """Its items step, then its each step."""
        spec: MapSpec = step.target
        return [spec.items, spec.each]

    def member_path(self, j: int) -> str:
        return f"{self.name}.{self._MEMBERS[j]}"

    def with_members(self, step: Step, members: list[Step]) -> Step:
        # a map's members are its MapSpec's fields (items, each), not a list: keep the MapSpec
        items, each = members
        return dataclasses.replace(step, target=dataclasses.replace(step.target, items=items, each=each))

    def run_members(self, step: Step) -> list[Step]:
        """Its items step is attempted in the run itself (its each step: in the map's children)."""
        return self.members(step)[:1]

    def states(self, b: GroupBuilder, step: Step, nxt: str, is_last: bool) -> str:
        from jobplane.compiler.map_states import map_states

        return map_states(b, step, nxt)

    def resume_routes(self, step: Step, entries: dict[str, str]) -> list[When]:
        from jobplane.compiler.map_states import map_routes

        return map_routes(step, entries)

    def role_statements(self, job: Job, sm_name: str) -> list[JsonObject]:
        from jobplane.compiler.map_states import role_statements

        return role_statements(job, sm_name)

    def peak(self, step: Step, of: Callable[[Step], Peak]) -> Peak:
        """Its items step, then its each step ``max_concurrency`` at a time in one open Map Run."""
        from jobplane.compiler.peak import Peak

        spec: MapSpec = step.target
        return of(spec.items).most(of(spec.each).times(spec.max_concurrency) + Peak(open_map_runs=1))
