"""How much of each AWS quota (contract/quotas.py) one deployment uses: the resources the
compiled roots create plus those of the base module, and each role's inline policy size.

Counted from the compiled files, not estimated from the jobs, so whatever the compiler emits
(the teams' shared roles, compiler/shared_roles.py) is what is counted. The base module's resources
are counted from its HCL with every optional part (the portal, VPC endpoints) present: an
upper bound, said as such.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from jobplane.contract.quotas import BY_KEY, QUOTAS, ROLE_INLINE_POLICY_CHARS, WARN_AT, Quota

_RESOURCE_RE = re.compile(r'^resource\s+"([a-z0-9_]+)"\s+"[^"]+"', re.M)


@dataclass(frozen=True)
class Use:
    quota: Quota
    used: int
    limit: int

    @property
    def share(self) -> float:
        return self.used / self.limit if self.limit else 0.0

    @property
    def level(self) -> str:
        return "error" if self.used > self.limit else "warning" if self.share >= WARN_AT else "ok"

    def line(self) -> str:
        q = self.quota
        raised = "" if self.limit == q.default else f" (raised from {q.default:,})"
        text = f"{q.what}: {self.used:,} of {self.limit:,}{raised}, {self.share:.0%} {q.scope}"
        if self.level != "ok":
            text += f"; {q.how_to_raise}"
        return text


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


def usage(files: dict[str, str], module_dir: Path | None, raised: dict[str, int]) -> list[Use]:
    counts = compiled_resources(files)
    if module_dir is not None and module_dir.is_dir():
        counts += base_module_resources(module_dir)
    return [Use(q, sum(counts[r] for r in q.resources), raised.get(q.key, q.default)) for q in QUOTAS]


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
