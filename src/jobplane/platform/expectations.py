"""A run's expectation checks as the execution page and the API show them (docs/expectations.md):
what the compiled state machine recorded in each step's slot of the run's ``steps``
(compiler/expect_states.py: ``{checks, verdict, words}``), step by step.

Read from the run's record, which the state machine writes when the run ends: a step judged
while the run still goes on is in the execution history, not read here (its checks show once
the run has its record)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jobplane.contract.expectations import Check
from jobplane.contract.states import step_key
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.contract.catalog import CatalogJob
    from jobplane.platform.control.views import ExecutionView


@dataclass(frozen=True)
class StepChecks:
    step: str
    verdict: str  # pass, warn or fail (contract/expectations.py VERDICTS)
    checks: list[Check]

    def to_json(self) -> JsonObject:
        return {"step": self.step, "verdict": self.verdict, "checks": [c.to_json() for c in self.checks]}


def of_steps(steps: JsonObject | None, step_names: list[str]) -> list[StepChecks]:
    """Each of ``step_names`` (in the job's order) that the run's ``steps`` hold checks for."""
    out: list[StepChecks] = []
    for name in step_names:
        slot = (steps or {}).get(step_key(name))
        expect = slot.get("expect") if isinstance(slot, dict) else None
        if not isinstance(expect, dict) or not isinstance(expect.get("checks"), list):
            continue
        checks = [Check.from_json(c) for c in expect["checks"] if isinstance(c, dict)]
        verdict = expect.get("verdict")
        out.append(StepChecks(name, verdict if isinstance(verdict, str) else "pass", checks))
    return out


def run_expectations(view: ExecutionView, entry: CatalogJob) -> list[StepChecks]:
    """The checks ``view``'s record holds, for the steps of its job (a group's members too)."""
    names = [s.name for s in entry.steps] + [m.name for s in entry.steps for m in s.parallel or []]
    return of_steps(view.record.steps if view.record is not None else None, names)
