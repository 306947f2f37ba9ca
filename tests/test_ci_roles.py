"""The pipeline's two AWS roles, as deploy/ci-roles/main.tf creates them, evaluated against the
requests each side can make (issue 40, items 1 and 2): who may assume each role (the token's
subject, as GitHub writes it with the repository's subject template of repo, context and ref),
and what the plan role, which any pull request can use, may not do."""

from __future__ import annotations

import re
from typing import Any

import hcl2
import pytest

from base_module import _clean
from conftest import ROOT
from iam_policy import Call, allowed

MAIN = ROOT / "deploy" / "ci-roles" / "main.tf"
ACCOUNT = "123456789012"
VARS = {"github_repository": "acme/jobs", "state_bucket": "acme-jobplane-state", "state_prefix": "jobplane/",
        "name_prefix": "jobplane", "environment": "production", "branch": "main", "region": "us-east-1"}
DATA = {"data.aws_partition.current.partition": "aws", "data.aws_caller_identity.current.account_id": ACCOUNT}


def document() -> dict[str, Any]:
    return _clean(hcl2.loads(MAIN.read_text()))


def resolve(value: Any, local: dict[str, str]) -> Any:
    if isinstance(value, list):
        return [resolve(v, local) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, local) for k, v in value.items()}
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        ref = m[1]
        if ref.startswith("var."):
            return VARS[ref[4:]]
        if ref.startswith("local."):
            return local[ref[6:]]
        return DATA[ref]
    return re.sub(r"\$\{([a-z_][a-z0-9_.]*)\}", one, value)


def locals_() -> dict[str, str]:
    raw = {k: v for block in document()["locals"] for k, v in block.items()}
    out: dict[str, str] = {}
    for _ in range(3):  # locals that use locals
        for k, v in raw.items():
            try:
                out[k] = resolve(v, out)
            except KeyError:
                pass
    out["provider_arn"] = f"arn:aws:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com"
    return out


def statements(name: str) -> list[dict[str, Any]]:
    docs = {k: v for block in document()["data"] for t, named in block.items() if t == "aws_iam_policy_document"
            for k, v in named.items()}
    out = resolve(docs[name]["statement"], locals_())
    for s in out:
        s.setdefault("resources", ["*"])  # a trust policy's statement is about the role itself
    return out


def assume(subject: str, audience: str = "sts.amazonaws.com") -> Call:
    return Call("sts:AssumeRoleWithWebIdentity", "*", {"token.actions.githubusercontent.com:sub": subject,
                                                       "token.actions.githubusercontent.com:aud": audience})


@pytest.mark.parametrize("subject, plan, apply", [
    # a pull request of this repository
    ("repo:acme/jobs:pull_request:ref:refs/pull/42/merge", True, False),
    # the apply job: main, in the production environment
    ("repo:acme/jobs:environment:production:ref:refs/heads/main", False, True),
    # a branch's workflow declaring the environment (item 2): refused by the apply role
    ("repo:acme/jobs:environment:production:ref:refs/heads/attack", False, False),
    # main without the environment (its protection rules skipped), another environment
    ("repo:acme/jobs:ref:refs/heads/main", False, False),
    ("repo:acme/jobs:environment:staging:ref:refs/heads/main", False, False),
    # the default subject template (not customised): neither role
    ("repo:acme/jobs:environment:production", False, False),
    ("repo:acme/jobs:pull_request", False, False),
    # another repository, one whose name begins the same
    ("repo:acme/jobs-fork:pull_request:ref:refs/pull/1/merge", False, False),
    ("repo:evil/jobs:environment:production:ref:refs/heads/main", False, False),
])
def test_who_may_assume_each_role(subject: str, plan: bool, apply: bool) -> None:
    assert allowed(statements("plan_trust"), assume(subject)) is plan
    assert allowed(statements("apply_trust"), assume(subject)) is apply
    # a token for another audience is nobody's
    assert not allowed(statements("plan_trust") + statements("apply_trust"), assume(subject, "api://other"))


#: AWS's ReadOnlyAccess as far as these calls go: Get*, List*, Describe* and BatchGet* of every
#: service on every resource (the managed policy lists each service's read actions).
READ_ONLY_ACCESS = {"sid": "ReadOnlyAccess", "actions": ["*:Get*", "*:List*", "*:Describe*", "*:BatchGet*"],
                    "resources": ["*"]}


def plan_role_may(call: Call) -> bool:
    return allowed([READ_ONLY_ACCESS, *statements("plan_limits")], call)


def test_the_plan_role_reads_the_states_and_nothing_it_must_not() -> None:
    state = "arn:aws:s3:::acme-jobplane-state"
    may = [Call("s3:GetObject", f"{state}/jobplane/base.tfstate", {}, "the base root's plan"),
           Call("s3:GetObject", f"{state}/jobplane/teams/billing.tfstate", {}, "a team root's plan"),
           Call("s3:ListBucket", state, {}, "the backend lists the bucket"),
           Call("ssm:GetParameter", f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/jobplane/platform/table_name", {},
                "the team roots read what the base module publishes"),
           Call("secretsmanager:DescribeSecret", f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:billing/x-AbC123",
                {}, "a job's secret looked up by name (metadata)"),
           Call("secretsmanager:ListSecretVersionIds", f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:jobplane/portal-oidc-AbC123",
                {}, "the portal's secret's current version (metadata)")]
    may_not = [Call("s3:PutObject", f"{state}/jobplane/base.tfstate", {}, "rewrite production state"),
               Call("s3:DeleteObject", f"{state}/jobplane/teams/billing.tfstate", {}, "delete a team's state"),
               Call("s3:PutObject", f"{state}/jobplane/base.tfstate.tflock", {}, "even a lock (plans run -lock=false)"),
               Call("s3:PutBucketPolicy", state, {}, "open the bucket"),
               Call("secretsmanager:GetSecretValue", f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:jobplane/portal-oidc-AbC123",
                    {}, "the portal's OIDC client secret"),
               Call("secretsmanager:BatchGetSecretValue", "*", {}, "every secret at once"),
               Call("ssm:GetParameter", f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/billing/db-password", {},
                    "a team's SecureString"),
               Call("ssm:GetParametersByPath", f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/", {}, "all of them")]
    assert [str(c) for c in may if not plan_role_may(c)] == []
    assert [str(c) for c in may_not if plan_role_may(c)] == []


def test_the_pipeline_uses_the_roles_as_they_are_made() -> None:
    """The plan job plans with -lock=false (its role may not write the lock object), and the
    apply job declares the environment the apply role trusts."""
    import yaml

    flow = yaml.safe_load((ROOT / "deploy/github-actions/jobplane.yml").read_text())
    assert flow["jobs"]["apply"]["environment"] == VARS["environment"]
    plan_runs = " ".join(s.get("run", "") for s in flow["jobs"]["plan"]["steps"])
    plans = re.findall(r"terraform [^\n]*\bplan\b[^\n]*", plan_runs)
    assert plans and all("-lock=false" in p for p in plans)
    assert flow[True]["push"]["branches"] == [VARS["branch"]]  # YAML 1.1 reads the key `on` as true


def test_the_apply_role_records_the_commit_it_applied_in_its_one_parameter() -> None:
    """Issue 49, item 4: the apply diffs against the last commit applied in full, which it reads
    and writes in one SSM parameter (the workflow's APPLIED_PARAMETER), and no other."""
    import yaml

    workflow = yaml.safe_load((ROOT / "deploy/github-actions/jobplane.yml").read_text())
    step = next(s for s in workflow["jobs"]["apply"]["steps"] if s.get("name") == "Compile and apply, base first")
    name = step["env"]["APPLIED_PARAMETER"].replace("${{ github.repository }}", VARS["github_repository"])
    parameter = f"arn:aws:ssm:{VARS['region']}:{ACCOUNT}:parameter{name}"
    policy = statements("apply_commit")
    for action in ("ssm:GetParameter", "ssm:PutParameter"):
        assert allowed(policy, Call(action, parameter))
        assert not allowed(policy, Call(action, f"arn:aws:ssm:{VARS['region']}:{ACCOUNT}:parameter/jobplane/other"))
    attached = document()["resource"]
    [role_policy] = [named["apply_commit"] for block in attached for t, named in block.items()
                     if t == "aws_iam_role_policy" and "apply_commit" in named]
    assert role_policy["role"] == "${aws_iam_role.apply.id}"
