"""Every guarantee of the compiled state machine, executed on the embedded local AWS with each
step run by the real runner as a subprocess (the local ECS agent)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.local.faults import Faults
from jobplane.contract.notifications import NotificationMessage

HERE = Path(__file__).resolve().parent
BEHAVE = "sample_apps.functions:behave"


@pytest.fixture(scope="module")
def aws():
    with LocalAWS(env={"PYTHONPATH": str(HERE), "JOBPLANE_STOP_GRACE_SECONDS": "3",
                       "JOBPLANE_TIMEOUT_MARGIN_SECONDS": "1"}) as local:
        sqs = local.client("sqs")
        url = sqs.create_queue(QueueName="events")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        local.client("sns").subscribe(TopicArn=local.resources["topic_arn"], Protocol="sqs", Endpoint=arn)
        local.events_queue = url  # type: ignore[attr-defined]
        local.seen_messages = []  # type: ignore[attr-defined]
        yield local


def deploy(aws: LocalAWS, steps: list[dict[str, Any]] | None = None, name: str | None = None, **fields: Any) -> str:
    """Deploy a test job (a new name, or a new definition of ``name``)."""
    name = name or f"job-{uuid.uuid4().hex[:10]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC",
                              "steps": steps or [{"name": "work", "python": BEHAVE}]} | fields)
    aws.deploy(name, asl.compile_job(job, aws.prefix))
    return name


_seq = iter(range(1, 10**6))


def fire(params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A scheduled fire with a time of its own (so it is never taken for a duplicate)."""
    n = next(_seq)
    return execution_input.scheduled(f"2027-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z", params)


def start_at_once(aws: LocalAWS, job: str, params: dict[str, Any], n: int) -> list[str]:
    """n manual starts of ``job`` from n threads at once; their execution ARNs."""
    arns: list[str] = []
    lock = threading.Lock()

    def start() -> None:
        arn = aws.start(job, execution_input.manual("load-test", overrides=params))
        with lock:
            arns.append(arn)

    threads = [threading.Thread(target=start) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return arns


def task_logs(aws: LocalAWS, execution: str) -> dict[str, str]:
    """The execution's step logs, for assertion messages (what a failing step printed)."""
    rec = aws.repository().execution(execution)
    return {f"{s.step}#{s.attempt}": s.read()[-2000:] for s in aws.step_logs().streams(rec.timeline if rec else [])}


def logged_attempts(text: str) -> set[int]:
    """The attempt numbers a step's runner logged (its JSON lines carry JOBPLANE_ATTEMPT)."""
    found = set()
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and "attempt" in event:
            found.add(event["attempt"])
    return found


def record(aws: LocalAWS, arn: str):
    return aws.repository().execution(arn.rsplit(":", 1)[1])


def finish(aws: LocalAWS, arn: str):
    ex = aws.wait(arn, timeout=600)  # bounds that only catch a hang, never decide an outcome
    aws.wait_reconciled(arn, timeout=600)
    return ex, record(aws, arn)


def messages_for(aws: LocalAWS, job: str) -> list[dict[str, Any]]:
    sqs = aws.client("sqs")
    while True:
        got = sqs.receive_message(QueueUrl=aws.events_queue, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                  MessageAttributeNames=["All"]).get("Messages", [])
        if not got:
            break
        for m in got:
            aws.seen_messages.append(json.loads(m["Body"]))
            sqs.delete_message(QueueUrl=aws.events_queue, ReceiptHandle=m["ReceiptHandle"])
    return [m for m in aws.seen_messages if json.loads(m["Message"])["job"] == job]


def started_process(marker: Path, timeout: float = 300) -> int:
    deadline = time.monotonic() + timeout
    while not (marker.exists() and marker.read_text().strip()):
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.02)
    return int(marker.read_text().split()[-1])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


# -- the policy table with real prior runs ---------------------------------------------------
TABLE = {  # policy: (runs while one is running, runs after a failed / timed-out / aborted run)
    "ALWAYS_RUN": (True, True),
    "SKIP_IF_RUNNING": (False, True),
    "SKIP_IF_FAILED": (True, False),
    "SKIP_IF_RUNNING_OR_FAILED": (False, False),
    "REPLACE": (True, True),  # runs in place of the run in progress, which it stops
}


@pytest.mark.parametrize("policy", list(TABLE))
def test_policy_table(aws: LocalAWS, policy: str, tmp_path: Path) -> None:
    # No wall-clock budget decides an outcome: ordinary runs have an hour; only the run that
    # must time out gets a definition with a 2 s timeout (it can only end TIMED_OUT).
    job = deploy(aws, policy=policy, timeout=3600)
    while_running, after_failure = TABLE[policy]

    def scheduled_run() -> tuple[bool, Any]:
        ex, rec = finish(aws, aws.start(job, fire({"mode": "ok"})))
        return rec.status != "SKIPPED", rec

    def manual(mode: str, **extra: Any) -> str:
        return aws.start(job, execution_input.manual("ops@example.com", overrides={"mode": mode, **extra}))

    # nothing before
    ran, rec = scheduled_run()
    assert ran and rec.status == "SUCCEEDED"
    # last SUCCEEDED
    ran, rec = scheduled_run()
    assert ran and rec.status == "SUCCEEDED"
    # last FAILED (a manual run: operators may run a blocked job)
    assert finish(aws, manual("fail"))[1].status == "FAILED"
    ran, rec = scheduled_run()
    assert ran == after_failure and (ran or rec.skip_reason == "LAST_FAILED")
    # last TIMED_OUT (the whole job ran past its timeout)
    deploy(aws, name=job, policy=policy, timeout=2)
    assert finish(aws, manual("sleep", seconds=300))[1].status == "TIMED_OUT"
    deploy(aws, name=job, policy=policy, timeout=3600)
    ran, rec = scheduled_run()
    assert ran == after_failure
    # last ABORTED
    marker = tmp_path / "aborted"
    arn = manual("sleep", seconds=30, marker=str(marker))
    started_process(marker)
    aws.client("stepfunctions").stop_execution(executionArn=arn)
    assert finish(aws, arn)[1].status == "ABORTED"
    ran, rec = scheduled_run()
    assert ran == after_failure
    # a run in progress
    aws.repository().acknowledge_failure(job)
    marker, release = tmp_path / "running", tmp_path / "release"
    holder = manual("wait", release=str(release), seconds=300, marker=str(marker))  # runs until released
    started_process(marker)
    ran, rec = scheduled_run()
    assert ran == while_running and (ran or rec.skip_reason == "RUNNING")
    release.write_text("go")
    held = finish(aws, holder)[1]
    assert (held.status, held.abort_reason) == (("ABORTED", "REPLACED") if policy == "REPLACE" else ("SUCCEEDED", None))


def test_replace_stops_the_run_in_progress_and_runs(aws: LocalAWS, tmp_path: Path) -> None:
    """REPLACE (Kubernetes' concurrencyPolicy: Replace): a new fire stops the run in progress,
    whose step's process is stopped and whose record says ABORTED, reason REPLACED, by whom, with
    its claim released and no alert (nor a RECOVERED after it); the new fire runs and succeeds."""
    job = deploy(aws, policy="REPLACE", timeout=3600,
                 notify={"channels": ["#billing-alerts"], "events": ["FAILED", "ABORTED", "RECOVERED"]})
    repo = aws.repository()
    assert finish(aws, aws.start(job, fire({"mode": "ok"})))[1].status == "SUCCEEDED"
    marker = tmp_path / "old"
    old = aws.start(job, fire({"mode": "sleep", "seconds": 300, "marker": str(marker)}))
    pid = started_process(marker)
    assert repo.job_state(job).running == frozenset({old.rsplit(":", 1)[1]})
    new_ex, new = finish(aws, aws.start(job, fire({"mode": "ok"})))
    assert new.status == "SUCCEEDED", new_ex.states_entered
    assert new_ex.states_entered[:6] == ["Claim (first)", "Skip: load state", "Skip: check holder", "Skip: why",
                                         "Replace: stop holder", "Take over stale claim"]
    _, replaced = finish(aws, old)
    assert (replaced.status, replaced.abort_reason) == ("ABORTED", "REPLACED")
    assert replaced.error == f"replaced by {new.execution}" and replaced.failed_step == "work"
    assert not replaced.alert_pending
    described = aws.client("stepfunctions").describe_execution(executionArn=old)
    assert (described["error"], described["cause"]) == ("jobplane.Replaced", new_ex.arn)
    deadline = time.monotonic() + 60  # a bound that only catches a hang: the agent stops the task at once
    while alive(pid):
        assert time.monotonic() < deadline, "the replaced run's step process still runs"
        time.sleep(0.05)
    state = repo.job_state(job)
    assert not state.running and state.holder is None
    assert state.last_status == "SUCCEEDED" and state.last_execution == new.execution and not state.blocked
    events = [(json.loads(m["Message"])["execution"], json.loads(m["Message"])["event"]) for m in messages_for(aws, job)]
    assert events == []  # no ABORTED alert for the replaced run, no RECOVERED for its successor
    # not a failure: the failures feed does not list it, the job's history does
    assert replaced.execution not in {r.execution for r in repo.recent_failures(limit=100).items}
    assert replaced.execution in {r.execution for r in repo.executions(job, limit=10).items}


@pytest.mark.parametrize("cause", ["another job's run", "no run", "itself"])
def test_a_stop_that_only_claims_to_be_a_replacement_is_alerted(aws: LocalAWS, tmp_path: Path, cause: str) -> None:
    """Anyone may stop a run with the REPLACE error: it counts as a replacement (no alert) only if
    its cause is an existing run of the same job; any other stop is recorded and alerted as one."""
    job, other = deploy(aws, policy="REPLACE", timeout=3600), deploy(aws, policy="REPLACE")
    marker = tmp_path / "pid"
    arn = aws.start(job, fire({"mode": "sleep", "seconds": 300, "marker": str(marker)}))
    started_process(marker)
    claimed = {"another job's run": finish(aws, aws.start(other, fire({"mode": "ok"})))[0].arn,
               "no run": arn.rsplit(":", 1)[0] + ":never-ran", "itself": arn}[cause]
    aws.client("stepfunctions").stop_execution(executionArn=arn, error="jobplane.Replaced", cause=claimed)
    _, rec = finish(aws, arn)
    assert (rec.status, rec.abort_reason) == ("ABORTED", None)
    msgs = [NotificationMessage.model_validate_json(m["Message"]) for m in messages_for(aws, job)]
    assert [m.event for m in msgs] == ["ABORTED"]


def test_fifty_simultaneous_starts_run_once(aws: LocalAWS, tmp_path: Path) -> None:
    job = deploy(aws, policy="SKIP_IF_RUNNING")
    for round_ in range(5):
        marker, release = tmp_path / f"ran{round_}", tmp_path / f"release{round_}"
        # The step runs until the other 49 have ended, so all 50 truly overlap.
        params = {"mode": "wait", "release": str(release), "seconds": 120, "marker": str(marker)}
        arns = start_at_once(aws, job, params, 50)
        deadline = time.monotonic() + 120
        # RUNNING read from the engine's backend (as its reconciler reads it): a DescribeExecution
        # per run every poll was 11 of this test's 46 CPU s, taken from the runs it waits on
        # (issue 66 item 7); the condition waited for is the same
        while len(set(aws.running_executions()) & set(arns)) > 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        release.write_text("go")
        records = [finish(aws, arn)[1] for arn in arns]
        statuses = sorted(r.status for r in records)
        assert len(records) == 50 and statuses.count("SUCCEEDED") == 1 and statuses.count("SKIPPED") == 49, statuses
        assert {r.skip_reason for r in records if r.status == "SKIPPED"} <= {"RUNNING", "CLAIM_CONFLICT"}
        assert len(marker.read_text().split()) == 1  # the step ran exactly once
        assert aws.repository().job_state(job).running == frozenset()


def test_same_scheduled_time_three_times(aws: LocalAWS) -> None:
    job = deploy(aws, policy="ALWAYS_RUN")
    same = execution_input.scheduled("2027-02-01T02:00:00Z", {"mode": "ok"})
    records = [finish(aws, aws.start(job, same))[1] for _ in range(3)]
    assert [r.status for r in records] == ["SUCCEEDED", "SKIPPED", "SKIPPED"]
    assert [r.skip_reason for r in records[1:]] == ["DUPLICATE", "DUPLICATE"]
    page = aws.repository().executions(job)
    assert len(page.items) == 3  # duplicates are recorded, not dropped


def test_retryable_failure_is_retried_and_permanent_is_not(aws: LocalAWS) -> None:
    job = deploy(aws, steps=[
        {"name": "flaky", "python": BEHAVE, "retry": {"attempts": 3, "interval": 1, "backoff": 1}},
    ], runbook={"impact": "Partner data is stale.", "recovery": "Re-run from flaky."})
    ex, rec = finish(aws, aws.start(job, fire({"mode": "fail"})))
    assert ex.status == "FAILED" and rec.status == "FAILED" and rec.failed_step == "flaky"
    attempts = rec.attempts("flaky")
    assert [(a.outcome, a.exit_code, a.error) for a in attempts] == [("failed", 75, "States.TaskFailed")] * 3
    # one Task looped through three attempts, each told its number (the runner logs it)
    assert ex.states_entered.count("flaky") == 3 and ex.states_entered.count("flaky: wait") == 2
    assert [a.attempt for a in attempts] == [1, 2, 3]
    told = [logged_attempts(stream.read()) for stream in aws.step_logs().streams(rec.timeline)]
    assert told == [{1}, {2}, {3}], task_logs(aws, rec.execution)
    # the state data keeps no failed attempt's task (4-6 KB each, against a 256 KB limit), only
    # the attempt counter: what each check reads is as large after the third failure as after the first
    assert rec.steps == {"flaky": {"n": 3, "wait": 1}}
    events = aws.client("stepfunctions").get_execution_history(executionArn=ex.arn, maxResults=1000)["events"]
    sizes = [len(e["stateEnteredEventDetails"]["input"]) for e in events
             if e["type"] == "ChoiceStateEntered" and e["stateEnteredEventDetails"]["name"] == "flaky: check"]
    assert len(sizes) == 3 and sizes[0] > 1000 and abs(sizes[2] - sizes[0]) < 200, sizes
    state = aws.repository().job_state(job)
    assert state.running == frozenset() and state.last_status == "FAILED"
    msgs = messages_for(aws, job)
    assert len(msgs) == 1
    message = NotificationMessage.model_validate_json(msgs[0]["Message"])
    assert message.event == "FAILED" and message.outcome.step == "flaky"
    assert {k: v["Value"] for k, v in msgs[0]["MessageAttributes"].items()} == {"team": "billing", "job": job,
                                                                                 "status": "FAILED"}
    # a permanent failure (the target does not exist) is not retried
    job2 = deploy(aws, steps=[{"name": "gone", "python": "sample_apps.functions:no_such_function",
                               "retry": {"attempts": 3, "interval": 1}}])
    ex, rec = finish(aws, aws.start(job2, fire()))
    assert rec.status == "FAILED" and len(rec.attempts("gone")) == 1
    assert ex.states_entered.count("gone") == 1 and "gone: retry" not in ex.states_entered


class _FailsToStartFirst:
    """What AWS does to a task now and then (no capacity, image pull, a maintenance stop): its
    first task never runs and stops with StopCode TaskFailedToStart, as the local agent records
    for a command it cannot start (or as given); the rest go to the real agent."""

    def __init__(self, agent: Any, exit_code: int | None = None,
                 reason: str = "CannotPullContainerError: pull access denied", stop_code: str = "TaskFailedToStart"):
        self.agent = agent
        self.refused: list[str] = []
        self.ending = (exit_code, reason, stop_code)

    def start(self, task: Any) -> None:
        from jobplane.platform.local import moto_patches

        if not self.refused:
            self.refused.append(task.task_arn)
            moto_patches.finish_task(task, *self.ending)
        else:
            self.agent.start(task)

    def stop_task(self, task: str) -> Any:
        return self.agent.stop_task(task)


def test_a_task_that_never_started_is_retried_without_using_an_attempt(aws: LocalAWS, fast_waits: float) -> None:
    from jobplane.platform.local import moto_patches

    job = deploy(aws, steps=[{"name": "work", "python": BEHAVE}])  # one attempt: no retries of its own
    flaky_infra = _FailsToStartFirst(aws.agent)
    moto_patches.ECS_TASK_RUNNERS.append(flaky_infra)
    try:
        ex, rec = finish(aws, aws.start(job, fire({"mode": "ok"})))
    finally:
        moto_patches.ECS_TASK_RUNNERS.remove(flaky_infra)
    assert len(flaky_infra.refused) == 1
    assert ex.status == "SUCCEEDED" and rec.status == "SUCCEEDED", task_logs(aws, rec.execution)
    assert [s for s in ex.states_entered if "infra" in s] == ["work: infra retry", "work: infra wait"]
    assert ex.states_entered.count("work") == 2  # the same attempt, run again
    assert [a.attempt for a in rec.attempts("work")] == [1, 1]


def test_runtask_throttled_past_the_tasks_own_retries_is_retried_as_infrastructure(aws: LocalAWS, faults: Faults,
                                                                                   fast_waits: float) -> None:
    """Issue 62 finding 8: RunTask serves 20 calls a second per account; a wide map or a busy
    minute is throttled longer than the Task's own four quick tries. The fifth throttle goes to the
    step's bounded infrastructure retry, not to `failed`: the run SUCCEEDS, its one attempt showing
    each throttled try with its error, then the try that ran. Before: FAILED on the Catch."""
    job = deploy(aws, steps=[{"name": "work", "python": BEHAVE}])  # one attempt: no retries of its own
    faults.script("ecs", "RunTask", "ThrottlingException", times=5,
                  match=lambda params: params.get("group") == f"jobplane:{job}")
    ex, rec = finish(aws, aws.start(job, fire({"mode": "ok"})))
    assert faults.count("ecs", "RunTask", "ThrottlingException") == 5
    assert ex.status == "SUCCEEDED" and rec.status == "SUCCEEDED", (ex.error, ex.cause)
    assert [s for s in ex.states_entered if "infra" in s] == ["work: infra retry", "work: infra wait"]
    assert [(a.attempt, a.outcome, a.error) for a in rec.attempts("work")] == (
        [(1, "failed", "ECS.ThrottlingException")] * 5 + [(1, "succeeded", None)])


def test_a_task_stopped_by_a_fargate_retirement_is_run_again_as_the_same_attempt(aws: LocalAWS, fast_waits: float) -> None:
    """Issue 41 item 12: a Fargate task retirement stops a standalone task (its container ends 143
    on the SIGTERM) with a stop code the step did not choose, which is not on the list of known
    infrastructure codes: still infrastructure, not the step's failed attempt."""
    from jobplane.platform.local import moto_patches

    job = deploy(aws, steps=[{"name": "work", "python": BEHAVE}])
    retired = _FailsToStartFirst(aws.agent, 143, "ECS is performing maintenance on the underlying infrastructure "
                                                 "hosting the task", "TaskRetirementNotAListedCode")
    moto_patches.ECS_TASK_RUNNERS.append(retired)
    try:
        ex, rec = finish(aws, aws.start(job, fire({"mode": "ok"})))
    finally:
        moto_patches.ECS_TASK_RUNNERS.remove(retired)
    assert ex.status == "SUCCEEDED" and rec.status == "SUCCEEDED", task_logs(aws, rec.execution)
    assert [s for s in ex.states_entered if "infra" in s] == ["work: infra retry", "work: infra wait"]
    assert [a.attempt for a in rec.attempts("work")] == [1, 1]


def test_a_step_whose_own_container_exited_143_is_its_failed_attempt(aws: LocalAWS) -> None:
    """The counterpart: the step's container exiting (EssentialContainerExited) is the step's own
    outcome, whatever its code."""
    from jobplane.platform.local import moto_patches

    job = deploy(aws, steps=[{"name": "work", "python": BEHAVE}])
    exited = _FailsToStartFirst(aws.agent, 143, "Essential container in task exited", "EssentialContainerExited")
    moto_patches.ECS_TASK_RUNNERS.append(exited)
    try:
        ex, rec = finish(aws, aws.start(job, fire({"mode": "ok"})))
    finally:
        moto_patches.ECS_TASK_RUNNERS.remove(exited)
    assert rec.status == "FAILED" and rec.failed_step == "work" and len(rec.attempts("work")) == 1
    assert not [s for s in ex.states_entered if "infra" in s]


def test_a_task_someone_stopped_is_not_retried(aws: LocalAWS, tmp_path: Path) -> None:
    job = deploy(aws, steps=[{"name": "work", "python": BEHAVE, "retry": {"attempts": 3, "interval": 1}}])
    marker = tmp_path / "pid"
    arn = aws.start(job, fire({"mode": "sleep", "seconds": 60, "marker": str(marker)}))
    started_process(marker)
    ecs = aws.client("ecs")
    task = next(t for t in ecs.list_tasks(cluster=aws.resources["cluster_arn"])["taskArns"]
                if aws.agent.tasks.get(t) and aws.agent.tasks[t].execution_id == arn.rsplit(":", 1)[1])
    ecs.stop_task(cluster=aws.resources["cluster_arn"], task=task, reason="operator")
    ex, rec = finish(aws, arn)
    assert rec.status == "FAILED" and rec.failed_step == "work" and len(rec.attempts("work")) == 1
    assert ex.states_entered.count("work") == 1 and "work: retry" not in ex.states_entered
    assert not any("infra" in s for s in ex.states_entered)


def test_resume_from_skips_earlier_steps(aws: LocalAWS, tmp_path: Path) -> None:
    markers = {n: tmp_path / n for n in ("extract", "transform", "load")}
    job = deploy(aws, policy="ALWAYS_RUN", steps=[
        {"name": n, "python": BEHAVE, "kwargs": {"marker": str(p)}} for n, p in markers.items()])
    first = finish(aws, aws.start(job, fire({"mode": "ok"})))[1]
    assert first.status == "SUCCEEDED", (first, task_logs(aws, first.execution))
    assert all(p.exists() for p in markers.values())
    for p in markers.values():
        p.unlink()
    rerun = execution_input.rerun("ops@example.com", first.execution, {"mode": "ok"}, "transform")
    ex, rec = finish(aws, aws.start(job, rerun))
    assert rec.status == "SUCCEEDED"
    assert not markers["extract"].exists() and markers["transform"].exists() and markers["load"].exists()
    assert rec.input.rerun_of == first.execution and rec.input.resume_from == "transform" and rec.trigger == "rerun"
    assert set(rec.steps) == {"transform", "load"}


def test_parallel_group_with_a_failing_branch(aws: LocalAWS, tmp_path: Path) -> None:
    job = deploy(aws, policy="ALWAYS_RUN", steps=[{"name": "both", "parallel": [
        {"name": "card", "python": BEHAVE, "kwargs": {"mode": "ok", "marker": str(tmp_path / "card")}},
        {"name": "bank", "python": BEHAVE, "kwargs": {"mode": "fail"}}]}])
    ex, rec = finish(aws, aws.start(job, fire()))
    assert ex.status == "FAILED" and rec.status == "FAILED" and rec.failed_step == "both"
    group = rec.steps["both"]
    assert group["card"]["status"] == "SUCCEEDED" and group["card"]["attempts"]["result"]["Container"]["ExitCode"] == 0
    assert group["bank"]["status"] == "FAILED" and group["bank"]["attempts"] == {}
    assert [(a.outcome, a.exit_code) for a in rec.attempts("bank")] == [("failed", 75)]
    assert (tmp_path / "card").exists()


@pytest.mark.parametrize("how", ["stopped", "timed out"])
def test_a_run_that_cannot_clean_up_is_reconciled(aws: LocalAWS, tmp_path: Path, how: str) -> None:
    job = deploy(aws, timeout=15 if how == "timed out" else 3600)  # time for the step to start, even under load
    marker = tmp_path / "pid"
    arn = aws.start(job, fire({"mode": "sleep", "seconds": 60, "marker": str(marker)}))
    pid = started_process(marker)
    assert aws.repository().job_state(job).running  # the claim is held
    if how == "stopped":
        aws.client("stepfunctions").stop_execution(executionArn=arn, error="Ops.Stop", cause="stopped by test")
    ex, rec = finish(aws, arn)
    expected = "ABORTED" if how == "stopped" else "TIMED_OUT"
    assert ex.status == expected and rec.status == expected and rec.failed_step == "work"
    deadline = time.monotonic() + 120  # a bound that catches a hang, not a budget
    while alive(pid):
        assert time.monotonic() < deadline, "the step's process was not terminated"
        time.sleep(0.05)
    state = aws.repository().job_state(job)
    assert state.running == frozenset() and state.holder is None and state.last_status == expected
    msgs = [NotificationMessage.model_validate_json(m["Message"]) for m in messages_for(aws, job)]
    assert [(m.event, m.outcome.step) for m in msgs] == [(expected, "work")]
    assert rec.expires_at is not None


def test_a_step_that_times_out_is_recorded_at_that_step_by_the_jobs_one_timeout_record(aws: LocalAWS) -> None:
    # the second step can only time out (a 2 s timeout around a 300 s sleep); its catcher names
    # it in $failed_step for Finish (timed out), shared by every step of the job
    job = deploy(aws, steps=[{"name": "prepare", "shell": ["true"]},
                             {"name": "load", "python": BEHAVE, "timeout": 2}])
    ex, rec = finish(aws, aws.start(job, fire({"mode": "sleep", "seconds": 300})))
    assert ex.status == "FAILED" and ex.error == "Job.TIMED_OUT"
    # the first step's success goes straight on (no check after a Task that succeeded)
    assert ex.states_entered == ["Claim (first)", "prepare", "load", "Finish (timed out)", "Notify failure", "Fail"]
    assert rec.status == "TIMED_OUT" and rec.failed_step == "load"
    state = aws.repository().job_state(job)
    assert state.running == frozenset() and state.last_status == "TIMED_OUT"
    msgs = [NotificationMessage.model_validate_json(m["Message"]) for m in messages_for(aws, job)]
    assert [(m.event, m.outcome.step) for m in msgs] == [("TIMED_OUT", "load")]
    # Nothing stops a task when its Task state times out (AWS documents a stop only for a stopped
    # execution): the runner ends itself a margin (here 1 s: the fixture's environment) past it.
    deadline = time.monotonic() + 120  # a bound that catches a hang, not a budget
    while aws.agent.running_processes(ex.arn.rsplit(":", 1)[1]):
        assert time.monotonic() < deadline, "the timed-out step's runner did not stop itself"
        time.sleep(0.1)
    # (its step sleeps 300 s: only the runner's own stop ends it this soon)
    # the next scheduled start runs normally
    assert finish(aws, aws.start(job, fire({"mode": "ok"})))[1].status == "SUCCEEDED"


def test_a_stale_claim_does_not_block_the_next_run(aws: LocalAWS, tmp_path: Path) -> None:
    job = deploy(aws, policy="SKIP_IF_RUNNING")
    marker = tmp_path / "pid"
    aws.reconcile = False  # the reconciler missed this one: its claim stays behind
    try:
        arn = aws.start(job, fire({"mode": "sleep", "seconds": 60, "marker": str(marker)}))
        started_process(marker)
        aws.client("stepfunctions").stop_execution(executionArn=arn)
        aws.wait(arn)
        aws.wait_reconciled(arn)
    finally:
        aws.reconcile = True
    assert aws.repository().job_state(job).running == frozenset({arn.rsplit(":", 1)[1]})
    ex, rec = finish(aws, aws.start(job, fire({"mode": "ok"})))
    assert "Take over stale claim" in ex.states_entered and rec.status == "SUCCEEDED"
    assert aws.repository().job_state(job).running == frozenset()



def test_compiled_output_deploys_byte_identical_with_its_schedules(aws: LocalAWS, tmp_path: Path) -> None:
    from jobplane.compiler import asl
    from jobplane.compiler.output import compile_all, job_files, write_output
    from jobplane.contract.bindings import bind
    from jobplane.contract.config import load_config

    from jobplane.compiler.blackouts import job_windows

    out = tmp_path / "compiled"
    config = load_config(HERE.parent)
    compiled = compile_all(config)
    write_output(compiled, out)
    names = aws.deploy_output(out)
    assert len(names) == 10  # the example jobs (month-end-invoices: the approval example; invoice-run: expectations)
    sfn, scheduler = aws.client("stepfunctions"), aws.client("scheduler")
    # each with its blackout windows (jobplane.toml's), as the compiler builds it
    rendered = {lj.job.name: asl.render(asl.build_definition(lj.job, aws.prefix, None, job_windows(lj.job, config)))
                for lj in compiled.jobs}
    for name in names:
        deployed = sfn.describe_state_machine(stateMachineArn=aws.state_machines[name])["definition"]
        # the compiler's bytes, read back from the job's Terraform file, bound to the local resources
        assert deployed == bind(rendered[name], aws.bindings())
        assert (out / job_files(compiled.files)[name]).is_file()
    daily = scheduler.get_schedule(Name="jobplane-daily-sales-report", GroupName=aws.prefix)
    assert daily["ScheduleExpression"] == "cron(0 2 * * ? *)" and daily["ScheduleExpressionTimezone"] == "Asia/Tokyo"
    assert json.loads(daily["Target"]["Input"])["scheduled_time"] == "<aws.scheduler.scheduled-time>"
    assert scheduler.get_schedule(Name="jobplane-rotate-audit-archives", GroupName=aws.prefix)["State"] == "DISABLED"
    schedules = scheduler.list_schedules(GroupName=aws.prefix)["Schedules"]
    assert not any(s["Name"] == "jobplane-backfill-search-index" for s in schedules)  # manual only


def test_repository_pages_and_feeds(aws: LocalAWS) -> None:
    job = deploy(aws, policy="ALWAYS_RUN")
    outcomes = ["ok", "fail", "ok", "fail", "ok"]
    arns = [finish(aws, aws.start(job, fire({"mode": m})))[1].execution for m in outcomes]
    repo = aws.repository()
    seen, cursor = [], None
    while True:
        page = repo.executions(job, limit=2, cursor=cursor)
        assert len(page.items) <= 2
        seen += [e.execution for e in page.items]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == list(reversed(arns))  # newest first, every run, nothing twice
    failures = [e.execution for e in repo.recent_failures(limit=200).items if e.job == job]
    assert failures == [arns[3], arns[1]]
    state = next(s for s in repo.job_states() if s.job == job)
    assert state.last_status == "SUCCEEDED" and state.last_execution == arns[4]
    # acknowledging a failure unblocks SKIP_IF_FAILED (the control plane audits it: test_portal_api)
    finish(aws, aws.start(job, fire({"mode": "fail"})))
    blocker = repo.job_state(job).blocked_by
    assert not repo.acknowledge_failure(job, "some-other-execution")  # only the one blocking
    assert repo.acknowledge_failure(job, blocker, "ops@example.com")
    acked = repo.job_state(job)
    assert not acked.blocked and acked.acknowledged_by == "ops@example.com" and acked.blocked_by == blocker
    assert not repo.acknowledge_failure(job, blocker)  # once
    # audit entries: newest first, and one can be withdrawn (an action that failed after it)
    from jobplane.contract import audit

    entry_id = repo.add_audit("ops@example.com", audit.Acknowledge(job, blocker), "known partner outage")
    entry = next(e for e in repo.audit_log() if e.job == job)
    assert (entry.id, entry.actor, entry.action) == (entry_id, "ops@example.com", "acknowledge_failure")
    assert entry.reason == "known partner outage" and entry.execution == blocker
    repo.delete_audit(entry_id)
    assert not any(e.job == job for e in repo.audit_log())


def test_a_step_gets_its_declared_environment_not_the_developers(aws: LocalAWS, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 10, item 8: jobplane dev handed its whole environment (the Slack webhook URL, AWS
    keys) to every step, whose output every portal user reads."""
    monkeypatch.setenv("JOBPLANE_SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T9/B9/SECRET")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_developer_token")
    out = tmp_path / "env.json"
    job = Job.from_definition({"name": "env-check", "team": "billing", "timezone": "UTC",
                              "steps": [{"name": "dump", "python": "sample_apps.functions:record_env",
                                         "kwargs": {"out": str(out)}, "env": {"REPORT_BUCKET": "reports"}}]})
    aws.deploy(job.name, asl.compile_job(job, aws.prefix))
    assert aws.run(job.name, execution_input.manual("test")).status == "SUCCEEDED"
    env = json.loads(out.read_text())
    assert "JOBPLANE_SLACK_WEBHOOK_URL" not in env and "GITHUB_TOKEN" not in env
    assert not any(k.startswith("AWS_") for k in env)
    assert env["REPORT_BUCKET"] == "reports" and env["PYTHONPATH"] == aws.env["PYTHONPATH"]  # declared + [dev] env
    assert env["JOBPLANE_JOB"] == "env-check" and "PATH" in env


def test_concurrent_no_op_runs_all_succeed_on_a_loaded_machine(aws: LocalAWS) -> None:
    """Issue 13: ~1 in 100 no-op runs FAILED under load (a torn DescribeTasks answer: task
    STOPPED, container PENDING). A smaller version of bench/engine.py's rounds, with two
    processes spinning on the CPU beside xdist's own load while the runs' tasks start and end.

    The torn answer could only come while a task ended, so the spinning stops once every run of
    the round has ended (its task had to end first): it spun through the reconciliation and the
    checks too, ~5 of its ~17 s, CPU taken from the other workers (issue 66 item 7)."""
    job = deploy(aws, policy="ALWAYS_RUN")
    for _ in range(2):
        with spinning(2):
            arns = start_at_once(aws, job, {"mode": "ok"}, 25)
            ended = {arn: aws.wait(arn, timeout=600) for arn in arns}  # bounds that only catch a hang
        outcomes = {}
        for arn in arns:  # generous bounds: this test is about outcomes, never about time
            aws.wait_reconciled(arn, timeout=600)
            outcomes[arn] = (ended[arn], record(aws, arn))
        failed = {arn.rsplit(":", 1)[1]: (ex.error, ex.cause and ex.cause[:300], task_logs(aws, arn.rsplit(":", 1)[1]))
                  for arn, (ex, rec) in outcomes.items() if ex.status != "SUCCEEDED" or rec.status != "SUCCEEDED"}
        assert len(outcomes) == 25 and failed == {}, failed


@contextlib.contextmanager
def spinning(processes: int) -> Iterator[None]:
    """``processes`` interpreters spinning on the CPU at normal priority for as long as the block lasts."""
    import subprocess
    import sys

    spinners = [subprocess.Popen([sys.executable, "-c", "import time\nend = time.monotonic() + 600\n"
                                  "while time.monotonic() < end: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for s in spinners:
            s.kill()
            s.wait()


def test_a_killed_runner_takes_its_shell_command_with_it(aws: LocalAWS, tmp_path: Path) -> None:
    """Issue 17: after `kill -9` of a shell step's runner its command kept running (in a session
    of its own) while the retry started: two copies under SKIP_IF_RUNNING. On ECS every process
    of a container ends with it; so locally."""
    import signal

    pids = tmp_path / "pids"
    job = deploy(aws, steps=[{"name": "hold", "shell": ["sh", "-c", f"echo $$ >> {pids}; exec sleep 300"],
                              "retry": {"attempts": 2, "interval": 1}}], policy="SKIP_IF_RUNNING")
    arn = aws.start(job, fire())
    first = started_process(pids)
    # this run's runner: the module's local AWS may still hold other tests' tasks
    runner = next(iter(aws.agent.running_processes(arn.rsplit(":", 1)[1]).values()))
    os.kill(runner, signal.SIGKILL)  # the runner dies; ECS would end the whole container
    deadline = time.monotonic() + 120
    while alive(first):
        assert time.monotonic() < deadline, "the step's command outlived its runner"
        time.sleep(0.1)
    # the retry runs the command again, alone
    while len(pids.read_text().split()) < 2:
        assert time.monotonic() < deadline, "no retry"
        time.sleep(0.1)
    second = int(pids.read_text().split()[1])
    assert alive(second) and not alive(first)
    aws.client("stepfunctions").stop_execution(executionArn=arn)
    finish(aws, arn)
    while alive(second):
        assert time.monotonic() < deadline + 60, "the stopped command kept running"
        time.sleep(0.1)


def test_recovered_is_decided_by_the_finish_and_announced_once_per_failure_streak(aws: LocalAWS,
                                                                                   tmp_path: Path) -> None:
    """Issue 54: a success enters 4 states even for a job that announces RECOVERED; the Finish
    transaction's condition (no failure block) tells the success that ends a failure streak,
    which alone goes on to Finish (recovered) and Notify recovered. Two successes that end the
    same streak at once both finish and it is announced (by both if both Finish transactions
    met the block before either cleared it, as when the claim decided it)."""
    job = deploy(aws, policy="ALWAYS_RUN", notify={"events": ["FAILED", "RECOVERED"]})
    repo = aws.repository()
    plain = finish(aws, aws.start(job, fire({"mode": "ok"})))[0]
    assert plain.states_entered == ["Claim (first)", "work", "Finish"]
    failed = finish(aws, aws.start(job, fire({"mode": "fail"})))[1]
    assert repo.job_state(job).blocked_by == failed.execution
    recovering, rec = finish(aws, aws.start(job, fire({"mode": "ok"})))
    assert recovering.states_entered == ["Claim (first)", "work", "Finish", "Finish (cancelled)",
                                         "Finish (recovered)", "Notify recovered"]
    assert rec.status == "SUCCEEDED" and rec.steps  # recorded as any success
    state = repo.job_state(job)
    assert state.blocked_by is None and not state.running and state.last_status == "SUCCEEDED"
    assert finish(aws, aws.start(job, fire({"mode": "ok"})))[0].states_entered == ["Claim (first)", "work", "Finish"]
    # a new streak, ended by two runs at once: manual runs, as two scheduled fires started at
    # once may claim out of order, and the older is then a duplicate that never runs
    finish(aws, aws.start(job, fire({"mode": "fail"})))
    release = tmp_path / "release"
    both = [aws.start(job, execution_input.manual("ops", overrides={
        "mode": "wait", "release": str(release), "seconds": 300, "marker": str(tmp_path / f"m{i}")}))
        for i in range(2)]
    for i in range(2):
        started_process(tmp_path / f"m{i}")
    release.write_text("go")
    ends = [finish(aws, arn) for arn in both]
    assert [r.status for _, r in ends] == ["SUCCEEDED", "SUCCEEDED"]
    announced = sum("Notify recovered" in ex.states_entered for ex, _ in ends)
    assert announced >= 1
    events = [json.loads(m["Message"])["event"] for m in messages_for(aws, job)]
    assert events == ["FAILED", "RECOVERED", "FAILED"] + ["RECOVERED"] * announced
    state = repo.job_state(job)
    assert state.blocked_by is None and not state.running


def test_after_an_acknowledged_failure_the_next_success_is_announced(aws: LocalAWS) -> None:
    """Issue 17, decided: acknowledging a failure lets scheduled runs go ahead but does not
    close the incident the channel was told about: the next success is announced RECOVERED
    (docs/notifications.md). A LAST_FAILED skip names the failed run that blocks it."""
    from jobplane.platform.notifier import console_text

    job = deploy(aws, policy="SKIP_IF_FAILED", notify={"events": ["FAILED", "SKIPPED", "RECOVERED"]})
    repo = aws.repository()
    failed = finish(aws, aws.start(job, fire({"mode": "fail"})))[1]
    skipped = finish(aws, aws.start(job, fire({"mode": "ok"})))[1]
    assert (skipped.status, skipped.skip_reason, skipped.blocked_by) == ("SKIPPED", "LAST_FAILED", failed.execution)
    assert repo.acknowledge_failure(job, failed.execution, "ops@example.com")
    recovered = finish(aws, aws.start(job, fire({"mode": "ok"})))[1]
    assert recovered.status == "SUCCEEDED"
    msgs = [NotificationMessage.model_validate_json(m["Message"]) for m in messages_for(aws, job)]
    assert [m.event for m in msgs] == ["FAILED", "SKIPPED", "RECOVERED"]
    skip_alert = msgs[1]
    assert skip_alert.outcome.reason == "LAST_FAILED" and skip_alert.outcome.blocked_by == failed.execution
    assert f"run {failed.execution} failed" in console_text(skip_alert, "#billing-alerts", "")
    state = repo.job_state(job)
    assert state.blocked_by is None and state.acknowledged_by is None and not state.blocked


def test_step_output_goes_to_cloudwatch_logs_as_the_awslogs_driver_writes_it(aws: LocalAWS) -> None:
    """The runner's output is read back with GetLogEvents from the stream AWS would write
    (runner/runner/<task id> in the runner's group), found through the execution's history; a
    task whose container names a log group that does not exist cannot start, as on ECS."""
    from jobplane.contract import runner as rc

    lines = [f"line {i} of the partner export" for i in range(300)]
    script = "for i in $(seq 0 299); do echo \"line $i of the partner export\"; done; printf 'no newline at the end'"
    job = deploy(aws, steps=[{"name": "talk", "shell": ["sh", "-c", script]}])
    ex, rec = finish(aws, aws.start(job, fire()))
    assert rec.status == "SUCCEEDED", task_logs(aws, rec.execution)
    [row] = rec.timeline
    stream = rc.log_stream(row.task_id)
    logs = aws.client("logs")
    events = logs.get_log_events(logGroupName=aws.log_group, logStreamName=stream, startFromHead=True)["events"]
    records = [json.loads(e["message"]) for e in events]  # one event per line the runner printed
    printed = [r["message"] for r in records if r["logger"] == "jobplane.output"]
    assert printed == lines + ["no newline at the end"]
    assert records[0]["message"] == "step started" and records[-1]["message"] == "step succeeded"
    [s] = aws.step_logs().streams(rec.timeline)
    assert (s.step, s.attempt, s.task_id) == ("talk", 1, row.task_id)
    assert s.read() == "".join(e["message"] + "\n" for e in events)
    tail = s.read(limit=1000)  # a long log shows its end
    assert tail.startswith("[... earlier lines not shown ...]\n") and '"step succeeded"' in tail.splitlines()[-1]
    assert len(tail) < 1100
    # a container definition whose log group is missing: the task fails to start, never runs
    ecs = aws.client("ecs")
    broken = ecs.register_task_definition(
        family=f"{aws.prefix}-broken-logs", requiresCompatibilities=["FARGATE"], networkMode="awsvpc", cpu="256",
        memory="512", containerDefinitions=[{
            "name": rc.CONTAINER_NAME, "image": "jobplane-runner:local", "essential": True, "memoryReservation": 128,
            "logConfiguration": {"logDriver": "awslogs", "options": {
                "awslogs-group": "/nobody/made/this", "awslogs-region": aws.region,
                "awslogs-stream-prefix": rc.LOG_STREAM_PREFIX}}}])["taskDefinition"]["taskDefinitionArn"]
    job2 = f"job-{uuid.uuid4().hex[:10]}"
    aws.deploy(job2, asl.compile_job(Job.from_definition({
        "name": job2, "team": "billing", "timezone": "UTC", "steps": [{"name": "work", "python": BEHAVE}]}),
        aws.prefix), task_definition=broken)
    arn = aws.start(job2, fire({"mode": "ok"}))
    sfn = aws.client("stepfunctions")
    from jobplane.platform.timeline import history, timeline

    deadline = time.monotonic() + 300  # a hang guard only
    while not (rows := [r for r in timeline(history(sfn, arn)) if r.outcome == "failed"]):
        assert time.monotonic() < deadline, "the task neither started nor failed"
        time.sleep(0.2)
    sfn.stop_execution(executionArn=arn)  # what follows is the infrastructure retry (15 s, 60 s, 180 s)
    assert rows[0].stop_code == "TaskFailedToStart" and "/nobody/made/this" in (rows[0].reason or "")
    assert rows[0].exit_code is None
    finish(aws, arn)
