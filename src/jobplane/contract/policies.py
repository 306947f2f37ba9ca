"""Execution policies as objects: each policy is one class that says, once, everything the
compiler and the runtime do differently for it.

A policy used to be two booleans (``skips_if_running``, ``skips_if_failed``) read at a dozen
places, each deciding on its own what they meant for the claim, the skip path, IAM, backfills
and the portal. Now each of those places asks the job's policy object (:func:`of`):

* the claim's condition and what it writes (:meth:`ExecutionPolicy.claim_terms`),
* what a fire does while another run holds the claim (:attr:`ExecutionPolicy.while_running`,
  which the compiler turns into the skip path's states) and whether a failure blocks
  (:attr:`ExecutionPolicy.skips_after_failure`),
* the IAM statements its state machine needs on its own executions (:meth:`ExecutionPolicy.holder_statements`),
* how a backfill drives it (:attr:`ExecutionPolicy.backfills_in_order`, :attr:`ExecutionPolicy.halts_backfill_on_failure`),
* its row of the policy table (docs/dsl.md, Policies) (:meth:`ExecutionPolicy.decide`).

Adding a policy: a value in :class:`jobplane.contract.statuses.Policy` (the wire name), one
class here and its line in :data:`POLICIES`; a new kind of behaviour (a new
:class:`WhileRunning`) also needs its states in ``compiler/asl.py``'s skip path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from jobplane.contract import datamodel as dm
from jobplane.contract import items
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.items import Ref
from jobplane.contract.statuses import Policy

#: Why a stopped run was stopped by the platform, in its StopExecution ``error`` (the reconciler
#: reads it back from DescribeExecution and records the run ABORTED with this reason, no alert).
REPLACED_ERROR = "jobplane.Replaced"

#: The running execution's own ARN, as the claim writes it into ``holder``.
_EXECUTION_ARN = Ref("$$.Execution.Id")
#: The holder the refused claim read (the skip path's GetItem), which a takeover replaces.
STALE_HOLDER = Ref(f"$.state.Item.{dm.ATTR_HOLDER}.S")


class WhileRunning(str, Enum):
    """What a fire does while another run holds the job's claim."""

    RUN = "run"  # runs beside it: the claim never looks at other runs
    SKIP = "skip"  # records SKIPPED (RUNNING); a holder that no longer runs is taken over
    REPLACE = "replace"  # stops the holder (recorded ABORTED, reason REPLACED, no alert) and runs


class Decision(str, Enum):
    """A row's cell of the policy table (docs/dsl.md, Policies): what a scheduled fire does."""

    RUN = "run"
    SKIP = "skip"
    REPLACE = "replace"  # stop the running execution, then run

    @property
    def runs(self) -> bool:
        return self is not Decision.SKIP


@dataclass(frozen=True)
class ClaimTerms:
    """A policy's part of the claim's conditional UpdateItem, in the order it is rendered."""

    conditions: tuple[str, ...] = ()
    set_: str = ""  # appended to the update's SET clause
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, items.Value] = field(default_factory=dict)


class ExecutionPolicy:
    """The behaviour of one :class:`Policy`. Subclasses set the class attributes; the rest is
    derived from them, so two policies that behave alike cannot compile differently."""

    policy: ClassVar[Policy]
    while_running: ClassVar[WhileRunning] = WhileRunning.RUN
    #: A failed, timed-out or aborted last run blocks scheduled and upstream-started fires
    #: (statuses.AUTOMATIC_TRIGGERS) until a success or an acknowledgement.
    skips_after_failure: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return self.policy.value

    # -- the policy table ------------------------------------------------------------------------
    def decide(self, *, running: bool, last_failed: bool) -> Decision:
        """This policy's row of the policy table (docs/dsl.md), for a scheduled fire."""
        if running and self.while_running is WhileRunning.SKIP:
            return Decision.SKIP
        if last_failed and self.skips_after_failure:
            return Decision.SKIP
        if running and self.while_running is WhileRunning.REPLACE:
            return Decision.REPLACE
        return Decision.RUN

    # -- the claim -------------------------------------------------------------------------------
    @property
    def holds_claim(self) -> bool:
        """The claim records its ``holder`` and a refused claim asks Step Functions whether that
        holder still runs (a holder that does not is taken over)."""
        return self.while_running is not WhileRunning.RUN

    def claim_terms(self, takeover: bool) -> ClaimTerms:
        """This policy's conditions and writes in the claim. ``takeover``: the claim replaces a
        holder the skip path found ended (or, for REPLACE, stopped)."""
        conditions: list[str] = []
        set_ = ""
        names: dict[str, str] = {}
        values: dict[str, items.Value] = {}
        if self.holds_claim:
            conditions.append(self._takeover_condition() if takeover else "attribute_not_exists(#running)")
            set_ += f", {dm.ATTR_HOLDER} = :arn"
            values[":arn"] = _EXECUTION_ARN
        if self.skips_after_failure:
            # Only scheduled and upstream-started runs are blocked (block_<trigger>): a manual run,
            # a re-run or a backfill is how operators recover.
            conditions.append("attribute_not_exists(#blocked)")
            names["#blocked.$"] = f"States.Format('{dm.ATTR_BLOCK_PREFIX}{{}}', {ExecutionInput.ref('trigger').expr})"
        return ClaimTerms(tuple(conditions), set_, names, values)

    def _takeover_condition(self) -> str:
        # The state's holder must still be the one found stale: nobody else took over meanwhile.
        return f"{dm.ATTR_HOLDER} = :stale"

    # -- IAM ---------------------------------------------------------------------------------------
    def holder_statements(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(Sid, actions) the job's state machine role needs on its own executions (and no
        other state machine's): what its skip path calls about the claim's holder."""
        if not self.holds_claim:
            return ()
        return (("CheckClaimHolder", ("states:DescribeExecution",)),)

    # -- backfills ---------------------------------------------------------------------------------
    @property
    def backfills_in_order(self) -> bool:
        """A backfill runs one fire at a time, in order, and waits while any run holds the claim
        (a second run would be skipped, or would stop the first)."""
        return self.while_running is not WhileRunning.RUN

    @property
    def halts_backfill_on_failure(self) -> bool:
        """A failed fire halts the backfill until someone resumes it (later fires would skip)."""
        return self.skips_after_failure


class AlwaysRun(ExecutionPolicy):
    policy = Policy.ALWAYS_RUN


class SkipIfRunning(ExecutionPolicy):
    policy = Policy.SKIP_IF_RUNNING
    while_running = WhileRunning.SKIP


class SkipIfFailed(ExecutionPolicy):
    policy = Policy.SKIP_IF_FAILED
    skips_after_failure = True


class SkipIfRunningOrFailed(ExecutionPolicy):
    policy = Policy.SKIP_IF_RUNNING_OR_FAILED
    while_running = WhileRunning.SKIP
    skips_after_failure = True


class Replace(ExecutionPolicy):
    """Kubernetes' ``concurrencyPolicy: Replace``: a new fire stops the running execution and
    runs. The stop names this policy's error (:data:`REPLACED_ERROR`), so the stopped run is
    recorded ABORTED with reason REPLACED and no failure alert (platform/reconciler.py)."""

    policy = Policy.REPLACE
    while_running = WhileRunning.REPLACE

    def _takeover_condition(self) -> str:
        # The stopped holder's end may be reconciled before this claim lands: the reconciler
        # then released its claim (running gone), which is as good as the holder still named.
        return f"({dm.ATTR_HOLDER} = :stale OR attribute_not_exists(#running))"

    def holder_statements(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return (*super().holder_statements(), ("StopReplacedRun", ("states:StopExecution",)))


#: Every policy, one line each.
POLICIES: tuple[ExecutionPolicy, ...] = (AlwaysRun(), SkipIfRunning(), SkipIfFailed(), SkipIfRunningOrFailed(),
                                         Replace())
_BY_NAME = {p.policy: p for p in POLICIES}


def of(policy: Policy | str) -> ExecutionPolicy:
    """The behaviour of ``policy`` (a :class:`Policy` or its name)."""
    return _BY_NAME[Policy(policy)]


def decide(policy: Policy | str, *, running: bool, last_failed: bool) -> Decision:
    """the policy table (docs/dsl.md, Policies) as a function, for a scheduled fire.

    The compiled state machine evaluates the same table inside one DynamoDB condition
    expression (compiler/asl.py: ``claim_update``) and, for a refused claim, its skip path;
    tests/test_asl_on_moto.py runs that claim for every policy and state and holds it to this
    function."""
    return of(policy).decide(running=running, last_failed=last_failed)
