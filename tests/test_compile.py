"""The compiler's outputs: deterministic bytes, the state budget of SPEC.md, Terraform scoped to
each job, a catalog for the portal, and an output directory that only ever holds a whole compile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import ROOT, Repo, minimal_job
from jobplane.compiler import asl
from jobplane.contract import bindings
from jobplane.compiler.model import Job
from jobplane.compiler.output import compile_all
from jobplane.contract.config import load_config


@pytest.fixture(scope="module")
def examples() -> dict[str, str]:
    return compile_all(load_config(ROOT)).files


def job(**overrides: Any) -> Job:
    base = {"name": "nightly", "team": "billing", "timezone": "UTC", "schedule": ["cron(0 2 * * ? *)"],
            "steps": [{"name": "only", "python": "m:f"}]}
    return Job.model_validate(base | overrides)


def steps(n: int, **step: Any) -> list[dict[str, Any]]:
    return [{"name": f"s{i}", "python": "m:f", **step} for i in range(n)]


# -- walking the state machine along one scenario -------------------------------------------
Decide = Callable[[str, dict[str, Any]], str | None]


def walk(definition: dict[str, Any], decide: Decide) -> list[str]:
    """States entered from StartAt to an end, letting ``decide`` pick at branching points."""
    states, name, path = definition["States"], definition["StartAt"], []
    while name is not None:
        path.append(name)
        assert len(path) < 200, path
        state = states[name]
        if state["Type"] in ("Succeed", "Fail") or state.get("End"):
            break
        name = decide(name, state)
    return path


def success(name: str, state: dict[str, Any]) -> str:
    if state["Type"] == "Choice":
        if name in ("Start", "Route"):  # a complete input that resumes nothing
            return state["Default"]
        ok = [c for c in state["Choices"] if "And" in c and any(x.get("NumericEquals") == 0 for x in c["And"])]
        return next(c["Next"] for c in ok if c["Next"] != "Finish (recovered)")
    return state["Next"]


def permanent_failure(name: str, state: dict[str, Any]) -> str:
    if state["Type"] == "Choice" and name not in ("Start", "Route"):
        return state["Default"]  # no rule for exit 0 matches
    return success(name, state)


def caught(error: str) -> Decide:
    def decide(name: str, state: dict[str, Any]) -> str:
        if state["Type"] == "Task" and state["Resource"].endswith("runTask.sync"):
            return next(c["Next"] for c in state["Catch"] if error in c["ErrorEquals"])
        return permanent_failure(name, state)
    return decide


def skipped(reason_state: str) -> Decide:
    def decide(name: str, state: dict[str, Any]) -> str:
        if name == "Start":
            return state["Default"]
        if name == "Claim":
            return state["Catch"][0]["Next"]
        if name == "Skip: why":
            return next(c["Next"] for c in state["Choices"] if c["Next"] == reason_state)
        return state["Next"]
    return decide


def test_successful_runs_stay_within_the_state_budget() -> None:
    one = walk(asl.build_definition(job(), "jobplane"), success)
    assert one == ["Start", "Claim", "only", "only: check", "Finish"]
    assert len(one) <= 6
    for n in (2, 3, 5):
        path = walk(asl.build_definition(job(steps=steps(n)), "jobplane"), success)
        assert len(path) <= 6 + 2 * (n - 1), path


def test_recovered_notification_costs_nothing_on_the_normal_path() -> None:
    j = job(notify={"events": ["FAILED", "RECOVERED"]}, steps=steps(3))
    assert len(walk(asl.build_definition(j, "jobplane"), success)) == 9


def test_failures_and_skips_stay_within_the_state_budget() -> None:
    retried = asl.build_definition(job(steps=steps(1, retry={"attempts": 3})), "jobplane")
    # A permanent exit code on the first attempt: no retry.
    assert walk(retried, permanent_failure) == ["Start", "Claim", "s0", "s0: check", "s0: failed", "Notify failure", "Fail"]
    # AWS fails the Task on a non-zero exit; the check tells the step's failure from the
    # infrastructure's, then records it.
    plain = asl.build_definition(job(), "jobplane")
    assert walk(plain, caught("States.TaskFailed")) == ["Start", "Claim", "only", "only: check", "only: failed",
                                                        "Notify failure", "Fail"]
    assert walk(plain, caught("States.Timeout"))[-3:] == ["only: timed out", "Notify failure", "Fail"]
    dup = walk(asl.build_definition(job(policy="ALWAYS_RUN"), "jobplane"), skipped("Skip: duplicate"))
    assert dup == ["Start", "Claim", "Skip: load state", "Skip: why", "Skip: duplicate"]
    exclusive = asl.build_definition(job(policy="SKIP_IF_RUNNING"), "jobplane")
    running = walk(exclusive, skipped("Skip: running"))
    assert running == ["Start", "Claim", "Skip: load state", "Skip: check holder", "Skip: why", "Skip: running"]
    assert len(running) <= 6
    assert len(walk(exclusive, skipped("Skip: duplicate"))) <= 6


def test_retries_are_unrolled_with_backoff_waits() -> None:
    d = asl.build_definition(job(steps=steps(1, retry={"attempts": 4, "interval": "10s", "backoff": 3,
                                                        "max_interval": "60s"})), "jobplane")
    waits = [d["States"][f"s0{'' if n == 1 else f' #{n}'}: wait"]["Seconds"] for n in range(1, 4)]
    assert waits == [10, 30, 60]
    attempts = [s for s in d["States"].values() if s.get("Resource", "").endswith("runTask.sync")]
    assert [a["ResultSelector"]["Attempt"] for a in attempts] == [1, 2, 3, 4]
    env = {e["Name"]: e.get("Value") for e in attempts[2]["Parameters"]["Overrides"]["ContainerOverrides"][0]["Environment"]}
    assert env["JOBPLANE_ATTEMPT"] == "3"
    assert json.loads(env["JOBPLANE_TARGET"]) == {"kind": "python", "target": "m:f"}


def test_policy_is_in_the_claim_condition() -> None:
    conditions = {p: asl.build_definition(job(policy=p), "jobplane")["States"]["Claim"]["Parameters"]["ConditionExpression"]
                  for p in ("ALWAYS_RUN", "SKIP_IF_RUNNING", "SKIP_IF_FAILED", "SKIP_IF_RUNNING_OR_FAILED")}
    assert conditions["ALWAYS_RUN"] == "(attribute_not_exists(#sched) OR #sched < :fire)"
    assert conditions["SKIP_IF_RUNNING"].endswith("AND attribute_not_exists(#running)")
    assert conditions["SKIP_IF_FAILED"].endswith("AND attribute_not_exists(#blocked)")
    assert conditions["SKIP_IF_RUNNING_OR_FAILED"].endswith("attribute_not_exists(#running) AND attribute_not_exists(#blocked)")


def test_output_is_deterministic(examples: dict[str, str]) -> None:
    again = compile_all(load_config(ROOT)).files
    assert again == examples
    month_end = json.loads(examples["asl/month-end-close.asl.json"])
    assert month_end["StartAt"] == "Start"


def test_terraform_is_scoped_to_each_job(examples: dict[str, str]) -> None:
    for path, text in examples.items():
        if not path.endswith(".tf.json") or path == "main.tf.json":
            continue
        doc = json.loads(text)
        job_name = path.removesuffix(".tf.json")
        for role, policy in doc["data"]["aws_iam_policy_document"].items():
            for st in policy["statement"]:
                assert all("*" not in a for a in st["actions"]), (path, role, st)
                if "resources" in st:
                    assert "*" not in st["resources"], (path, role, st)
        for role in doc["resource"]["aws_iam_role"].values():
            assert len(role["name"]) <= 64 and job_name in role["name"]
        ddb = next(st for st in doc["data"]["aws_iam_policy_document"][f"{job_name.replace('-', '_')}_sfn"]["statement"]
                   if st["sid"] == "JobStateAndHistory")
        assert ddb["condition"][0]["values"] == [f"JOB#{job_name}", "EXEC#*"]


def test_schedules_carry_timezone_retry_and_dead_letter(examples: dict[str, str]) -> None:
    doc = json.loads(examples["daily-sales-report.tf.json"])
    (schedule,) = doc["resource"]["aws_scheduler_schedule"].values()
    assert schedule["schedule_expression"] == "cron(0 2 * * ? *)"
    assert schedule["schedule_expression_timezone"] == "Asia/Tokyo"
    assert schedule["target"]["retry_policy"]["maximum_retry_attempts"] > 0
    assert schedule["target"]["dead_letter_config"]["arn"] == "${module.platform.scheduler_dlq_arn}"
    sent = json.loads(schedule["target"]["input"])
    assert sent["scheduled_time"] == "<aws.scheduler.scheduled-time>" and sent["trigger"] == "schedule"
    paused = json.loads(examples["rotate-audit-archives.tf.json"])["resource"]["aws_scheduler_schedule"]
    assert [s["state"] for s in paused.values()] == ["DISABLED"]
    assert "aws_scheduler_schedule" not in json.loads(examples["backfill-search-index.tf.json"])["resource"]


def test_user_text_is_never_interpolated_by_terraform(examples: dict[str, str]) -> None:
    tf = json.loads(examples["weekly-cohort-export.tf.json"])
    definition = tf["resource"]["aws_sfn_state_machine"]["weekly_cohort_export"]["definition"]
    assert "$${EXPORT_DIR:-/tmp/export}" in definition
    assert "${local.jobplane.table_name}" in definition
    assert "<<jobplane:" not in definition
    # Terraform's own unescaping gives back the compiled ASL with the deployment values bound.
    unescaped = definition.replace("$${", "${")
    expected = bindings.bind(examples["asl/weekly-cohort-export.asl.json"],
                             {n: "${local.jobplane." + n + "}" for n in bindings.NAMES})
    assert unescaped == expected


def test_secrets_get_a_task_definition_and_a_scoped_execution_role(examples: dict[str, str]) -> None:
    doc = json.loads(examples["month-end-close.tf.json"])
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
    assert "LEDGER_API_TOKEN" not in examples["asl/month-end-close.asl.json"]


@pytest.mark.parametrize("value, accepted", [
    ("secretsmanager:billing/ledger-api-token", True),
    ("billing/ledger-api-token", False),  # a bare value: a name or a password? refused
    ("arn:aws:secretsmanager:ap-northeast-1:123456789012:secret:billing/ledger-api-token-AbC123", True),
    ("arn:aws:ssm:ap-northeast-1:123456789012:parameter/billing/token", True),
    ("arn:aws:secretsmanager:ap-northeast-1:123456789012:secret:billing/ledger-api-token", False),  # partial
    ("xoxb-123456-abcdef", False),  # a token itself
    ("hunter2 with spaces", False),
])
def test_a_secret_is_a_name_or_a_full_arn(value: str, accepted: bool) -> None:
    from pydantic import ValidationError

    from jobplane.compiler.model import Step

    if accepted:
        assert Step.model_validate({"name": "s", "python": "m:f", "secrets": {"TOKEN": value}}).secrets["TOKEN"] == value
    else:
        with pytest.raises(ValidationError) as raised:
            Step.model_validate({"name": "s", "python": "m:f", "secrets": {"TOKEN": value}})
        text = str(raised.value)
        assert "never the secret" in text or "partial Secrets Manager ARN" in text
        if "partial" in text:
            assert "'secretsmanager:billing/ledger-api-token'" in text  # says what to write instead


def test_catalog_describes_jobs_for_the_portal(examples: dict[str, str]) -> None:
    catalog = json.loads(examples["catalog.json"])
    jobs = {j["name"]: j for j in catalog["jobs"]}
    assert len(jobs) == 7 and {t["name"] for t in catalog["teams"]} == {"billing", "growth", "platform"}
    close = jobs["month-end-close"]
    assert close["source"] == "jobs/billing/month-end-close.jsonnet"
    assert close["policy"] == "SKIP_IF_RUNNING_OR_FAILED" and close["timezone"] == "Asia/Tokyo"
    assert close["runbook"]["recovery"].startswith("Fix the cause")
    assert [s["name"] for s in close["steps"][1]["parallel"]] == ["reconcile-card-payments", "reconcile-bank-transfers"]
    assert close["steps"][2]["secrets"] == ["LEDGER_API_TOKEN"]
    assert close["states"] == len(json.loads(examples["asl/month-end-close.asl.json"])["States"]) + sum(
        len(b["States"]) for s in json.loads(examples["asl/month-end-close.asl.json"])["States"].values()
        for b in s.get("Branches", []))
    assert jobs["backfill-search-index"]["schedule"] == []


def test_compile_replaces_only_its_own_files(repo: Repo) -> None:
    repo.write("jobs/billing/a.jsonnet", minimal_job("job-a"))
    repo.write("jobs/billing/b.jsonnet", minimal_job("job-b"))
    assert repo.cli("compile").exit_code == 0
    (repo.out / ".terraform").mkdir()
    (repo.out / "terraform.tfvars").write_text('region = "ap-northeast-1"\n')
    (repo.path / "jobs/billing/b.jsonnet").unlink()
    result = repo.cli("compile")
    assert result.exit_code == 0
    assert "b.tf.json" not in [p.name for p in repo.out.iterdir()]
    assert not (repo.out / "asl" / "job-b.asl.json").exists()
    assert (repo.out / "terraform.tfvars").read_text() == 'region = "ap-northeast-1"\n'
    assert (repo.out / ".terraform").is_dir()
    assert repo.cli("compile").stdout.startswith("Compiled 1 jobs") and "0 files changed" in repo.cli("compile").stdout


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


def test_init_scaffolds_a_valid_job(repo: Repo) -> None:
    result = repo.cli("init", "billing/invoice-reminders")
    assert result.exit_code == 0
    assert (repo.path / "jobs/billing/invoice-reminders.jsonnet").exists()
    assert repo.cli("validate").exit_code == 0
    assert repo.cli("init", "billing/invoice-reminders").exit_code == 1


def test_every_example_parses_with_the_interpreter_that_runs_it(examples: dict[str, str]) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    local = {n: "arn:aws:states:us-east-1:123456789012:placeholder" for n in bindings.NAMES}
    for path, text in examples.items():
        if path.startswith("asl/"):
            AmazonStateLanguageParser.parse(bindings.bind(text, local))


def test_the_root_keeps_its_state_in_the_configured_s3_bucket(examples: dict[str, str], tmp_path: Path) -> None:
    from jobplane.compiler.terraform import root_module
    from jobplane.contract.config import ConfigError, load_config

    settings = json.loads(examples["main.tf.json"])["terraform"]
    assert settings["backend"] == {"s3": {"bucket": "example-jobplane-terraform-state", "key": "jobplane/jobs.tfstate",
                                          "region": "ap-northeast-1", "encrypt": True, "use_lockfile": True}}
    toml = (ROOT / "jobplane.toml").read_text()
    (tmp_path / "jobplane.toml").write_text(toml.replace('bucket = "example-jobplane-terraform-state"',
                                                         'bucket = "Not A Bucket"'))
    with pytest.raises(ConfigError, match=r"\[terraform\] bucket"):
        load_config(tmp_path)
    start = toml.index("[terraform]")
    (tmp_path / "jobplane.toml").write_text(toml[:start] + toml[toml.index("[dev]"):])
    assert "backend" not in root_module(load_config(tmp_path))["terraform"]


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
        "steps: [", "steps: [{ name: 's', python: 'm:f', secrets: { T: jp.secret('x') } },"))
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
    entry = next(j for j in json.loads((repo.path / "terraform/jobs/catalog.json").read_text())["jobs"] if j["name"] == "bulky")
    assert 3000 < entry["params_budget"] < 8192



def test_an_infrastructure_failure_runs_the_same_attempt_again() -> None:
    plain = asl.build_definition(job(), "jobplane")
    seen: list[str] = []

    def infra_once(name: str, state: dict[str, Any]) -> str:
        if name == "only: check" and "only: infra retry" not in seen:
            seen.append("only: infra retry")
            return next(c["Next"] for c in state["Choices"] if c["Next"] == "only: infra retry")
        return success(name, state)

    assert walk(plain, infra_once) == ["Start", "Claim", "only", "only: check", "only: infra retry", "only: infra wait",
                                       "only", "only: check", "Finish"]
    rule = next(c for c in plain["States"]["only: check"]["Choices"] if c["Next"] == "only: infra retry")
    assert {"Variable": "$.run.infra.n", "NumericLessThan": 3} in rule["And"]  # at most 3 per run
    assert plain["States"]["only: infra wait"] == {"Type": "Wait", "SecondsPath": "$.run.infra.wait", "Next": "only"}


def test_only_errors_of_the_runtask_call_are_retried_by_the_task_itself() -> None:
    d = asl.build_definition(job(), "jobplane")
    retry = d["States"]["only"]["Retry"]
    # a task that ran (TaskFailed: to the check) or timed out (to its record) is never retried here...
    assert retry[0]["MaxAttempts"] == 0 and {"States.TaskFailed", "States.Timeout"} <= set(retry[0]["ErrorEquals"])
    # neither is a misconfiguration (States.Runtime is never retriable on AWS; moto would)
    assert {"States.Runtime", "ECS.ClusterNotFoundException"} <= set(retry[0]["ErrorEquals"])
    # ...any other error of the call is, with backoff, last (States.ALL must be the last retrier)
    assert retry[-1]["ErrorEquals"] == ["States.ALL"] and retry[-1]["MaxAttempts"] > 0
