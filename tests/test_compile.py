"""The compiler's outputs: deterministic bytes, the state budget of SPEC.md, Terraform scoped to
each job, a catalog for the portal, and an output directory that only ever holds a whole compile."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import ROOT, Repo, minimal_job
from jobplane.compiler import asl, definitions, terraform
from jobplane.contract import bindings
from jobplane.compiler.model import Job
from jobplane.compiler.output import compile_all, job_files
from jobplane.compiler.shared_roles import ROLES_FILE, role_refs
from jobplane.contract.config import load_config


@pytest.fixture(scope="module")
def examples() -> dict[str, str]:
    return compile_all(load_config(ROOT)).files


def tf_of(files: dict[str, str], job_name: str) -> dict[str, Any]:
    """A job's compiled Terraform file."""
    return json.loads(files[job_files(files)[job_name]])


def asl_of(files: dict[str, str], job_name: str) -> str:
    """A job's ASL, tokens included, from the one copy its Terraform file holds."""
    return bindings.asl_of(files[job_files(files)[job_name]])


def job(**overrides: Any) -> Job:
    base = {"name": "nightly", "team": "billing", "timezone": "UTC", "schedule": ["cron(0 2 * * ? *)"],
            "steps": [{"name": "only", "python": "m:f"}]}
    return Job.from_definition(base | overrides)


def steps(n: int, **step: Any) -> list[dict[str, Any]]:
    return [{"name": f"s{i}", "python": "m:f", **step} for i in range(n)]


# -- walking the state machine along one scenario -------------------------------------------
Decide = Callable[[str, dict[str, Any]], str | None]


def walk(definition: dict[str, Any], decide: Decide) -> list[str]:
    """States entered from StartAt to an end, letting ``decide`` pick at branching points (None:
    the run ends there; a state with ``End`` may still go on by its Catch)."""
    states, name, path = definition["States"], definition["StartAt"], []
    while name is not None:
        path.append(name)
        assert len(path) < 200, path
        state = states[name]
        if state["Type"] in ("Succeed", "Fail"):
            break
        name = decide(name, state)
    return path


def success(name: str, state: dict[str, Any]) -> str:
    if state["Type"] == "Choice":
        assert name in ("Start", "Route"), f"a success decides nothing after the input: {name}"
        return state["Default"]  # a complete input that resumes nothing
    return state.get("Next")


def caught(error: str) -> Decide:
    def decide(name: str, state: dict[str, Any]) -> str:
        if state["Type"] == "Task" and state["Resource"].endswith("runTask.sync"):
            return next(c["Next"] for c in state["Catch"] if error in c["ErrorEquals"])
        if state["Type"] == "Choice" and name not in ("Start", "Route"):
            return state["Default"]  # the check: no infrastructure StopCode, no retry left or wanted
        return success(name, state)
    return decide


def permanent_failure(name: str, state: dict[str, Any]) -> str:
    """An exit code that is never retried (78): the Task fails, the check records it."""
    if state["Type"] == "Choice" and name not in ("Start", "Route"):
        permanent = [c for c in state["Choices"] if '*\\"ExitCode\\":78,*' in json.dumps(c)]
        assert permanent, f"{name}: no rule for a permanent exit code"
        return str(permanent[0]["Next"])
    return caught("States.TaskFailed")(name, state)


def skipped(reason_state: str) -> Decide:
    def decide(name: str, state: dict[str, Any]) -> str:
        if name == "Start":
            return state["Default"]
        if name in ("Claim (first)", "Claim"):
            return state["Catch"][0]["Next"]
        if name == "Skip: load state" and reason_state == "Skip: duplicate":  # its condition failed
            return next(c["Next"] for c in state["Catch"] if "DynamoDB.ConditionalCheckFailedException" in c["ErrorEquals"])
        if name == "Skip: why":
            return next(c["Next"] for c in state["Choices"] if c["Next"] == reason_state)
        return state.get("Next")
    return decide


def test_successful_runs_stay_within_the_state_budget() -> None:
    # SPEC ("Fewer state transitions"): a one-step success enters at most 3 states (issue 66), each further
    # step 1 more. A .sync Task that succeeded ran its container to exit 0 (a non-zero exit
    # fails it: aws/copilot-cli#3160), so no check follows a success.
    one = walk(asl.build_definition(job(), "jobplane"), success)
    assert one == ["Claim (first)", "only", "Finish"]
    for n in (2, 3, 5):
        path = walk(asl.build_definition(job(steps=steps(n)), "jobplane"), success)
        assert path == ["Claim (first)", *(f"s{i}" for i in range(n)), "Finish"]
        assert len(path) <= 3 + (n - 1), path
    lam = walk(asl.build_definition(job(steps=[{"name": "quick", "lambda": "m:f"}]), "jobplane"), success)
    assert lam == ["Claim (first)", "quick", "Finish"]


def test_recovered_notification_costs_nothing_on_the_normal_path() -> None:
    """The Finish transaction decides RECOVERED (its release holds a no-block condition), so a
    job that announces RECOVERED pays nothing for it on a success that ends no failure streak."""
    j = job(notify={"events": ["FAILED", "RECOVERED"]}, steps=steps(3))
    d = asl.build_definition(j, "jobplane")
    assert walk(d, success) == ["Claim (first)", "s0", "s1", "s2", "Finish"]
    finish = d["States"]["Finish"]
    release = finish["Parameters"]["TransactItems"][0]["Update"]
    assert release["ConditionExpression"] == "attribute_not_exists(blocked_by)"
    # a cancellation is not retried blindly (its Catch reads why), conflicts still are
    retried = {e for r in finish["Retry"] for e in r["ErrorEquals"]}
    assert "DynamoDb.TransactionCanceledException" not in retried and "DynamoDb.TransactionConflictException" in retried
    assert finish["Catch"] == [{"ErrorEquals": ["DynamoDb.TransactionCanceledException"],
                                "ResultPath": "$.finish_error", "Next": "Finish (cancelled)"}]

    def recovering(cause: str) -> Decide:
        def decide(name: str, state: dict[str, Any]) -> str:
            if name in ("Finish", "Finish (again)"):
                return str(state["Catch"][0]["Next"])
            if name == "Finish (cancelled)":
                rule = state["Choices"][0]
                return str(rule["Next"] if fnmatch.fnmatchcase(cause, rule["And"][1]["StringMatches"]) else state["Default"])
            return success(name, state)
        return decide

    reasons = "Transaction cancelled, please refer cancellation reasons for specific reasons [{}, None]"
    assert walk(d, recovering(reasons.format("ConditionalCheckFailed"))) == [
        "Claim (first)", "s0", "s1", "s2", "Finish", "Finish (cancelled)", "Finish (recovered)", "Notify recovered"]
    # cancelled by a concurrent transaction: the same conditional write again, with the usual
    # retries (cancellations included); cancelled even then, it is the block
    assert walk(d, recovering(reasons.format("TransactionConflict"))) == [
        "Claim (first)", "s0", "s1", "s2", "Finish", "Finish (cancelled)", "Finish (again)", "Finish (recovered)",
        "Notify recovered"]
    again = d["States"]["Finish (again)"]
    assert again["Parameters"] == finish["Parameters"] and "End" in again
    assert "DynamoDb.TransactionCanceledException" in {e for r in again["Retry"] for e in r["ErrorEquals"]}
    recovered = d["States"]["Finish (recovered)"]
    assert "ConditionExpression" not in recovered["Parameters"]["TransactItems"][0]["Update"]
    # a job that does not announce RECOVERED releases unconditionally, as before
    plain = asl.build_definition(job(), "jobplane")["States"]
    assert "ConditionExpression" not in plain["Finish"]["Parameters"]["TransactItems"][0]["Update"]
    assert not {"Finish (cancelled)", "Finish (again)", "Finish (recovered)"} & set(plain)


def test_failures_and_skips_stay_within_the_state_budget() -> None:
    retried = asl.build_definition(job(steps=steps(1, retry={"attempts": 3})), "jobplane")
    # A permanent exit code on the first attempt: no retry.
    assert walk(retried, permanent_failure) == ["Claim (first)", "s0", "s0: check", "s0: failed", "Notify failure", "Fail"]
    # a success never reaches the check: only a failed task's catcher goes there
    check = retried["States"]["s0: check"]
    assert retried["States"]["s0"]["Next"] == "Finish"
    assert not any("NumericEquals" in json.dumps(c) and "result" in json.dumps(c) for c in check["Choices"])
    # AWS fails the Task on a non-zero exit; the check tells the step's failure from the
    # infrastructure's, then records it.
    plain = asl.build_definition(job(), "jobplane")
    assert walk(plain, caught("States.TaskFailed")) == ["Claim (first)", "only", "only: check", "only: failed",
                                                        "Notify failure", "Fail"]
    # a timeout skips the check: its catcher names the step for the job's one timeout record
    assert walk(plain, caught("States.Timeout")) == ["Claim (first)", "only", "Finish (timed out)", "Notify failure",
                                                     "Fail"]
    timeout_catcher = next(c for c in plain["States"]["only"]["Catch"] if c["ErrorEquals"] == ["States.Timeout"])
    assert timeout_catcher["Assign"] == {"failed_step": "only"}
    record = plain["States"]["Finish (timed out)"]
    assert record["ResultSelector"] == {"status": "TIMED_OUT", "step.$": "States.Format('{}', $failed_step)"}
    assert record["Parameters"]["TransactItems"][1]["Put"]["Item"]["failed_step"] == {
        "S.$": "States.Format('{}', $failed_step)"}
    # SPEC ("The compiled state machine"): a failure enters at most 7 states. A shared failure
    # record reached through a per-step Pass would make it 8 (tried for issue 19, reverted).
    for path in (walk(retried, permanent_failure), walk(plain, caught("States.TaskFailed")),
                 walk(plain, caught("States.Timeout")), walk(plain, caught("States.ALL"))):
        assert len(path) <= 7, path
    # SPEC: a duplicate skip enters at most 4 states (whatever the policy), a holder-check skip 6.
    # The load's own condition tells a duplicate (the claim's condition on the newest fire).
    for policy in ("ALWAYS_RUN", "SKIP_IF_RUNNING", "SKIP_IF_FAILED", "REPLACE"):
        d = asl.build_definition(job(policy=policy), "jobplane")
        dup = walk(d, skipped("Skip: duplicate"))
        assert dup == ["Claim (first)", "Skip: load state", "Skip: duplicate"], policy
        load = d["States"]["Skip: load state"]
        assert load["Resource"] == "arn:aws:states:::dynamodb:updateItem" and load["Parameters"]["ReturnValues"] == "ALL_NEW"
        assert "#sched < :fire" in load["Parameters"]["ConditionExpression"]
        assert load["Parameters"]["ExpressionAttributeValues"][":fire"] == \
            d["States"]["Claim"]["Parameters"]["ExpressionAttributeValues"][":fire"]
        assert "Skip: duplicate" not in {c["Next"] for c in d["States"]["Skip: why"]["Choices"]}
    exclusive = asl.build_definition(job(policy="SKIP_IF_RUNNING"), "jobplane")
    running = walk(exclusive, skipped("Skip: running"))
    assert running == ["Claim (first)", "Skip: load state", "Skip: check holder", "Skip: why", "Skip: running"]
    assert len(running) <= 6


def test_retries_loop_through_one_task_with_backoff_waits() -> None:
    d = asl.build_definition(job(steps=steps(1, retry={"attempts": 4, "interval": "10s", "backoff": 3,
                                                        "max_interval": "60s"})), "jobplane")
    states = d["States"]
    # one Task runs every attempt (issue 19: unrolled, each attempt repeated the Task and its check)
    attempts = [n for n, s in states.items() if s.get("Resource", "").endswith("runTask.sync")]
    assert attempts == ["s0"] and [n for n, s in states.items() if s["Type"] == "Choice" and n.startswith("s0")] == ["s0: check"]
    assert states["s0"]["ResultPath"] == "$.run.steps.s0.result"
    # the claim starts the counter; the retry state counts and picks attempt n's back-off (index n)
    assert states["Claim"]["ResultSelector"]["steps"] == {"s0": {"n": 1}}
    retry = states["s0: retry"]["Parameters"]
    assert retry["n.$"] == "States.MathAdd($.run.steps.s0.n, 1)"
    assert retry["wait.$"] == "States.ArrayGetItem(States.Array(0, 10, 30, 60), $.run.steps.s0.n)"
    assert states["s0: retry"]["ResultPath"] == "$.run.steps.s0"  # the last attempt's result goes
    assert states["s0: wait"] == {"Type": "Wait", "SecondsPath": "$.run.steps.s0.wait", "Next": "s0"}
    # the last attempt fails the step whatever its error
    rules = states["s0: check"]["Choices"]
    assert {"Variable": "$.run.steps.s0.n", "NumericGreaterThanEquals": 4, "Next": "s0: failed"} in rules
    env = {e["Name"]: e for e in states["s0"]["Parameters"]["Overrides"]["ContainerOverrides"][0]["Environment"]}
    assert env["JOBPLANE_ATTEMPT"] == {"Name": "JOBPLANE_ATTEMPT", "Value.$": "States.Format('{}', $.run.steps.s0.n)"}
    assert json.loads(env["JOBPLANE_TARGET"]["Value"]) == {"kind": "python", "target": "m:f"}
    # a step with one attempt has no counter, no retry and no wait
    once = asl.build_definition(job(steps=steps(1)), "jobplane")["States"]
    assert "s0: retry" not in once and "s0: wait" not in once and once["Claim"]["ResultSelector"]["steps"] == {}
    env = {e["Name"]: e for e in once["s0"]["Parameters"]["Overrides"]["ContainerOverrides"][0]["Environment"]}
    assert env["JOBPLANE_ATTEMPT"] == {"Name": "JOBPLANE_ATTEMPT", "Value": "1"}


def test_policy_is_in_the_claim_condition() -> None:
    conditions = {p: asl.build_definition(job(policy=p), "jobplane")["States"]["Claim"]["Parameters"]["ConditionExpression"]
                  for p in ("ALWAYS_RUN", "SKIP_IF_RUNNING", "SKIP_IF_FAILED", "SKIP_IF_RUNNING_OR_FAILED")}
    assert conditions["ALWAYS_RUN"] == "(attribute_not_exists(#sched) OR #sched < :fire) AND attribute_not_exists(#paused)"
    assert conditions["SKIP_IF_RUNNING"].endswith("AND attribute_not_exists(#running)")
    assert conditions["SKIP_IF_FAILED"].endswith("AND attribute_not_exists(#blocked)")
    assert conditions["SKIP_IF_RUNNING_OR_FAILED"].endswith("attribute_not_exists(#running) AND attribute_not_exists(#blocked)")


def test_a_paused_jobs_scheduled_fire_is_refused_by_the_claim_itself() -> None:
    """A pause disables the schedule, and an apply of the team's root enables it again (the
    compiled state is ENABLED): every policy's claim refuses a fire whose trigger has its
    pause_<trigger> set (a pause sets pause_schedule), and says why (SKIPPED, PAUSED)."""
    for p in ("ALWAYS_RUN", "SKIP_IF_RUNNING", "SKIP_IF_FAILED", "SKIP_IF_RUNNING_OR_FAILED"):
        states = asl.build_definition(job(policy=p), "jobplane")["States"]
        claim = states["Claim"]["Parameters"]
        assert "attribute_not_exists(#paused)" in claim["ConditionExpression"]
        assert claim["ExpressionAttributeNames"]["#paused.$"] == "States.Format('pause_{}', $.trigger)"
        why = states["Skip: why"]["Choices"][0]
        assert why["And"][1] == {"Variable": "$.state.Item.pause_schedule", "IsPresent": True}
        assert states[why["Next"]]["ResultSelector"]["reason"] == "PAUSED"


def test_output_is_deterministic(examples: dict[str, str]) -> None:
    again = compile_all(load_config(ROOT)).files
    assert again == examples
    month_end = json.loads(asl_of(examples, "month-end-close"))
    assert month_end["StartAt"] == "Claim (first)"


def test_terraform_is_scoped_to_each_job(examples: dict[str, str]) -> None:
    for job_name, path in job_files(examples).items():
        doc = json.loads(examples[path])
        for role, policy in doc["data"]["aws_iam_policy_document"].items():
            for st in policy["statement"]:
                assert all("*" not in a for a in st["actions"]), (path, role, st)
                if "resources" in st:
                    assert "*" not in st["resources"], (path, role, st)
        # its roles are its team's (roles.tf.json), named after the team, never another team's
        team = path.split("/")[1]
        roles = json.loads(examples[f"teams/{team}/{ROLES_FILE}"])["resource"]["aws_iam_role"]
        assert "aws_iam_role" not in doc["resource"]
        for rid in role_refs(doc):
            assert len(roles[rid]["name"]) <= 64 and roles[rid]["name"].startswith(f"jobplane-{team}-"), rid
        ddb = next(st for st in doc["data"]["aws_iam_policy_document"][f"{job_name.replace('-', '_')}_sfn"]["statement"]
                   if st["sid"] == "JobStateAndHistory")
        assert ddb["condition"][0]["values"] == [f"JOB#{job_name}", "EXEC#*"]


def test_schedules_carry_timezone_retry_and_dead_letter(examples: dict[str, str]) -> None:
    doc = tf_of(examples, "daily-sales-report")
    (schedule,) = doc["resource"]["aws_scheduler_schedule"].values()
    assert schedule["schedule_expression"] == "cron(0 2 * * ? *)"
    assert schedule["schedule_expression_timezone"] == "Asia/Tokyo"
    assert schedule["target"]["retry_policy"]["maximum_retry_attempts"] > 0
    assert schedule["target"]["dead_letter_config"]["arn"] == "${local.platform.scheduler_dlq_arn}"
    sent = json.loads(schedule["target"]["input"])
    assert sent["scheduled_time"] == "<aws.scheduler.scheduled-time>" and sent["trigger"] == "schedule"
    paused = tf_of(examples, "rotate-audit-archives")["resource"]["aws_scheduler_schedule"]
    assert [s["state"] for s in paused.values()] == ["DISABLED"]
    assert "aws_scheduler_schedule" not in tf_of(examples, "backfill-search-index")["resource"]


def test_user_text_is_never_interpolated_by_terraform(examples: dict[str, str]) -> None:
    tf = tf_of(examples, "weekly-cohort-export")
    definition = tf["resource"]["aws_sfn_state_machine"]["weekly_cohort_export"]["definition"]
    assert "$${EXPORT_DIR:-/tmp/export}" in definition
    assert "${local.platform.table_name}" in definition and "${local.platform.runner_family}" in definition
    assert "<<jobplane:" not in definition
    # Terraform's own unescaping gives back the compiled ASL with the deployment values bound.
    unescaped = definition.replace("$${", "${")
    job = next(lj.job for lj in compile_all(load_config(ROOT)).jobs if lj.job.name == "weekly-cohort-export")
    expected = bindings.bind(asl.render(asl.build_definition(job, "jobplane")),
                             {n: "${" + e + "}" for n, e in bindings.terraform_expressions("weekly_cohort_export", False).items()})
    assert unescaped == expected


@pytest.mark.parametrize("text", ["${x}", "$${x}", "$$${x}", "%{if}", "%%{x}", "$", "%", "${", "}${local.platform.table_name}",
                                  "a$b%c{d}", "<<jobplane>>"])
def test_the_asl_read_back_from_terraform_is_the_compiled_asl(text: str) -> None:
    """The job's Terraform file is the one stored copy of its ASL: reading it back gives the exact
    bytes, whatever template-like text a step's arguments hold."""
    job = Job.from_definition({"name": "tricky", "team": "billing", "timezone": "UTC", "params": {"p": text},
                              "steps": [{"name": "s", "python": "m:f", "kwargs": {"k": text}},
                                        {"name": "t", "shell": ["echo", text]}]})
    compiled = asl.render(asl.build_definition(job, "jobplane"))
    doc = json.loads(terraform.render(terraform.job_module(job, compiled, load_config(ROOT))))
    assert bindings.asl_of(json.dumps(doc)) == compiled
    assert definitions.asl_of_document(doc) == compiled  # the digest's quicker reading, the same text
    with pytest.raises(ValueError, match="not a template"):  # anything else is refused, never guessed
        bindings.unbind_terraform("${var.region}", bindings.terraform_expressions("tricky", False))
    machine = doc["resource"]["aws_sfn_state_machine"]["tricky"]
    for unbound in ("${var.region}", "${local.platform.table_name", "${{local.platform.table_name}",
                    "${local.platform.table_name{}", "$${local.platform.table_name}", "${${local.platform.table_name}",
                    "${local.platform.table_name}"):  # what bindings does with it, it does
        machine["definition"] = f"{compiled[:-1]},\"x\":\"{unbound}\"}}"
        try:
            expected: object = bindings.asl_of_document(doc)
        except ValueError as e:
            expected = str(e)
        try:
            got: object = definitions.asl_of_document(doc)
        except ValueError as e:
            got = str(e)
        assert got == expected


def test_each_asl_is_stored_once(examples: dict[str, str]) -> None:
    from jobplane.compiler.blackouts import job_windows

    config = load_config(ROOT)
    for lj in compile_all(config).jobs:  # a job's blackout windows are compiled into it (jobplane.toml's)
        compiled = asl.render(asl.build_definition(lj.job, "jobplane", None, job_windows(lj.job, config)))
        assert asl_of(examples, lj.job.name) == compiled
    # no other file holds a state machine: no asl/ copies, nothing in the catalogs or root files
    assert [rel for rel, text in examples.items() if "StartAt" in text] == sorted(job_files(examples).values())


def test_the_binding_token_is_refused_in_definitions(repo: Repo) -> None:
    repo.write("jobs/billing/a.jsonnet", minimal_job("job-a").replace(
        "jp.python('run', 'examples.noop:run')", "jp.python('run', 'examples.noop:run', kwargs={ t: 'x<<jobplane:table_name>>' })"))
    result = repo.cli("validate")
    assert result.exit_code == 2
    assert "job 'job-a': steps[0].kwargs.t: '<<jobplane:' is reserved" in result.stderr


def test_secrets_get_a_task_definition_and_a_scoped_execution_role(examples: dict[str, str]) -> None:
    doc = tf_of(examples, "month-end-close")
    container = json.loads(doc["resource"]["aws_ecs_task_definition"]["month_end_close"]["container_definitions"])[0]
    # a secret given by name: its full ARN is looked up at plan time (a missing secret fails the plan)...
    assert doc["data"]["aws_secretsmanager_secret"] == {
        "month_end_close_ledger_api_token": {"name": "billing/ledger-api-token"}}
    assert container["secrets"] == [{"name": "LEDGER_API_TOKEN", "valueFrom":
                                     "${data.aws_secretsmanager_secret.month_end_close_ledger_api_token.arn}"}]
    exec_doc = doc["data"]["aws_iam_policy_document"]["month_end_close_exec"]
    read = next(st for st in exec_doc["statement"] if st["sid"] == "ReadJobSecrets")
    # ...and granted with the 6-character suffix Secrets Manager adds (IAM matches full ARNs only)
    assert read["resources"] == ["arn:${data.aws_partition.current.partition}:secretsmanager:"
                                 "${data.aws_region.current.region}:${data.aws_caller_identity.current.account_id}:"
                                 "secret:billing/ledger-api-token-??????"]
    # the secret value itself never appears in the state machine
    assert "LEDGER_API_TOKEN" not in asl_of(examples, "month-end-close")
    # its state machine runs its own task definition's family (the latest ACTIVE revision)
    assert json.loads(asl_of(examples, "month-end-close")).__repr__().count("<<jobplane:task_definition>>") > 0
    definition = doc["resource"]["aws_sfn_state_machine"]["month_end_close"]["definition"]
    assert "${aws_ecs_task_definition.month_end_close.family}" in definition and "runner_family" not in definition


@pytest.mark.parametrize("value, accepted, says", [
    ("secretsmanager:billing/ledger-api-token", True, ""),
    ("ssm:/billing/api-key", True, ""),
    ("ssm:plain-name", True, ""),
    ("billing/ledger-api-token", False, "never the secret"),  # a bare value: a name or a password? refused
    # an ARN could name another account's secret: refused, with the name to write instead
    ("arn:aws:secretsmanager:ap-northeast-1:123456789012:secret:billing/ledger-api-token-AbC123", False,
     "jp.secret('billing/ledger-api-token')"),
    ("arn:aws:secretsmanager:ap-northeast-1:123456789012:secret:billing/ledger-api-token", False,
     "jp.secret('billing/ledger-api-token')"),  # partial
    ("arn:aws:ssm:ap-northeast-1:123456789012:parameter/billing/token", False, "jp.parameter('/billing/token')"),
    ("ssm:billing/token", False, "starts with '/'"),  # Parameter Store's fully qualified names
    ("secretsmanager:billing/*", False, "never the secret"),  # no wildcard
    ("ssm:/billing/*", False, "not a Parameter Store name"),
    ("xoxb-123456-abcdef", False, "never the secret"),  # a token itself
    ("hunter2 with spaces", False, "never the secret"),
])
def test_a_secret_is_a_name(value: str, accepted: bool, says: str) -> None:
    from jobplane.compiler.fields import Invalid
    from jobplane.compiler.model import Step

    if accepted:
        assert Step.from_definition({"name": "s", "python": "m:f", "secrets": {"TOKEN": value}}).secrets["TOKEN"] == value
    else:
        with pytest.raises(Invalid) as raised:
            Step.from_definition({"name": "s", "python": "m:f", "secrets": {"TOKEN": value}})
        assert says in str(raised.value)


def deploy_section() -> str:
    """Every [deploy] value, as `make tfcheck`'s pipeline plan writes them (scripts/check_workflow_plan.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_workflow_plan", ROOT / "scripts" / "check_workflow_plan.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.deploy_section())


def test_the_base_roots_settings_are_committed_and_read_by_terraform_itself(repo: Repo) -> None:
    """Issue 41, item 1: the optional variables lived in a git-ignored terraform.tfvars, so the
    first CI apply reset them. [deploy] in jobplane.toml compiles to the base root's
    jobplane.auto.tfvars.json (Terraform loads it with no flag); the portal's admins and team
    members come from jobplane.toml's own lists."""
    portal = json.loads((ROOT / "deploy/portal.example.tfvars.json").read_text())["portal"]
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text() + deploy_section())
    assert repo.cli("compile").exit_code == 0
    tfvars = json.loads((repo.out / "base/jobplane.auto.tfvars.json").read_text())
    config = load_config(repo.path)
    assert tfvars == {
        "portal_url": "https://jobs.example.com",
        "slack_webhook_secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobplane/slack-AbC123",
        "vpc_endpoints": {"vpc_id": "vpc-0123456789abcdef0", "route_table_ids": ["rtb-0123456789abcdef0"]},
        "runner_images_kept": 73, "execution_retention_days": 421, "log_retention_days": 545,
        "slow_check_schedule": "rate(3 minutes)",
        "portal": {**{k: v for k, v in portal.items() if k not in ("admins", "team_members")},
                   "admins": list(config.platform_admins),
                   "team_members": {t.name: list(t.members) for t in config.teams.values()}}}
    # every name the file sets is a variable the base root declares, of the module's portal shape
    base = json.loads((repo.out / "base/main.tf.json").read_text())
    assert set(tfvars) <= set(base["variable"]) and set(tfvars["portal"]) == set(portal)
    assert base["module"]["platform"]["log_retention_days"] == "${var.log_retention_days}"
    # a change to [deploy] is a change of the base root, in words
    toml.write_text(toml.read_text().replace('portal_url = "https://jobs.example.com"',
                                             'portal_url = "https://jobplane.example.com"'))
    out = repo.cli("plan").stdout
    assert "~ base root changed (base/jobplane.auto.tfvars.json)" in out, out
    assert '    [deploy] portal_url: "https://jobs.example.com" -> "https://jobplane.example.com"' in out
    # without [deploy] the file says nothing: the module's defaults (and the root declares none of
    # the plain settings: the examples' compiled base root is as it was before they existed)
    toml.write_text(toml.read_text().split("\n[deploy]")[0])
    assert repo.cli("compile").exit_code == 0
    assert json.loads((repo.out / "base/jobplane.auto.tfvars.json").read_text()) == {}
    base = json.loads((repo.out / "base/main.tf.json").read_text())
    assert not {"runner_images_kept", "log_retention_days"} & (set(base["variable"]) | set(base["module"]["platform"]))


@pytest.mark.parametrize("bad, says", [
    ('portal_url = "http://jobs.example.com"', "portal_url: the portal's https:// URL"),
    ('slack_webhook_secret_arn = "https://hooks.slack.com/services/T/B/C"', "full ARN of the Secrets Manager secret"),
    ('vpc_endpoints = { vpc_id = "vpc-1" }', "vpc_endpoints: missing route_table_ids"),
    ('vpc_endpoints = { vpc_id = "vpc-0123456789abcdef0", route_table_ids = ["rtb-0123456789abcdef0"], '
     'endpoint_subnet_ids = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"] }',
     "vpc_endpoints.endpoint_subnet_ids: a subnet is named twice"),
    ('vpc_endpoints = { vpc_id = "vpc-0123456789abcdef0", route_table_ids = ["rtb-0123456789abcdef0"], '
     'endpoint_subnet_ids = ["sn-1"] }', "vpc_endpoints.endpoint_subnet_ids[0]"),
    ('portal = { image = "x", admins = ["a@example.com"] }', "admins and team_members come from [platform] admins"),
    ('region = "us-east-1"', "[deploy] has unknown keys: region"),
    ("log_retention_days = 100", "log_retention_days: one of CloudWatch Logs' retention periods"),
    ("runner_images_kept = 3", "runner_images_kept: a whole number, 10-1000"),
    ("execution_retention_days = 0", "execution_retention_days: a whole number of days, 1-3650"),
    ('slow_check_schedule = "cron(0 * * * ? *)"', "slow_check_schedule: 'rate(1 minute)' .. 'rate(60 minutes)'"),
    ('slow_check_schedule = "rate(90 minutes)"', "slow_check_schedule: 'rate(1 minute)'"),
])
def test_a_bad_deploy_section_is_refused_with_every_problem(repo: Repo, bad: str, says: str) -> None:
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text() + "\n[deploy]\n" + bad + "\n")
    result = repo.cli("validate")
    assert result.exit_code != 0 and says in result.stderr + result.stdout, result.stderr + result.stdout
    assert "jobplane.toml" in result.stderr + result.stdout


def test_catalog_describes_jobs_for_the_portal(examples: dict[str, str]) -> None:
    catalog = json.loads(compile_all(load_config(ROOT)).catalog.render())
    jobs = {j["name"]: j for j in catalog["jobs"]}
    assert len(jobs) == 10 and {t["name"] for t in catalog["teams"]} == {"billing", "growth", "platform"}
    close = jobs["month-end-close"]
    assert close["source"] == "jobs/billing/month-end-close.jsonnet"
    assert close["policy"] == "SKIP_IF_RUNNING_OR_FAILED" and close["timezone"] == "Asia/Tokyo"
    assert close["runbook"]["recovery"].startswith("Fix the cause")
    assert [s["name"] for s in close["steps"][1]["parallel"]] == ["reconcile-card-payments", "reconcile-bank-transfers"]
    assert close["steps"][2]["secrets"] == ["LEDGER_API_TOKEN"]
    definition = json.loads(asl_of(examples, "month-end-close"))
    assert close["states"] == len(definition["States"]) + sum(
        len(b["States"]) for s in definition["States"].values() for b in s.get("Branches", []))
    # each team's root uploads its part, which names only that team; the parts merge into the whole
    billing = json.loads(examples["teams/billing/catalog.json"])
    assert [t["name"] for t in billing["teams"]] == ["billing"] and {j["team"] for j in billing["jobs"]} == {"billing"}
    assert close["asl"] == "teams/billing/month-end-close.job.tf.json" and close["asl"] in examples
    assert jobs["backfill-search-index"]["schedule"] == []
    assert jobs["archive-sales-report"]["after"] == [{"job": "daily-sales-report", "on": "SUCCEEDED"}]


def test_compile_replaces_only_its_own_files(repo: Repo) -> None:
    repo.write("jobs/billing/a.jsonnet", minimal_job("job-a"))
    repo.write("jobs/billing/b.jsonnet", minimal_job("job-b"))
    assert repo.cli("compile").exit_code == 0
    (repo.out / ".terraform").mkdir()
    (repo.out / "terraform.tfvars").write_text('region = "ap-northeast-1"\n')
    (repo.path / "jobs/billing/b.jsonnet").unlink()
    result = repo.cli("compile")
    assert result.exit_code == 0
    assert not (repo.out / "teams/billing/job-b.job.tf.json").exists()
    assert (repo.out / "teams/billing/job-a.job.tf.json").exists()
    assert (repo.out / "terraform.tfvars").read_text() == 'region = "ap-northeast-1"\n'
    assert (repo.out / ".terraform").is_dir()
    assert repo.cli("compile").stdout.startswith("Compiled 1 jobs") and "0 files changed" in repo.cli("compile").stdout


def test_write_output_removes_the_directories_its_removed_files_leave_empty(tmp_path: Path) -> None:
    """What a removed team or shard leaves is removed with it, down to no empty directory; a
    directory that keeps a file or another directory stays (each looked at once, not once per file)."""
    from jobplane.compiler.output import CompiledOutput, write_output

    before = {"teams/a/x.job.tf.json": "{}", "teams/a/y.job.tf.json": "{}", "teams/b/deep/z.job.tf.json": "{}",
              "teams/b/w.job.tf.json": "{}", "teams/c/v.job.tf.json": "{}"}
    write_output(CompiledOutput(dict(before), []), tmp_path)
    after = {"teams/a/x.job.tf.json": "{}", "teams/c/v.job.tf.json": "{ }"}
    changed = write_output(CompiledOutput(dict(after), []), tmp_path)
    assert changed == ["teams/a/y.job.tf.json", "teams/b/deep/z.job.tf.json", "teams/b/w.job.tf.json",
                       "teams/c/v.job.tf.json"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "teams", "teams/a", "teams/a/x.job.tf.json", "teams/c", "teams/c/v.job.tf.json"]
    assert (tmp_path / "teams/c/v.job.tf.json").read_text() == "{ }"


def test_write_output_replaces_each_file_whole_with_an_ordinary_files_mode(tmp_path: Path) -> None:
    """Each file is written under a temporary name beside it and renamed over it (a reader sees
    the old file or the new one): as readable as an ordinary open() would make it, nothing left
    beside it, and a temporary name already taken (a leftover of a crashed writer) is not used."""
    import os

    from jobplane.compiler.output import CompiledOutput, write_output

    (tmp_path / "teams" / "a").mkdir(parents=True)
    leftover = tmp_path / "teams" / "a" / f".x.job.tf.json.{os.getpid()}.tmp"
    leftover.write_text("a crashed writer's")
    umask = os.umask(0o027)
    try:
        write_output(CompiledOutput({"teams/a/x.job.tf.json": "{\"é\": 1}\n", "teams/a/y.job.tf.json": "{}"}, []), tmp_path)
    finally:
        os.umask(umask)
    written = tmp_path / "teams" / "a" / "x.job.tf.json"
    assert written.read_bytes() == "{\"é\": 1}\n".encode() and oct(written.stat().st_mode & 0o777) == "0o640"
    assert leftover.read_text() == "a crashed writer's"
    assert sorted(p.name for p in (tmp_path / "teams" / "a").iterdir()) == [leftover.name, "x.job.tf.json", "y.job.tf.json"]


def test_bindings_refuse_unbound_tokens() -> None:
    with pytest.raises(KeyError, match="table_name"):
        bindings.bind("x <<jobplane:table_name>>", {})


def test_schema_export_describes_the_job(repo: Repo) -> None:
    result = repo.cli("schema")
    schema = json.loads(result.stdout)
    assert schema["title"] == "jobplane job"
    assert {"name", "team", "steps", "schedule", "policy"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False
    assert "SKIP_IF_RUNNING" in json.dumps(schema)


#: Mistakes that both the checker and the schema must refuse, each on a valid definition.
SCHEMA_MISTAKES: dict[str, Callable[[dict[str, Any]], None]] = {
    "unknown field": lambda d: d.update(shedule="rate(1 hour)"),
    "unknown step field": lambda d: d["steps"][0].update(retyr={"attempts": 2}),
    "missing team": lambda d: d.pop("team"),
    "no steps": lambda d: d.update(steps=[]),
    "policy": lambda d: d.update(policy="NEVER"),
    "enabled as text": lambda d: d.update(enabled="yes"),
    "attempts as text": lambda d: d["steps"][0].update(retry={"attempts": "3"}),
    "too many attempts": lambda d: d["steps"][0].update(retry={"attempts": 11}),
    "backoff below 1": lambda d: d["steps"][0].update(retry={"backoff": 0.5}),
    "memory as text": lambda d: d["steps"][0].update(memory="512"),
    "duration": lambda d: d.update(timeout=0),
    "empty duration": lambda d: d.update(timeout=""),
    "event": lambda d: d.update(notify={"events": ["FAILD"]}),
    "env value": lambda d: d["steps"][0].update(env={"A": 1}),
    "after without job": lambda d: d.update(after=[{"on": "FAILED"}]),
    "runbook without recovery": lambda d: d.update(runbook={"impact": "x"}),
    "params as text": lambda d: d.update(params="x"),
}


@pytest.mark.parametrize("mistake", list(SCHEMA_MISTAKES))
def test_the_schema_and_the_checker_come_from_one_table(repo: Repo, mistake: str) -> None:
    """`jobplane schema` is generated from the fields that check definitions (compiler/fields.py):
    it accepts every example job as the checker does, and refuses each planted mistake that the
    checker refuses (shape and type mistakes: rules such as cron syntax are the checker's alone)."""
    import copy

    import jsonschema

    from jobplane.compiler.fields import Invalid
    from jobplane.compiler.validate import evaluate

    repo.copy_examples()
    schema = json.loads(repo.cli("schema").stdout)
    validator = jsonschema.Draft202012Validator(schema)
    jsonschema.Draft202012Validator.check_schema(schema)
    config = load_config(repo.path)
    definitions = []
    for path in sorted(config.jobs_path.rglob("*.jsonnet")):
        if "lib" not in path.relative_to(config.jobs_path).parts:
            value = evaluate(path, config)
            definitions.extend([value] if isinstance(value, dict) else value)
    assert len(definitions) >= 7
    for definition in definitions:
        assert not list(validator.iter_errors(definition)), definition["name"]
        Job.from_definition(definition)
    bad = copy.deepcopy(next(d for d in definitions if d["steps"][0].get("python")))
    SCHEMA_MISTAKES[mistake](bad)
    assert list(validator.iter_errors(bad)), f"the schema accepts {mistake}"
    with pytest.raises(Invalid):
        Job.from_definition(bad)


def test_init_scaffolds_a_valid_job(repo: Repo) -> None:
    result = repo.cli("init", "billing/invoice-reminders")
    assert result.exit_code == 0
    assert (repo.path / "jobs/billing/invoice-reminders.jsonnet").exists()
    assert repo.cli("validate").exit_code == 0
    assert repo.cli("init", "billing/invoice-reminders").exit_code == 1


def test_every_example_parses_with_the_interpreter_that_runs_it(examples: dict[str, str]) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    from jobplane.platform.local import moto_patches

    moto_patches.apply_all()  # the interpreter the engine and `jobplane dev` run (a map's ResultWriter: its patch)
    local = {n: "arn:aws:states:us-east-1:123456789012:placeholder" for n in bindings.NAMES}
    for job_name in job_files(examples):
        AmazonStateLanguageParser.parse(bindings.bind(asl_of(examples, job_name), local))


def test_each_root_keeps_its_state_in_the_configured_s3_bucket(examples: dict[str, str], tmp_path: Path) -> None:
    from jobplane.compiler.terraform import base_root, team_root
    from jobplane.contract.config import ConfigError, load_config

    s3 = {"bucket": "example-jobplane-terraform-state", "region": "ap-northeast-1", "encrypt": True, "use_lockfile": True}
    assert json.loads(examples["base/main.tf.json"])["terraform"]["backend"] == {"s3": {**s3, "key": "jobplane/base.tfstate"}}
    for team in ("billing", "growth", "platform"):
        backend = json.loads(examples[f"teams/{team}/main.tf.json"])["terraform"]["backend"]
        assert backend == {"s3": {**s3, "key": f"jobplane/teams/{team}.tfstate"}}
    toml = (ROOT / "jobplane.toml").read_text()
    (tmp_path / "jobplane.toml").write_text(toml.replace('bucket = "example-jobplane-terraform-state"',
                                                         'bucket = "Not A Bucket"'))
    with pytest.raises(ConfigError, match=r"\[terraform\] bucket"):
        load_config(tmp_path)
    for bad in ('"jobplane/teams.tfstate"', '"jobplane/{team}/{team}.tfstate"', '"jobplane/{team}-{x}.tfstate"'):
        (tmp_path / "jobplane.toml").write_text(toml.replace('"jobplane/teams/{team}.tfstate"', bad))
        with pytest.raises(ConfigError, match=r"team_key must hold \{team\} once"):
            load_config(tmp_path)
    start = toml.index("[terraform]")
    (tmp_path / "jobplane.toml").write_text(toml[:start] + toml[toml.index("[dev]"):])
    assert "backend" not in base_root(load_config(tmp_path))["terraform"]
    assert "backend" not in team_root(load_config(tmp_path), "billing")["terraform"]


def test_the_base_and_each_team_are_separate_roots(examples: dict[str, str]) -> None:
    """The base module in its own root; each team's jobs in one root per team, which reads what
    the base publishes (never its state) and uploads its part of the catalog."""
    from jobplane.contract.published import PUBLISHED

    assert compile_all(load_config(ROOT)).roots == ["base", "teams/billing", "teams/growth", "teams/platform"]
    base = json.loads(examples["base/main.tf.json"])
    assert base["module"]["platform"]["source"] == "../../platform"  # jobplane.toml's ../platform, one level deeper
    assert "resource" not in base and "aws_sfn_state_machine" not in examples["base/main.tf.json"]
    for team in ("billing", "growth", "platform"):
        root = json.loads(examples[f"teams/{team}/main.tf.json"])
        assert "module" not in root and "terraform_remote_state" not in json.dumps(root)
        lookup = root["data"]["aws_ssm_parameter"]["platform"]
        assert lookup["name"] == "/jobplane/platform/${each.key}" and json.loads(lookup["for_each"][len("${toset("):-2]) == list(PUBLISHED)
        assert root["resource"]["aws_s3_object"]["catalog"]["key"] == f"catalog/{team}.json"
        assert set(root["variable"]) == {"region"}
    for job_name, path in job_files(examples).items():
        team = path.split("/")[1]
        assert json.loads(examples[f"teams/{team}/catalog.json"])["jobs"][0]["team"] == team
        assert "module.platform" not in examples[path] and "var.runner_image" not in examples[path]


def test_a_change_to_one_job_touches_only_its_teams_root(repo: Repo) -> None:
    def growth(policy: str = "SKIP_IF_RUNNING") -> str:
        return minimal_job("job-b", policy).replace("team: 'billing'", "team: 'growth'")

    repo.write("jobs/billing/a.jsonnet", minimal_job("job-a").replace(
        "steps: [", "steps: [{ name: 's', python: 'm:f', secrets: { T: jp.secret('billing/x') } },"))
    repo.write("jobs/growth/b.jsonnet", growth())
    assert repo.cli("compile").exit_code == 0
    assert repo.cli("plan", "--roots").stdout == ""
    # a new runner image reaches the base and the roots with task definitions of their own (job-a's)
    assert repo.cli("plan", "--roots", "--image-changed").stdout == "terraform/jobs/base\nterraform/jobs/teams/billing\n"
    repo.write("jobs/growth/b.jsonnet", growth("ALWAYS_RUN"))
    result = repo.cli("plan", "--roots", "--exit-code")
    assert (result.exit_code, result.stdout) == (2, "terraform/jobs/teams/growth\n")
    words = repo.cli("plan").stdout
    assert "~ job-b" in words and "Terraform roots to plan and apply, in this order: teams/growth" in words
    # moving a job to another team (its file to the team's directory) touches both teams' roots
    (repo.path / "jobs/growth/b.jsonnet").unlink()
    repo.write("jobs/billing/b.jsonnet", minimal_job("job-b"))
    assert repo.cli("plan", "--roots").stdout == "terraform/jobs/teams/billing\nterraform/jobs/teams/growth\n"


def test_a_team_name_must_be_a_directory_name(repo: Repo) -> None:
    toml = (repo.path / "jobplane.toml").read_text()
    (repo.path / "jobplane.toml").write_text(toml.replace("[teams.billing]", '[teams."../billing"]'))
    result = repo.cli("validate")
    assert result.exit_code != 0 and "a team name is 1-40 lower-case letters" in (result.stderr + result.stdout)


def test_the_reserved_names_are_the_base_modules_own() -> None:
    import re

    from jobplane.contract.names import BASE_MODULE_SUFFIXES

    text = "".join(p.read_text() for p in (ROOT / "terraform" / "platform").glob("*.tf"))
    # an S3 bucket's name is global and gets a unique suffix; no job's name becomes a bucket's
    text = re.sub(r'bucket_prefix\s*=\s*"[^"]*"', "", text)
    assert set(re.findall(r'"\$\{var\.name_prefix\}-([a-z-]+)"', text)) == set(BASE_MODULE_SUFFIXES)


@pytest.mark.parametrize("name", ["runner", "notifier"])
def test_a_job_named_like_a_base_module_resource_is_refused(tmp_path: Path, name: str) -> None:
    repo = Repo(tmp_path)
    repo.write(f"jobs/billing/{name}.jsonnet", minimal_job(name).replace(
        "steps: [", "steps: [{ name: 's', python: 'm:f', secrets: { T: jp.secret('billing/x') } },"))
    result = repo.cli("validate")
    assert result.exit_code == 2 and "which the base module already uses" in result.stderr


def test_overrides_that_cannot_fit_ecs_are_refused_at_validation(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    big = "x" * 3000
    repo.write("jobs/billing/bulky.jsonnet", minimal_job("bulky").replace(
        "steps: [", f"params: {{ a: '{big}', b: '{big}', c: '{big}' }},\n  steps: ["))
    result = repo.cli("validate")
    assert result.exit_code == 2
    assert "job 'bulky': params: the steps' container overrides would exceed ECS's 8192 characters" in result.stderr
    # with a third of that, it fits; the catalog says how much room runs have for their params
    repo.write("jobs/billing/bulky.jsonnet", minimal_job("bulky").replace("steps: [", f"params: {{ a: '{big}' }},\n  steps: ["))
    assert repo.cli("compile").exit_code == 0
    entry = next(j for j in json.loads((repo.path / "terraform/jobs/teams/billing/catalog.json").read_text())["jobs"]
                 if j["name"] == "bulky")
    assert 3000 < entry["params_budget"] < 8192



def test_an_infrastructure_failure_runs_the_same_attempt_again() -> None:
    plain = asl.build_definition(job(), "jobplane")
    seen: list[str] = []

    def infra_once(name: str, state: dict[str, Any]) -> str | None:
        if name == "only" and "only: infra retry" not in seen:  # the task could not start
            return caught("States.TaskFailed")(name, state)
        if name == "only: check" and "only: infra retry" not in seen:
            seen.append("only: infra retry")
            return next(c["Next"] for c in state["Choices"] if c["Next"] == "only: infra retry")
        return success(name, state)

    assert walk(plain, infra_once) == ["Claim (first)", "only", "only: check", "only: infra retry", "only: infra wait",
                                       "only", "Finish"]
    rule = next(c for c in plain["States"]["only: check"]["Choices"] if c["Next"] == "only: infra retry")
    assert {"Variable": "$.run.infra.n", "NumericLessThan": 3} in rule["And"]  # at most 3 per run
    assert plain["States"]["only: infra wait"] == {"Type": "Wait", "SecondsPath": "$.run.infra.wait", "Next": "only"}


def test_only_errors_of_the_runtask_call_are_retried_by_the_task_itself() -> None:
    d = asl.build_definition(job(), "jobplane")
    retry = d["States"]["only"]["Retry"]
    outcomes = next(i for i, r in enumerate(retry) if "States.TaskFailed" in r["ErrorEquals"])
    # a task that ran (TaskFailed: to the check) or timed out (to its record) is never retried here...
    assert retry[outcomes]["MaxAttempts"] == 0 and "States.Timeout" in retry[outcomes]["ErrorEquals"]
    # neither is a misconfiguration (States.Runtime is never retriable on AWS; moto would)
    assert {"States.Runtime", "ECS.ClusterNotFoundException"} <= set(retry[outcomes]["ErrorEquals"])
    # States.TaskFailed matches every error but States.Timeout in a retrier (AWS "Error names"):
    # the RunTask call's own errors (throttling, capacity) must be matched by a retrier before it
    call = next(i for i, r in enumerate(retry) if "ECS.ThrottlingException" in r["ErrorEquals"])
    assert call < outcomes and retry[call]["MaxAttempts"] > 0
    # ...any other error of the call is, with backoff, last (States.ALL must be the last retrier)
    assert retry[-1]["ErrorEquals"] == ["States.ALL"] and retry[-1]["MaxAttempts"] > 0


def test_runtask_throttling_past_the_tasks_own_retries_gets_the_infrastructure_retry() -> None:
    """Issue 62 finding 8: RunTask's 20 calls a second run out under a wide map or a busy minute.
    ECS.ThrottlingException / LimitExceededException past the Task's own 4 tries reach the check,
    which sends them to the bounded infrastructure retry; before, the Catch's States.ALL recorded
    the step failed. A misconfiguration still fails at once."""
    from jobplane.compiler.executors.ecs import ECS_INFRA_ERRORS

    for attempts in (1, 3):
        d = asl.build_definition(job(steps=[{"name": "only", "python": "m:f", "retry": {"attempts": attempts}}]),
                                 "jobplane")
        task = d["States"]["only"]
        to_check = next(c for c in task["Catch"] if c["Next"] == "only: check")
        assert {"ECS.ThrottlingException", "ECS.LimitExceededException"} <= set(to_check["ErrorEquals"])
        assert set(ECS_INFRA_ERRORS) <= set(to_check["ErrorEquals"])
        assert not {"ECS.ClusterNotFoundException", "ECS.InvalidParameterException"} & set(to_check["ErrorEquals"])
        # the Task's own quick tries come first (its retrier for these errors has attempts left)
        own = next(r for r in task["Retry"] if "ECS.ThrottlingException" in r["ErrorEquals"])
        assert own["MaxAttempts"] == 4 and own["JitterStrategy"] == "FULL"
        rule = next(c for c in d["States"]["only: check"]["Choices"] if c["Next"] == "only: infra retry"
                    and "ECS.ThrottlingException" in json.dumps(c))
        assert {"Variable": "$.run.infra.n", "NumericLessThan": 3} in rule["And"]


def test_runtask_failures_get_the_bounded_infrastructure_retry() -> None:
    """Issue 49.1: RunTask's Failures (capacity, vCPU quota, ENI) fail the Task with
    AmazonECS.Unknown. After the call's own quick retries it must reach the check, which sends it
    to the infrastructure retry while that budget lasts, not straight to `<step>: failed`."""
    from jobplane.compiler.executors.ecs import RUN_TASK_FAILURES

    d = asl.build_definition(job(), "jobplane")
    task = d["States"]["only"]
    first = next(c for c in task["Catch"] if RUN_TASK_FAILURES in c["ErrorEquals"] or "States.ALL" in c["ErrorEquals"])
    assert RUN_TASK_FAILURES in first["ErrorEquals"] and first["Next"] == "only: check"
    rule = next(c for c in d["States"]["only: check"]["Choices"]
                if any(x.get("StringEquals") == RUN_TASK_FAILURES for x in c.get("And", [])))
    assert rule["Next"] == "only: infra retry"
    assert {"Variable": "$.run.infra.n", "NumericLessThan": 3} in rule["And"]
    # the budget spent, it is the step's failure (recorded with the error), never a silent loop
    assert d["States"]["only: check"]["Default"] == "only: failed"


def _tasks(states: dict[str, Any]) -> list[dict[str, Any]]:
    """Every Task of a definition's states, inside Parallel branches and Map processors too."""
    out: list[dict[str, Any]] = []
    for state in states.values():
        if state["Type"] == "Task":
            out.append(state)
        for branch in state.get("Branches", []) + [p for p in (state.get("ItemProcessor"), state.get("Iterator")) if p]:
            out += _tasks(branch["States"])
    return out


#: The errors a callback Task's SendTaskFailure sends (not an SDK's): an approval's reject.
CALLBACK_ERRORS = ("Approval.Rejected",)


def test_every_error_an_sdk_integration_task_names_can_occur() -> None:
    """An AWS SDK integration reports ``<Service>.<Error>Exception`` even where the service's own
    error name has no suffix (``RequestLimitExceeded``: "Learning to use AWS service SDK integrations",
    https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html); a retrier
    naming it without the suffix never matches, so that error failed the run instead."""
    pooled = {"name": "pooled", "team": "billing", "pool": "db", "steps": [
        {"name": "a", "python": "m:f"},
        {"name": "fan", "map": {"items": {"name": "tenants", "python": "m:items"},
                                "each": {"name": "each", "python": "m:each"}}}]}
    jobs = [lj.job for lj in compile_all(load_config(ROOT)).jobs] + [Job.from_definition(pooled)]
    wrong: list[str] = []
    for j in jobs:
        definition = asl.build_definition(j, "jp", {"db": 2})
        for task in _tasks(definition["States"]):
            if not task["Resource"].startswith("arn:aws:states:::aws-sdk:"):
                continue
            for rule in task.get("Retry", []) + task.get("Catch", []):
                # a callback's error is the one its SendTaskFailure sends (an approval's reject:
                # contract/approvals.py), not the SDK's: named exactly, only on a callback Task
                wrong += [f"{j.name}: {e}" for e in rule["ErrorEquals"]
                          if not e.startswith("States.") and not e.endswith("Exception")
                          and not (task["Resource"].endswith(".waitForTaskToken") and e in CALLBACK_ERRORS)]
    assert not wrong, wrong
