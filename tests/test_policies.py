"""The execution policies' registry (contract/policies.py) against everything that names the
policies outside it: the wire names, the DSL's ``jp.policy``, the table in docs/dsl.md, the
compiled claim and IAM. What the compiled machines do with each policy runs on the local AWS in
tests/test_asl_on_moto.py (every policy x state, held to ``decide``) and tests/test_engine.py."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, Repo
from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import policies
from jobplane.contract import states as sn
from jobplane.contract.policies import Decision, WhileRunning, decide
from jobplane.contract.statuses import Policy, SkipReason

#: docs/dsl.md's Policies table: its columns as (running, last_failed).
COLUMNS = ((True, False), (False, True), (False, False))


def test_every_policy_has_one_class() -> None:
    assert sorted(p.policy for p in policies.POLICIES) == sorted(Policy)
    assert len({type(p) for p in policies.POLICIES}) == len(policies.POLICIES)
    for p in Policy:
        assert policies.of(p).policy is p and policies.of(p.value) is policies.of(p)
    with pytest.raises(ValueError):
        policies.of("NEVER")


def test_the_dsl_offers_every_policy() -> None:
    from conftest import library_enum

    pairs = library_enum("policy")
    assert all(k == v for k, v in pairs)
    assert [k for k, _ in pairs] == [p.value for p in Policy]


def test_the_job_schema_offers_every_policy() -> None:
    from jobplane.compiler.fields import json_schema

    schema = json_schema(Job, "jobplane job")
    assert schema["$defs"]["Policy"]["enum"] == [p.value for p in Policy]


def test_the_documented_table_is_decide() -> None:
    """docs/dsl.md's Policies table, row by row, is what ``decide`` (each class's row) says."""
    text = (ROOT / "docs" / "dsl.md").read_text()
    section = text[text.index("## Policies"):]
    rows = {m[1]: [c.strip() for c in m[2].split("|")]
            for m in re.finditer(r"^\| ([A-Z_]+) \|(.*)\|$", section.split("\n\n")[1], re.M)}
    assert sorted(rows) == sorted(p.value for p in Policy)
    for name, cells in rows.items():
        got = [decide(name, running=r, last_failed=f).value for r, f in COLUMNS]
        assert cells == got, name


def test_replace_is_the_only_policy_that_stops_a_run() -> None:
    replace = policies.of(Policy.REPLACE)
    assert replace.while_running is WhileRunning.REPLACE and not replace.skips_after_failure
    assert decide(Policy.REPLACE, running=True, last_failed=True) is Decision.REPLACE
    assert Decision.REPLACE.runs and not Decision.SKIP.runs
    for p in policies.POLICIES:
        actions = {a for _, acts in p.holder_statements() for a in acts}
        assert ("states:StopExecution" in actions) == (p.policy is Policy.REPLACE), p.name
        assert ("states:DescribeExecution" in actions) == p.holds_claim, p.name


def test_backfill_rules() -> None:
    in_order = {p.policy for p in policies.POLICIES if p.backfills_in_order}
    halts = {p.policy for p in policies.POLICIES if p.halts_backfill_on_failure}
    assert in_order == {Policy.SKIP_IF_RUNNING, Policy.SKIP_IF_RUNNING_OR_FAILED, Policy.REPLACE}
    assert halts == {Policy.SKIP_IF_FAILED, Policy.SKIP_IF_RUNNING_OR_FAILED}


def _states(policy: Policy) -> dict[str, dict]:  # type: ignore[type-arg]
    job = Job.from_definition({"name": "nightly", "team": "billing", "policy": policy.value,
                               "steps": [{"name": "only", "python": "m:f"}]})
    return asl.build_definition(job, "jobplane")["States"]


def test_the_compiler_reads_the_holder_the_policy_takes_over() -> None:
    assert asl.HOLDER == policies.STALE_HOLDER.expr


def test_only_replace_compiles_a_stop_and_its_takeover_accepts_a_released_claim() -> None:
    for p in Policy:
        states = _states(p)
        assert (sn.REPLACE_STOP_HOLDER in states) == (p is Policy.REPLACE), p
        assert (sn.TAKE_OVER in states) == policies.of(p).holds_claim, p
    states = _states(Policy.REPLACE)
    stop = states[sn.REPLACE_STOP_HOLDER]
    assert stop["Resource"] == "arn:aws:states:::aws-sdk:sfn:stopExecution"
    assert stop["Parameters"] == {"ExecutionArn.$": asl.HOLDER, "Error": policies.REPLACED_ERROR,
                                  "Cause.$": "$$.Execution.Id"}
    assert stop["Retry"] and stop["Next"] == sn.TAKE_OVER
    assert [c["Next"] for c in stop["Catch"]] == [sn.skip_record(SkipReason.RUNNING)]
    why = states[sn.SKIP_WHY]["Choices"]
    assert sum(c["Next"] == sn.REPLACE_STOP_HOLDER for c in why) == 1
    assert states[sn.TAKE_OVER]["Parameters"]["ConditionExpression"].endswith(
        "(holder = :stale OR attribute_not_exists(#running))")
    assert _states(Policy.SKIP_IF_RUNNING)[sn.TAKE_OVER]["Parameters"]["ConditionExpression"].endswith(
        "holder = :stale")


def test_replace_is_refused_for_a_job_with_a_lambda_step(repo: Repo) -> None:
    """Issue 62 finding 7: stopping a run does not stop a synchronous Lambda invocation, so a
    REPLACE job's older Lambda step would run on beside the newer run. validate refuses it,
    naming the file, the job, the field and the steps; the same job on ECS, or with another
    policy, is fine."""
    job = """local jp = import 'jobplane.libsonnet';
{ name: 'refresh', team: 'billing', policy: '%s', steps: [
  jp.python('load', 'examples.noop:run'),
  jp.parallel('both', [jp.lambda('warm-cache', 'examples.noop:run'), jp.python('index', 'examples.noop:run')]),
] }
"""
    repo.write("jobs/billing/refresh.jsonnet", job % "REPLACE")
    refused = repo.cli("validate")
    assert refused.exit_code != 0
    assert ("jobs/billing/refresh.jsonnet: job 'refresh': policy: REPLACE cannot stop a Lambda step ('warm-cache')"
            in refused.output), refused.output
    assert "SKIP_IF_RUNNING" in refused.output and "jp.python" in refused.output
    repo.write("jobs/billing/refresh.jsonnet", job % "SKIP_IF_RUNNING")
    assert repo.cli("validate").exit_code == 0
    on_ecs = (job % "REPLACE").replace("jp.lambda('warm-cache'", "jp.python('warm-cache'")
    repo.write("jobs/billing/refresh.jsonnet", on_ecs)
    assert repo.cli("validate").exit_code == 0
