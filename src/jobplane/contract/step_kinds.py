"""The step kinds as the runtime sees them: the catalog names a step's kind, and this table says
where such a step runs (its executor), which runner dispatch it uses and how a person reads its
call. The compiler's classes (:mod:`jobplane.compiler.kinds`) hold everything else a kind owns
(its field, checks, Task states, IAM); each of them points at one entry here, and a test holds
the two lists equal.

Why two halves: the runtime (timeline, logs, portal) must not import the compiler (one-way
layers, tests/test_layers.py), and what it needs of a kind is small and fixed: the executor
decides how an attempt's facts and logs are read; the call is what the portal shows.
"""

from __future__ import annotations

import json
from enum import Enum

from jobplane.contract.runner import DISPATCH

#: Standard-library-only at import (no ``typing``, ``dataclasses``, ``shlex``): the Lambda
#: handler reads this table on its cold path (contract/lambda_step.py ``KINDS``), where
#: ``dataclasses`` with ``inspect`` was a third of its imports (issue 66 item 2).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from jobplane.contract.catalog import CatalogStep
    from jobplane.contract.types import JsonObject


class Executor(str, Enum):
    """Where a step's attempts run; each reads its attempt facts and logs its own way."""

    ECS = "ecs"  # ecs:runTask.sync of the runner image on Fargate (awslogs stream per task)
    LAMBDA = "lambda"  # lambda:invoke of the job's runner function (its log stream per request)
    GROUP = "group"  # no attempt of its own: a parallel group's (a map's) members run


def _python_call(target: JsonObject) -> str:
    args = [json.dumps(a) for a in target.get("args", [])]
    kwargs = [f"{k}={json.dumps(v)}" for k, v in (target.get("kwargs") or {}).items()]
    return f"{target.get('target', '')}({', '.join(args + kwargs)})"


def _django_call(target: JsonObject) -> str:
    import shlex

    return " ".join(["manage.py", str(target.get("target", "")),
                     *(shlex.quote(str(a)) for a in target.get("args", [])),
                     *(f"--{k.replace('_', '-')}={shlex.quote(str(v))}" for k, v in (target.get("kwargs") or {}).items())])


def _shell_call(target: JsonObject) -> str:
    import shlex

    return shlex.join(str(a) for a in target.get("argv", []))


class KindInfo:
    """One step kind as the runtime reads it. ``runner_kind``: the runner's dispatch
    (``jobplane-runner run <kind>``), None for a group. ``per_item``: a group whose first member
    lists items and whose second runs once per item (a map): the runtime reads its items'
    records (progress, re-runs of the failed items). A plain immutable class, not a dataclass
    (see ``TYPE_CHECKING`` above)."""

    __slots__ = ("name", "executor", "runner_kind", "show_call", "per_item")
    name: str
    executor: Executor
    runner_kind: str | None
    show_call: Callable[[JsonObject], str]
    per_item: bool

    def __init__(self, name: str, executor: Executor, runner_kind: str | None, show_call: Callable[[JsonObject], str],
                 per_item: bool = False):
        for slot, value in zip(self.__slots__, (name, executor, runner_kind, show_call, per_item)):
            object.__setattr__(self, slot, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"KindInfo is read-only: cannot set {name!r}")

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, slot) for slot in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return self._fields() == other._fields() if isinstance(other, KindInfo) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "KindInfo(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

    def call(self, target: JsonObject | None) -> str:
        """The step's target as a person would write the call (the portal, `jobplane plan`)."""
        return self.show_call(target) if target else ""


def _no_call(target: JsonObject) -> str:
    return ""


KINDS: tuple[KindInfo, ...] = (
    KindInfo("python", Executor.ECS, "python", _python_call),
    KindInfo("celery", Executor.ECS, "celery", _python_call),
    KindInfo("django", Executor.ECS, "django", _django_call),
    KindInfo("shell", Executor.ECS, "shell", _shell_call),
    KindInfo("parallel", Executor.GROUP, None, _no_call),
    KindInfo("lambda", Executor.LAMBDA, "python", _python_call),
    KindInfo("map", Executor.GROUP, None, _no_call, per_item=True),  # its items and each steps run
    KindInfo("approval", Executor.GROUP, None, _no_call),  # a person decides: no task runs
)
_BY_NAME = {k.name: k for k in KINDS}
#: What ``jobplane-runner run <kind>`` dispatches on, in registry order, once each.
RUNNER_KINDS: tuple[str, ...] = tuple(dict.fromkeys(k.runner_kind for k in KINDS if k.runner_kind))
if _undispatched := [k for k in RUNNER_KINDS if k not in DISPATCH]:  # a kind the runner would refuse
    raise ValueError(f"step kinds name runner kinds without a line in contract/runner.py DISPATCH: {_undispatched}")


def runner_kinds_on(executor: Executor) -> tuple[str, ...]:
    """The runner dispatches of the kinds that run on ``executor``, in registry order, once each
    (what its runtime must be able to run: contract/lambda_step.py ``KINDS``)."""
    return tuple(dict.fromkeys(k.runner_kind for k in KINDS if k.executor is executor and k.runner_kind))


def kind_info(name: str) -> KindInfo:
    """The kind a catalog names; an unknown name (a catalog newer than this code) reads as an
    ECS python step, the runtime's long-standing default, rather than failing a page."""
    return _BY_NAME.get(name) or KindInfo(name, Executor.ECS, None, _python_call)


def per_item_steps(steps: Sequence[CatalogStep]) -> list[CatalogStep]:
    """The steps among ``steps`` (a catalog's) that run a member once per item (maps), with
    their two members."""
    return [s for s in steps if kind_info(s.kind).per_item and s.parallel and len(s.parallel) == 2]


def call_of(target: JsonObject | None) -> str:
    """The call a runner target spec describes, by its runner kind (the spec's ``kind``)."""
    if not target:
        return ""
    show = {"shell": _shell_call, "django": _django_call}.get(str(target.get("kind")), _python_call)
    return show(target)
