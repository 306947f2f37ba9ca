"""How much of each AWS quota (contract/quotas.py) one deployment uses: the resources the
compiled roots create plus those of the base module, each role's inline policy size, and what
the jobs run at once.

Resources are counted from the compiled files, not estimated from the jobs, so whatever the
compiler emits (the teams' shared roles, compiler/shared_roles.py) is what is counted. The base
module's resources are counted from its HCL with every optional part (the portal, VPC
endpoints) present: an upper bound, said as such.

What runs at once (Fargate vCPU, network interfaces, Lambda executions, open Map Runs) is
measured from the jobs' steps (:func:`peak`): a job's steps run one after another, a parallel
group's members together, a map's each step ``max_concurrency`` at a time. Each concurrent
quota is given two figures: the busiest single job's peak, which is an error past the quota (that
job can never run at its full width: its launches fail and wait as infrastructure retries
until the budget runs out), and every job at its peak at once, an upper bound that is only a
warning (jobs rarely all peak together; one run of each job, a policy that lets runs overlap
can use more).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jobplane.compiler.peak import Peak
from jobplane.contract.quotas import BY_KEY, QUOTAS, ROLE_INLINE_POLICY_CHARS, WARN_AT, Quota

if TYPE_CHECKING:
    from jobplane.compiler.model import Job, Step

_RESOURCE_RE = re.compile(r'^resource\s+"([a-z0-9_]+)"\s+"[^"]+"', re.M)


@dataclass(frozen=True)
class Use:
    """One quota's use. For a concurrent quota ``used`` is the busiest job's peak (``busiest``
    names it) and ``together`` every job's peak at once."""

    quota: Quota
    used: float
    limit: int
    together: float | None = None
    busiest: str | None = None

    @property
    def share(self) -> float:
        return self.used / self.limit if self.limit else 0.0

    @property
    def level(self) -> str:
        if self.used > self.limit:
            return "error"
        together = self.together if self.together is not None else self.used
        return "warning" if self.share >= WARN_AT or together >= WARN_AT * self.limit else "ok"

    def line(self) -> str:
        q = self.quota
        raised = "" if self.limit == q.default else f" (raised from {q.default:,})"
        if self.together is None:
            text = f"{q.what}: {_n(self.used)} of {self.limit:,}{raised}, {self.share:.0%} {q.scope}"
        else:
            text = (f"{q.what}: {_n(self.used)} {q.unit} at once at the busiest job's peak"
                    f"{f' ({self.busiest})' if self.busiest else ''}, {_n(self.together)} if every job peaked "
                    f"together, of {self.limit:,}{raised}, {self.share:.0%} {q.scope}")
        if self.level != "ok":
            text += f"; {q.how_to_raise}"
        return text


def _n(value: float) -> str:
    return f"{value:,.2f}".rstrip("0").rstrip(".") if value != int(value) else f"{int(value):,}"


def step_peak(step: Step) -> Peak:
    """What ``step`` runs at once: an ECS task's cpu (Fargate CPU units / 1,024) and interface,
    a Lambda invocation, a parallel group's members together, a map's items step and then its
    each step ``max_concurrency`` at a time in one open Map Run."""
    from jobplane.compiler.kinds import GroupKind

    if isinstance(step.kind, GroupKind):  # what its members run at once, as its kind says
        return step.kind.peak(step, step_peak)
    attempt = step.kind.executor.peak(step)  # an attempt: as the place it runs says
    if step.pool is None:
        return attempt
    return attempt + Peak(pools=((step.pool.name, step.pool.weight),))  # and the slots it holds


def job_peak(job: Job) -> Peak:
    """A run's peak: its steps run one after another, so each quota's largest step."""
    peak = Peak()
    for step in job.steps:
        peak = peak.most(step_peak(step))
    return peak


def concurrent_usage(jobs: Sequence[Job], raised: dict[str, int]) -> list[Use]:
    """Each concurrent quota: the busiest job's peak (an error past the quota) and every job's
    peak together (a warning from 80%)."""
    peaks = [(job.name, job_peak(job)) for job in jobs]
    out = []
    for q in QUOTAS:
        if q.measure != "concurrent":
            continue
        busiest = max(peaks, key=lambda p: p[1].of(q.key), default=None)
        used = busiest[1].of(q.key) if busiest else 0.0
        out.append(Use(q, used, raised.get(q.key, q.default), together=sum(p[1].of(q.key) for p in peaks),
                       busiest=busiest[0] if busiest and used else None))
    return out


def base_module_resources(module_dir: Path) -> Counter[str]:
    """Resource types the hand-written base module declares, once each (count taken as one: its
    optional parts are counted as present; the one for_each that grows, the published
    parameters, by its keys)."""
    from jobplane.contract.published import PUBLISHED

    counts: Counter[str] = Counter()
    for tf in sorted(module_dir.glob("*.tf")):
        counts.update(_RESOURCE_RE.findall(tf.read_text()))
    # the published parameters are one resource with for_each over contract/published.py's keys
    counts["aws_ssm_parameter"] += len(PUBLISHED) - 1
    return counts


def compiled_resources(files: dict[str, str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for rel, text in files.items():
        if rel.endswith(".tf.json"):
            for kind, blocks in json.loads(text).get("resource", {}).items():
                counts[kind] += len(blocks)
    return counts


def usage(files: dict[str, str], module_dir: Path | None, raised: dict[str, int],
          jobs: Sequence[Job] = ()) -> list[Use]:
    counts = compiled_resources(files)
    if module_dir is not None and module_dir.is_dir():
        counts += base_module_resources(module_dir)
    return [Use(q, sum(counts[r] for r in q.resources), raised.get(q.key, q.default)) for q in QUOTAS
            if q.measure == "resources"] + concurrent_usage(jobs, raised)


def oversized_roles(files: dict[str, str]) -> list[tuple[str, str, int]]:
    """(file, role, characters) of every compiled role whose inline policies exceed IAM's limit,
    each policy measured as compiler/shared_roles.py packs them: rendered as the
    aws_iam_policy_document data source does, whitespace not counted, every interpolation at
    its longest (a task definition's family read from its root's files)."""
    from jobplane.compiler.shared_roles import policy_chars
    from jobplane.contract import layout

    # only the files that hold inline policies, and those that name a task definition family
    # a policy may name, are read (a 5,000-job output is gigabytes of parsed JSON otherwise)
    docs = {rel: json.loads(text) for rel, text in sorted(files.items())
            if rel.endswith(".tf.json") and '"aws_iam_role_policy"' in text}
    resources: dict[str | None, dict[str, dict[str, object]]] = {}
    for rel, text in files.items():
        if rel.endswith(".tf.json") and '"aws_ecs_task_definition"' in text:
            families = json.loads(text).get("resource", {}).get("aws_ecs_task_definition", {})
            resources.setdefault(layout.root_of(rel), {}).setdefault("aws_ecs_task_definition", {}).update(families)
    out = []
    for rel, doc in docs.items():
        policy_docs = doc.get("data", {}).get("aws_iam_policy_document", {})
        sizes: Counter[str] = Counter()
        for policy in doc.get("resource", {}).get("aws_iam_role_policy", {}).values():
            role = str(policy["role"]).split(".")[1]
            source = str(policy["policy"]).split(".")[2]
            sizes[role] += policy_chars(policy_docs.get(source, {}).get("statement", []),
                                        resources.get(layout.root_of(rel), {}))
        out += [(rel, role, n) for role, n in sizes.items() if n > ROLE_INLINE_POLICY_CHARS]
    return out


def unknown_quota_keys(raised: dict[str, int]) -> list[str]:
    return sorted(set(raised) - set(BY_KEY))
