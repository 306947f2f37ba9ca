"""jobplane plan measures the compiled deployment against AWS's quotas (contract/quotas.py):
a warning at 80%, an error (exit 2: the apply would fail) past 100%, a raised quota declared in
jobplane.toml, and every role's inline policy size against IAM's fixed limit."""

from __future__ import annotations

import json
import re

from conftest import Repo
from jobplane.compiler.quota_usage import oversized_roles
from jobplane.contract.quotas import BY_KEY, ROLE_INLINE_POLICY_CHARS

JOB = """local jp = import 'jobplane.libsonnet';
{ name: 'job-%(i)04d', team: 'billing', %(start)s, steps: [jp.python('run', 'examples.noop:run')] }
"""


def _jobs(repo: Repo, start: int, stop: int) -> None:
    """Jobs that run after job-0000: each one an EventBridge rule on the default bus."""
    for i in range(start, stop):
        when = "schedule: jp.daily('02:00')" if i == 0 else "after: [jp.after('job-0000')]"
        repo.write(f"jobs/billing/job-{i:04d}.jsonnet", JOB % {"i": i, "start": when})


def _line(output: str, what: str) -> str:
    return next(line for line in output.splitlines() if what in line)


def test_plan_warns_near_a_quota_refuses_past_it_and_honours_a_raised_one(repo: Repo) -> None:
    rules = "Number of rules (per event bus)"
    _jobs(repo, 0, 241)  # 240 after rules (and the base module's own, when it is there): 80% of 300
    near = repo.cli("plan")
    assert near.exit_code == 0, near.output
    line = _line(near.output, rules)
    used = int(re.search(r"\): ([\d,]+) of 300", line)[1].replace(",", ""))  # type: ignore[index]
    assert 240 <= used <= 300 and line.strip().startswith("WARNING:")
    assert "L-244521F2" in line and "[quotas] event_rules" in line

    _jobs(repo, 241, 302)  # 301 rules at least: over 300
    over = repo.cli("plan")
    assert over.exit_code == 2
    assert _line(over.output, rules).strip().startswith("ERROR: Number of rules")
    assert "An apply would fail on an AWS quota" in over.stderr

    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text() + "\n[quotas]\nevent_rules = 1000\n")
    raised = repo.cli("plan")
    assert raised.exit_code == 0, raised.output
    assert rules not in raised.output  # under 80% of 1,000: not worth a line
    listed = repo.cli("plan", "--quotas")
    assert rules in listed.output and "of 1,000 (raised from 300)" in listed.output
    # 302 jobs run with their team's shared roles (compiler/shared_roles.py): a role per kind
    # and grant, packed under IAM's role policy size, not two a job
    roles = int(re.search(r"Roles per account: ([\d,]+) of 1,000", listed.output)[1].replace(",", ""))  # type: ignore[index]
    assert roles < 30, listed.output


def test_an_unknown_or_bad_quota_in_jobplane_toml_is_refused(repo: Repo) -> None:
    toml = repo.path / "jobplane.toml"
    base = toml.read_text()
    toml.write_text(base + "\n[quotas]\niam_rolez = 5000\n")
    result = repo.cli("validate")
    assert result.exit_code != 0 and "[quotas] 'iam_rolez' is no quota jobplane counts" in result.output
    toml.write_text(base + "\n[quotas]\niam_roles = '5000'\n")
    result = repo.cli("validate")
    assert result.exit_code != 0 and "[quotas] iam_roles = '5000'" in result.output


def test_a_role_whose_inline_policies_outgrow_iam_is_named() -> None:
    statements = [{"sid": f"S{i}", "effect": "Allow", "actions": ["secretsmanager:GetSecretValue"],
                   "resources": [f"arn:aws:secretsmanager:us-east-1:123456789012:secret:billing/s{i:04d}-??????"]}
                  for i in range(200)]
    doc = {"data": {"aws_iam_policy_document": {"j_sfn": {"statement": statements[:3]},
                                                "j_exec": {"statement": statements}}},
           "resource": {"aws_iam_role_policy": {
               "j_sfn": {"role": "${aws_iam_role.j_sfn.id}", "policy": "${data.aws_iam_policy_document.j_sfn.json}"},
               "j_exec": {"role": "${aws_iam_role.j_exec.id}", "policy": "${data.aws_iam_policy_document.j_exec.json}"}}}}
    found = oversized_roles({"teams/billing/j.job.tf.json": json.dumps(doc)})
    assert [(role, n > ROLE_INLINE_POLICY_CHARS) for _, role, n in found] == [("j_exec", True)]


def test_every_quota_cites_its_source() -> None:
    for quota in BY_KEY.values():
        assert quota.source.startswith("https://docs.aws.amazon.com/"), quota.key
        assert quota.code is None or re.fullmatch(r"L-[0-9A-F]{8}", quota.code), quota.key


WIDE = """local jp = import 'jobplane.libsonnet';
{ name: '%(name)s', team: 'billing', steps: [
  jp.lambda('warm', 'examples.noop:run'),
  jp.map('all', items=jp.python('list', 'examples.noop:run'),
         each=jp.python('one', 'examples.noop:run', opts={ cpu: 1024, memory: 2048 }), opts={ max_concurrency: %(n)d }),
  jp.parallel('both', [jp.lambda('a', 'examples.noop:run'), jp.lambda('b', 'examples.noop:run')]),
] }
"""


def test_plan_measures_what_the_jobs_run_at_once_against_the_concurrent_quotas(repo: Repo) -> None:
    """Issue 62 finding 8: a map's max_concurrency x its each step's cpu is the job's Fargate
    vCPU peak, one network interface per task; a parallel group's Lambda steps run together.
    One job over a concurrent quota refuses the plan (it can never run at its width); every job
    at its peak together is a warning; a raised quota declared in jobplane.toml is honoured."""
    repo.write("jobs/billing/wide.jsonnet", WIDE % {"name": "wide", "n": 40})
    over = repo.cli("plan", "--quotas")
    assert over.exit_code == 2, over.output
    vcpu = _line(over.output, "Fargate On-Demand vCPU resource count")
    # 40 tasks of 1 vCPU at once (the items step before it: 0.25), against the default of 6
    assert vcpu.strip().startswith("ERROR:") and "40 vCPU at once at the busiest job's peak (wide)" in vcpu
    assert "of 6," in vcpu and "L-3032A538" in vcpu and "[quotas] fargate_vcpu" in vcpu
    enis = _line(over.output, "Network interfaces per Region")
    assert "40 ECS tasks at once" in enis and not enis.strip().startswith(("ERROR", "WARNING"))
    lam = _line(over.output, "Concurrent executions")
    assert "2 Lambda steps at once at the busiest job's peak (wide)" in lam  # the parallel group's two
    assert "1 maps at once" in _line(over.output, "Maximum open Map Runs")
    assert "a job runs more at once than one allows" in over.stderr

    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text() + "\n[quotas]\nfargate_vcpu = 100\n")
    repo.write("jobs/billing/wide-2.jsonnet", WIDE % {"name": "wide-2", "n": 45})
    near = repo.cli("plan")
    assert near.exit_code == 0, near.output  # each job alone fits in 100
    line = _line(near.output, "Fargate On-Demand vCPU resource count")
    # both at their peak together: 85 vCPU of 100, a warning (85%), not a refusal
    assert line.strip().startswith("WARNING:") and "85 if every job peaked together" in line, line
    assert "(raised from 6)" in line


def test_the_state_machine_quota_is_awss_current_one() -> None:
    """Issue 62 finding 10: AWS raised the default to 100,000 registered state machines."""
    assert BY_KEY["state_machines"].default == 100_000
