"""The checks of an approval step (``jp.approval``) against jobplane.toml, made with the job's
other checks (compiler/validate.py): its ``channel`` is one the job's team may alert (the rule
of ``notify.channels``: its own channel and ``[teams.<team>] notify_channels``), and each of its
``approvers`` is a team jobplane.toml declares or a person (a name with ``@``, as the portal's
users are: docs/portal.md), so a typo cannot leave a run waiting for a team nobody is in."""

from __future__ import annotations

from jobplane.compiler.kinds.approval import ApprovalKind
from jobplane.compiler.model import Job
from jobplane.compiler.problems import Problem
from jobplane.contract.config import PlatformConfig
from jobplane.contract.quoting import quoted


def approval_problems(source: str, job: Job, config: PlatformConfig) -> list[Problem]:
    out: list[Problem] = []
    for i, step in enumerate(job.steps):
        if not isinstance(step.kind_, ApprovalKind) or step.target is None:
            continue
        spec, where = step.target, f"steps[{i}].approval"
        team = config.teams.get(job.team)
        if spec.channel and team is not None and not team.may_notify(spec.channel):
            allowed = [c for c in (team.channel, *team.notify_channels) if c]
            out.append(Problem(source, job.name, f"{where}.channel",
                               f"team {quoted(job.team)} may not send to {quoted(spec.channel)}: its jobs alert "
                               f"{', '.join(map(quoted, allowed)) or 'its default channel only'} (add it to "
                               f"[teams.{job.team}] notify_channels in jobplane.toml)"))
        for j, approver in enumerate(spec.approvers):
            if config.teams and approver not in config.teams and "@" not in approver:
                out.append(Problem(source, job.name, f"{where}.approvers[{j}]",
                                   f"{quoted(approver)} is neither a team of jobplane.toml "
                                   f"({', '.join(sorted(config.teams))}) nor a person (a name with @)"))
    return out
