"""Pools on the embedded local AWS: the compiled claim, wait and release run as compiled, each
step by the real runner as a subprocess (the local ECS agent), and the records, the pool item
and the steps' own logs are read back (docs/pools.md)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input
from jobplane.contract import pools as pc
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.pool_slots import PoolSweep, pools

HERE = Path(__file__).resolve().parent
HOLD = "sample_apps.functions:hold"


@pytest.fixture(scope="module")
def aws():
    with LocalAWS(env={"PYTHONPATH": str(HERE), "JOBPLANE_STOP_GRACE_SECONDS": "3"}) as local:
        yield local


def deploy(aws: LocalAWS, steps: list[dict[str, Any]], sizes: dict[str, int], name: str | None = None,
           **fields: Any) -> str:
    name = name or f"pj-{uuid.uuid4().hex[:8]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "policy": "ALWAYS_RUN",
                               "steps": steps} | fields)
    aws.deploy(name, asl.compile_job(job, aws.prefix, sizes))
    return name


def start(aws: LocalAWS, job: str) -> str:
    return aws.start(job, execution_input.manual("ops@example.com"))


def holders(aws: LocalAWS, pool: str) -> tuple[pc.Holder, ...]:
    found = {p.name: p for p in pools(aws.client("dynamodb"), aws.resources["table_name"])}
    return found[pool].holders if pool in found else ()


def finish(aws: LocalAWS, arn: str):
    ex = aws.wait(arn, timeout=600)  # bounds that only catch a hang, never decide an outcome
    aws.wait_reconciled(arn, timeout=600)
    return ex, aws.repository().execution(arn.rsplit(":", 1)[1])


def until(what: str, condition, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout  # catches a hang; no outcome depends on it
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The largest number of [start, end) intervals that overlap."""
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = best = 0
    for _, d in edges:  # an end sorts before a start at the same instant
        now += d
        best = max(best, now)
    return best


def from_log(log: Path) -> list[tuple[float, float]]:
    starts: dict[str, float] = {}
    out = []
    for line in log.read_text().splitlines():
        what, pid, t = line.split()
        if what == "start":
            starts[pid] = float(t)
        else:
            out.append((starts.pop(pid), float(t)))
    assert not starts, f"steps that never ended: {starts}"
    return out


def from_records(records) -> list[tuple[float, float]]:
    from jobplane.contract.clock import parse_iso

    return [(parse_iso(a.started_at).timestamp(), parse_iso(a.finished_at).timestamp())
            for r in records for a in r.timeline if a.started_at and a.finished_at]


def test_three_jobs_share_a_pool_of_two_and_never_run_more_at_once(aws: LocalAWS, tmp_path: Path) -> None:
    """Each job's group runs four pooled steps at once; with three jobs, twelve want the pool
    and at no moment do more than two run: by the steps' own logs, and by the records."""
    log = tmp_path / "held.log"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    members = [{"name": f"m{i}", "python": HOLD, "kwargs": {"log": str(log), "seconds": 0.3}} for i in range(4)]
    jobs = [deploy(aws, [{"name": "all", "parallel": members}], {pool: 2}, pool=pool) for _ in range(3)]
    arns = [start(aws, j) for j in jobs]
    records = [finish(aws, arn)[1] for arn in arns]
    assert [r.status for r in records] == ["SUCCEEDED"] * 3
    held = from_log(log)
    assert len(held) == 12
    assert most_at_once(held) <= 2
    assert most_at_once(from_records(records)) <= 2
    assert holders(aws, pool) == ()
    sfn = aws.client("stepfunctions")
    waited = [e for arn in arns for e in sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
              if e["type"] == "WaitStateEntered" and e["stateEnteredEventDetails"]["name"].endswith(": pool wait")]
    assert waited  # twelve wanted two slots: some waited
    # somebody waited, and said so: the timeline keeps when each attempt began to wait
    rows = [a for r in records for a in r.timeline]
    assert len(rows) == 12 and all(a.waiting_since and a.outcome == "succeeded" for a in rows)


def test_a_weight_takes_that_many_slots(aws: LocalAWS, tmp_path: Path) -> None:
    log = tmp_path / "held.log"
    pool = f"api-{uuid.uuid4().hex[:6]}"
    members = [{"name": "heavy", "python": HOLD, "kwargs": {"log": str(log), "seconds": 0.5},
                "pool": {"name": pool, "weight": 3}},
               {"name": "light", "python": HOLD, "kwargs": {"log": str(log), "seconds": 0.5}, "pool": pool}]
    jobs = [deploy(aws, [{"name": "both", "parallel": members}], {pool: 3}) for _ in range(2)]
    records = [finish(aws, start(aws, j))[1] for j in jobs]
    assert [r.status for r in records] == ["SUCCEEDED"] * 2
    # a heavy step holds the whole pool: it never overlaps anything
    from jobplane.contract.clock import parse_iso

    spans = [(a.step, parse_iso(a.started_at).timestamp(), parse_iso(a.finished_at).timestamp())
             for r in records for a in r.timeline]
    assert len(spans) == 4
    for step, hs, he in spans:
        if step == "heavy":
            assert all(e <= hs or s >= he for other, s, e in spans if (other, s, e) != (step, hs, he))
    assert holders(aws, pool) == ()


def test_an_abort_while_waiting_and_while_holding_leaves_nothing_held(aws: LocalAWS, tmp_path: Path) -> None:
    """A run stopped while its step waits for the pool is recorded ABORTED at that step, never
    ran it, and holds nothing; a run stopped while its step holds the slot gives it back (the
    reconciler reads what the run claimed from its history); the next run gets the slot."""
    log, release = tmp_path / "held.log", tmp_path / "release"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    step = [{"name": "load", "python": HOLD, "pool": pool,
             "kwargs": {"log": str(log), "release": str(release)}}]
    holder_job, waiter_job = deploy(aws, step, {pool: 1}), deploy(aws, step, {pool: 1})
    holding = start(aws, holder_job)
    until("the first run holds the slot", lambda: log.exists() and "start" in log.read_text())
    waiting = start(aws, waiter_job)
    sfn = aws.client("stepfunctions")

    def entered(arn: str) -> list[str]:
        events = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]

    until("the second run waits", lambda: "load: pool wait" in entered(waiting))
    # WAITING, not RUNNING, where an operator looks while it runs
    view = aws_control_view(aws, waiting)
    assert [a.outcome for a in view] == ["waiting"]
    sfn.stop_execution(executionArn=waiting, error="Ops.Stop", cause="no longer needed")
    ex, rec = finish(aws, waiting)
    assert ex.status == "ABORTED" and rec.status == "ABORTED" and rec.failed_step == "load"
    assert [(a.outcome, a.started_at) for a in rec.timeline] == [("stopped", None)]
    assert "load" not in entered(waiting)  # its Task never ran
    assert [h.execution_arn for h in holders(aws, pool)] == [holding]
    # stopped while holding: the slot comes back with the reconciler
    sfn.stop_execution(executionArn=holding)
    ex, rec = finish(aws, holding)
    assert rec.status == "ABORTED"
    assert holders(aws, pool) == ()
    # the next run is not kept waiting by either
    release.write_text("go")
    ex, rec = finish(aws, start(aws, waiter_job))
    assert rec.status == "SUCCEEDED" and "load: pool wait" not in ex.states_entered
    assert aws.repository().job_state(holder_job).running == frozenset()
    assert aws.repository().job_state(waiter_job).running == frozenset()


def aws_control_view(aws: LocalAWS, arn: str):
    """The timeline the portal and `jobplane run` build while a run has no record."""
    from jobplane.platform.timeline import history, timeline

    return timeline(history(aws.client("stepfunctions"), arn))


def test_a_resize_applies_to_runs_started_after_the_deploy(aws: LocalAWS, tmp_path: Path) -> None:
    """Documented behaviour (docs/pools.md, Resizing): a running execution keeps the definition
    it started with (UpdateStateMachine), so a run waiting on a pool of 1 keeps waiting after a
    deploy makes it 2, while a run started after the deploy gets the second slot at once; every
    record and the pool are consistent once all end."""
    log, release = tmp_path / "held.log", tmp_path / "release"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    step = [{"name": "load", "python": HOLD, "pool": pool, "kwargs": {"log": str(log), "release": str(release)}}]
    job = deploy(aws, step, {pool: 1})
    first = start(aws, job)
    until("the first run holds the slot", lambda: log.exists() and log.read_text().count("start") == 1)
    old = start(aws, job)
    until("the second run waits", lambda: any(a.waiting for a in aws_control_view(aws, old)))
    deploy(aws, step, {pool: 2}, name=job)  # the pool grows to 2
    new = start(aws, job)
    until("the run started after the deploy holds the second slot",
          lambda: log.read_text().count("start") == 2)
    assert sorted(h.execution_arn for h in holders(aws, pool)) == sorted([first, new])
    assert [a.outcome for a in aws_control_view(aws, old)] == ["waiting"]  # still on its pool of 1
    release.write_text("go")
    records = [finish(aws, arn)[1] for arn in (first, new, old)]
    assert [r.status for r in records] == ["SUCCEEDED"] * 3
    assert holders(aws, pool) == ()
    assert aws.repository().job_state(job).running == frozenset()


def test_the_sweep_releases_a_holder_whose_run_ended_without_the_reconciler(aws: LocalAWS, tmp_path: Path) -> None:
    log = tmp_path / "held.log"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    job = deploy(aws, [{"name": "load", "python": HOLD, "pool": pool,
                        "kwargs": {"log": str(log), "seconds": 120}}], {pool: 1})
    aws.reconcile = False  # its status event was lost
    try:
        arn = start(aws, job)
        until("the run holds the slot", lambda: log.exists())
        aws.client("stepfunctions").stop_execution(executionArn=arn)
        aws.wait(arn)
        aws.wait_reconciled(arn)
    finally:
        aws.reconcile = True
    assert [h.execution_arn for h in holders(aws, pool)] == [arn]
    sweep = PoolSweep(aws.client("dynamodb"), aws.resources["table_name"], aws.client("stepfunctions"))
    assert [pc.Holder.parse(e).execution_arn for e in sweep.check()] == [arn]
    assert holders(aws, pool) == () and sweep.check() == []


POOLED_JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: '%(name)s', team: 'billing', schedule: jp.manual, policy: jp.policy.ALWAYS_RUN, pool: 'db',
  steps: [jp.python('load', 'sample_apps.functions:hold', kwargs={ log: '%(log)s', release: '%(release)s' })],
}
"""


def test_status_and_the_execution_view_say_waiting(aws: LocalAWS, tmp_path: Path) -> None:
    """`jobplane status`'s pool lines and WAITING runs, and the execution view's status word,
    from a compiled output deployed as `jobplane dev` deploys it."""
    from conftest import Repo

    from jobplane.cli.operate import pool_status
    from jobplane.platform.control import ControlPlane, Deployment

    (tmp_path / "repo").mkdir()
    repo = Repo(tmp_path / "repo")
    (repo.path / "jobplane.toml").write_text((repo.path / "jobplane.toml").read_text() + '\n[pools.db]\nsize = 1\nteams = ["*"]\n')
    log, release = tmp_path / "held.log", tmp_path / "release"
    for name in ("pooled-first", "pooled-second"):
        repo.write(f"jobs/billing/{name}.jsonnet", POOLED_JOB % {"name": name, "log": log, "release": release})
    assert repo.cli("compile").exit_code == 0
    aws.deploy_output(repo.out)
    control = ControlPlane(Deployment(table=aws.resources["table_name"], topic_arn=aws.resources["topic_arn"],
                                      name_prefix=aws.prefix, endpoint_url=aws.endpoint_url,
                                      catalog_path=repo.out,
                                      access_key_id=aws.credentials.access_key_id,
                                      secret_access_key=aws.credentials.secret_access_key))
    first = start(aws, "pooled-first")
    until("the first run holds the slot", lambda: log.exists())
    second = start(aws, "pooled-second")
    until("the second run waits", lambda: any(a.waiting for a in aws_control_view(aws, second)))
    view = control.execution(second.rsplit(":", 1)[1], "pooled-second")
    assert (view.status, view.status_word, view.waiting) == ("RUNNING", "WAITING", True)
    assert control.execution(first.rsplit(":", 1)[1], "pooled-first").status_word == "RUNNING"
    status = pool_status(control, control.jobs(fires=1), {"db": 1})
    # (the other tests' pools, on this module's local AWS, hold nothing: not listed)
    assert status.lines == ["  db: 1/1 held by pooled-first/load"]
    assert list(status.waiting) == ["pooled-second"]
    assert status.waiting["pooled-second"][0]["steps"] == ["load"]
    release.write_text("go")
    assert [finish(aws, arn)[1].status for arn in (first, second)] == ["SUCCEEDED", "SUCCEEDED"]
    assert pool_status(control, control.jobs(fires=1), {"db": 1}).lines == ["  db: 0/1 held"]


def test_waiting_does_not_consume_the_steps_timeout_but_the_jobs(aws: LocalAWS, tmp_path: Path) -> None:
    """A step with a 15 s timeout that waits longer than that for its slot still runs (its
    timeout starts with its Task); a run whose whole-job timeout passes while it waits ends
    TIMED_OUT at that step, having held nothing."""
    from jobplane.contract.clock import parse_iso

    log, release = tmp_path / "held.log", tmp_path / "release"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    holder = deploy(aws, [{"name": "load", "python": HOLD, "pool": pool,
                           "kwargs": {"log": str(log), "release": str(release)}}], {pool: 1})
    patient = deploy(aws, [{"name": "load", "python": HOLD, "pool": pool, "timeout": 15,
                            "kwargs": {"log": str(log), "seconds": 0.1}}], {pool: 1})
    hurried = deploy(aws, [{"name": "load", "python": HOLD, "pool": pool,
                            "kwargs": {"log": str(log), "seconds": 0.1}}], {pool: 1}, timeout=5)
    holding = start(aws, holder)
    until("the first run holds the slot", lambda: log.exists())
    waiting, timing_out = start(aws, patient), start(aws, hurried)
    ex, rec = finish(aws, timing_out)
    assert ex.status == "TIMED_OUT" and rec.status == "TIMED_OUT" and rec.failed_step == "load"
    assert [(a.outcome, a.started_at) for a in rec.timeline] == [("timed out", None)]

    def waited() -> float:  # how long it has been waiting, by the history's clock and this one
        from datetime import datetime, timezone

        rows = [r for r in aws_control_view(aws, waiting) if r.waiting and r.waiting_since]
        return (datetime.now(timezone.utc) - parse_iso(rows[0].waiting_since)).total_seconds() if rows else 0.0

    until("the patient run has waited longer than its step's timeout", lambda: waited() > 16)
    release.write_text("go")
    ex, rec = finish(aws, waiting)
    assert rec.status == "SUCCEEDED", rec.error
    [row] = rec.timeline
    assert (parse_iso(row.started_at) - parse_iso(row.waiting_since)).total_seconds() > 15
    assert finish(aws, holding)[1].status == "SUCCEEDED"
    assert holders(aws, pool) == ()
