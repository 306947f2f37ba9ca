"""IAM roles per team, shared by the jobs whose grants are identical (issue 54 item 1).

Why: a role per job and per purpose made 2 roles a job, and an AWS account holds 1,000 roles by
default ("Roles per account", IAM and AWS STS quotas,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html): applies failed
from about 500 jobs. Here every job's roles are still built as before (compiler/terraform.py and
each executor's statements: what a job needs, nothing else), and then grouped:

- a job's **grant** for a role is its inline policies with the job's *own* names (its state
  machine, its executions, its task definition family, its runner function and log group, its
  ``JOB#`` record; all derived from its name, contract/names.py) taken out, plus the role's trust
  policy and managed policy attachments; for a role that reads the secrets of a job of
  ``secret_scope: 'team'`` (the default; terraform_iam.SECRET_SCOPE_TAG), its secrets and
  parameters too (issue 62 finding 5: a role per job whose secrets were its own made ~600 roles
  per 1,000 jobs of a realistic mix). Everything else (a job-scoped job's secrets, the
  platform's table, topic and cluster, the roles it passes) stays in the grant as it is;
- the jobs of one team whose grants for a role of one kind are **identical** share one role, whose
  policy is the union of their policies: the same statements, each listing every member's own
  names (and team-scoped secrets). A job reaches no role that it does not pass itself, and no
  secret that neither it nor (team scope) a team-mate declares; what it shares with its
  team-mates is the reach to their platform-owned resources of the same kind (their records,
  state machines, runner functions), which only compiled ASL ever calls, and with team scope
  the secrets they declare (never another team's: compiler/secret_scope.py);
- a role's inline policies may hold 10,240 characters in all, whitespace not counted, and a
  managed policy 6,144; neither can be raised ("IAM and STS character limits", same page). A
  group is packed into as many roles as its size needs (by job name, each role under the limit
  by an upper-bound estimate of the rendered policy); a job whose own grant alone is over the
  limit is refused with its file and job named.

Each job's file keeps its own policy documents (``data.aws_iam_policy_document.<job>_<kind>``:
what that job alone needs, which ``jobplane plan`` compares) and names its shared roles; the
shared roles are in the team root's ``roles.tf.json``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from jobplane.compiler.problems import DefinitionError, Problem
from jobplane.compiler.terraform_iam import SECRET_SCOPE_TAG, SECRET_SIDS
from jobplane.contract import datamodel as dm
from jobplane.contract import map_items, names, progress
from jobplane.contract.quotas import ROLE_INLINE_POLICY_CHARS
from jobplane.contract.types import JsonObject

#: The team root's file holding its shared roles.
ROLES_FILE = "roles.tf.json"
#: Terraform ids of the shared roles: ``team_role_<kind>_<digest>_<n>``.
ROLE_ID_PREFIX = "team_role_"
#: What a job's own name becomes in its grant.
OWN = "<<job>>"
#: What the secrets of a role of team scope become in its grant (terraform_iam.SECRET_SCOPE_TAG).
TEAM_SECRETS = "<<the team's secrets>>"
#: The tag on a shared role naming its kind (sfn, scheduler, after, exec, lambda, ...).
KIND_TAG = "jobplane:role"
KIND_WORDS = {"sfn": "Step Functions", "scheduler": "EventBridge Scheduler", "after": "EventBridge (after rules)",
              "exec": "ECS task execution", "lambda": "Lambda runner function",
              "task": "ECS task"}  # the steps' own role, scoped to its jobs' progress (compiler/task_roles.py)
#: The kinds a state machine passes by name patterns (contract/names.py team_role_patterns).
PATTERN_PASSED = ("exec", "task")

# Upper bounds of what an interpolation renders to, for the size estimate (IAM counts the policy
# as AWS stores it, with every value resolved): partitions ("aws-us-gov"), regions (14 at most
# today), a 12-digit account; a published name or ARN of the base module, any other reference.
_UPPER = {"data.aws_partition.current.partition": 10, "data.aws_region.current.region": 16,
          "data.aws_caller_identity.current.account_id": 12}
_ROLE_ARN_UPPER = len("arn:aws-us-gov:iam::123456789012:role/") + 64
_OTHER_UPPER = 256
_REF = re.compile(r"(?<!\$)\$\{([^}]+)\}")
_ROLE_REF = re.compile(r"aws_iam_role\.([A-Za-z0-9_]+)\.")


@lru_cache(maxsize=8)
def _derived_name(prefix: str) -> re.Pattern[str]:
    """A name the platform derives from a job's name, in the ARNs where a job's own resources
    are named (never a secret's or a parameter's name: a shared secret named like a job must
    not make two jobs' grants look alike)."""
    return re.compile(r"(:stateMachine:|:execution:|:function:|:log-group:/aws/lambda/|:task-definition/)"
                      + re.escape(prefix) + r"-([a-z0-9-]+)")


_RESOURCE_ID = re.compile(r"(\$\{aws_[a-z0-9_]+\.)([A-Za-z0-9_]+)")


def _abstract(value: str, prefix: str, job: str, tid: str) -> str:
    """``value`` with the job's own name taken out where it names the job's own resources: its
    state machine, executions, runner function and log group, task definition family (by name
    or by its Terraform id) and its ``JOB#`` record.

    Each of those names holds the job's name or its Terraform id, so a value holding neither is
    itself, told before the tests below (~40 values a job; share ~3% less CPU with this alone,
    5,000 jobs, one process)."""
    if job not in value and tid not in value:
        return value
    if value == dm.job_partition(job):
        return dm.job_partition(OWN)
    if value.startswith(progress.PK_PREFIX) and value == progress.job_keys(job):
        return progress.job_keys(OWN)  # its runs' progress records (compiler/task_roles.py, terraform_iam.py)
    if value.endswith(f"/{map_items.ITEMS_PREFIX}{job}/*"):  # its map lists (compiler/task_roles.py)
        return value[:-len(f"{job}/*")] + f"{OWN}/*"

    def derived(m: re.Match[str]) -> str:
        name = m[2]
        if name == job or name.startswith(job + "-"):
            return f"{m[1]}{prefix}-{OWN}{name[len(job):]}"
        return m[0]

    def resource_id(m: re.Match[str]) -> str:
        rid = m[2]
        if rid == tid or rid.startswith(tid + "_"):
            return f"{m[1]}{OWN}{rid[len(tid):]}"
        return m[0]

    if prefix in value:
        value = _derived_name(prefix).sub(derived, value)
    if "${aws_" in value:
        value = _RESOURCE_ID.sub(resource_id, value)
    return value


def _values(st: JsonObject) -> list[tuple[str, int]]:
    """Every resource and condition value of a statement, with where it is (-1: resources)."""
    out = [(str(r), -1) for r in st.get("resources", [])]
    for i, cond in enumerate(st.get("condition", []) or []):
        out += [(str(v), i) for v in cond["values"]]
    return out


def _map_values(st: JsonObject, f: dict[str, str]) -> JsonObject:
    new = dict(st)
    if "resources" in st:
        new["resources"] = [f.get(r, r) for r in st["resources"]]
    if st.get("condition"):
        new["condition"] = [{**c, "values": [f.get(v, v) for v in c["values"]]} for c in st["condition"]]
    return new


@dataclass(eq=False)  # one grant is one job's role: compared by identity
class _Grant:
    """One job's role of one kind: its inline policies, trust policy and attachments."""

    job: str
    rid: str  # its per-job Terraform id, <tid>_<kind>
    kind: str
    role: JsonObject
    policies: list[tuple[str, str, list[JsonObject]]]  # (policy resource id, inline policy name, statements)
    trust: JsonObject
    attachments: list[tuple[str, str]]  # (id suffix after the role id, policy ARN)
    shape: str = ""
    own: list[str] = field(default_factory=list)  # the values that are the job's own names
    refs: set[str] = field(default_factory=set)  # the per-job role ids its statements name
    alone: int = -1  # policy_chars of its policies (-1: not yet known)
    grow: int = 0  # what its own values add to a shared role's policies (value_chars + 5 each)


#: job -> per-job role id -> (shape, alone, grow) of its grants that name no other role of the
#: job (:func:`share`'s ``known``): each is a function of the job's document and the prefix alone
GrantMemo = dict[str, dict[str, tuple[str, int, int]]]


@dataclass(frozen=True)
class SharedRoles:
    """A team's shared roles: the rewritten job documents and the roles file's document."""

    jobs: Mapping[str, JsonObject]  # made when first asked for (_Rewritten)
    roles: JsonObject | None  # None: the team has no job
    membership: dict[str, dict[str, str]]  # job -> kind -> shared role's name


def value_chars(value: str, resources: dict[str, JsonObject]) -> int:
    """An upper bound of the length ``value`` has once Terraform has resolved it."""
    total = len(value)
    for m in _REF.finditer(value):
        total += _ref_chars(m[1], resources) - len(m[0])
    return total


#: :func:`_ref_chars` of each reference whose bound is a constant (all but a task definition's
#: family, which is read from the resources).
_REF_CHARS: dict[str, int] = {}


def _ref_chars(ref: str, resources: dict[str, JsonObject]) -> int:
    """The upper bound of what ``${ref}`` resolves to. Kept by the reference where it is a
    constant: the same ~15 references are in every job's policies (~12 in each policy measured,
    ~35 a job), each split and tested again (~0.1 ms a job of its root's files, CPU)."""
    size = _REF_CHARS.get(ref)
    if size is not None:
        return size
    parts = ref.split(".")
    if parts[0] == "aws_ecs_task_definition" and len(parts) == 3 and parts[2] == "family" and ref not in _UPPER:
        return len(str(resources.get("aws_ecs_task_definition", {}).get(parts[1], {}).get("family", "")
                       or "x" * _OTHER_UPPER))
    if ref in _UPPER:
        size = _UPPER[ref]
    elif parts[0] == "aws_iam_role" and len(parts) == 3 and parts[2] == "arn":
        size = _ROLE_ARN_UPPER
    else:
        size = _OTHER_UPPER
    if len(_REF_CHARS) < 4096:  # role and job ids are in references too: bounded
        _REF_CHARS[ref] = size
    return size


def policy_chars(statements: list[JsonObject], resources: dict[str, JsonObject] | None = None) -> int:
    """An upper bound of an inline policy's size as IAM counts it: the JSON the
    aws_iam_policy_document data source renders (a list of one as its one string), without
    whitespace, every interpolation at its longest (:func:`value_chars`)."""
    res = resources or {}
    rendered = []
    for st in statements:
        doc: JsonObject = {"Sid": st.get("sid", ""), "Effect": st.get("effect", "Allow"),
                           "Action": st.get("actions", [])}
        if "resources" in st:
            doc["Resource"] = st["resources"]
        for cond in st.get("condition", []) or []:
            doc.setdefault("Condition", {}).setdefault(cond["test"], {})[cond["variable"]] = cond["values"]
        rendered.append(doc)
    text = json.dumps({"Version": "2012-10-17", "Statement": rendered}, separators=(",", ":"))
    # its length without whitespace: json.dumps (ensure_ascii) escapes every control and
    # non-ASCII character, so a space is the only whitespace the text can hold (a count, not
    # a regular expression's copy of the text: ~2 policies a job)
    size = len(text) - text.count(" ")
    for m in _REF.finditer(text):  # each interpolation at its longest (value_chars of the match alone)
        size += _ref_chars(m[1], res) - len(m[0])
    return size


def _renamed(value: Any, moved: dict[str, str]) -> Any:
    """A copy of ``value`` with each per-job role id in ``moved`` replaced by its shared role's,
    wherever a string names it (``${aws_iam_role.<id>.arn}``); strings that name no role (the
    state machine's definition) are kept as they are, not copied."""
    if isinstance(value, str):
        if "aws_iam_role." not in value:
            return value
        return _ROLE_REF.sub(lambda m: f"aws_iam_role.{moved.get(m[1], m[1])}.", value)
    if isinstance(value, list):
        return [_renamed(v, moved) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, moved) for k, v in value.items()}
    return value


def _rename_text(text: str, moved: dict[str, str]) -> str:
    return _ROLE_REF.sub(lambda m: f"aws_iam_role.{moved.get(m[1], m[1])}.", text)


def _grants(job: str, doc: JsonObject) -> list[_Grant]:
    resource = doc.get("resource", {})
    docs = doc.get("data", {}).get("aws_iam_policy_document", {})
    tid = names.tf_id(job)
    out = []
    for rid, role in resource.get("aws_iam_role", {}).items():
        # the statements as the document holds them: nothing here changes them in place (a
        # renamed or merged statement is a new object: _renamed, _map_values, _merge), so they
        # are not copied; their text tells which of the job's roles they name
        policies = [(pid, str(p["name"]), docs[_doc_id(p["policy"])]["statement"])
                    for pid, p in sorted(resource.get("aws_iam_role_policy", {}).items())
                    if p["role"] == f"${{aws_iam_role.{rid}.id}}"]
        text = json.dumps(policies)
        attachments = [(aid.removeprefix(rid), str(a["policy_arn"]))
                       for aid, a in sorted(resource.get("aws_iam_role_policy_attachment", {}).items())
                       if a["role"] == f"${{aws_iam_role.{rid}.name}}"]
        out.append(_Grant(job, rid, rid.removeprefix(f"{tid}_") if rid.startswith(f"{tid}_") else "job",
                          role, policies, docs[_doc_id(role["assume_role_policy"])], attachments,
                          refs=set(_ROLE_REF.findall(text))))
    return out


_DOC_REF = re.compile(r"\$\{data\.aws_iam_policy_document\.([A-Za-z0-9_]+)\.json\}")


def _doc_id(ref: str) -> str:
    m = _DOC_REF.fullmatch(ref)
    assert m, ref
    return m[1]


def _scope(g: _Grant) -> str:
    """Whose secrets a role reads (terraform_iam.SECRET_SCOPE_TAG): 'team', 'job', or '' (none)."""
    return str(g.role.get("tags", {}).get(SECRET_SCOPE_TAG, ""))


def _shape(g: _Grant, prefix: str) -> None:
    tid = names.tf_id(g.job)
    abstract_policies = []
    own: list[str] = []
    team_secrets = _scope(g) == "team"
    for _, name, statements in g.policies:
        abstracted = []
        for st in statements:
            if team_secrets and st.get("sid") in SECRET_SIDS:
                # team scope: the secrets are the member's own values, merged into the role's
                # statement with its team-mates' (however many each declares)
                own += [str(r) for r in st["resources"]]
                abstracted.append({**st, "resources": [TEAM_SECRETS]})
                continue
            mapping = {}
            for v, _ in _values(st):
                a = _abstract(v, prefix, g.job, tid)
                if a != v:
                    mapping[v] = a
                    own.append(v)
            abstracted.append(_map_values(st, mapping))
        abstract_policies.append((name, abstracted))
    g.own = own
    g.shape = json.dumps({"kind": g.kind, "policies": abstract_policies, "trust": g.trust,
                          "attachments": g.attachments, **({"secrets": _scope(g)} if _scope(g) else {})},
                         sort_keys=True, separators=(",", ":"))


def _merge(members: list[_Grant]) -> list[list[JsonObject]]:
    """The union of identical grants: each statement with every member's values, in order."""
    merged = [[json.loads(json.dumps(st)) for st in statements] for _, _, statements in members[0].policies]
    for g in members[1:]:
        for p, (_, _, statements) in enumerate(g.policies):
            for s, st in enumerate(statements):
                target = merged[p][s]
                if "resources" in st:
                    target["resources"] += [r for r in st["resources"] if r not in target["resources"]]
                for c, cond in enumerate(st.get("condition", []) or []):
                    values = target["condition"][c]["values"]
                    values += [v for v in cond["values"] if v not in values]
    return merged


def _role_name(prefix: str, team: str, kind: str, digest: str, n: int) -> str:
    return names.team_role_name(prefix, team, kind, digest, n)


def share(team: str, prefix: str, docs: dict[str, JsonObject], sources: dict[str, str],
          limit: int = ROLE_INLINE_POLICY_CHARS, root: str | None = None,
          known: GrantMemo | None = None) -> SharedRoles:
    """Group the roles of a team's jobs (``docs``: job -> its document as terraform.job_module
    built it) into shared roles. Raises DefinitionError naming each job whose own grant alone
    is over ``limit``.

    ``known`` (`jobplane dev`'s memory, compiler/root_memo.py): for a job listed there, the
    shape, size and growth of each of its grants that names no other role of the job, as an
    earlier share of the same document computed them (the caller lists a job only under its
    document's key); the others' are computed and added to it. A grant that names another of
    the job's roles is shaped after that one's shared role is named, which depends on its
    team-mates, so it is never taken from there."""
    if not docs:
        return SharedRoles({}, None, {})
    pending = {job: _grants(job, doc) for job, doc in docs.items()}
    resources: dict[str, JsonObject] = {}
    for doc in docs.values():
        for kind, blocks in doc.get("resource", {}).items():
            resources.setdefault(kind, {}).update(blocks)
    out_docs: JsonObject = {}
    out_roles: JsonObject = {}
    out_policies: JsonObject = {}
    out_attachments: JsonObject = {}
    moved: dict[str, dict[str, str]] = {job: {} for job in docs}  # job -> per-job role id -> shared role id
    membership: dict[str, dict[str, str]] = {job: {} for job in docs}
    problems: list[Problem] = []
    while any(pending.values()):
        # a role whose statements name another of the job's roles (the state machine's passes
        # the task execution role) is grouped once that one has its shared id
        ready: list[_Grant] = []
        for job, grants in pending.items():
            unresolved = {g.rid for g in grants}
            ready += [g for g in grants if not (g.refs & unresolved) - {g.rid}]
        if not ready:
            raise RuntimeError(f"team {team}: roles whose policies name each other cannot be grouped")
        groups: dict[tuple[str, str], list[_Grant]] = {}
        for g in ready:
            pending[g.job].remove(g)
            if moved[g.job]:  # name the shared roles already decided
                g.policies = [(a, b, _renamed(c, moved[g.job])) for a, b, c in g.policies]
            memo = known.setdefault(g.job, {}) if known is not None and not moved[g.job] and not g.refs - {g.rid} else None
            if memo is not None and g.rid in memo:
                g.shape, g.alone, g.grow = memo[g.rid]
            else:
                _shape(g, prefix)
                g.alone = sum(policy_chars(st, resources) for _, _, st in g.policies)
                g.grow = sum(value_chars(v, resources) + 5 for v in g.own)
                if memo is not None:
                    memo[g.rid] = (g.shape, g.alone, g.grow)
            groups.setdefault((g.kind, g.shape), []).append(g)
        for (kind, shape), members in sorted(groups.items()):
            members.sort(key=lambda g: g.job)
            # a team split into several roots ([teams.X] roots = N) has roles per root: each
            # root's state owns its own, so the root's name (team.k) names them
            digest = hashlib.sha256(f"{root or team}\n{shape}".encode()).hexdigest()[:names.ROLE_DIGEST_CHARS]
            chunks: list[list[_Grant]] = []
            size = 0
            for g in members:
                alone = g.alone
                if alone > limit:
                    problems.append(Problem(sources.get(g.job, g.job), g.job, None,
                                            f"its {KIND_WORDS.get(kind, kind)} role's policies would take {alone:,} "
                                            f"characters, over IAM's {limit:,} for a role, which cannot be raised "
                                            "(IAM and STS character limits): declare fewer secrets or parameters"))
                    continue
                grow = g.grow
                if chunks and size + grow <= limit:
                    chunks[-1].append(g)
                    size += grow
                else:
                    chunks.append([g])
                    size = alone
            cap = names.PATTERN_ROLES
            if kind in PATTERN_PASSED and len(chunks) > cap:
                # the state machines pass their team root's exec and task roles by patterns of one
                # and two digits (contract/names.py team_role_patterns)
                first_job = chunks[cap][0].job
                problems.append(Problem(sources.get(first_job, first_job), first_job, None,
                                        (f"team root {root or team}'s jobs declare more secrets than {cap} task execution "
                                         "roles can read" if kind == "exec" else
                                         f"team root {root or team}'s jobs need more than {cap} ECS task roles (each lists "
                                         "its jobs' progress records)") + ": split the team's jobs into more roots ([teams.<team>] roots "
                                        "in jobplane.toml)"))
                chunks = chunks[:cap]
            for n, chunk in enumerate(chunks, start=1):
                rid = f"{ROLE_ID_PREFIX}{kind}_{digest}_{n}"
                name = _role_name(prefix, root or team, kind, digest, n)
                merged = _merge(chunk)
                first = chunk[0]
                out_docs[f"{rid}_assume"] = first.trust
                for (_, policy_name, _), statements in zip(first.policies, merged):
                    pid = rid if len(merged) == 1 else f"{rid}_{policy_name}"
                    out_docs[pid] = {"statement": statements}
                    out_policies[pid] = {"name": policy_name, "role": f"${{aws_iam_role.{rid}.id}}",
                                         "policy": f"${{data.aws_iam_policy_document.{pid}.json}}"}
                assert sum(policy_chars(st, resources) for st in merged) <= limit, rid
                scope = _scope(first)
                whose = {"team": ", reading the secrets they declare", "job": ", each reading only the secrets it declares"}.get(scope, "")
                out_roles[rid] = {
                    "name": name,
                    "description": f"{KIND_WORDS.get(kind, kind)} role of jobplane team {team}'s jobs whose grants "
                                   f"are identical (group {digest}, part {n}){whose}",
                    "assume_role_policy": f"${{data.aws_iam_policy_document.{rid}_assume.json}}",
                    "tags": {"jobplane:team": team, KIND_TAG: kind, **({SECRET_SCOPE_TAG: scope} if scope else {})},
                    # a new grant is a new role: create it and move the jobs before the old one goes
                    "lifecycle": {"create_before_destroy": True},
                }
                for suffix, arn in first.attachments:
                    out_attachments[f"{rid}{suffix}"] = {"role": f"${{aws_iam_role.{rid}.name}}", "policy_arn": arn}
                for g in chunk:
                    moved[g.job][g.rid] = rid
                    membership[g.job][kind] = name
    if problems:
        raise DefinitionError(problems)
    jobs = _Rewritten(docs, moved)
    roles: JsonObject = {"data": {"aws_iam_policy_document": dict(sorted(out_docs.items()))},
                         "resource": {"aws_iam_role": dict(sorted(out_roles.items())),
                                      "aws_iam_role_policy": dict(sorted(out_policies.items()))}}
    if out_attachments:
        roles["resource"]["aws_iam_role_policy_attachment"] = dict(sorted(out_attachments.items()))
    return SharedRoles(jobs, roles, membership)


class _Rewritten(Mapping[str, JsonObject]):
    """Each job's document with its shared roles named, made when first asked for: a root
    compiled again for a one-job edit needs only the documents of its jobs whose file is
    rendered or whose catalog entry is built (`jobplane dev`, compiler/root_memo.py); making all
    of them was ~0.45 s of a one-job edit at 5,000 jobs (a root of ~560 jobs)."""

    def __init__(self, docs: dict[str, JsonObject], moved: dict[str, dict[str, str]]):
        self._docs, self._moved = docs, moved
        self._made: dict[str, JsonObject] = {}

    def __getitem__(self, job: str) -> JsonObject:
        if job not in self._made:
            self._made[job] = _rewritten(self._docs[job], self._moved[job])
        return self._made[job]

    def __iter__(self) -> Iterator[str]:
        return iter(self._docs)

    def __len__(self) -> int:
        return len(self._docs)


def _rewritten(original: JsonObject, moved: dict[str, str]) -> JsonObject:
    """A new document: the job's own policy documents and resources with the shared roles named
    (through its JSON text: one C-speed pass instead of a walk over every block), its state
    machines' definitions, nearly all of its bytes and never naming a role, set aside."""
    machines = original.get("resource", {}).get("aws_sfn_state_machine", {})
    definitions = {sm: block.get("definition") for sm, block in machines.items()}
    for block in machines.values():
        block["definition"] = ""
    try:
        text = json.dumps(original)
    finally:
        for sm, block in machines.items():
            block["definition"] = definitions[sm]
    if moved:
        text = _rename_text(text, moved)
    doc: JsonObject = json.loads(text)
    for sm, block in doc.get("resource", {}).get("aws_sfn_state_machine", {}).items():
        block["definition"] = definitions[sm]
    resource = doc.get("resource", {})
    data_docs = doc.get("data", {}).get("aws_iam_policy_document", {})
    for rid in moved:
        for kind in ("aws_iam_role", "aws_iam_role_policy"):
            resource.get(kind, {}).pop(rid, None)
        assume = _doc_id(original["resource"]["aws_iam_role"][rid]["assume_role_policy"])
        data_docs.pop(assume, None)
        for aid in [a for a, att in original["resource"].get("aws_iam_role_policy_attachment", {}).items()
                    if att["role"] == f"${{aws_iam_role.{rid}.name}}"]:
            resource["aws_iam_role_policy_attachment"].pop(aid)
    for kind in ("aws_iam_role", "aws_iam_role_policy", "aws_iam_role_policy_attachment"):
        if kind in resource and not resource[kind]:
            del resource[kind]
    return doc


def role_refs(job_doc: JsonObject) -> set[str]:
    """The Terraform ids of the roles a job's document names (its resources, not its own
    policy documents, which name the roles it passes)."""
    resource = job_doc.get("resource", {})
    # a state machine's definition, nearly all of a job's bytes, never names a role
    machines = [{k: v for k, v in block.items() if k != "definition"}
                for block in resource.get("aws_sfn_state_machine", {}).values()]
    text = json.dumps([machines, {k: v for k, v in resource.items() if k != "aws_sfn_state_machine"},
                       job_doc.get("locals", {})])  # its ECS task role, named by a local (compiler/task_roles.py)
    return set(_ROLE_REF.findall(text))




@lru_cache(maxsize=32)
def _roles_of_file(text: str) -> dict[str, tuple[str, str]]:
    """A roles file's roles: Terraform id -> (kind, name). Cached by the file's text: the plan
    asks once per job, and a team's roles file is one for all its jobs."""
    roles = json.loads(text).get("resource", {}).get("aws_iam_role", {})
    return {rid: (str(role.get("tags", {}).get(KIND_TAG, "")), str(role["name"])) for rid, role in roles.items()}


def job_roles(files: dict[str, str], job_rel: str, job_doc: JsonObject) -> dict[str, str]:
    """kind -> the name of the shared role a job's file names (its team root's roles file)."""
    roles_file = files.get(f"{job_rel.rsplit('/', 1)[0]}/{ROLES_FILE}")
    if roles_file is None:
        return {}
    roles = _roles_of_file(roles_file)
    return dict(sorted(roles[rid] for rid in role_refs(job_doc) if rid in roles))


#: The most jobs one deployment is measured to hold inside AWS's default quotas, IAM's 1,000
#: roles the first to bind: bench/quotas.py --mix (issue 62's mix: 30% of the jobs with a secret of
#: their own, 20% with a Lambda step) compiles 1,000 jobs to 62 roles (9 of them its teams' ECS task roles:
#: compiler/task_roles.py), so 5,000 stay far inside;
#: past this no figure says so (state machines, schedules, rules grow too), and `jobplane plan`
#: says so.
JOBS_CEILING = 5000


@dataclass(frozen=True)
class RoleCount:
    """The roles the compiled team roots create, and those of jobs of ``secret_scope: 'job'``."""

    jobs: int
    roles: int
    job_scoped_roles: int
    job_scoped_jobs: int


def count_roles(files: dict[str, str], jobs: dict[str, str]) -> RoleCount:
    """Count the compiled roots' roles (``files``), and which of them read the secrets of jobs of
    job scope, with how many of the ``jobs`` (name -> its file) run with those (only the files
    that may name one are parsed: a 5,000-job output is gigabytes of parsed JSON)."""
    roles = 0
    scoped: dict[str, set[str]] = {}  # team root -> the ids of its roles of job scope
    for rel, text in files.items():
        if rel.endswith(".tf.json") and '"aws_iam_role"' in text:
            found = json.loads(text).get("resource", {}).get("aws_iam_role", {})
            roles += len(found)
            ids = {rid for rid, role in found.items() if role.get("tags", {}).get(SECRET_SCOPE_TAG) == "job"}
            if ids:
                scoped.setdefault(rel.rsplit("/", 1)[0], set()).update(ids)
    jobs_scoped = 0
    for rel in jobs.values():
        own = scoped.get(rel.rsplit("/", 1)[0], set())
        if any(f"aws_iam_role.{rid}." in files[rel] for rid in own) and role_refs(json.loads(files[rel])) & own:
            jobs_scoped += 1
    return RoleCount(len(jobs), roles, sum(len(ids) for ids in scoped.values()), jobs_scoped)


__all__ = ["GrantMemo", "JOBS_CEILING", "ROLES_FILE", "RoleCount", "count_roles", "SharedRoles", "job_roles", "policy_chars", "role_refs", "share", "value_chars"]
