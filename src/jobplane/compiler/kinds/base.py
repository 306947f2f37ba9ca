"""What a step kind is to the compiler: one class per kind, owning its definition field and its
checks, the runner target it compiles to, and (through its executor) its Task states and IAM.

The model (:mod:`jobplane.compiler.model`) reads the registry (:mod:`jobplane.compiler.kinds`)
for the fields a step may carry and which kind a definition names; the ASL builder and the
Terraform ask the kind's executor for the attempt's states and the role's statements; the
runtime reads the kind's :class:`~jobplane.contract.step_kinds.KindInfo` from the catalog. So a
new kind is one module here, one line in the registry, and (for a new place to run) one executor.

A group kind (:class:`GroupKind`: parallel, map) runs no attempt of its own: it owns its members
(which steps, where they sit in the definition), the states it adds to the job's graph, where a
re-run from it or a member goes, what its role calls and what it runs at once; the ASL builder,
the model, the Terraform and ``jobplane plan`` ask the kind, never its name.

Why the executor (and a group's states) are loaded lazily: ``jobplane validate`` checks
definitions without the ASL builder (tests/test_cli.py, issue 13's start-up budget), and a kind's
checks need only its field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from jobplane.compiler.fields import FieldSpec
from jobplane.contract.step_kinds import KindInfo, kind_info
from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from collections.abc import Callable

    from jobplane.compiler.choice_rules import When
    from jobplane.compiler.executors.base import GroupBuilder, StepExecutor
    from jobplane.compiler.model import Job, Step
    from jobplane.compiler.peak import Peak


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
        """The executor contract/step_kinds.py declares for this kind (its one declaration)."""
        from jobplane.compiler.executors import executor_named

        return executor_named(self.info.executor.value)

    def problems(self, step: Step) -> Iterator[str]:
        """Rules across the step's fields that only this kind has (its executor's sizes, a
        group's members)."""
        yield from self.executor.problems(step)

    def per_item(self, step: Step) -> Step | None:
        """The step run once per item when this kind fans out over a list (a map's ``each``), None
        for a kind that does not: what asks "does the job fan out, and with which step" (its
        task role's map-items grant, its warned-items alert) asks it here, not by the kind's name."""
        return None

    def members(self, step: Step) -> list[Step] | None:
        """A group's members (:class:`GroupKind`); None for a step that runs itself."""
        return None

    #: Whether a re-run from this step enters at its own attempt (its pool ticket, if pooled):
    #: every kind but a map, whose re-run first draws a fresh list (its :meth:`resume_routes`).
    resumed_at_attempt: ClassVar[bool] = True

    def resume_routes(self, step: Step, entries: dict[str, str]) -> list[When]:
        """The Route's choices for a re-run from a member (and, where the step's own entry is not
        its attempt, from the step itself): none for a step without members."""
        return []

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
    """A kind whose attempts run the runner image as an ECS task on Fargate (contract/step_kinds.py)."""


class GroupKind(StepKind):
    """A kind whose step has no attempt of its own (no executor, no runner target): its members
    run. Everything that treats a group differently from a step asks it here."""

    @property
    def executor(self) -> StepExecutor:
        raise TypeError(f"a {self.name} step has no executor: its members run")

    def target_spec(self, step: Step) -> JsonObject:
        raise TypeError(f"a {self.name} step has no target: its members run")

    def members(self, step: Step) -> list[Step]:
        raise NotImplementedError

    def member_path(self, j: int) -> str:
        """Where member ``j`` sits below the step in its definition (``parallel[1]``, ``map.each``):
        what a problem with the member names."""
        raise NotImplementedError

    def with_members(self, step: Step, members: list[Step]) -> Step:
        """The same step over ``members`` (each one of :meth:`members`, changed: a pool default)."""
        raise NotImplementedError

    def run_members(self, step: Step) -> list[Step]:
        """The members whose attempts run in the run's own state data (a map's items step), whose
        attempt counters the claim starts; a member that runs in a branch or a child execution
        starts its own."""
        return []

    def states(self, b: GroupBuilder, step: Step, nxt: str, is_last: bool) -> str:
        """Add the group's states to the job's graph, going on to ``nxt``; return the first one's name."""
        raise NotImplementedError

    def role_statements(self, job: Job, sm_name: str) -> list[JsonObject]:
        """What the state machine's role calls for this kind's steps, for a job that has one
        (a map's children and lists); none by default."""
        return []

    def peak(self, step: Step, of: Callable[[Step], Peak]) -> Peak:
        """What the group runs at once (``jobplane plan``'s quota check), ``of`` being a member's."""
        raise NotImplementedError
