"""``jp.approval(name, opts={approvers, prompt, channel, timeout, on_timeout, four_eyes, remind})``:
the run waits for a person to approve or reject it (docs/dsl.md "Approval steps").

An approval runs nothing: it has no executor, no runner target and no attempt of its own, so it
is a :class:`GroupKind` without members (the model, the Terraform and ``jobplane plan`` then
treat it as a step that runs no task), whose states (compiler/approval_states.py) are one
``.waitForTaskToken`` Task writing the approval's record with its task token, and what a reject
or a timeout leads to. The human wait (``timeout``) is the approval's own setting, separate from
any step's timeout (Airflow learned this the hard way: apache/airflow#63475, where a
human-in-the-loop operator's wait was cut by the task's execution_timeout).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobplane.compiler.durations import Duration as _DURATION
from jobplane.compiler.fields import Bool, Choice, FieldSpec, ListOf, Model, Nested, Nullable, Str, field
from jobplane.compiler.kinds.base import GroupKind
from jobplane.contract import approvals as ca
from jobplane.contract.types import JsonObject, JsonValue

if TYPE_CHECKING:
    from jobplane.compiler.executors.base import GroupBuilder
    from jobplane.compiler.model import Job, Step
    from jobplane.compiler.peak import Peak

#: The longest a run may wait for a person: a Standard workflow runs at most a year ("Step
#: Functions service quotas": maximum execution time 1 year,
#: https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html); the job's own
#: ``timeout`` (the execution's) bounds it first.
MAX_WAIT = 365 * 86400


def _approvers(v: JsonValue, _: JsonObject) -> Iterator[str]:
    if isinstance(v, list) and any(not isinstance(a, str) or not a.strip() for a in v):
        yield "each approver is a team or a person's name (a non-empty string)"


def _wait(v: JsonValue, _: JsonObject) -> Iterator[str]:
    if isinstance(v, int) and v > MAX_WAIT:
        yield f"{v}s is longer than a Step Functions execution may last (a year)"


def _remind(v: JsonValue, values: JsonObject) -> Iterator[str]:
    timeout = values.get("timeout")
    if isinstance(v, int) and (v < 300 or (isinstance(timeout, int) and v >= timeout)):
        yield (f"remind ({v}s) must be at least 5m (the periodic check looks every 5 minutes) and shorter than "
               f"the approval's timeout ({timeout}s)")


def _channel(v: JsonValue, _: JsonObject) -> Iterator[str]:
    if isinstance(v, str) and not v.startswith("#"):
        yield f"{v!r} is not a Slack channel ('#name')"


@dataclass(frozen=True, kw_only=True)
class ApprovalSpec(Model):
    """Who may approve, what they are asked, how long the run waits and what then."""

    approvers: list[str] = field(ListOf(Str()), factory=list, check=_approvers, description=(
        "Teams (of jobplane.toml) or people who may decide; empty: anyone who may act on the job's team."))
    prompt: str = field(Str(), "", description=(
        "What the approver is asked; {step.metric} shows a metric an earlier step reported (jobplane.metric)."))
    channel: str | None = field(Nullable(Str()), None, check=_channel,
                                description="A Slack channel the request and its reminders go to; default: the job's.")
    timeout: int = field(_DURATION, 86400, check=_wait, description=(
        "How long the run waits for a decision (the human wait, not a step's timeout); default 1 day."))
    on_timeout: str = field(Choice(tuple(o.value for o in ca.OnTimeout)), ca.OnTimeout.REJECT.value, description=(
        "What an undecided approval does at its timeout: reject (the run ends REJECTED), approve (it goes on) "
        "or fail (it ends TIMED_OUT, with the failure alert)."))
    four_eyes: bool = field(Bool(), False, description="The person who started the run may not decide.")
    remind: int | None = field(Nullable(_DURATION), None, check=_remind,
                               description="Remind the approvers at this interval while nobody decided (at least 5m).")


class ApprovalKind(GroupKind):
    name = "approval"
    spec = FieldSpec(Nullable(Nested(lambda: ApprovalSpec)), "Wait for a person: {approvers, prompt, timeout, ...}.")
    helper = "approval(name, opts={})"

    def problems(self, step: Step) -> Iterator[str]:
        if step.retry.attempts > 1:
            yield "an approval has no attempts to retry: a person decides once"
        if step.pool is not None:
            yield "an approval holds no pool slot: it runs no task"

    def members(self, step: Step) -> list[Step]:
        return []

    def member_path(self, j: int) -> str:
        raise IndexError("an approval has no members")

    def with_members(self, step: Step, members: list[Step]) -> Step:
        return step

    def states(self, b: GroupBuilder, step: Step, nxt: str, is_last: bool) -> str:
        from jobplane.compiler.approval_states import approval_states

        return approval_states(b, step, nxt)

    def role_statements(self, job: Job, sm_name: str) -> list[JsonObject]:
        from jobplane.compiler.approval_states import role_statements

        return role_statements()

    def peak(self, step: Step, of: Callable[[Step], Peak]) -> Peak:
        """Nothing: a person decides, no task runs."""
        from jobplane.compiler.peak import Peak

        return Peak()

    def target_spec(self, step: Step) -> JsonObject:
        raise TypeError("an approval step has no target: a person decides")

    @staticmethod
    def spec_of(step: Step) -> Any:
        return step.target
