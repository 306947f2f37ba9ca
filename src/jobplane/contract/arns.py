"""Amazon Resource Names, parsed and formatted in one place.

An ARN is ``arn:partition:service:region:account-id:resource``, where the resource may itself
hold colons (``execution:<state machine>:<name>``) or slashes (``task/<cluster>/<id>``):
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html. Splitting on every colon
and taking a position, as five places once did, gives a wrong answer for a resource with more
colons and an IndexError for a value that is no ARN; here the five fixed fields are split off
once and the resource is read by its own kind's rule.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arn:
    partition: str
    service: str
    region: str
    account: str
    resource: str

    @classmethod
    def parse(cls, text: str) -> Arn:
        parts = str(text).split(":", 5)
        if len(parts) != 6 or parts[0] != "arn" or not parts[1] or not parts[2]:
            raise ValueError(f"not an ARN: {str(text)[:200]!r}")
        return cls(*parts[1:])

    def __str__(self) -> str:
        return f"arn:{self.partition}:{self.service}:{self.region}:{self.account}:{self.resource}"

    @property
    def resource_name(self) -> str:
        """The resource's own name: after the last ``:`` or ``/`` of the resource part (a queue's
        or topic's name, an ECS task's id, a rule's name)."""
        return self.resource.replace("/", ":").rsplit(":", 1)[-1]


@dataclass(frozen=True)
class ExecutionArn:
    """A Step Functions standard workflow's execution:
    ``arn:<partition>:states:<region>:<account>:execution:<state machine>:<name>``."""

    region: str
    account: str
    state_machine: str
    name: str
    partition: str = "aws"

    @classmethod
    def parse(cls, text: str) -> ExecutionArn:
        arn = Arn.parse(text)
        kind, _, rest = arn.resource.partition(":")
        machine, _, name = rest.partition(":")
        if arn.service != "states" or kind != "execution" or not machine or not name or ":" in name:
            raise ValueError(f"not a Step Functions execution ARN: {str(text)[:200]!r}")
        return cls(arn.region, arn.account, machine, name, arn.partition)

    def __str__(self) -> str:
        return str(Arn(self.partition, "states", self.region, self.account,
                       f"execution:{self.state_machine}:{self.name}"))

    def job(self, name_prefix: str) -> str | None:
        """The job whose state machine this is (``<prefix>-<job>``, contract/names.py), or None
        for another deployment's or another product's."""
        head = name_prefix + "-"
        if not self.state_machine.startswith(head):
            return None
        return self.state_machine[len(head):] or None


def state_machine_arn(region: str, account: str, state_machine: str, partition: str = "aws") -> str:
    return str(Arn(partition, "states", region, account, f"stateMachine:{state_machine}"))


def execution_arn(region: str, account: str, state_machine: str, name: str, partition: str = "aws") -> str:
    return str(ExecutionArn(region, account, state_machine, name, partition))


def execution_name(arn: str) -> str:
    """The execution's name of its ARN (ValueError for anything else)."""
    return ExecutionArn.parse(arn).name


def resource_name(arn: str) -> str:
    """The name at the end of any ARN (ValueError for a value that is no ARN)."""
    return Arn.parse(arn).resource_name


def service_of(arn: str) -> str | None:
    """The service an ARN belongs to, or None for a value that is no ARN."""
    try:
        return Arn.parse(arn).service
    except ValueError:
        return None
