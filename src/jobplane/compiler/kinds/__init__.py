"""The step kinds, one class each (compiler/kinds/*.py), and the registry every part reads.

Adding a kind: its module here (its field, checks and target), a line in ``REGISTRY``, its
:class:`~jobplane.contract.step_kinds.KindInfo` line in contract/step_kinds.py (what the runtime
reads), and its ``jp.*`` helper in jobs/lib/jobplane.libsonnet (tests/test_kinds.py holds the
three lists equal). A kind that runs somewhere new brings an executor (compiler/executors/). A
group kind (no attempt of its own: parallel, map) subclasses :class:`GroupKind`, which holds what
the model, the ASL builder, the Terraform and ``jobplane plan`` ask of a group.
"""

from __future__ import annotations

from jobplane.compiler.kinds.approval import ApprovalKind
from jobplane.compiler.kinds.base import GroupKind, StepKind
from jobplane.compiler.kinds.celery import CeleryKind
from jobplane.compiler.kinds.django import DjangoKind
from jobplane.compiler.kinds.lambda_ import LambdaKind
from jobplane.compiler.kinds.map_ import MapKind
from jobplane.compiler.kinds.parallel import ParallelKind
from jobplane.compiler.kinds.python import PythonKind
from jobplane.compiler.kinds.shell import ShellKind

#: In the order a definition's fields, the JSON Schema and messages list them.
REGISTRY: tuple[StepKind, ...] = (PythonKind(), CeleryKind(), DjangoKind(), ShellKind(), ParallelKind(), LambdaKind(),
                                  MapKind(), ApprovalKind())
BY_NAME: dict[str, StepKind] = {k.name: k for k in REGISTRY}
NAMES: tuple[str, ...] = tuple(BY_NAME)
#: The group kinds (no attempt of their own: their members run), in registry order.
GROUPS: tuple[GroupKind, ...] = tuple(k for k in REGISTRY if isinstance(k, GroupKind))

__all__ = ["BY_NAME", "GROUPS", "NAMES", "REGISTRY", "GroupKind", "StepKind"]
