"""``jp.parallel(name, [steps])``: members run concurrently; the group fails if any member fails.
A group has no attempt of its own (no target, no executor): its members are the steps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from jobplane.compiler.fields import FieldSpec, ListOf, Model, Nested, Nullable
from jobplane.compiler.kinds.base import StepKind
from jobplane.contract.quoting import quoted
from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import StepExecutor
    from jobplane.compiler.model import Step


def _step_model() -> type[Model]:
    from jobplane.compiler.model import Step

    return Step


class ParallelKind(StepKind):
    name = "parallel"
    spec = FieldSpec(Nullable(ListOf(Nested(_step_model))), "Steps run concurrently; fails if any fails.")
    helper = "parallel(name, steps, opts={})"

    @property
    def executor(self) -> StepExecutor:
        raise TypeError("a parallel group has no executor: its members run")

    def problems(self, step: Step) -> Iterator[str]:
        members = step.parallel or []
        if len(members) < 2:
            yield "a parallel group needs at least two steps"
        for j, member in enumerate(members):
            if member.kind_ is not None and member.kind_.name == "map":
                yield (f"parallel[{j}] is a map ({quoted(member.name)}): a map cannot sit in a jp.parallel group "
                       "(docs/dsl.md \"Fan-out\"); make it a step of its own, before or after the group")
            elif member.parallel is not None:
                yield f"parallel[{j}] ({quoted(member.name)}) is a group: parallel groups cannot be nested"

    def raw_members(self, step: JsonObject) -> list[tuple[str, JsonValue]]:
        members = step.get(self.name)
        return [(f"{self.name}[{j}]", m) for j, m in enumerate(members)] if isinstance(members, list) else []

    def target_spec(self, step: Step) -> JsonObject:
        raise TypeError("a parallel group has no target")
