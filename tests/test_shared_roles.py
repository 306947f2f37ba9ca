"""The roles a team's jobs share (compiler/shared_roles.py) as `jobplane plan` and the compiled
roots show them: a job whose grant changes moves to the role of its new grant, and the plan says
so; the jobs whose grant did not change keep theirs. (That a shared role grants exactly the union
of identical grants is tests/test_iam_contract.py's.)"""

from __future__ import annotations

import json
import re

from conftest import Repo, minimal_job


def _roles(repo: Repo) -> dict[str, dict[str, str]]:
    """job -> kind -> role name, read from the compiled team root."""
    root = repo.path / "terraform/jobs/teams/billing"
    roles = json.loads((root / "roles.tf.json").read_text())["resource"]["aws_iam_role"]
    out = {}
    for path in sorted(root.glob("*.job.tf.json")):
        refs = set(re.findall(r"aws_iam_role\.([a-z0-9_]+)\.", json.dumps(json.loads(path.read_text())["resource"])))
        out[path.name.removesuffix(".job.tf.json")] = {roles[r]["tags"]["jobplane:role"]: roles[r]["name"] for r in refs}
    return out


def test_a_job_whose_grant_changes_moves_to_another_role_and_the_plan_says_so(repo: Repo) -> None:
    repo.write("jobs/billing/nightly-a.jsonnet", minimal_job("nightly-a"))
    repo.write("jobs/billing/nightly-b.jsonnet", minimal_job("nightly-b"))
    assert repo.cli("compile").exit_code == 0
    before = _roles(repo)
    assert before["nightly-a"] == before["nightly-b"]  # identical grants: one role of each kind
    assert set(before["nightly-a"]) == {"sfn", "scheduler"}

    # ALWAYS_RUN never checks a holder: its state machine's grant has no DescribeExecution
    repo.write("jobs/billing/nightly-b.jsonnet", minimal_job("nightly-b", "ALWAYS_RUN"))
    repo.write("jobs/billing/nightly-c.jsonnet", minimal_job("nightly-c"))
    plan = repo.cli("plan", "--exit-code")
    assert plan.exit_code == 2, plan.output
    out = plan.stdout
    assert "~ nightly-a" not in out  # its grant and its role are the same
    changed = out.split("~ nightly-b", 1)[1]
    assert f"    IAM role (sfn): moves from {before['nightly-b']['sfn']} to jobplane-billing-sfn-" in changed
    assert "IAM role (scheduler)" not in changed  # its schedule's grant did not change
    assert "IAM nightly_b_sfn: - states:DescribeExecution on " in changed  # the job's own grant, as before
    added = out.split("+ nightly-c", 1)[1].split("\n~ ", 1)[0]
    assert (f"IAM roles (its team's, shared by identical grants): scheduler {before['nightly-a']['scheduler']}, "
            f"sfn {before['nightly-a']['sfn']}") in added

    assert repo.cli("compile").exit_code == 0
    after = _roles(repo)
    assert after["nightly-a"] == before["nightly-a"] == after["nightly-c"]
    assert after["nightly-b"]["sfn"] != before["nightly-b"]["sfn"]
    assert after["nightly-b"]["scheduler"] == before["nightly-b"]["scheduler"]
    assert repo.cli("plan", "--exit-code").exit_code == 0
