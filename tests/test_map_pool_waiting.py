"""A map item waiting for its pool's slot is visibly WAITING (issue 52, Pools: "a step waiting for
a slot is visibly WAITING (portal, status), not RUNNING"): the item's child execution writes its
record WAITING from its first refusal and RUNNING once it holds the slot (compiler/pools.py), and
the portal, the API and ``jobplane status`` count it (platform/map_records.py). Run on the local
AWS with the runner as a real subprocess; the compiled wait loop is the same on AWS."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import Repo, served
from test_pools_on_moto import holders, until

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import execution_input, map_items
from jobplane.contract import states as sn
from jobplane.contract.config import load_config
from jobplane.platform.control import ControlPlane
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.map_records import item_outcomes

POOL = "ledger-db"
JOB = "month-end-waits"
PLAIN = "ledger-load"
MAPPED = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'month-end-waits', team: 'billing', policy: 'ALWAYS_RUN',
  params: { count: 3, log: '', release: '' },
  steps: [
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.functions:hold', opts={ pool: 'ledger-db' }),
           opts={ max_concurrency: 3 }),
  ],
}
"""
SINGLE = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'ledger-load', team: 'billing', policy: 'ALWAYS_RUN',
  params: { log: '', seconds: 0.1 },
  steps: [jp.python('load', 'sample_apps.functions:hold', opts={ pool: 'ledger-db' })],
}
"""


# -- compiled ------------------------------------------------------------------------------------
def test_a_pooled_item_writes_its_record_waiting_once_and_running_once_whatever_the_tries() -> None:
    job = Job.from_definition({"name": "fan", "team": "billing", "steps": [{"name": "close-all", "map": {
        "items": {"name": "tenants", "python": "m:tenants"},
        "each": {"name": "close-tenant", "python": "m:close", "pool": "db"}}}]})
    processor = asl.build_definition(job, "jp", {"db": 2})["States"]["close-all"]["ItemProcessor"]["States"]
    claim, again = processor[sn.pool_claim("close-tenant")], processor[sn.pool_retry_claim("close-tenant")]
    waiting, running = processor[sn.pool_waiting("close-tenant")], processor[sn.pool_running("close-tenant")]
    # the first claim: room goes straight to the Task (no record written), a refusal writes WAITING once
    assert claim["Next"] == "close-tenant"
    assert claim["Catch"][0] == {"ErrorEquals": ["DynamoDb.TransactionCanceledException"],
                                 "Next": sn.pool_waiting("close-tenant"), "ResultPath": "$.pool.close_tenant.refused"}
    # a try whose answer was lost is checked: held, it runs (RUNNING first if it waited); not
    # held, it waits (WAITING first if it had not)
    held = processor[sn.pool_held("close-tenant")]
    assert [c["Next"] for c in held["Choices"]] == ["close-tenant", sn.pool_running("close-tenant"),
                                                    sn.pool_waiting("close-tenant")]
    assert held["Default"] == sn.pool_backoff("close-tenant")
    assert waiting["Next"] == sn.pool_backoff("close-tenant")
    assert processor[sn.pool_wait("close-tenant")]["Next"] == sn.pool_retry_claim("close-tenant")
    # a try after a wait: refused, back to the back-off (no write); room, the record says RUNNING first
    assert again["Catch"][0]["Next"] == sn.pool_backoff("close-tenant")
    assert again["Next"] == sn.pool_running("close-tenant") and running["Next"] == "close-tenant"
    assert {k: v for k, v in again["Parameters"].items()} == claim["Parameters"]
    # the records: the item's own key, WAITING with waiting_since, then RUNNING with started_at
    item = waiting["Parameters"]["Item"]
    assert waiting["Resource"] == "arn:aws:states:::dynamodb:putItem" and item["status"] == {"S": map_items.WAITING}
    assert item["sk"] == {"S.$": "States.Format('ITEM#close-all#{}', $.index)"}
    assert item["waiting_since"] == {"S.$": "$$.State.EnteredTime"} and "finished_at" not in item
    assert running["Resource"] == "arn:aws:states:::dynamodb:updateItem"
    assert running["Parameters"]["Key"] == {"pk": item["pk"], "sk": item["sk"]}
    assert running["Parameters"]["ExpressionAttributeValues"][":s"] == {"S": map_items.RUNNING}
    # a record that cannot be written does not fail the item: it goes on
    assert waiting["Catch"][0]["Next"] == waiting["Next"] and running["Catch"][0]["Next"] == running["Next"]
    assert waiting["ResultPath"] is None and running["ResultPath"] is None
    # a plain pooled step keeps one claim (its WAITING is read from its own history)
    plain = asl.build_definition(Job.from_definition({"name": "p", "team": "billing", "steps": [
        {"name": "load", "python": "m:f", "pool": "db"}]}), "jp", {"db": 2})["States"]
    assert not any(s in plain for s in (sn.pool_waiting("load"), sn.pool_running("load"), sn.pool_retry_claim("load")))


# -- on the local AWS ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def waits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane, Path]]:
    root = tmp_path_factory.mktemp("repo")
    repo = Repo(root)
    toml = root / "jobplane.toml"
    toml.write_text(toml.read_text() + f'\n[pools.{POOL}]\nsize = 1\nteams = ["*"]\n')
    repo.write(f"jobs/billing/{JOB}.jsonnet", MAPPED)
    repo.write(f"jobs/billing/{PLAIN}.jsonnet", SINGLE)
    with served(repo, JOBPLANE_STOP_GRACE_SECONDS="3") as (aws, control):
        yield aws, control, root


def _client(control: ControlPlane, root: Path):  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient

    from jobplane.portal.app import create_app
    from jobplane.portal.settings import AuthSettings, PortalSettings

    settings = PortalSettings.from_config(load_config(root), control.deployment, AuthSettings(
        mode="trusted-header", header="X-Forwarded-Email", proxy_secret="proxy-secret-for-tests-0123456789"),
        base_url="http://testserver")
    return TestClient(create_app(replace(settings, allowed_hosts=frozenset({"testserver"})), control))


def test_items_waiting_for_a_pool_are_waiting_in_their_records_the_portal_the_api_and_status(
        waits: tuple[LocalAWS, ControlPlane, Path], tmp_path: Path) -> None:
    """Pool of 1, three items at once: one holds its slot until released, two wait. Their records
    say WAITING (the holder has none yet: running); the map's progress is 0 done, 0 failed, 2
    WAITING, 1 running of 3 in the API, the portal and `jobplane status`; once released each
    waiter holds in turn (RUNNING) and every record ends SUCCEEDED, none WAITING."""
    from portal_kit import BILLING, READER, as_user

    from jobplane.cli.operate import pool_status

    aws, control, root = waits
    log, release = tmp_path / "held.log", tmp_path / "release"
    arn = aws.start(JOB, execution_input.manual("ops@example.com", overrides={
        "count": 3, "log": str(log), "release": str(release)}))
    name = arn.rsplit(":", 1)[1]
    ddb, table = aws.client("dynamodb"), aws.resources["table_name"]

    def statuses() -> list[str]:
        return sorted(o.status for o in item_outcomes(ddb, table, name))

    until("two items WAITING", lambda: statuses() == [map_items.WAITING] * 2)
    waiting = [o for o in item_outcomes(ddb, table, name)]
    assert all(o.waiting_since and not o.finished_at and not o.failed and not o.ended for o in waiting)
    assert [h.step for h in holders(aws, POOL)] == ["close_tenant"]
    [p] = control.map_progress(name)
    assert (p.total, p.succeeded, p.failed, p.waiting, p.running) == (3, 0, 0, 2, 1)
    assert p.waiting_since == min(o.waiting_since or "" for o in waiting)
    assert "2 WAITING for a pool's slot of 3" in p.summary()
    with _client(control, root) as client:
        [m] = client.get(f"/api/executions/{name}/items", headers=as_user(READER)).json()
        assert (m["total"], m["succeeded"], m["failed"], m["waiting"], m["running"]) == (3, 0, 0, 2, 1)
        assert m["waiting_since"] == p.waiting_since and m["failed_items"] == []
        page = client.get(f"/executions/{name}?job={JOB}", headers=as_user(BILLING)).text
        assert "<span data-waiting" in page and ">2 WAITING</span>" in page and "1 running or not started" in page
    status = pool_status(control, control.jobs(), {POOL: 1})
    # by the step's name as written (close_tenant, its key, was shown: issue 65 item 8)
    assert status.lines == [f"  {POOL}: 1/1 held by {JOB}/close-tenant"]
    [run] = status.waiting[JOB]
    assert run["execution"] == name and run["items"] == {"close-all": {"waiting": 2, "total": 3}}
    assert run["since"] == p.waiting_since
    release.write_text("go")
    ex = aws.wait(arn, timeout=600)  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    assert ex.status == "SUCCEEDED"
    outcomes = item_outcomes(ddb, table, name)
    assert [(o.index, o.status, o.attempts) for o in outcomes] == [(i, "SUCCEEDED", 1) for i in range(3)]
    [p] = control.map_progress(name)
    assert (p.succeeded, p.failed, p.waiting, p.running) == (3, 0, 0, 0)
    assert log.read_text().count("start") == 3 and holders(aws, POOL) == ()


def test_a_waiting_plain_step_is_waiting_in_the_execution_api(waits: tuple[LocalAWS, ControlPlane, Path],
                                                               tmp_path: Path) -> None:
    """The API's execution model: a step's attempt waiting for its pool's slot has outcome
    ``waiting`` (an enum value of the OpenAPI document) and ``waiting_since``; the execution's
    ``waiting`` is true while every open attempt waits (the portal's word WAITING)."""
    from portal_kit import READER, as_user

    aws, control, root = waits
    log, release = tmp_path / "held.log", tmp_path / "release"
    holder = aws.start(JOB, execution_input.manual("ops@example.com", overrides={
        "count": 1, "log": str(log), "release": str(release)}))
    until("the item holds the slot", lambda: log.exists() and "start" in log.read_text())
    arn = aws.start(PLAIN, execution_input.manual("ops@example.com", overrides={"log": str(log)}))
    name = arn.rsplit(":", 1)[1]
    with _client(control, root) as client:
        schema = client.get("/api/openapi.json", headers=as_user(READER)).json()
        outcome = schema["components"]["schemas"]["StepAttempt"]["properties"]["outcome"]
        assert "waiting" in outcome["enum"] and "running" in outcome["enum"]

        def shown() -> dict:  # type: ignore[type-arg]
            return client.get(f"/api/executions/{name}?job={PLAIN}", headers=as_user(READER)).json()

        until("the step is seen waiting", lambda: any(s["outcome"] == "waiting" for s in shown().get("steps", [])))
        x = shown()
        [row] = [s for s in x["steps"] if s["outcome"] == "waiting"]
        assert row["step"] == "load" and row["waiting_since"] and row["started_at"] is None
        assert (x["status"], x["waiting"]) == ("RUNNING", True)
        release.write_text("go")
        for a in (holder, arn):
            assert aws.wait(a, timeout=600).status == "SUCCEEDED"
            aws.wait_reconciled(a, timeout=600)
        done = client.get(f"/api/executions/{name}", headers=as_user(READER)).json()
        assert [(s["step"], s["outcome"]) for s in done["steps"]] == [("load", "succeeded")]
        assert (done["status"], done["waiting"]) == ("SUCCEEDED", False)
    assert json.loads(json.dumps(done))["steps"][0]["waiting_since"]  # kept on the record once it ran


def test_plan_counts_a_waiting_items_record_writes_and_tries(repo: Repo) -> None:
    """`jobplane plan`: a pooled map's line adds what an item that waits costs (its two record
    writes, 3 transitions per try) and how often it tries (compiler/map_cost.py)."""
    from jobplane.contract import pools as pc

    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text() + f'\n[pools.{POOL}]\nsize = 2\nteams = ["*"]\n')
    assert repo.cli("compile").exit_code == 0
    repo.write(f"jobs/billing/{JOB}.jsonnet", MAPPED)
    result = repo.cli("plan")
    assert result.exit_code == 0, result.output
    assert ("map close-all: close-tenant once per item that tenants lists, in a Distributed Map; 7 state transitions "
            f"per item, $0.18 per 1,000 items (docs/state-machine.md \"A map\"); an item that waits for pool {POOL}: "
            f"2 more (its record WAITING, then RUNNING) and 3 per try, {pc.poll_schedule()} (docs/pools.md)"
            ) in result.stdout
    assert pc.poll_schedule() == "a try every 1-8 s, 20-40 s after about 5 min"


def test_a_kill_9_of_the_holding_items_runner_lets_the_waiters_in_and_leaves_every_record_consistent(
        waits: tuple[LocalAWS, ControlPlane, Path], tmp_path: Path) -> None:
    """Pool of 1, three items: the holder's runner is killed (-9) while two wait. Its attempt
    fails and gives its slot back (the release on the Task's failure), the waiters take it in
    turn; afterwards one record FAILED, two SUCCEEDED, none WAITING or RUNNING, the pool empty."""
    import os
    import signal

    aws, control, _ = waits
    log, release = tmp_path / "held.log", tmp_path / "release"
    arn = aws.start(JOB, execution_input.manual("ops@example.com", overrides={
        "count": 3, "log": str(log), "release": str(release)}))
    name = arn.rsplit(":", 1)[1]
    ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
    until("two items WAITING", lambda: sorted(o.status for o in item_outcomes(ddb, table, name)) == ["WAITING"] * 2)
    until("the holder's step started", lambda: log.exists() and "start" in log.read_text())
    [first] = [line.split() for line in log.read_text().splitlines() if line.startswith("start")]
    os.kill(int(first[1]), signal.SIGKILL)
    until("a waiter holds the slot", lambda: log.read_text().count("start") == 2)
    release.write_text("go")
    ex = aws.wait(arn, timeout=600)  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    assert ex.status == "FAILED"  # the map tolerates no failure
    outcomes = item_outcomes(ddb, table, name)
    assert sorted(o.status for o in outcomes) == ["FAILED", "SUCCEEDED", "SUCCEEDED"]
    assert all(o.ended and o.attempts == 1 for o in outcomes)
    [p] = control.map_progress(name)
    assert (p.total, p.succeeded, p.failed, p.waiting, p.running) == (3, 2, 1, 0, 0)
    assert log.read_text().count("start") == 3 and holders(aws, POOL) == ()
    assert control.execution(name, JOB).status == "FAILED"


def test_a_history_read_before_its_end_event_still_ends_a_waiting_attempt() -> None:
    """The reconciler's timeline of a run that timed out (or was stopped) while a step waited:
    under the local engine the status listeners can run before moto appends ExecutionTimedOut
    (from the worker thread, once its Wait wakes), so the status DescribeExecution answered adds
    the end the history read lacks (platform/timeline.py ``with_end``); one that has it is kept."""
    from datetime import datetime, timezone

    from jobplane.platform.timeline import timeline, with_end

    t0, t1 = datetime(2026, 12, 3, 2, 0, tzinfo=timezone.utc), datetime(2026, 12, 3, 2, 0, 5, tzinfo=timezone.utc)
    events = [{"id": 1, "type": "ExecutionStarted", "timestamp": t0},
              {"id": 2, "type": "PassStateEntered", "timestamp": t0, "stateEnteredEventDetails": {"name": "load: pool"}},
              {"id": 3, "type": "WaitStateEntered", "timestamp": t0, "stateEnteredEventDetails": {"name": "load: pool wait"}}]
    assert [a.outcome for a in timeline(events)] == ["waiting"]
    [row] = timeline(with_end(events, "TIMED_OUT", t1))
    assert (row.outcome, row.started_at, row.finished_at) == ("timed out", None, "2026-12-03T02:00:05.000Z")
    assert [a.outcome for a in timeline(with_end(events, "ABORTED", t1))] == ["stopped"]
    ended = [*events, {"id": 4, "type": "ExecutionTimedOut", "timestamp": t0}]
    assert with_end(ended, "TIMED_OUT", t1) is ended and with_end(events, "SUCCEEDED", t1) is events
