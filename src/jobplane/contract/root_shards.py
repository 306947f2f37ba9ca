"""Which Terraform root holds a job: its team's, or, for a team that splits its root into
shards (``[teams.<team>] roots = N`` in jobplane.toml), one of ``teams/<team>.<k>/``.

A team's root grows with its jobs: at thousands of jobs one root's plan reads every state
machine, role and schedule of the team, and a team that owns most of a company's jobs makes one
root most of the deployment. Split into N roots, a one-job change still plans one root, a
smaller one. A job's shard is a function of its name and N alone (a digest of the name, modulo
N): adding, removing or changing other jobs never moves it, and a job moves between roots only
when N changes (its resources are then destroyed in one root and created in the other, as a
job moved between teams; docs/deploy.md). A team of one root keeps ``teams/<team>/`` (the
layout before shards, unchanged). The shard's name holds a '.', which a team's name cannot
(config.TEAM_RE): no shard's directory, state key or catalog object is another team's.
"""

from __future__ import annotations

import hashlib

#: The most roots one team may split into.
MAX_ROOTS = 64


def shard_of(job: str, roots: int) -> int:
    """The job's shard among ``roots``: stable across runs, machines and Python versions."""
    if roots <= 1:
        return 0
    return int.from_bytes(hashlib.sha256(job.encode()).digest()[:8], "big") % roots


def root_name(team: str, shard: int, roots: int) -> str:
    """The name of a team's root: the team's own name for one root, ``<team>.<k>`` for a shard.
    It is what contract/layout.py's ``team_root`` and ``job_file`` take, what the root's state
    key fills ``{team}`` with and what its catalog object is named after."""
    return team if roots <= 1 else f"{team}.{shard}"


def root_names(team: str, roots: int) -> list[str]:
    """Every root of a team (each written, also with no job: removing its last job destroys
    its resources there)."""
    return [root_name(team, k, roots) for k in range(max(roots, 1))]


def job_root_name(team: str, job: str, roots: int) -> str:
    return root_name(team, shard_of(job, roots), roots)
