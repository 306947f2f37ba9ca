"""``jp.parallel(name, [steps])``: members run concurrently; the group fails if any member fails.
A group has no attempt of its own (no target, no executor): its members are the steps."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from jobplane.compiler.fields import FieldSpec, ListOf, Nested, Nullable
from jobplane.compiler.kinds.base import GroupKind
from jobplane.contract.quoting import quoted
from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from jobplane.compiler.choice_rules import When
    from jobplane.compiler.executors.base import GroupBuilder
    from jobplane.compiler.model import Step
    from jobplane.compiler.peak import Peak



class ParallelKind(GroupKind):
    name = "parallel"
    spec = FieldSpec(Nullable(ListOf(Nested.named("Step"))), "Steps run concurrently; fails if any fails.")
    helper = "parallel(name, steps, opts={})"

    def problems(self, step: Step) -> Iterator[str]:
        members = step.parallel or []
        if len(members) < 2:
            yield "a parallel group needs at least two steps"
        for j, member in enumerate(members):
            kind = member.kind_
            if isinstance(kind, GroupKind) and kind is not self:
                yield (f"parallel[{j}] is a {kind.name} ({quoted(member.name)}): a {kind.name} cannot "
                       "sit in a jp.parallel group (docs/dsl.md \"Fan-out\"); make it a step of its own, before or "
                       "after the group")
            elif member.parallel is not None:
                yield f"parallel[{j}] ({quoted(member.name)}) is a group: parallel groups cannot be nested"

    def raw_members(self, step: JsonObject) -> list[tuple[str, JsonValue]]:
        members = step.get(self.name)
        return [(self.member_path(j), m) for j, m in enumerate(members)] if isinstance(members, list) else []

    def members(self, step: Step) -> list[Step]:
        members: list[Step] = step.target
        return members

    def member_path(self, j: int) -> str:
        return f"{self.name}[{j}]"

    def with_members(self, step: Step, members: list[Step]) -> Step:
        return dataclasses.replace(step, target=members)

    def states(self, b: GroupBuilder, step: Step, nxt: str, is_last: bool) -> str:
        from jobplane.compiler.parallel_states import parallel_states

        return parallel_states(b, step, nxt)

    def resume_routes(self, step: Step, entries: dict[str, str]) -> list[When]:
        """Resuming from a member of a parallel group re-runs the whole group."""
        from jobplane.compiler.choice_rules import When, equals
        from jobplane.contract import states as sn
        from jobplane.contract.execution_input import ExecutionInput

        resume = ExecutionInput.ref("resume_from").expr
        return [When(equals(resume, member.name), sn.attempt(step.name)) for member in self.members(step)]

    def peak(self, step: Step, of: Callable[[Step], Peak]) -> Peak:
        """Its members all at once."""
        from jobplane.compiler.peak import Peak

        total = Peak()
        for m in self.members(step):
            total = total + of(m)
        return total
