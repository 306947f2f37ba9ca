"""The states of a ``jp.parallel`` group (compiler/kinds/parallel.py): one Parallel state whose
branches each run one member's attempts and end with the member's outcome instead of failing,
then a check that every member succeeded.

Its own module, as the map's (compiler/map_states.py): the ASL builder asks the group's kind
(compiler/kinds/base.py ``GroupKind.states``), not its name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobplane.compiler.choice_rules import Rule, When, all_of, equals
from jobplane.compiler.state_data import steps_slot
from jobplane.compiler.states import Catch, Choice, Graph, Parallel, Pass
from jobplane.contract import states as sn
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.statuses import ExecutionStatus

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import GroupBuilder
    from jobplane.compiler.model import Step


def parallel_states(b: GroupBuilder, group: Step, nxt: str) -> str:
    """Add the group's states to the job's graph; return the first one's name (its Parallel)."""
    members = group.parallel or []
    branches = []
    for member in members:
        branch = Graph()
        done = branch.add(sn.branch_done(member.name),
                          Pass(parameters={"attempts.$": steps_slot(member), "status": ExecutionStatus.SUCCEEDED.value}))
        branch.start_at = b.step_states(member, done, False, branch, record=False)
        branches.append(branch)
    check = sn.check(group.name)
    failed = b.step_failure_state(group, ExecutionStatus.FAILED, b.graph, record=True)
    b.graph.add(sn.attempt(group.name), Parallel(
        comment="steps run concurrently; each branch records its outcome instead of failing",
        # Each branch gets only what its tasks read, not the whole state data.
        parameters={f"{f}.$": ExecutionInput.ref(f).expr for f in ("trigger", "scheduled_time", "params")}
        # each member's slot exists from the start: a member whose attempts all failed has
        # no result in it, and its branch still reports the (empty) slot
        | {"run": {"steps": {m.key: {} for m in members} | b.initial_slots(members), "infra": {"n": 0}}},
        branches=branches,
        result_selector={f"{m.key}.$": f"States.ArrayGetItem($, {i})" for i, m in enumerate(members)},
        result_path=steps_slot(group),
        catch=[Catch(["States.ALL"], failed, steps_slot(group))],
        next=check))
    succeeded: list[Rule] = [equals(f"{steps_slot(group)}.{m.key}.status", ExecutionStatus.SUCCEEDED.value)
                             for m in members]
    b.graph.add(check, Choice(choices=[When(all_of(*succeeded), nxt)], default=failed))
    return sn.attempt(group.name)
