"""A step can write only its own job's progress records (issue 67 part 1, docs/progress.md "Who
may write"): the role an ECS step's task runs with (its team's task role, RunTask's override:
compiler/task_roles.py) and a Lambda step's runner role, evaluated with tests/iam_policy.py.

The role is found as AWS would find it: the compiled state machine's RunTask names its task role
(``Overrides.TaskRoleArn``); a RunTask without one runs with its task definition's, the base
module's ``runner_task`` (terraform/platform/runner.tf), whose grant was ``PROGRESS#*``: any run
of any job of any team. What IAM cannot hold to (a task role's credentials carry no per-run tag)
is the run itself: a step may write any run of its own job, and of the team-mates' jobs that
share its role, which the test names exactly.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import base_module as bm
from iam_policy import Call, allowed

from jobplane.compiler.output import compile_all, job_files
from jobplane.contract import progress as cp
from jobplane.contract.config import load_config

ROOT = Path(__file__).resolve().parents[1]
TABLE = bm.resolve("${aws_dynamodb_table.jobplane.arn}", {})


@lru_cache(maxsize=1)
def _compiled() -> dict[str, str]:
    return dict(compile_all(load_config(ROOT)).files)


def _teams() -> dict[str, str]:
    """job -> its team root (the examples)."""
    return {job: rel.rsplit("/", 1)[0] for job, rel in job_files(_compiled()).items()}


def _ecs_role(job: str) -> tuple[str, list[dict[str, Any]]]:
    """The task role an ECS step of ``job`` runs with, and its statements (the table resolved)."""
    files = _compiled()
    rel = job_files(files)[job]
    doc = json.loads(files[rel])
    definition = next(iter(doc["resource"]["aws_sfn_state_machine"].values()))["definition"]
    assert '"arn:aws:states:::ecs:runTask.sync"' in definition, f"{job} has no ECS step"
    named = re.search(r'"TaskRoleArn":"\$\{local\.([A-Za-z0-9_]+)\}"', definition)
    if named is None:  # its task definition's role: the base module's, shared by every team
        return "runner_task", (bm.policy_statements("runner_progress", {})
                               + bm.policy_statements("runner_params", {}))
    ref = re.fullmatch(r"\$\{aws_iam_role\.([A-Za-z0-9_]+)\.arn\}", doc["locals"][named[1]])
    assert ref, doc["locals"]
    rid = ref[1]
    roles = json.loads(files[f"{rel.rsplit('/', 1)[0]}/roles.tf.json"])
    statements = roles["data"]["aws_iam_policy_document"][rid]["statement"]
    assert statements, rid
    return rid, json.loads(json.dumps(statements).replace("${local.platform.table_arn}", TABLE))


def _write(job: str, execution: str) -> Call:
    """The runner's progress write for a step of ``job``'s run ``execution`` (runner/progress.py)."""
    return Call("dynamodb:UpdateItem", TABLE, {"dynamodb:LeadingKeys": [f"{cp.PK_PREFIX}{job}#{execution}"],
                                               "dynamodb:Attributes": sorted(cp.ATTRIBUTES)})


def _checkpoint(job: str, execution: str) -> Call:
    return Call("dynamodb:GetItem", TABLE, {"dynamodb:LeadingKeys": [f"{cp.PK_PREFIX}{job}#{execution}"],
                                            "dynamodb:Attributes": sorted(cp.READ_ATTRIBUTES)})


def test_an_ecs_step_may_write_its_own_jobs_progress_and_no_other_teams() -> None:
    """A step of invoice-run (team billing) writes and reads PROGRESS#invoice-run#<any run>; it may
    not touch growth's or platform's jobs' records, nor a partition without a job (the old
    ``PROGRESS#<execution>``), nor a job whose name merely starts like its own."""
    rid, statements = _ecs_role("invoice-run")
    for execution in ("0f3b1e2c-5d6a-4b7c-8d9e-0a1b2c3d4e5f", "rerun-1", "x"):
        assert allowed(statements, _write("invoice-run", execution)), (rid, execution)
        assert allowed(statements, _checkpoint("invoice-run", execution)), (rid, execution)
    for other in ("partner-api-sync", "weekly-cohort-export", "backfill-search-index", "nightly-maintenance"):
        assert not allowed(statements, _write(other, "run-1")), (rid, other)
        assert not allowed(statements, _checkpoint(other, "run-1")), (rid, other)
    for key in ("PROGRESS#run-1", "PROGRESS#invoice-run", "PROGRESS#invoice-run-2#run-1", "PROGRESS#invoice#run-1"):
        call = Call("dynamodb:UpdateItem", TABLE, {"dynamodb:LeadingKeys": [key],
                                                   "dynamodb:Attributes": sorted(cp.ATTRIBUTES)})
        assert not allowed(statements, call), (rid, key)


def test_a_team_mate_reaches_exactly_the_jobs_that_share_its_task_role() -> None:
    """What sharing costs, precisely: a step may write the progress of the jobs whose task role
    is its own (its team root's jobs whose grants are identical: compiler/shared_roles.py), and of
    no job outside them, in its team or any other."""
    teams = _teams()
    roles = {job: _ecs_role(job) for job in teams if '"arn:aws:states:::ecs:runTask.sync"' in next(iter(
        json.loads(_compiled()[job_files(_compiled())[job]])["resource"]["aws_sfn_state_machine"].values()))["definition"]}
    assert len({rid for rid, _ in roles.values()}) >= 3  # a role per team at least (billing, growth, platform)
    for job, (rid, statements) in roles.items():
        reachable = {other for other in teams if allowed(statements, _write(other, "run-1"))}
        sharing = {other for other, (other_rid, _) in roles.items()
                   if other_rid == rid and teams[other] == teams[job]}
        assert reachable == sharing, (job, rid, reachable, sharing)
        assert job in reachable and all(teams[other] == teams[job] for other in reachable), (job, reachable)


def test_a_lambda_steps_runner_role_may_write_its_own_jobs_progress_only() -> None:
    from jobplane.compiler import asl
    from jobplane.compiler.model import Job
    from jobplane.compiler.terraform import job_module
    from jobplane.contract.config import PlatformConfig

    job = Job.from_definition({"name": "fn-close", "team": "billing", "timezone": "UTC", "steps": [
        {"name": "close", "lambda": "sample_apps.progress_steps:close_tenants"}]})
    doc = job_module(job, asl.compile_job(job, bm.PREFIX), PlatformConfig(root=Path("."), name_prefix=bm.PREFIX))
    (role, _), = doc["resource"]["aws_lambda_function"].items()
    statements = json.loads(json.dumps(doc["data"]["aws_iam_policy_document"][role]["statement"]).replace(
        "${local.platform.table_arn}", TABLE))
    assert allowed(statements, _write("fn-close", "run-1")) and allowed(statements, _checkpoint("fn-close", "run-9"))
    for other in ("invoice-run", "fn-close-2", "partner-api-sync"):
        assert not allowed(statements, _write(other, "run-1")), other
    assert not allowed(statements, Call("dynamodb:UpdateItem", TABLE, {"dynamodb:LeadingKeys": ["PROGRESS#run-1"],
                                                                       "dynamodb:Attributes": sorted(cp.ATTRIBUTES)}))


def test_a_teams_task_policies_are_attached_to_its_task_roles_only(tmp_path: Path) -> None:
    """The application's own permissions (what the base module's runner task role carried for
    every team) are the team's: jobplane.toml ``[teams.<team>] task_policies`` attaches them to
    its task roles, no other team's; a value that is not a managed policy ARN is refused."""
    from conftest import Repo, minimal_job

    repo = Repo(tmp_path)
    repo.write("jobs/billing/with-app.jsonnet", minimal_job("with-app"))
    repo.write("jobs/growth/other-app.jsonnet", minimal_job("other-app").replace("team: 'billing'", "team: 'growth'"))
    policy = "arn:aws:iam::123456789012:policy/billing/app-s3"
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text().replace("[teams.billing]\n", f'[teams.billing]\ntask_policies = ["{policy}"]\n', 1))
    result = repo.cli("compile")
    assert result.exit_code == 0, result.output + result.stderr

    def attached(team: str) -> dict[str, list[str]]:
        roles = json.loads((repo.out / "teams" / team / "roles.tf.json").read_text())["resource"]
        kinds = {rid: r["tags"]["jobplane:role"] for rid, r in roles["aws_iam_role"].items()}
        out: dict[str, list[str]] = {}
        for a in roles.get("aws_iam_role_policy_attachment", {}).values():
            rid = a["role"].split(".")[1]
            out.setdefault(kinds[rid], []).append(a["policy_arn"])
        return out

    billing = attached("billing")
    assert billing.get("task") == [policy]
    assert all(policy not in arns for kind, arns in billing.items() if kind != "task")  # the task role only
    assert policy not in [arn for arns in attached("growth").values() for arn in arns]
    for bad in ('"billing-app"', '"arn:aws:iam::*:policy/x"'):
        toml.write_text(toml.read_text().replace(f'task_policies = ["{policy}"]', f"task_policies = [{bad}]"))
        refused = repo.cli("validate")
        assert refused.exit_code != 0 and "teams.billing.task_policies: a list of IAM managed policy ARNs" in (
            refused.output + refused.stderr)
        toml.write_text(toml.read_text().replace(f"task_policies = [{bad}]", f'task_policies = ["{policy}"]'))
