"""``jp.shell(name, argv)``: an argv list run as a child process of the runner (no shell unless
the argv names one)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from jobplane.compiler.fields import FieldSpec, ListOf, Nullable, Str
from jobplane.compiler.kinds.base import EcsKind
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.model import Step


def _argv(v: list[str] | None, _: JsonObject) -> Iterator[str]:
    if v is not None and (not v or not v[0]):
        yield "shell takes a non-empty argv list, e.g. ['bash', '-c', 'echo hi']"


class ShellKind(EcsKind):
    name = "shell"
    spec = FieldSpec(Nullable(ListOf(Str())), "argv list, run as a child process.", _argv)
    helper = "shell(name, argv, opts={})"

    def target_spec(self, step: Step) -> JsonObject:
        return {"kind": self.name, "argv": step.target}
