"""The typed records of a run (contract/records.py, contract/execution_input.py): read from the
items the compiled state machines really write, written back the same, described once for the
API, and never raised on by what a hostile starter sends."""

from __future__ import annotations

import dataclasses
import inspect
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import datamodel as dm
from jobplane.contract import execution_input
from jobplane.contract.attribute_values import from_attribute, plain, to_attribute
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.items import Ref
from jobplane.contract.record_schema import json_schema
from jobplane.contract.attempts import Attempt
from jobplane.contract.records import AuditEntry, ExecutionRecord, JobState
from jobplane.platform.local.engine import LocalAWS

HERE = Path(__file__).resolve().parent
BEHAVE = "sample_apps.functions:behave"
JSON_ATTRIBUTES = ("input", "steps", "timeline")  # JSON text: compared as the values they hold


@pytest.fixture(scope="module")
def aws():
    with LocalAWS(env={"PYTHONPATH": str(HERE)}) as local:
        yield local


def _deploy(aws: LocalAWS, policy: str = "ALWAYS_RUN") -> str:
    name = f"job-{uuid.uuid4().hex[:10]}"
    job = Job.from_definition({"name": name, "team": "billing", "timezone": "UTC", "policy": policy,
                              "params": {"mode": "ok"},
                              "steps": [{"name": "prepare", "python": BEHAVE, "retry": {"attempts": 2, "interval": 1}},
                                        {"name": "load", "python": BEHAVE}]})
    aws.deploy(name, asl.compile_job(job, aws.prefix))
    return name


def _items(aws: LocalAWS, job: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    ddb = aws.client("dynamodb")
    state = ddb.get_item(TableName=aws.prefix, Key={"pk": {"S": dm.job_partition(job)}, "sk": {"S": dm.STATE_SK}},
                         ConsistentRead=True)["Item"]
    records = ddb.query(TableName=aws.prefix, IndexName=dm.GSI_BY_OWNER, KeyConditionExpression="gsi1pk = :j",
                        ExpressionAttributeValues={":j": {"S": dm.job_partition(job)}})["Items"]
    return state, records


def _comparable(item: dict[str, Any]) -> dict[str, Any]:
    out = plain(item)
    for name in JSON_ATTRIBUTES:
        if name in out:
            out[name] = json.loads(out[name])
    return out


def test_the_items_the_state_machines_write_read_into_records_and_back(aws: LocalAWS) -> None:
    """Every kind of execution record (a success, a failure after retries, a console start, a
    skip, a run the reconciler recorded) and the job state, as the platform really writes them."""
    job = _deploy(aws, "SKIP_IF_RUNNING")
    ran = []
    for sent in (execution_input.scheduled("2027-01-04T02:00:00Z", {"mode": "ok"}),
                 execution_input.manual("ops@example.com", overrides={"mode": "fail"}),
                 {"params": {"mode": "ok"}}):  # a console start: fields missing
        ran.append(aws.start(job, sent))  # one at a time: the policy would skip one that overlaps
        aws.wait(ran[-1], timeout=600)  # a bound that catches a hang
        aws.wait_reconciled(ran[-1], timeout=600)
    sleeper = aws.start(job, execution_input.manual("ops@example.com", overrides={"mode": "sleep", "seconds": 300}))
    deadline = time.monotonic() + 600  # a hang guard only
    while not JobState.from_item(_items(aws, job)[0]).running:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    skipped = aws.start(job, execution_input.scheduled("2027-01-05T02:00:00Z", {"mode": "ok"}))
    aws.wait(skipped, timeout=600)
    aws.client("stepfunctions").stop_execution(executionArn=sleeper, error="Ops.Stop", cause="test")
    for arn in (skipped, sleeper):
        aws.wait(arn, timeout=600)
        aws.wait_reconciled(arn, timeout=600)
    state_item, record_items = _items(aws, job)
    assert len(record_items) == 5

    state = JobState.from_item(state_item)
    assert state.job == job and state.last_status == "ABORTED" and not state.running
    assert state.claims_schedule == 1 and state.fired_schedule == "2027-01-04T02:00:00Z"
    written = {k: v for k, v in state_item.items() if k in state.to_item()}
    assert state.to_item() == written  # every attribute the record holds, as the claim wrote it
    assert JobState.from_item(state.to_item()) == state

    by_name = {r.execution: r for r in map(ExecutionRecord.from_item, record_items)}
    scheduled, failed, console, skip, stopped = (by_name[arn.rsplit(":", 1)[1]] for arn in ran + [skipped, sleeper])
    assert failed.status == "FAILED" and failed.failed_step == "prepare" and failed.transitions
    assert [(a.step, a.attempt, a.outcome) for a in failed.timeline] == [("prepare", 1, "failed"), ("prepare", 2, "failed")]
    assert [a.exit_code for a in failed.attempts("prepare")] == [75, 75] and all(a.task_id for a in failed.timeline)
    assert [(a.step, a.outcome) for a in scheduled.timeline] == [("prepare", "succeeded"), ("load", "succeeded")]
    assert (skip.status, skip.skip_reason, skip.steps) == ("SKIPPED", "RUNNING", None)
    assert stopped.status == "ABORTED" and stopped.steps == {}  # written by the reconciler
    for record, item in zip(map(ExecutionRecord.from_item, record_items), record_items):
        assert _comparable(record.to_item()) == _comparable(item), record.execution
        assert ExecutionRecord.from_item(record.to_item()) == record

    # what was sent is kept as sent; the input is read with the state machine's defaults
    assert console.given == {"params": {"mode": "ok"}}
    assert console.input == ExecutionInput(trigger="manual", scheduled_time=console.started_at or "",
                                           requested_by=execution_input.UNATTRIBUTED, params={"mode": "ok"})
    assert scheduled.input == execution_input.scheduled("2027-01-04T02:00:00Z", {"mode": "ok"})


def test_a_missed_fire_s_record_joins_the_missed_feed() -> None:
    """The fire ledger's MISSED record (platform/missed.py writes it with to_item) is in the
    job's history and the missed feed, never the failures feed, and has no trigger (a backfill
    still sees its fire as uncovered)."""
    record = ExecutionRecord(execution="missed-j-20270101T000000Z", job="j", team="t", status="MISSED",
                             scheduled_time="2027-01-01T00:00:00Z", started_at="2027-01-01T00:00:00.000Z",
                             finished_at="2027-01-01T00:20:00.000Z", given={"trigger": "schedule"}, transitions=0,
                             expires_at=1)
    item = plain(record.to_item())
    assert (item["gsi1pk"], item["gsi1sk"]) == ("JOB#j", "2027-01-01T00:00:00.000Z")
    assert (item["gsi2pk"], item["gsi2sk"]) == (dm.MISSED_PARTITION, "2027-01-01T00:20:00.000Z")
    assert "trigger" not in item and "steps" not in item and item["timeline"] == "[]"
    assert ExecutionRecord.from_item(record.to_item()) == record


@pytest.mark.parametrize("sent", [
    None, [], "x", 7, {"trigger": 5, "scheduled_time": ["a"], "requested_by": {"x": 1}, "params": "no",
                       "resume_from": 3, "rerun_of": False, "resume": "x"},
])
def test_a_hostile_input_is_read_as_sent_never_raised_on(sent: Any) -> None:
    read = ExecutionInput.read(sent, "2027-01-01T00:00:00.000Z", {"mode": "ok"})
    assert all(isinstance(getattr(read, f), str) for f in ("trigger", "scheduled_time", "requested_by"))
    assert isinstance(read.params, dict) and read.resume_from is None and read.rerun_of is None
    if isinstance(sent, dict):  # a present value of the wrong type is shown as its JSON text
        assert (read.trigger, read.scheduled_time, read.requested_by, read.params) == ("5", '["a"]', '{"x": 1}', {})
    else:  # nothing usable: the defaults the compiled Start: defaults state gives
        assert read == execution_input.defaults("2027-01-01T00:00:00.000Z", {"mode": "ok"})


def test_every_starter_s_input_reads_back_as_itself() -> None:
    from datetime import datetime, timezone

    now = datetime(2027, 1, 1, tzinfo=timezone.utc)
    for sent in (execution_input.scheduled(now, {"a": 1}), execution_input.manual("me", {"a": 1}, {"b": [2]}, now),
                 execution_input.rerun("me", "run-1", {"a": 1}, "load", now),
                 execution_input.backfill("me", now, {"a": 1}, "bf-1")):
        assert ExecutionInput.read(json.loads(json.dumps(sent.to_json())), None) == sent


def test_the_asl_renderer_takes_exactly_the_input_s_fields() -> None:
    """One renderer for the input: its keywords are the record's fields, so a field added to
    ExecutionInput cannot be left out of what the state machines build."""
    keywords = [p for p in inspect.signature(ExecutionInput.asl).parameters if p != "refs_last"]
    assert keywords == [f.name for f in dataclasses.fields(ExecutionInput)]
    rendered = ExecutionInput.asl(trigger="manual", scheduled_time=Ref("$$.Execution.StartTime"), requested_by="x",
                                  params=Ref("$.p"), upstream=None)
    assert rendered == {"trigger": "manual", "scheduled_time.$": "$$.Execution.StartTime", "requested_by": "x",
                        "params.$": "$.p", "resume_from": None, "rerun_of": None}
    assert list(ExecutionInput.asl(trigger="manual", scheduled_time=Ref("$.t"), requested_by="x", params=Ref("$.p"),
                                   refs_last=True)) == ["trigger", "requested_by", "resume_from", "rerun_of",
                                                        "scheduled_time.$", "params.$"]
    with pytest.raises(KeyError, match="no field 'trigr'"):
        ExecutionInput.ref("trigr")


def test_attribute_values_round_trip() -> None:
    for value in ("x", 7, 2.5, True, None, {"a", "b"}, [1, "x", None], {"m": {"n": [True]}}):
        assert from_attribute(to_attribute(value)) == value
    with pytest.raises(ValueError):
        from_attribute({"S": "x", "N": "1"})


def _types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a schema property allows (pydantic and ours write the same types with
    different titles and defaults)."""
    if "anyOf" in prop:
        return set().union(*(_types(p) for p in prop["anyOf"]))
    if "$ref" in prop or "allOf" in prop:
        return {"object"}
    return {prop.get("type", "any")}


@pytest.mark.parametrize("model, record, fields", [
    ("StepAttempt", Attempt, None), ("ExecutionSummary", ExecutionRecord, "SUMMARY_FIELDS"),
    ("JobOut", JobState, "JOB_STATE_FIELDS"), ("AuditOut", AuditEntry, "AUDIT_FIELDS"),
])
def test_the_api_models_are_the_records_fields(model: str, record: type, fields: str | None) -> None:
    from jobplane.portal import api

    ours = json_schema(record, getattr(api, fields) if fields else None)
    theirs = getattr(api, model).model_json_schema()["properties"]
    for name, prop in ours["properties"].items():
        assert _types(theirs[name]) == _types(prop), name
        assert theirs[name].get("description") == prop.get("description"), name
    assert set(ours["properties"]) <= set(theirs)
