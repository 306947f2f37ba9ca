"""The compiled state machines executed on the embedded local AWS (moto's interpreter).

These cover what the claim, skip and failure paths decide from DynamoDB state; steps that run
the real runner as ECS tasks need the local ECS agent (issue 3), so here every step's task is
pointed at a cluster that does not exist and fails as an infrastructure error would.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract import states as sn
from jobplane.contract.policies import Decision, decide
from jobplane.contract.statuses import Policy
from jobplane.platform.local.engine import LocalAWS

MISSING_CLUSTER = "arn:aws:ecs:us-east-1:123456789012:cluster/missing"
T0 = "2026-12-01T02:00:00Z"


@pytest.fixture(scope="module")
def aws():
    with LocalAWS() as local:
        sqs = local.client("sqs")
        url = sqs.create_queue(QueueName="events")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        local.client("sns").subscribe(TopicArn=local.resources["topic_arn"], Protocol="sqs", Endpoint=arn,
                                      Attributes={"RawMessageDelivery": "false"})
        local.events_queue = url  # type: ignore[attr-defined]
        sleeper = local.client("stepfunctions").create_state_machine(
            name="sleeper", roleArn=local.resources["role_arn"],
            definition=json.dumps({"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 120, "End": True}}}),
        )["stateMachineArn"]
        local.sleeper = sleeper  # type: ignore[attr-defined]
        yield local


def deploy(aws: LocalAWS, policy: str = "SKIP_IF_RUNNING", steps: list[dict[str, Any]] | None = None,
           **fields: Any) -> str:
    name = f"job-{uuid.uuid4().hex[:10]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "policy": policy,
                              "steps": steps or [{"name": "only", "python": "m:f"}]} | fields)
    aws.deploy(name, asl.compile_job(job, aws.prefix), cluster_arn=MISSING_CLUSTER)
    return name


def job_state(aws: LocalAWS, job: str) -> dict[str, Any]:
    return aws.client("dynamodb").get_item(TableName=aws.prefix, Key={"pk": {"S": f"JOB#{job}"}, "sk": {"S": "STATE"}},
                                           ConsistentRead=True).get("Item", {})


def execution_record(aws: LocalAWS, arn: str) -> dict[str, Any]:
    name = arn.rsplit(":", 1)[1]
    return aws.client("dynamodb").get_item(TableName=aws.prefix, Key={"pk": {"S": f"EXEC#{name}"}, "sk": {"S": "EXEC"}},
                                           ConsistentRead=True)["Item"]


def seed(aws: LocalAWS, job: str, **attrs: dict[str, Any]) -> None:
    aws.client("dynamodb").put_item(TableName=aws.prefix, Item={"pk": {"S": f"JOB#{job}"}, "sk": {"S": "STATE"}, **attrs})


def add_to_state(aws: LocalAWS, job: str, **attrs: dict[str, Any]) -> None:
    """The job's state as its runs left it, with ``attrs`` set."""
    aws.client("dynamodb").put_item(TableName=aws.prefix, Item={**job_state(aws, job), **attrs})


def live_holder(aws: LocalAWS) -> str:
    return aws.client("stepfunctions").start_execution(stateMachineArn=aws.sleeper, name=str(uuid.uuid4()))["executionArn"]


def ran(execution) -> bool:
    """Did the run claim the job and enter a step (not a skip, not a rejected input)?"""
    return any(sn.classify(name).role == sn.Role.STEP for name in execution.states_entered)


# -- the policy table ---------------------------------------------------------------------------
@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("before", ["nothing", "running", "last failed", "running after a failure", "last succeeded"])
def test_policy_table(aws: LocalAWS, policy: Policy, before: str) -> None:
    """The compiled claim decides as statuses.decide(), SPEC.md's table, for every policy and
    every state a scheduled fire can meet (issue 39: the table was the test's own copy)."""
    job = deploy(aws, policy.value)
    running, last_failed = before.startswith("running"), "fail" in before
    holder_arn = live_holder(aws) if running else ""
    if running and last_failed:
        seed(aws, job, running={"SS": ["other"]}, holder={"S": holder_arn}, last_status={"S": "FAILED"},
             blocked_by={"S": "x"}, block_schedule={"S": "x"})
    elif running:
        seed(aws, job, running={"SS": ["other"]}, holder={"S": holder_arn})
    elif last_failed:
        seed(aws, job, last_status={"S": "FAILED"}, blocked_by={"S": "x"}, block_schedule={"S": "x"})
    elif before == "last succeeded":
        seed(aws, job, last_status={"S": "SUCCEEDED"})
    expected = decide(policy, running=running, last_failed=last_failed)
    ex = aws.run(job, execution_input.scheduled(T0))
    assert ran(ex) == expected.runs, ex.states_entered
    record = execution_record(aws, ex.arn)
    if expected.runs:
        assert record["status"]["S"] == "FAILED"  # its task could not start: see the module docstring
    else:
        assert ex.status == "SUCCEEDED"  # a skip ends the execution successfully
        assert record["status"]["S"] == "SKIPPED"
        assert record["skip_reason"]["S"] == ("RUNNING" if running and policy != Policy.SKIP_IF_FAILED
                                              else "LAST_FAILED")
        assert record["gsi2pk"]["S"] == "SKIPS"
    if expected == Decision.REPLACE:  # the holder was stopped, its claim taken over by this run
        assert sn.REPLACE_STOP_HOLDER in ex.states_entered and sn.TAKE_OVER in ex.states_entered
        holder = aws.client("stepfunctions").describe_execution(executionArn=holder_arn)
        assert holder["status"] == "ABORTED" and holder["error"] == "jobplane.Replaced"
        assert holder["cause"] == ex.arn
    elif running:
        assert aws.client("stepfunctions").describe_execution(executionArn=holder_arn)["status"] == "RUNNING"


def test_same_scheduled_time_three_times_runs_once(aws: LocalAWS) -> None:
    job = deploy(aws, "ALWAYS_RUN")
    results = [aws.run(job, execution_input.scheduled(T0)) for _ in range(3)]
    assert [ran(r) for r in results] == [True, False, False]
    assert [execution_record(aws, r.arn)["skip_reason"]["S"] for r in results[1:]] == ["DUPLICATE", "DUPLICATE"]
    later = aws.run(job, execution_input.scheduled("2026-12-02T02:00:00Z"))
    assert ran(later)


@pytest.mark.parametrize("policy", list(Policy))
def test_a_duplicate_fire_is_told_by_the_skip_reads_condition(aws: LocalAWS, policy: Policy) -> None:
    """Issue 54 (SPEC: a duplicate skip enters at most 4 states): the skip path's read carries the
    claim's duplicate condition, so a fire delivered again (or an older one) goes straight to its
    record, whatever the policy and whether or not a holder runs; the read changes nothing."""
    job = deploy(aws, policy.value)
    first = aws.run(job, execution_input.scheduled(T0))
    assert ran(first)
    holder_arn = live_holder(aws)
    # as the holder's claim leaves the state: filed under RUNNING (else the reconciler, handling
    # a run's end, files it there: Repository.refile_status)
    add_to_state(aws, job, running={"SS": [holder_arn.rsplit(":", 1)[1]]}, holder={"S": holder_arn},
                 gsi3pk={"S": "STATUS#RUNNING"})
    before = job_state(aws, job)
    for t in (T0, "2026-11-30T02:00:00Z"):  # the same fire again, an older one
        ex = aws.run(job, execution_input.scheduled(t))
        assert ex.states_entered == ["Claim (first)", "Skip: load state", "Skip: duplicate"], (policy, t)
        assert execution_record(aws, ex.arn)["skip_reason"]["S"] == "DUPLICATE"
        assert job_state(aws, job) == before
    # a manual run is never a duplicate: the read passes and the policy decides as always
    manual = aws.run(job, execution_input.manual("ops"))
    assert "Skip: duplicate" not in manual.states_entered
    assert ran(manual) == decide(policy, running=True, last_failed=False).runs, manual.states_entered
    if policy == Policy.SKIP_IF_RUNNING:
        assert execution_record(aws, manual.arn)["skip_reason"]["S"] == "RUNNING"
    aws.client("stepfunctions").stop_execution(executionArn=holder_arn)


def test_a_paused_jobs_repeated_fire_is_recorded_paused(aws: LocalAWS) -> None:
    """A fire refused for both reasons keeps the old precedence: PAUSED (the read's condition lets
    a paused job's fire through to the Choice, which names the pause first)."""
    job = deploy(aws, "ALWAYS_RUN")
    assert ran(aws.run(job, execution_input.scheduled(T0)))
    add_to_state(aws, job, pause_schedule={"S": "ops"})
    ex = aws.run(job, execution_input.scheduled(T0))
    assert ex.states_entered == ["Claim (first)", "Skip: load state", "Skip: why", "Skip: paused"]
    assert execution_record(aws, ex.arn)["skip_reason"]["S"] == "PAUSED"


def test_stale_claim_is_taken_over(aws: LocalAWS) -> None:
    job = deploy(aws)
    sfn = aws.client("stepfunctions")
    finished = live_holder(aws)
    sfn.stop_execution(executionArn=finished)
    seed(aws, job, running={"SS": [finished.rsplit(":", 1)[1]]}, holder={"S": finished})
    ex = aws.run(job, execution_input.scheduled(T0))
    assert ex.states_entered[:5] == ["Claim (first)", "Skip: load state", "Skip: check holder", "Skip: why",
                                     "Take over stale claim"]
    assert ran(ex)
    # a holder that never existed is just as stale
    job2 = deploy(aws)
    ghost = "arn:aws:states:us-east-1:123456789012:execution:sleeper:ghost"
    seed(aws, job2, running={"SS": ["ghost"]}, holder={"S": ghost})
    assert ran(aws.run(job2, execution_input.scheduled(T0)))


def test_manual_run_recovers_a_blocked_job_but_never_overlaps(aws: LocalAWS) -> None:
    job = deploy(aws, "SKIP_IF_RUNNING_OR_FAILED")
    seed(aws, job, last_status={"S": "FAILED"}, blocked_by={"S": "x"}, block_schedule={"S": "x"})
    assert not ran(aws.run(job, execution_input.scheduled(T0)))
    assert ran(aws.run(job, execution_input.manual("alice@example.com")))
    seed(aws, job, running={"SS": ["other"]}, holder={"S": live_holder(aws)})
    assert not ran(aws.run(job, execution_input.manual("alice@example.com")))


def test_failure_is_recorded_released_and_published_once(aws: LocalAWS) -> None:
    job = deploy(aws, "SKIP_IF_RUNNING", runbook={"impact": "Reports late.", "recovery": "Re-run."})
    ex = aws.run(job, execution_input.scheduled(T0, {"day": "2026-11-30"}))
    assert ex.status == "FAILED" and ex.error == "Job.FAILED"
    # RunTask on the missing cluster fails the Task with ECS.ClusterNotFoundException (moto patch
    # ecs_task_errors; stock moto said States.Runtime), as on AWS; a misconfiguration is caught on
    # its own before the States.TaskFailed catcher (a wildcard for every error but States.Timeout:
    # https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html) and recorded
    # at once, with no check
    assert ex.states_entered == ["Claim (first)", "only", "only: failed", "Notify failure", "Fail"]
    record = execution_record(aws, ex.arn)
    assert record["failed_step"]["S"] == "only" and record["gsi2pk"]["S"] == "FAILURES"
    assert record["trigger"]["S"] == "schedule" and record["scheduled_time"]["S"] == T0
    assert json.loads(record["input"]["S"])["params"] == {"day": "2026-11-30"}
    assert json.loads(record["steps"]["S"]) == {}  # a failed attempt's task is read from the history
    state = job_state(aws, job)
    assert "running" not in state  # the claim is released
    assert state["last_status"]["S"] == "FAILED" and state["blocked_by"]["S"] == ex.arn.rsplit(":", 1)[1]
    sqs = aws.client("sqs")
    bodies = []  # other tests of this module publish too: drain the queue
    while batch := sqs.receive_message(QueueUrl=aws.events_queue, MaxNumberOfMessages=10).get("Messages", []):
        bodies += [json.loads(m["Body"]) for m in batch]
        for m in batch:
            sqs.delete_message(QueueUrl=aws.events_queue, ReceiptHandle=m["ReceiptHandle"])
    mine = [b for b in bodies if json.loads(b["Message"])["job"] == job]
    assert len(mine) == 1
    message = json.loads(mine[0]["Message"])
    assert message["event"] == "FAILED" and message["outcome"]["step"] == "only"
    assert message["runbook"]["recovery"] == "Re-run."
    assert {k: v["Value"] for k, v in mine[0]["MessageAttributes"].items()} == {
        "team": "billing", "job": job, "status": "FAILED"}
    # the next fire is not blocked: SKIP_IF_RUNNING only skips while running
    assert ran(aws.run(job, execution_input.scheduled("2026-12-02T02:00:00Z")))


def test_resume_from_routes_to_the_step(aws: LocalAWS) -> None:
    job = deploy(aws, "ALWAYS_RUN", steps=[{"name": n, "python": "m:f"} for n in ("extract", "load", "report")])
    rerun = execution_input.rerun("bob@example.com", "earlier-execution", {}, "load")
    ex = aws.run(job, rerun)
    assert ex.states_entered[:5] == ["Claim (first)", "Start", "Claim (re-run)", "Route", "load"] and "extract" not in ex.states_entered
    record = execution_record(aws, ex.arn)
    assert json.loads(record["input"]["S"])["rerun_of"] == "earlier-execution"
    assert record["trigger"]["S"] == "rerun"


def test_unknown_resume_from_fails_instead_of_running_everything(aws: LocalAWS) -> None:
    job = deploy(aws, "ALWAYS_RUN", steps=[{"name": "a", "python": "m:f"}, {"name": "b", "python": "m:f"}])
    ex = aws.run(job, execution_input.rerun("bob@example.com", "x", {}, "no-such-step"))
    assert ex.states_entered[:5] == ["Claim (first)", "Start", "Claim (re-run)", "Route", "Unknown resume_from"]
    assert ex.status == "FAILED"
    assert execution_record(aws, ex.arn)["failed_step"]["S"] == "no-such-step"


def test_steps_get_a_w3c_traceparent_shared_by_the_run(aws: LocalAWS) -> None:
    import re

    job = Job.from_definition({"name": "traced", "team": "billing", "steps": [{"name": "a", "python": "m:f"}]})
    task = asl.build_definition(job, aws.prefix)["States"]["a"]
    env = task["Parameters"]["Overrides"]["ContainerOverrides"][0]["Environment"]
    expression = next(e["Value.$"] for e in env if e["Name"] == "TRACEPARENT")
    probe = {"StartAt": "a", "States": {
        "a": {"Type": "Pass", "Parameters": {"tp.$": expression}, "ResultPath": "$.first", "Next": "b"},
        "b": {"Type": "Pass", "Parameters": {"tp.$": expression}, "ResultPath": "$.second", "End": True}}}
    sfn = aws.client("stepfunctions")
    arn = sfn.create_state_machine(name="traceparent-probe", definition=json.dumps(probe),
                                   roleArn=aws.resources["role_arn"])["stateMachineArn"]
    out = aws.wait(sfn.start_execution(stateMachineArn=arn, name="p")["executionArn"]).output
    first, second = out["first"]["tp"], out["second"]["tp"]
    assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", first), first
    assert first.split("-")[1] == second.split("-")[1]  # one trace per run
    assert first.split("-")[2] != second.split("-")[2]  # a span per step


# -- input from outside jobplane (the Step Functions console) -----------------------------------
def test_a_partial_input_is_completed_and_a_wrong_one_recorded_without_a_claim(aws: LocalAWS) -> None:
    job = deploy(aws, "SKIP_IF_RUNNING_OR_FAILED", params={"day": "today", "limit": 10})
    seed(aws, job, last_status={"S": "FAILED"}, blocked_by={"S": "x"}, block_schedule={"S": "x"})
    # only params given: the rest is a manual run's (a given params object replaces the defaults)
    ex = aws.run(job, {"params": {"day": "2026-11-30"}})
    assert ran(ex), ex.states_entered
    record = execution_record(aws, ex.arn)
    assert record["trigger"]["S"] == "manual" and record["requested_by"]["S"] == execution_input.UNATTRIBUTED
    assert json.loads(record["input"]["S"]) == {"params": {"day": "2026-11-30"}}
    # a field of the wrong type: failed and recorded before any claim, the job state untouched
    aws.wait_reconciled(ex.arn, timeout=300)
    before = job_state(aws, job)
    bad = execution_input.manual("alice@example.com").to_json() | {"trigger": "cron"}
    ex = aws.run(job, bad)
    assert ex.status == "FAILED" and ex.states_entered == ["Claim (first)", "Start", "Start: invalid input", "Fail"]
    record = execution_record(aws, ex.arn)
    assert record["status"]["S"] == "FAILED" and record["error"]["S"].startswith("invalid input: trigger must be")
    assert json.loads(record["input"]["S"])["trigger"] == "cron"
    assert job_state(aws, job) == before
    for wrong in ({"resume_from": 3}, {"requested_by": None}, {"scheduled_time": ["x"]}):
        ex = aws.run(job, execution_input.manual("alice@example.com").to_json() | wrong)
        assert ex.states_entered[:3] == ["Claim (first)", "Start", "Start: invalid input"], wrong


def test_the_claim_is_the_first_state_for_every_starter_and_for_a_console_start(aws: LocalAWS) -> None:
    """Issue 66: a one-step success is 3 states. What each jobplane starter sends, and a console
    start's ``{}`` or partial input (its defaults merged in the claim's own arguments), go from the
    first claim straight to the first step, and carry on with the input ``Start: defaults`` gave."""
    from datetime import datetime, timezone

    job = deploy(aws, "ALWAYS_RUN", params={"day": "today", "limit": 10})
    given: list[Any] = [execution_input.scheduled(T0).to_json(), execution_input.manual("alice@example.com").to_json(),
                        execution_input.backfill("bob@example.com", datetime(2026, 11, 1, 2, tzinfo=timezone.utc), {},
                                                 "bf-1").to_json(),
                        {}, {"params": {"day": "x"}}, {"trigger": "schedule", "scheduled_time": "2026-12-02T02:00:00Z"}]
    sfn = aws.client("stepfunctions")
    for sent in given:
        ex = aws.run(job, sent)
        assert ex.states_entered[:2] == ["Claim (first)", "only"], (sent, ex.states_entered)
        events = sfn.get_execution_history(executionArn=ex.arn, maxResults=1000)["events"]
        claimed = next(json.loads(e["stateExitedEventDetails"]["output"]) for e in events
                       if e["type"] == "TaskStateExited" and e["stateExitedEventDetails"]["name"] == "Claim (first)")
        expected = execution_input.ExecutionInput.read(sent, claimed["scheduled_time"], {"day": "today", "limit": 10})
        # what reaches the steps: the input over its defaults (lineage kept as sent), and the run's slots
        assert claimed == expected.to_json() | sent | {"params": expected.params, "run": {"steps": {}, "infra": {"n": 0}}}
        if "scheduled_time" not in sent:  # a console start runs for the time it started
            assert claimed["scheduled_time"].startswith(str(datetime.now(timezone.utc).year))
    # the job state is the claim's writes: each trigger's fire and count, the newest scheduled fire
    state = job_state(aws, job)
    assert state["fire_schedule"]["S"] == "false|2026-12-02T02:00:00Z" and state["claims_schedule"]["N"] == "2"
    assert state["claims_manual"]["N"] == "3" and state["fire_backfill"]["S"] == "true|2026-11-01T02:00:00Z"


def test_a_running_claim_without_a_holder_is_honoured(aws: LocalAWS) -> None:
    """A job state with runs but no holder (its policy was ALWAYS_RUN before): Step Functions
    cannot be asked about a holder, so the claim is honoured, not taken over."""
    job = deploy(aws, "SKIP_IF_RUNNING")
    seed(aws, job, running={"SS": ["other"]})
    ex = aws.run(job, execution_input.scheduled(T0))
    assert ex.states_entered == ["Claim (first)", "Skip: load state", "Skip: check holder", "Skip: why",
                                 "Skip: running"]
    assert execution_record(aws, ex.arn)["skip_reason"]["S"] == "RUNNING"
    assert job_state(aws, job)["running"] == {"SS": ["other"]}


# -- REPLACE ------------------------------------------------------------------------------------
@pytest.mark.parametrize("before, takes_over", [
    ("the stopped holder's claim", True),
    ("the claim already released by the reconciler", True),
    ("another run's claim", False),
])
def test_replace_takes_over_a_stopped_holder_whoever_ran_first(aws: LocalAWS, before: str, takes_over: bool) -> None:
    """After stopping the holder, a REPLACE fire's takeover races the reconciler, which may
    record the stopped run and release its claim first: the takeover accepts either, but never
    a claim someone else took meanwhile (a claim conflict). Run here as the compiled takeover
    state alone, on the state each order leaves."""
    job = deploy(aws, "REPLACE")
    definition = asl.build_definition(Job.from_definition(
        {"name": job, "team": "billing", "policy": "REPLACE", "steps": [{"name": "only", "python": "m:f"}]}), aws.prefix)
    takeover = dict(definition["States"][sn.TAKE_OVER])
    del takeover["Next"]
    takeover["End"] = True
    takeover["Catch"] = [dict(takeover["Catch"][0], Next="conflict")]
    probe = json.dumps({"StartAt": sn.TAKE_OVER, "States": {
        sn.TAKE_OVER: takeover, "conflict": {"Type": "Pass", "End": True}}})
    probe_job = f"{job}-probe"
    aws.deploy(probe_job, probe)
    stale = "arn:aws:states:us-east-1:123456789012:execution:x:stopped"
    if before == "the stopped holder's claim":
        seed(aws, job, running={"SS": ["stopped"]}, holder={"S": stale})
    elif before == "another run's claim":
        seed(aws, job, running={"SS": ["newer"]}, holder={"S": stale.replace("stopped", "newer")})
    else:
        seed(aws, job, last_status={"S": "SUCCEEDED"})  # running and holder removed
    given = execution_input.scheduled(T0).to_json() | {"state": {"Item": {"holder": {"S": stale}}}}
    ex = aws.wait(aws.start(probe_job, given))
    assert ex.status == "SUCCEEDED"
    state = job_state(aws, job)
    me = ex.arn.rsplit(":", 1)[1]
    if takes_over:
        assert "conflict" not in ex.states_entered
        assert state["running"] == {"SS": [me]} and state["holder"]["S"] == ex.arn
    else:
        assert "conflict" in ex.states_entered and state["running"] == {"SS": ["newer"]}


def test_replace_honours_a_claim_whose_holder_cannot_be_told(aws: LocalAWS) -> None:
    """A holder Step Functions cannot describe (none recorded) is never stopped: the claim is
    honoured, as for SKIP_IF_RUNNING."""
    job = deploy(aws, "REPLACE")
    seed(aws, job, running={"SS": ["other"]})
    ex = aws.run(job, execution_input.scheduled(T0))
    assert ex.states_entered == ["Claim (first)", "Skip: load state", "Skip: check holder", "Skip: why",
                                 "Skip: running"]
    assert job_state(aws, job)["running"] == {"SS": ["other"]}
