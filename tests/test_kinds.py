"""The step-kind registry (compiler/kinds/) and what reads it: the runtime's table
(contract/step_kinds.py), the runner's dispatch, the DSL library's jp.* helpers and the JSON
Schema must name the same kinds; a Lambda step is checked against Lambda's limits."""

from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT, Repo
from jobplane.compiler import kinds
from jobplane.compiler.executors.ecs import ECS
from jobplane.compiler.executors.lambda_ import LAMBDA
from jobplane.contract import lambda_step
from jobplane.contract import runner as rc
from jobplane.contract import step_kinds


def test_the_registry_and_the_runtime_table_name_the_same_kinds() -> None:
    assert [k.name for k in kinds.REGISTRY] == [k.name for k in step_kinds.KINDS]
    for kind in kinds.REGISTRY:
        assert kind.info.name == kind.name
    # the runner dispatches on what the kinds run as, and nothing else, from one table
    assert step_kinds.RUNNER_KINDS == rc.STEP_KINDS == tuple(rc.DISPATCH)


def test_the_runner_dispatches_each_kind_to_its_own_function_and_refuses_any_other() -> None:
    """contract/runner.py DISPATCH is the runner's only dispatch: each runner kind's function
    exists (imported here as the runner imports it, for that kind alone), and a kind without a
    line is refused, never run as another kind (an if-chain once ran it as a shell step)."""
    from jobplane.runner import dispatch, steps

    for kind in rc.STEP_KINDS:
        assert dispatch.function_of(kind) is getattr(steps, kind)
    with pytest.raises(dispatch.UnknownKind, match="unknown step kind 'approval': this runner runs python, "):
        dispatch.function_of("approval")


def test_every_kind_has_its_helper_in_the_dsl_library() -> None:
    library = (ROOT / "jobs" / "lib" / "jobplane.libsonnet").read_text()
    for kind in kinds.REGISTRY:
        line = re.search(rf"^  {re.escape(kind.helper)}::(.*)$", library, re.M)
        assert line, f"jp.{kind.helper} is missing from jobplane.libsonnet"
        assert f"{kind.name}: " in line[1], f"jp.{kind.helper} does not write the '{kind.name}' field"


def test_the_schema_lists_every_kind_field(repo: Repo) -> None:
    result = repo.cli("schema")
    assert result.exit_code == 0
    step = json.loads(result.stdout)["$defs"]["Step"]["properties"]
    assert set(kinds.NAMES) <= set(step)


def test_each_kind_compiles_with_its_executor(repo: Repo) -> None:
    repo.write("jobs/billing/mixed.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'mixed', team: 'billing', schedule: jp.daily('03:00'),
          steps: [
            jp.lambda('quick', 'examples.noop:run', opts={ retry: jp.retry(2, '10s'), memory: 1024 }),
            jp.python('slow', 'examples.noop:run'),
          ],
        }
        """)
    assert repo.cli("compile").exit_code == 0
    doc = json.loads((repo.out / "teams/billing/mixed.job.tf.json").read_text())
    from jobplane.contract.bindings import asl_of
    states = json.loads(asl_of((repo.out / "teams/billing/mixed.job.tf.json").read_text()))["States"]
    assert states["quick"]["Resource"] == lambda_step.INVOKE_RESOURCE
    assert states["quick"]["Parameters"]["FunctionName"] == lambda_step.function_name("jobplane", "mixed")
    env = states["quick"]["Parameters"]["Payload"][lambda_step.PAYLOAD_ENVIRONMENT]
    assert json.loads(env[rc.ENV_TARGET]) == {"kind": "python", "target": "examples.noop:run"}
    # the service's transient errors, then the function that cannot run now (not ready, throttled)
    assert [r["ErrorEquals"] for r in states["quick"]["Retry"]] == [list(lambda_step.SERVICE_ERRORS),
                                                                     list(lambda_step.INFRA_ERRORS)]
    assert states["slow"]["Resource"] == "arn:aws:states:::ecs:runTask.sync"
    function = doc["resource"]["aws_lambda_function"]["mixed_lambda"]
    assert function["function_name"] == "jobplane-mixed-runner" and function["memory_size"] == 1024
    assert function["timeout"] == lambda_step.MAX_TIMEOUT  # a lambda step's default timeout is Lambda's limit
    sids = [s["sid"] for s in doc["data"]["aws_iam_policy_document"]["mixed_sfn"]["statement"]]
    assert sids[:5] == ["RunRunnerTasks", "WatchRunnerTasks", "SyncTaskEvents", "PassRunnerRoles", "InvokeRunnerFunction"]


@pytest.mark.parametrize("opts, message", [
    ("{ timeout: '16m' }", "timeout 960s is longer than Lambda's limit of 900s"),
    ("{ memory: 64 }", "memory 64 MB is outside Lambda's 128-10240 MB"),
    ("{ cpu: 1024 }", "cpu does not apply to a lambda step"),
])
def test_a_lambda_step_is_held_to_lambdas_limits(repo: Repo, opts: str, message: str) -> None:
    repo.write("jobs/billing/fast.jsonnet", f"""\
        local jp = import 'jobplane.libsonnet';
        {{ name: 'fast', team: 'billing', steps: [jp.lambda('go', 'examples.noop:run', opts={opts})] }}
        """)
    result = repo.cli("validate")
    assert result.exit_code == 2
    assert f"jobs/billing/fast.jsonnet: job 'fast': steps[0]: {message}" in result.stderr


def test_an_ecs_size_problem_is_still_reported_with_other_problems(repo: Repo) -> None:
    repo.write("jobs/billing/big.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'big', team: 'billing', steps: [jp.python('go', 'nope', opts={ cpu: 256, memory: 4096 })] }
        """)
    result = repo.cli("validate")
    assert result.exit_code == 2
    assert "memory 4096 does not fit cpu 256 on Fargate" in result.stderr
    assert "is not of the form 'package.module:function'" in result.stderr


def test_executors_are_what_the_kinds_say() -> None:
    assert {k.name: k.executor for k in kinds.REGISTRY if k.info.executor is not step_kinds.Executor.GROUP} == {
        "python": ECS, "celery": ECS, "django": ECS, "shell": ECS, "lambda": LAMBDA}


def test_plan_says_where_steps_run_and_which_could_run_on_lambda(repo: Repo) -> None:
    repo.write("jobs/billing/both.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        {
          name: 'both', team: 'billing', schedule: jp.daily('03:00'),
          steps: [
            jp.lambda('quick', 'examples.noop:run'),
            jp.python('short', 'examples.noop:run', opts={ timeout: '10m' }),
            jp.python('long', 'examples.noop:run'),
          ],
        }
        """)
    result = repo.cli("plan")
    assert result.exit_code == 0, result.output
    assert "    on Lambda: quick (at most 15 min an attempt" in result.output
    assert "    could run on Lambda (python, timeout <= 15m): short (" in result.output
    assert "long" not in result.output.split("could run on Lambda")[1].splitlines()[0]


def test_a_team_root_with_runner_functions_says_which_checks_it_skips_and_takes_new_images(repo: Repo) -> None:
    """checkov reads no inline skip in a .tf.json: the compiler writes the team root's
    .checkov.yaml with each finding a runner function cannot fix and why; and a new runner
    image must be applied to that root, since its functions run the image."""
    from jobplane.compiler.output import CHECKOV_CONFIG, compile_all, image_roots
    from jobplane.contract.config import load_config

    repo.write("jobs/billing/fast.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'fast', team: 'billing', steps: [jp.lambda('go', 'examples.noop:run')] }
        """)
    repo.write("jobs/growth/slow.jsonnet", """\
        local jp = import 'jobplane.libsonnet';
        { name: 'slow', team: 'growth', steps: [jp.python('go', 'examples.noop:run')] }
        """)
    files = compile_all(load_config(repo.path)).files
    config = files[f"teams/billing/{CHECKOV_CONFIG}"]
    assert [line.strip("- ").strip() for line in config.splitlines() if line.startswith("  - ")] == [
        "CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_272", "CKV_AWS_50"]
    assert all(f"# CKV_AWS_{n}: " in config for n in (50, 115, 116, 272))  # each with its reason
    assert f"teams/growth/{CHECKOV_CONFIG}" not in files  # a root without functions skips nothing
    assert image_roots(files) == {"base", "teams/billing"}


def test_what_jobplane_import_writes_is_a_registered_kind_through_its_helper(repo: Repo, tmp_path) -> None:
    """The importer writes shell, django and celery steps as jp.* calls: each is a kind of the
    registry and the call is its helper's, so an imported file validates with the same kinds."""
    crontab = tmp_path / "crontab"
    crontab.write_text("0 1 * * * python /srv/app/manage.py clearsessions\n"
                       "0 2 * * * celery -A proj call billing.tasks.close_month\n"
                       "0 3 * * * /usr/bin/backup.sh --all\n")
    result = repo.cli("import", "--team", "billing", "--timezone", "UTC", "--format", "crontab", str(crontab))
    assert result.exit_code == 0, result.output
    written = "\n".join(p.read_text() for p in sorted((repo.path / "jobs" / "billing").glob("*.jsonnet")))
    used = set(re.findall(r"jp\.(\w+)\(", written)) & set(kinds.NAMES)
    assert used == {"django", "celery", "shell"}
    for name in used:
        assert kinds.BY_NAME[name].helper.startswith(f"{name}(")
    assert repo.cli("validate").exit_code == 0


# -- group kinds (parallel, map): what a group needs is asked of its kind, never its name -------
def test_each_group_kind_names_its_members_where_the_definition_has_them() -> None:
    from jobplane.compiler.model import Job

    step = {"name": "x", "python": "a.b:c"}
    definitions = {"parallel": [dict(step, name="one"), dict(step, name="two")],
                   "map": {"items": dict(step, name="one"), "each": dict(step, name="two")},
                   "approval": {"approvers": ["billing"]}}
    # an approval runs nothing and has no members: a person decides (compiler/kinds/approval.py)
    members = {"parallel": ["one", "two"], "map": ["one", "two"], "approval": []}
    assert {k.name for k in kinds.GROUPS} == set(definitions) == {
        k.name for k in step_kinds.KINDS if k.executor is step_kinds.Executor.GROUP}
    for kind in kinds.GROUPS:
        raw = {"name": "g", kind.name: definitions[kind.name]}
        job = Job.from_definition({"name": "j", "team": "billing", "steps": [raw]})
        [group] = job.steps
        assert group.kind is kind and [m.name for m in kind.members(group)] == members[kind.name]
        # the raw walk (jobplane validate) and the model name a member's place the same way
        assert [path for path, _ in kind.raw_members(raw)] == [kind.member_path(j)
                                                              for j in range(len(members[kind.name]))]
        with pytest.raises(TypeError, match="has no executor"):
            kind.executor


def test_a_map_that_ends_a_job_announcing_recovered_goes_on_to_the_finish() -> None:
    """The Finish transaction decides RECOVERED after any last step (compiler/asl.py
    finish_states); the map's states asked the builder for a check it no longer has, so such a
    job did not compile (AttributeError), hidden by the builder typed as ``object``."""
    from jobplane.compiler import asl
    from jobplane.compiler.model import Job

    job = Job.from_definition({"name": "fan", "team": "billing", "notify": {"events": ["FAILED", "RECOVERED"]},
                               "steps": [{"name": "close-all", "map": {
                                   "items": {"name": "tenants", "python": "a.b:c"},
                                   "each": {"name": "close-tenant", "python": "a.b:d"}}}]})
    states = asl.build_definition(job, "jp")["States"]
    assert states["close-all"]["Next"] == "Finish"
    assert states["Finish"]["Catch"][0]["Next"] == "Finish (cancelled)"  # where RECOVERED is decided


#: A test of a step's kind by its name (``kind.name == "map"``, ``step.kind != "parallel"``).
_KIND_NAME_TEST = re.compile(r"""kind_?(\.name)?\s*[!=]=\s*["'](%s)["']|["'](%s)["']\s*[!=]=\s*\w*\.?kind"""
                             % (("|".join(kinds.NAMES),) * 2))


def test_no_kind_is_told_by_its_name_outside_the_registry() -> None:
    """A new kind must not have to be found in if-chains: what differs between kinds is asked of
    the kind (compiler/kinds/, contract/step_kinds.py). The importer's own step model (the
    commands it recognises, importer/steps.py) is not a step kind."""
    src = ROOT / "src" / "jobplane"
    found = [f"{p.relative_to(src)}:{n}: {line.strip()}"
             for p in sorted(src.rglob("*.py"))
             if p.relative_to(src).parts[0] != "importer" and p.parent.name != "kinds"
             and p.name != "step_kinds.py"
             for n, line in enumerate(p.read_text().splitlines(), 1) if _KIND_NAME_TEST.search(line)]
    assert found == []


def test_every_executor_has_its_runtime_half_and_reads_its_own_attempts() -> None:
    """contract/executor_runtime.py: each place a step runs says how its attempts are read back,
    so the timeline asks the executor instead of sniffing the output's shape."""
    from jobplane.contract import executor_runtime as er

    assert set(er.RUNTIMES) == {e.value for e in step_kinds.Executor if e is not step_kinds.Executor.GROUP}
    ecs_task = {"TaskArn": "arn:aws:ecs:us-east-1:123456789012:task/jobplane/abc123", "StopCode": "EssentialContainerExited",
                "Containers": [{"ExitCode": 75}]}
    lambda_error = {"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out after 900.00 seconds",
                    "requestId": "r-1"}
    assert er.runtime_of(ecs_task).name == "ecs" and er.runtime_of(lambda_error).name == "lambda"
    assert er.runtime_of(ecs_task).attempt_facts(ecs_task, with_reason=True) == {
        "exit_code": 75, "task_id": "abc123", "stop_code": "EssentialContainerExited"}
    assert er.runtime_of(lambda_error).attempt_facts(lambda_error, with_reason=True) == {
        "task_id": "r-1", "reason": "Task timed out after 900.00 seconds"}
    scheduled = {"resourceType": "lambda", "parameters": json.dumps(
        {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:jobplane-fan-runner"})}
    assert er.scheduled_log_group(scheduled) == lambda_step.log_group("jobplane-fan-runner")
    assert er.scheduled_log_group({"resourceType": "ecs", "parameters": "{}"}) is None
    assert er.submitted_facts({"Tasks": [{"TaskArn": ecs_task["TaskArn"]}]}) == {"task_id": "abc123"}
