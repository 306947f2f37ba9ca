"""The executor seam: what the ASL builder and the Terraform ask of the place a step runs."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.choice_rules import Rule, Test
    from jobplane.compiler.model import Job, Step
    from jobplane.compiler.peak import Peak
    from jobplane.compiler.states import Graph, Kept, Retry, Task
    from jobplane.contract.items import Text
    from jobplane.contract.catalog import CatalogStep
    from jobplane.contract.config import PlatformConfig
    from jobplane.contract.statuses import Event, ExecutionStatus


class AttemptBuilder(Protocol):
    """What an executor may use of the job's builder (compiler/asl.py): the job, its events, the
    failure states every step shares and the retry loop of the step's own failures. (Whether a
    success ends a failure streak is the Finish transaction's to decide, not a step's: an
    attempt that succeeds goes straight on to ``nxt``.)"""

    job: Job
    prefix: str
    events: set[Event]

    def step_failure_state(self, step: Step, status: ExecutionStatus, into: Graph, record: bool) -> str: ...

    def retry_loop(self, step: Step, into: Graph) -> str: ...


class GroupBuilder(AttemptBuilder, Protocol):
    """What a group kind (compiler/kinds/base.py ``GroupKind``: parallel, map) may use of the
    job's builder besides what an attempt does: the job's graph, its members' attempts (each
    wrapped in its pool's ticket, recorded in ``entries`` for the Route), the pools' sizes, the
    attempt counters a branch starts with and the job's DynamoDB Retry (a map item's record)."""

    graph: Graph
    pools: dict[str, int]
    entries: dict[str, str]
    ddb_retry: Retry

    def step_states(self, step: Step, nxt: str, is_last: bool, into: Graph, record: bool) -> str: ...

    def initial_slots(self, steps: list[Step]) -> JsonObject: ...

    def publish_state(self, event: str | None, next_: str | None = None, outcome: JsonObject | None = None) -> Task:
        """The job's SNS publish (a map's one EXPECTATION alert of its warned items)."""
        ...

    def record_state(self, status: ExecutionStatus, step: Text | None, next_: str | None = None,
                     unblocked: bool = False) -> Task:
        """The run's final record and claim release, one transaction (an approval's REJECTED)."""
        ...


class TerraformContext(Protocol):
    """What an executor may use of the job's Terraform document as compiler/terraform.py builds it."""

    job: Job
    config: PlatformConfig
    tid: str
    resource: dict[str, JsonObject]
    roles: JsonObject
    role_policies: JsonObject
    attachments: JsonObject
    data: dict[str, JsonObject]
    #: Terraform locals of the job's file (its ECS task role's ARN: compiler/task_roles.py)
    locals: JsonObject

    @property
    def docs(self) -> JsonObject: ...


class StepExecutor(Protocol):
    name: str

    def problems(self, step: Step) -> Iterator[str]:
        """What this place cannot run (a size, a time limit)."""
        ...

    def raw_problems(self, step: JsonObject) -> Iterator[str]:
        """The same, on a definition that may not validate (reported with its other problems)."""
        ...

    def job_problems(self, job: Job, steps: list[Step]) -> Iterator[tuple[str, str]]:
        """(field, message): what this place cannot run of the job as a whole (``steps``: the
        job's steps it runs), such as a policy it cannot keep or a limit their sum is over."""
        ...

    def peak(self, step: Step) -> Peak:
        """What one attempt of ``step`` holds at once, per concurrent quota (compiler/quota_usage.py)."""
        ...

    #: Whether it can run a map's each step: the item reaches that step in its environment,
    #: one Task per item under the Map's concurrency (compiler/kinds/map_.py)
    runs_map_items: bool

    def plan_lines(self, steps: list[CatalogStep]) -> list[str]:
        """What ``jobplane plan`` says of where the job's ``steps`` (a catalog's, groups' members
        included) run on this executor, or could."""
        ...

    def attempt_states(self, b: AttemptBuilder, step: Step, nxt: str, is_last: bool, into: Graph, record: bool) -> str:
        """Add the states of the step's attempts to ``into``; return the first one's name."""
        ...

    def role_statements(self, tf: TerraformContext, steps: list[Step]) -> list[JsonObject]:
        """What the state machine's role may call to run ``steps`` (the job's steps of this executor)."""
        ...

    def resources(self, tf: TerraformContext, steps: list[Step]) -> None:
        """Add what running ``steps`` needs besides the state machine (a task definition, a function)."""
        ...

    def token_bindings(self, tf_id: str, steps: list[Step]) -> dict[str, str]:
        """The ASL's deployment tokens (contract/bindings.py) that its :meth:`resources` bind
        instead of the base module's outputs (a task definition of the job's own)."""
        ...


@dataclass(frozen=True)
class Attempt:
    """What every executor's attempt loop names the same way: the step's state-data paths, its
    failure states (added to ``into`` here, in this order), its Task's and check's names."""

    attempts: int
    slot: str
    result: str
    counter: str
    failed: str
    timed_out: str
    at_step: JsonObject | None  # the catcher's Assign naming the step for the job's one timeout record
    name: str
    check: str

    @property
    def retried(self) -> bool:
        return self.attempts > 1

    @classmethod
    def of(cls, b: AttemptBuilder, step: Step, into: Graph, record: bool) -> Attempt:
        from jobplane.compiler.state_data import ATTEMPT, FAILED_STEP_VAR, RESULT, steps_slot
        from jobplane.contract import states as sn
        from jobplane.contract.statuses import ExecutionStatus

        slot = steps_slot(step)
        failed = b.step_failure_state(step, ExecutionStatus.FAILED, into, record)
        timed_out = b.step_failure_state(step, ExecutionStatus.TIMED_OUT, into, record)
        # inside a branch the branch's own Pass names the step
        at_step: JsonObject | None = {FAILED_STEP_VAR: step.name} if record else None
        return cls(step.retry.attempts, slot, f"{slot}.{RESULT}", f"{slot}.{ATTEMPT}", failed, timed_out, at_step,
                   sn.attempt(step.name), sn.check(step.name))


def infra_states(step: Step, into: Graph) -> str:
    """Count an infrastructure retry of the attempt, wait, run the same attempt again: the
    bounded retry (``INFRA_WAITS``, one budget per run or parallel branch) that every executor
    sends what is not the step's own failure to (an ECS task that never ran the step, RunTask's
    capacity failures and throttles, a Lambda function that is not ready or is throttled). The
    attempt's error stays in ``$.run.error`` and on its timeline row; the Task entered again is
    the same attempt (platform/timeline.py)."""
    from jobplane.contract import states as sn

    retry, wait = sn.infra_retry(step.name), sn.infra_wait(step.name)
    if retry not in into:
        counting, waiting = _infra_states(wait, sn.attempt(step.name))
        into.add(retry, counting)
        into.add(wait, waiting)
    return retry


@functools.lru_cache(maxsize=1024)
def _infra_states(wait: str, attempt: str) -> tuple[Kept, Kept]:
    """infra_states' two states: a function of the wait's and the attempt's names alone (the
    rest is constants), the same in every job whose step has the same name, so made once."""
    from jobplane.compiler.state_data import INFRA, INFRA_WAITS
    from jobplane.compiler.states import Kept, Pass, Wait

    return (Kept(Pass(
                comment="Not the step's failure (the infrastructure's: capacity, throttling, not ready): not an attempt",
                parameters={"n.$": f"States.MathAdd({INFRA}.n, 1)",
                            "wait.$": f"States.ArrayGetItem(States.Array({', '.join(map(str, INFRA_WAITS))}), {INFRA}.n)"},
                result_path=INFRA, next=wait)),
            Kept(Wait(seconds_path=f"{INFRA}.wait", next=attempt)))


def infra_left() -> Test:
    """The run (or parallel branch) still has an infrastructure retry left."""
    from jobplane.compiler.choice_rules import Test
    from jobplane.compiler.state_data import INFRA, INFRA_WAITS

    return Test(f"{INFRA}.n", "NumericLessThan", len(INFRA_WAITS))


def error_is(errors: tuple[str, ...]) -> Rule:
    """The failed attempt's error (``$.run.error.Error``) is one of ``errors``."""
    from jobplane.compiler.choice_rules import all_of, any_of, equals, present
    from jobplane.compiler.state_data import ERROR

    return all_of(present(f"{ERROR}.Error"), any_of(*(equals(f"{ERROR}.Error", e) for e in errors)))
