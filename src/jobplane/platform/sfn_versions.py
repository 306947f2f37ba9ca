"""The Step Functions versions of the jobs' state machines (issue 69 part 1): which one a deploy
published, and pruning them before the quota.

Each deploy that changes a job's state machine publishes a version of it: the compiled
Terraform's ``publish = true`` (CreateStateMachine and UpdateStateMachine with ``publish``),
`jobplane dev` the same calls (platform/local/engine.py ``deploy``). A version is "a numbered,
immutable snapshot of a state machine" that StartExecution can start by its ARN
(https://docs.aws.amazon.com/step-functions/latest/dg/concepts-state-machine-version.html), so a
re-run of a run of an older definition runs that definition's steps, not the deployed ones
(platform/control/runs.py ``rerun_definition``): the definitions store records each definition's
version beside it (platform/definitions.py).

Schedules and ``after`` rules keep the unqualified ARN (the latest revision), and no alias is
created. An alias the schedules targeted would always point at the newest version, which is
what the unqualified ARN runs, so it would add a resource and a step to every deploy for
nothing; and EventBridge Scheduler's templated Step Functions target is documented with the
state machine's ARN ("you need to specify ... the ARN for target resource",
https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-templated.html), no AWS
document saying it takes a version or alias ARN (its universal target calls an API with the
input as its parameters, https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-universal.html,
and would lose the templated target's input handling jobplane relies on). A fire runs what is
deployed; versions exist for re-runs.

A state machine holds at most 1,000 versions ("You can publish up to 1000 versions for each
state machine. You must manually delete unused versions",
https://docs.aws.amazon.com/step-functions/latest/apireference/API_PublishStateMachineVersion.html):
past it a deploy's publish fails. :class:`VersionPruning`, in the periodic pass, deletes versions
of a machine holding more than ``PRUNE_ABOVE``; it keeps the newest ``KEEP_NEWEST``, every
version a RUNNING execution started (ListExecutions' ``stateMachineVersionArn``; a delete "won't
terminate its in-progress executions",
https://docs.aws.amazon.com/step-functions/latest/apireference/API_DeleteStateMachineVersion.html,
but jobplane never takes one from under a run), and every version a run still in the records
could have run (one published within ``execution_retention_days``, and the newest one before
that window: the one deployed when it opened), while that keeps the count within
``PRUNE_ABOVE``; past that the oldest of those go first. A re-run of a run whose version was
pruned is refused, naming ``--current`` (platform/control/runs.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from jobplane.contract.types import Client

log = logging.getLogger(__name__)

#: a token of a compiled ASL (contract/bindings.py), its name captured
_TOKEN = re.compile(r"<<jobplane:([a-z_]+)>>")

#: A machine holding more versions than this is pruned (AWS's quota: 1,000; the margin leaves
#: room for deploys between two passes).
PRUNE_ABOVE = 900
#: The newest versions always kept.
KEEP_NEWEST = 100
#: How many machines one periodic pass looks at (their versions listed: one call each, two with
#: its running executions): the catalog is walked a slice per pass, so at 5,000 jobs each machine
#: is looked at every 25 passes (~2 hours at 5 minutes), when 100 deploys of one job would be
#: needed to go from 900 versions to the quota.
PER_PASS = 200


@dataclass(frozen=True)
class Version:
    arn: str
    created: datetime


def versions(sfn: Client, machine_arn: str) -> list[Version]:
    """Every version of ``machine_arn``, newest first (ListStateMachineVersions' order: "sorted
    in descending order of the version creation time")."""
    out: list[Version] = []
    token: str | None = None
    while True:
        page = sfn.list_state_machine_versions(stateMachineArn=machine_arn, maxResults=1000,
                                               **({"nextToken": token} if token else {}))
        out += [Version(v["stateMachineVersionArn"], _utc(v["creationDate"])) for v in page["stateMachineVersions"]]
        token = page.get("nextToken")
        if not token:
            return out


def holds(asl: str, definition: str) -> bool:
    """True if ``definition`` (a deployed one: Terraform bound each token to a value) is the
    compiled ``asl`` (tokens included, contract/bindings.py), whatever its tokens were bound to:
    the text between tokens equal, each token a plain JSON string fragment."""
    parts = _TOKEN.split(asl)
    pattern = "".join(re.escape(part) if i % 2 == 0 else r'[^"\\]*' for i, part in enumerate(parts))
    return re.fullmatch(pattern, definition, flags=re.DOTALL) is not None


def published_version(sfn: Client, machine_arn: str, asl: str, looked_at: int = 3) -> str | None:
    """The version of ``machine_arn`` that holds the compiled ``asl``: the newest that does among
    its newest ``looked_at`` (None: none does, a definition compiled but not applied, or applied
    before versions were published). What `jobplane record-definitions` records beside a new
    definition."""
    try:
        page = sfn.list_state_machine_versions(stateMachineArn=machine_arn, maxResults=looked_at)
    except sfn.exceptions.StateMachineDoesNotExist:
        return None
    for listed in page.get("stateMachineVersions") or []:
        arn: str = listed["stateMachineVersionArn"]
        if holds(asl, sfn.describe_state_machine(stateMachineArn=arn).get("definition", "")):
            return arn
    return None


def running_versions(sfn: Client, machine_arn: str) -> set[str]:
    """The versions the machine's RUNNING executions were started on: one listing of the
    machine's RUNNING executions, each item's ``stateMachineVersionArn`` ("The Amazon Resource
    Name (ARN) of the state machine version associated with the execution",
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_ExecutionListItem.html),
    not one listing per version (ListExecutions also takes a version ARN: API_ListExecutions)."""
    used: set[str] = set()
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=machine_arn, statusFilter="RUNNING"):
        used.update(e["stateMachineVersionArn"] for e in page["executions"] if e.get("stateMachineVersionArn"))
    return used


def to_delete(held: list[Version], running: set[str], rerunnable_since: datetime,
              prune_above: int = PRUNE_ABOVE, keep_newest: int = KEEP_NEWEST) -> list[str]:
    """Which of ``held`` (newest first) to delete, oldest first: nothing while they are at most
    ``prune_above``; then every one not kept (the newest ``keep_newest``, the ``running``, those a
    run since ``rerunnable_since`` could have run), and, if that still leaves more than
    ``prune_above``, the oldest of the re-runnable ones until it does not (never a running one,
    nor one of the newest)."""
    if len(held) <= prune_above:
        return []
    newest = {v.arn for v in held[:keep_newest]}
    before = [v for v in held if v.created < rerunnable_since]
    rerunnable = {v.arn for v in held if v.created >= rerunnable_since} | {v.arn for v in before[:1]}
    oldest_first = list(reversed(held))
    going = [v.arn for v in oldest_first if v.arn not in newest | running | rerunnable]
    left = len(held) - len(going)
    for v in oldest_first:
        if left <= prune_above:
            break
        if v.arn in rerunnable and v.arn not in newest | running:
            going.append(v.arn)
            left -= 1
    order = {v.arn: i for i, v in enumerate(oldest_first)}
    return sorted(going, key=order.__getitem__)


class VersionPruning:
    """The periodic pass's pruning (module docstring): a slice of the jobs' machines per pass."""

    def __init__(self, sfn: Client, machine_arns: Callable[[], Iterable[str]], retention_days: int,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc), per_pass: int = PER_PASS,
                 prune_above: int = PRUNE_ABOVE, keep_newest: int = KEEP_NEWEST):
        self.sfn, self.machine_arns, self.retention_days = sfn, machine_arns, retention_days
        self.clock, self.per_pass = clock, per_pass
        self.prune_above, self.keep_newest = prune_above, keep_newest
        self._next = 0  # where the next pass's slice starts (a Lambda's: from the clock)

    def slice(self, arns: list[str]) -> list[str]:
        """This pass's machines: the next ``per_pass`` of the sorted list, wrapping around. A
        fresh process (a Lambda's cold start) starts where the clock's 5-minute pass count puts
        it, so the slices go round without remembering anything."""
        if len(arns) <= self.per_pass:
            return arns
        if self._next == 0:
            self._next = int(self.clock().timestamp() // 300) * self.per_pass % len(arns)
        start, self._next = self._next, (self._next + self.per_pass) % len(arns)
        return (arns + arns)[start:start + self.per_pass]

    def check(self) -> list[str]:
        """Prune this pass's machines; the version ARNs deleted."""
        since = self.clock() - timedelta(days=self.retention_days)
        deleted: list[str] = []
        for machine in self.slice(sorted(self.machine_arns())):
            try:
                held = versions(self.sfn, machine)
                if len(held) <= self.prune_above:
                    continue
                for arn in to_delete(held, running_versions(self.sfn, machine), since, self.prune_above,
                                     self.keep_newest):
                    self.sfn.delete_state_machine_version(stateMachineVersionArn=arn)
                    deleted.append(arn)
            except self.sfn.exceptions.StateMachineDoesNotExist:
                continue  # removed since the catalog listed it
        if deleted:
            log.info("pruned %d state machine versions", len(deleted))
        return deleted


def _utc(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return datetime.fromisoformat(str(value)).astimezone(timezone.utc)
