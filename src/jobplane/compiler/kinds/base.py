"""What a step kind is to the compiler: one class per kind, owning its definition field and its
checks, the runner target it compiles to, and (through its executor) its Task states and IAM.

The model (:mod:`jobplane.compiler.model`) reads the registry (:mod:`jobplane.compiler.kinds`)
for the fields a step may carry and which kind a definition names; the ASL builder and the
Terraform ask the kind's executor for the attempt's states and the role's statements; the
runtime reads the kind's :class:`~jobplane.contract.step_kinds.KindInfo` from the catalog. So a
new kind is one module here, one line in the registry, and (for a new place to run) one executor.

Why the executor is loaded lazily: ``jobplane validate`` checks definitions without the ASL
builder (tests/test_cli.py, issue 13's start-up budget), and a kind's checks need only its field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from jobplane.compiler.fields import FieldSpec
from jobplane.contract.step_kinds import KindInfo, kind_info
from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import StepExecutor
    from jobplane.compiler.model import Step


class StepKind:
    """One kind of step. Subclasses set ``name`` (the definition field that selects the kind,
    also the catalog's kind), ``spec`` (that field's type, description and check) and what they
    accept of the common fields."""

    name: ClassVar[str]
    spec: ClassVar[FieldSpec]
    #: which common fields this kind reads: args (celery, django) and kwargs (python, celery)
    takes_args: ClassVar[bool] = False
    takes_kwargs: ClassVar[bool] = False
    #: the jp.* helper of jobs/lib/jobplane.libsonnet that writes this kind (tests/test_kinds.py
    #: holds the library to it)
    helper: ClassVar[str]

    @property
    def info(self) -> KindInfo:
        return kind_info(self.name)

    @property
    def executor(self) -> StepExecutor:
        raise NotImplementedError

    def problems(self, step: Step) -> Iterator[str]:
        """Rules across the step's fields that only this kind has (its executor's sizes, a
        group's members)."""
        yield from self.executor.problems(step)

    def raw_members(self, step: JsonObject) -> list[tuple[str, JsonValue]]:
        """A group's members in a definition that may not validate, each with its field path
        below the step (``jobplane validate``'s raw checks walk into them); none for a step
        that runs itself."""
        return []

    def target_spec(self, step: Step) -> JsonObject:
        """What the runner needs to find and call the target (the JOBPLANE_TARGET variable)."""
        spec: JsonObject = {"kind": self.info.runner_kind, "target": step.target}
        if step.args:
            spec["args"] = step.args
        if step.kwargs:
            spec["kwargs"] = step.kwargs
        return spec

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<step kind {self.name}>"


class EcsKind(StepKind):
    """A kind whose attempts run the runner image as an ECS task on Fargate."""

    @property
    def executor(self) -> StepExecutor:
        from jobplane.compiler.executors.ecs import ECS

        return ECS
