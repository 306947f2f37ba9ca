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


def test_a_realistic_mix_of_jobs_runs_with_at_most_one_role_per_five_jobs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 62 finding 5: with a secret of their own on 30% of the jobs and a Lambda step on 20%
    (bench/jobtree.py's mix, scaled down to 300 jobs to compile in seconds), per-job secrets
    made ~600 roles per 1,000 jobs, past the account's default 1,000 roles from ~1,700 jobs. With
    the team-scoped secrets of the default `secret_scope`, the compiled team roots create at most
    0.2 roles per job: 5,000 jobs fit the default quota (`bench/quotas.py --mix` at scale)."""
    import sys
    from collections import Counter
    from pathlib import Path

    from jobplane.compiler.output import compile_all, job_files
    from jobplane.contract.config import load_config

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from jobtree import write_repo  # the benches' one job generator

    jobs = 300
    files = compile_all(load_config(write_repo(tmp_path, jobs, mix=True))).files
    docs = {job: json.loads(files[rel]) for job, rel in job_files(files).items()}
    assert len(docs) == jobs
    # the mix is the issue's: about 30% of the jobs read a secret, 20% have a Lambda step
    with_secret = sum('"aws_secretsmanager_secret"' in json.dumps(d.get("data", {})) for d in docs.values())
    with_lambda = sum("aws_lambda_function" in d["resource"] for d in docs.values())
    assert 0.25 * jobs <= with_secret <= 0.35 * jobs and 0.15 * jobs <= with_lambda <= 0.25 * jobs, (with_secret, with_lambda)
    roles = [role for rel, text in files.items() if rel.endswith(".tf.json")
             for role in json.loads(text).get("resource", {}).get("aws_iam_role", {}).values()]
    kinds = Counter(role["tags"]["jobplane:role"] for role in roles)
    assert len(roles) <= 0.2 * jobs, (len(roles), kinds)


def test_the_plan_counts_the_roles_of_jobs_whose_secrets_are_their_own(repo: Repo) -> None:
    """A job of `secret_scope: 'job'` has roles of its own for its secrets (the others of its
    team share theirs): `jobplane plan` counts them, with the jobs that cost them, beside the
    number of jobs one deployment is measured to hold in AWS's default quotas."""
    job = minimal_job("%s").replace("steps: [jp.python('run', 'examples.noop:run')]",
                                    "%s steps: [jp.python('run', 'examples.noop:run', "
                                    "opts={ secrets: { TOKEN: jp.secret('billing/%s') } })]")
    repo.write("jobs/billing/shared-a.jsonnet", job % ("shared-a", "", "a"))
    repo.write("jobs/billing/shared-b.jsonnet", job % ("shared-b", "", "b"))
    out = repo.cli("plan")
    assert out.exit_code == 0, out.output
    assert "IAM roles of the team roots" not in out.stdout  # nothing of job scope: not worth a line
    listed = repo.cli("plan", "--quotas").stdout
    assert ("IAM roles of the team roots: 4 for 2 jobs (2.00 a job; of them 0 for the secrets of the 0 jobs of "
            "secret_scope 'job'); one deployment is measured to hold up to 5,000 jobs") in listed, listed
    assert repo.cli("compile").exit_code == 0
    assert _roles(repo)["shared-a"]["exec"] == _roles(repo)["shared-b"]["exec"]  # their team's, reading both
    repo.write("jobs/billing/alone.jsonnet", job % ("alone", "secret_scope: 'job',", "payroll"))
    out = repo.cli("plan")
    assert out.exit_code == 0, out.output
    assert ("IAM roles of the team roots: 5 for 3 jobs (1.67 a job; of them 1 for the secrets of the 1 jobs of "
            "secret_scope 'job')") in out.stdout, out.stdout
