"""jp.map (issue 52, Fan-out): the compiled Distributed Map, its checks and IAM, and runs on the
local AWS with the runner as a real subprocess: every item's record, tolerated failures, a
re-run of only the failed items (audited), an items step that returns no list, and a kill -9 of
an item's runner."""

from __future__ import annotations

import contextlib
import json
import re
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Repo, served
from operator_cli import operator_cli
from jobplane.compiler import asl, terraform
from jobplane.compiler.fields import Invalid
from jobplane.compiler.model import Job
from jobplane.contract import audit, execution_input, map_items
from jobplane.contract.config import load_config
from jobplane.contract import states as sn
from jobplane.platform.control import ControlPlane
from jobplane.platform.local.engine import LocalAWS
from jobplane.contract.notifications import NotificationMessage
from jobplane.platform.map_alert import with_failed_items
from jobplane.platform.map_records import list_key, progress

FANOUT = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'month-end-fanout',
  team: 'billing',
  params: { count: 6, fail_once: [], fail_always: [], fanout_bad: null, hold: null, hold_dir: null, stream: false },
  steps: [
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.fanout:close_month',
                          opts={ retry: { attempts: 2, interval: 1 } }),
           opts={ max_concurrency: 3, tolerated_failures: 1 }),
    jp.python('report', 'sample_apps.fanout:list_tenants'),
  ],
}
"""
JOB = "month-end-fanout"


def definition(**map_fields: Any) -> dict[str, Any]:
    spec = {"items": {"name": "tenants", "python": "sample_apps.fanout:list_tenants"},
            "each": {"name": "close-tenant", "python": "sample_apps.fanout:close_month"}} | map_fields
    return {"name": "fan", "team": "billing", "timezone": "UTC", "steps": [{"name": "close-all", "map": spec}]}


# -- compiled ----------------------------------------------------------------------------------
def test_the_map_compiles_to_a_distributed_map_over_the_items_steps_list() -> None:
    job = Job.from_definition(definition(max_concurrency=50, tolerated_failures="0.5%"))
    states = asl.build_definition(job, "jp")["States"]
    m = states["close-all"]
    assert m["Type"] == "Map" and m["MaxConcurrency"] == 50 and m["ToleratedFailurePercentage"] == 0.5
    assert m["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    assert m["ItemReader"]["Resource"] == "arn:aws:states:::s3:getObject"
    assert m["ItemReader"]["ReaderConfig"] == {"InputType": "JSONL"}  # the runner streams the list as JSON Lines
    # the list's key is drawn first, with a UUID (issue 64 item 2), and read by the ItemReader
    assert m["ItemReader"]["Parameters"]["Key.$"] == "$.items_key.key"
    draw = states["close-all: items key"]
    assert draw["Type"] == "Pass" and draw["ResultPath"] == "$.items_key" and draw["Next"] == "tenants"
    assert draw["Parameters"] == {"key.$": "States.Format('map-items/fan/{}/close-all/{}.jsonl', $$.Execution.Name, "
                                           "States.UUID())"}
    # the items step runs next and, once it succeeded, goes on to the Map; it is told where to write its list
    assert states["tenants"]["Type"] == "Task" and states["tenants"]["Next"] == "close-all"
    env = {e["Name"]: e for e in states["tenants"]["Parameters"]["Overrides"]["ContainerOverrides"][0]["Environment"]}
    assert env[map_items.ENV_ITEMS_URI]["Value.$"] == "States.Format('s3://<<jobplane:items_bucket>>/{}', $.items_key.key)"
    # each item: its item and the run's execution name (the child's own $$.Execution is the child's)
    child = m["ItemProcessor"]["States"]
    each_env = {e["Name"]: e for e in child["close-tenant"]["Parameters"]["Overrides"]["ContainerOverrides"][0]["Environment"]}
    assert each_env[map_items.ENV_ITEM]["Value.$"] == "States.JsonToString($.item)"
    assert each_env["JOBPLANE_EXECUTION_ID"]["Value.$"] == "$.execution"
    assert m["ItemSelector"]["execution.$"] == "$$.Execution.Name"
    # every item ends in its record; a failure also fails the child, which the Map counts
    assert child["close-tenant: done"]["Resource"].endswith("dynamodb:putItem") and child["close-tenant: done"]["End"]
    # the item's own end, named for the map: a state machine's state names are one namespace
    # (the run's own "Fail" is the parent's), which tfcheck's ASL lint holds
    item_fail = sn.item_failed("close-all")
    assert child["close-tenant: failed"]["Next"] == item_fail and child[item_fail]["Error"] == "Job.ItemFailed"
    assert sn.FAIL not in child
    assert m["Catch"][-1] == {"ErrorEquals": ["States.ALL"], "ResultPath": "$.run.error", "Next": "close-all: failed"}
    # S3 refusing the Map's own read is retried (no child started yet); refusing its export of the
    # children's results, which nothing reads, lets the map go on (issue 62: the storm's spurious FAILED run)
    assert [r["ErrorEquals"] for r in m["Retry"]] == [["States.ItemReaderFailed"]] and m["Retry"][0]["MaxAttempts"] == 5
    assert m["Catch"][0]["ErrorEquals"] == ["States.ResultWriterFailed"] and m["Catch"][0]["Next"] == m["Next"]
    for name in [*states, *child]:
        sn.classify(name)  # every name reads back


def test_a_re_run_from_the_each_step_goes_to_the_map_and_from_the_map_to_its_items_step() -> None:
    job = Job.from_definition(definition())
    route = {c["StringEquals"]: c["Next"] for c in asl.build_definition(job, "jp")["States"]["Route"]["Choices"]
             if "StringEquals" in c}
    assert route == {"close-all": "close-all: items key", "tenants": "close-all: items key",
                     "close-tenant": "close-all: rerun items key"}
    rerun = asl.build_definition(job, "jp")["States"]["close-all: rerun items key"]
    assert rerun["Next"] == "close-all" and rerun["Parameters"] == {
        "key.$": "States.Format('map-reruns/fan/{}/close-all.jsonl', $$.Execution.Name)"}


@pytest.mark.parametrize(("fields", "message"), [
    ({"tolerated_failures": "lots"}, "neither a count of items"),
    ({"tolerated_failures": -1}, "neither a count of items"),
    ({"max_concurrency": 10_001}, "at most 10000"),
    ({"max_concurrency": 501}, "501 is above 500, the cap on items running at once"),
    ({"max_concurrency": 10_001, "max_concurrency_override": True}, "at most 10000"),
    ({"items": {"name": "tenants", "shell": ["ls"]}}, "must be a python step"),
    ({"each": {"name": "close-tenant", "lambda": "a.b:c"}}, "runs on ECS"),
])
def test_what_a_map_may_not_be(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(Invalid) as e:
        Job.from_definition(definition(**fields))
    assert message in str(e.value)


def test_a_map_wider_than_the_cap_needs_its_override_named_in_the_definition(repo: Repo) -> None:
    """Issue 62 finding 8: every item is a Fargate task launched from the account's shared rate
    (20 a second): above 500 at once is refused at validate, naming the file, job and field,
    unless the map says max_concurrency_override: true; the schema documents both."""
    text = """local jp = import 'jobplane.libsonnet';
{ name: 'wide', team: 'billing', steps: [
  jp.map('all', items=jp.python('list', 'a.b:c'), each=jp.python('one', 'a.b:d'), opts={ max_concurrency: 600%s }),
] }
"""
    repo.write("jobs/billing/wide.jsonnet", text % "")
    refused = repo.cli("validate")
    assert refused.exit_code != 0
    assert ("jobs/billing/wide.jsonnet: job 'wide': steps[0].map.max_concurrency: 600 is above 500, the cap on "
            "items running at once") in refused.output and "max_concurrency_override: true" in refused.output
    repo.write("jobs/billing/wide.jsonnet", text % ", max_concurrency_override: true")
    allowed = repo.cli("validate")
    assert allowed.exit_code == 0, allowed.output
    job = Job.from_definition(definition(max_concurrency=600, max_concurrency_override=True))
    assert asl.build_definition(job, "jp")["States"]["close-all"]["MaxConcurrency"] == 600


def test_a_map_inside_a_parallel_group_is_refused() -> None:
    with pytest.raises(Invalid, match=r"parallel\[1\] is a map \('m'\): a map cannot sit in a jp.parallel group"):
        Job.from_definition({"name": "fan", "team": "billing", "steps": [{"name": "g", "parallel": [
            {"name": "one", "python": "a.b:c"}, {"name": "m", "map": definition()["steps"][0]["map"]}]}]})


def test_the_state_machine_role_gets_exactly_what_the_map_calls(tmp_path: Path) -> None:
    config = load_config(Path(__file__).resolve().parents[1])
    job = Job.from_definition(definition())
    module = terraform.job_module(job, asl.compile_job(job, "jp"), config)
    statements = {s["sid"]: s for s in module["data"]["aws_iam_policy_document"]["fan_sfn"]["statement"]}
    assert statements["ReadMapItems"]["actions"] == ["s3:GetObject"]
    assert statements["ReadMapItems"]["resources"] == [
        "arn:${data.aws_partition.current.partition}:s3:::${local.platform.catalog_bucket}/map-items/fan/*",
        "arn:${data.aws_partition.current.partition}:s3:::${local.platform.catalog_bucket}/map-reruns/fan/*"]
    assert statements["StartMapChildren"]["actions"] == ["states:StartExecution"]
    assert statements["StartMapChildren"]["resources"][0].endswith(":stateMachine:jobplane-fan")
    assert statements["WatchMapChildren"]["actions"] == ["states:DescribeExecution", "states:StopExecution"]
    assert statements["WatchMapChildren"]["resources"][0].endswith(":execution:jobplane-fan/*")
    assert statements["DecryptMapItems"]["actions"] == ["kms:Decrypt"]
    # a job without a map gets none of them
    plain = Job.from_definition({"name": "plain", "team": "billing", "steps": [{"name": "a", "python": "a.b:c"}]})
    other = terraform.job_module(plain, asl.compile_job(plain, "jp"), config)
    sids = {s["sid"] for s in other["data"]["aws_iam_policy_document"]["plain_sfn"]["statement"]}
    assert not sids & {"ReadMapItems", "DecryptMapItems", "StartMapChildren", "WatchMapChildren"}


def test_the_map_exports_its_results_to_the_platforms_bucket_and_may_write_only_there() -> None:
    """Issue 62 finding 3: the Map's collected results go to S3 (ResultWriter, COMPACT JSON
    Lines, under the job's prefix), never into the state; the role may write there only."""
    config = load_config(Path(__file__).resolve().parents[1])
    job = Job.from_definition(definition())
    m = asl.build_definition(job, "jp")["States"]["close-all"]
    assert m["ResultWriter"] == {"Resource": "arn:aws:states:::s3:putObject",
                                 "Parameters": {"Bucket": "<<jobplane:items_bucket>>", "Prefix": "map-results/fan"},
                                 "WriterConfig": {"Transformation": "COMPACT", "OutputType": "JSONL"}}
    assert m["ResultPath"] is None  # the manifest's reference is not kept either: nothing reads it
    module = terraform.job_module(job, asl.compile_job(job, "jp"), config)
    statements = {s["sid"]: s for s in module["data"]["aws_iam_policy_document"]["fan_sfn"]["statement"]}
    assert sorted(statements["WriteMapResults"]["actions"]) == ["s3:AbortMultipartUpload", "s3:GetObject",
                                                                "s3:ListMultipartUploadParts", "s3:PutObject"]
    [resource] = statements["WriteMapResults"]["resources"]
    assert resource.endswith(":s3:::${local.platform.catalog_bucket}/map-results/fan/*")
    assert statements["EncryptMapResults"]["actions"] == ["kms:GenerateDataKey"]


def test_the_runner_task_role_may_write_map_lists_only() -> None:
    runner_tf = (Path(__file__).resolve().parents[1] / "terraform/platform/runner.tf").read_text()
    block = runner_tf[runner_tf.index('data "aws_iam_policy_document" "runner_map_items"'):]
    block = block[:block.index('resource "aws_iam_role_policy" "runner_task_map_items"')]
    assert '"s3:PutObject"' in block and '/map-items/*' in block and '"kms:GenerateDataKey"' in block
    assert block.count("actions") == 2


def test_an_items_list_is_checked_against_the_limits() -> None:
    assert map_items.problems(["a", {"b": 1}]) == []
    assert "must return a list" in map_items.problems({"a": 1})[0]
    assert "bytes of JSON" in map_items.problems(["x" * (map_items.MAX_ITEM_BYTES + 1)])[0]
    assert "at most" in map_items.problems([0] * (map_items.MAX_ITEMS + 1))[0]
    assert "not JSON" in map_items.problems([float("nan")])[0]  # JSON has no NaN: the Map could not read the line
    assert map_items.encode(["a", {"b": 1}], [4, 9]) == b'{"i":4,"v":"a"}\n{"i":9,"v":{"b":1}}\n'
    assert map_items.decode(map_items.encode(["a", "b"], [4, 9])) == [(4, "a"), (9, "b")]


def test_the_runner_takes_a_generators_items_one_at_a_time(tmp_path: Path) -> None:
    import io

    from jobplane.runner import items_out

    taken: list[int] = []

    def tenants() -> Iterator[str]:
        for i in range(5):
            taken.append(i)
            yield f"t-{i}"

    out = io.BytesIO()
    assert items_out.spool(tenants(), out) == 5 and taken == [0, 1, 2, 3, 4]
    assert map_items.decode(out.getvalue()) == [(i, f"t-{i}") for i in range(5)]
    # past the limit, a bad item, or no list: refused as soon as seen, the generator not run further
    taken.clear()
    with pytest.raises(items_out.ItemsError, match="more than 3 items"):
        items_out.spool(tenants(), io.BytesIO(), limit=3)
    assert taken == [0, 1, 2, 3]
    with pytest.raises(items_out.ItemsError, match="item 1 is 1027 bytes"):
        items_out.spool(iter(["ok", "x" * 1025, "never"]), io.BytesIO())
    for value in ({"a": 1}, "abc", {1, 2}, 7):
        with pytest.raises(items_out.ItemsError, match="must return a list of items or yield them"):
            items_out.spool(value, io.BytesIO())


# -- on the local AWS --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane]]:
    root = tmp_path_factory.mktemp("repo")
    repo = Repo(root)
    repo.write("jobs/billing/month-end-fanout.jsonnet", FANOUT)
    with served(repo) as (aws, control):
        yield aws, control


def _run(aws: LocalAWS, **params: Any) -> tuple[str, Any]:
    arn = aws.start(JOB, execution_input.manual("test", overrides=params))
    ex = aws.wait(arn, timeout=600)  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    return arn.rsplit(":", 1)[1], ex


def test_every_item_runs_and_has_its_record(fan: tuple[LocalAWS, ControlPlane]) -> None:
    aws, control = fan
    name, ex = _run(aws, count=6, fail_once=["t-0001"], fail_always=["t-0003"])
    assert ex.status == "SUCCEEDED", ex  # one failure is tolerated
    outcomes = control.items(name)
    assert [o.index for o in outcomes] == list(range(6))
    assert [o.item for o in outcomes] == [f"t-{i:04d}" for i in range(6)]
    by_item = {o.item: o for o in outcomes}
    assert by_item["t-0003"].status == "FAILED" and by_item["t-0003"].attempts == 2
    # the each step's own line, read from the item's task log, as a top-level step's failure
    # shows it, with the container's exit code (issue 65 item 8)
    assert by_item["t-0003"].error == "RuntimeError: ledger refused tenant t-0003 (exit code 75)"
    assert by_item["t-0001"].status == "SUCCEEDED" and by_item["t-0001"].retried
    assert all(o.status == "SUCCEEDED" and not o.retried for i, o in by_item.items() if i not in ("t-0001", "t-0003"))
    [p] = control.map_progress(name)
    assert (p.total, p.succeeded, p.failed, p.running, p.retried) == (6, 5, 1, 0, 2)
    assert "failed: #3 t-0003" in p.summary()
    assert p.error_lines() == ["#3 t-0003: RuntimeError: ledger refused tenant t-0003 (exit code 75)"]
    # each item's child execution: 4 transitions, 4 more per retry (t-0001 and t-0003 retried
    # once): what `jobplane plan` prices (contract/map_transitions.py)
    assert p.transitions == 6 * 4 + 2 * 4
    assert control.execution(name, JOB).status == "SUCCEEDED"


def test_past_the_tolerance_the_map_fails_and_a_rerun_runs_only_the_failed_items(
        fan: tuple[LocalAWS, ControlPlane]) -> None:
    aws, control = fan
    name, ex = _run(aws, count=6, fail_always=["t-0002", "t-0004"])
    assert ex.status == "FAILED"
    record = control.execution(name, JOB)
    assert record.status == "FAILED" and record.failed_step == "close-all"
    [p] = control.map_progress(name)
    assert (p.succeeded, p.failed) == (4, 2) and [o.item for o in p.failed_items] == ["t-0002", "t-0004"]
    # the failure alert counts the failed items and names them
    alert = NotificationMessage.model_validate({
        "version": 1, "event": "FAILED", "job": JOB, "team": "billing", "execution": name, "execution_arn": ex.arn,
        "outcome": {"status": "FAILED", "step": "close-all"}, "channels": []})
    told = with_failed_items(alert, aws.client("dynamodb"), aws.resources["table_name"], control.logs)
    assert told.error == ("2 items failed in map close-all: 4 succeeded, 2 failed (failed: #2 t-0002, #4 t-0004)\n"
                          "  #2 t-0002: RuntimeError: ledger refused tenant t-0002 (exit code 75)\n"
                          "  #4 t-0004: RuntimeError: ledger refused tenant t-0004 (exit code 75)")
    # without a log reader (or a log that cannot be read) the records' own words stand
    bare = with_failed_items(alert, aws.client("dynamodb"), aws.resources["table_name"])
    assert bare.error is not None and bare.error.splitlines()[1].startswith("  #2 t-0002: States.TaskFailed: exit code 75")
    again = control.rerun_failed_items(name, "ops@example.com", reason="ledger fixed", params={"fail_always": []})
    arn = aws.state_machines[JOB].replace(":stateMachine:", ":execution:") + f":{again}"
    second = aws.wait(arn, timeout=600)
    aws.wait_reconciled(arn, timeout=600)
    assert second.status == "SUCCEEDED"
    assert "tenants" not in second.states_entered and "report" in second.states_entered  # the list was not made again
    rerun = control.items(again)
    assert [(o.index, o.item, o.status) for o in rerun] == [(2, "t-0002", "SUCCEEDED"), (4, "t-0004", "SUCCEEDED")]
    entries = [e for e in control.audit() if e.execution == again]
    assert len(entries) == 1 and entries[0].action == audit.RerunItems.ACTION and entries[0].reason == "ledger fixed"
    assert json.loads(entries[0].details) == {"rerun_of": name, "map": "close-all", "items": 2,
                                              "first": ["t-0002", "t-0004"]}
    assert entries[0].actor == "ops@example.com" and entries[0].job == JOB
    # nothing left to re-run of a run whose items all succeeded
    from jobplane.platform.control import Conflict

    with pytest.raises(Conflict, match="no failed map items"):
        control.rerun_failed_items(again, "ops@example.com")


def test_a_generators_items_are_streamed_to_the_map_and_re_run_from_json_lines(
        fan: tuple[LocalAWS, ControlPlane]) -> None:
    aws, control = fan
    name, ex = _run(aws, count=5, stream=True, fail_always=["t-0001", "t-0004"])
    assert ex.status == "FAILED"  # two failures, one tolerated
    # the list the runner wrote: JSON Lines, its count in the object's metadata
    s3 = aws.client("s3")
    key = list_key(s3, aws.resources["items_bucket"], JOB, name, "close-all")
    assert key is not None and re.fullmatch(re.escape(map_items.items_prefix(JOB, name, "close-all")) + r"[0-9a-f-]{36}\.jsonl", key)
    obj = s3.get_object(Bucket=aws.resources["items_bucket"], Key=key)
    assert obj["Metadata"] == {"items": "5"} and obj["ContentType"] == map_items.CONTENT_TYPE
    assert map_items.decode(obj["Body"].read()) == [(i, f"t-{i:04d}") for i in range(5)]
    [p] = control.map_progress(name)
    assert (p.total, p.succeeded, p.failed) == (5, 3, 2)
    again = control.rerun_failed_items(name, "ops@example.com", params={"fail_always": []})
    relisted = s3.get_object(Bucket=aws.resources["items_bucket"], Key=map_items.rerun_key(JOB, again, "close-all"))
    assert map_items.decode(relisted["Body"].read()) == [(1, "t-0001"), (4, "t-0004")]
    arn = aws.state_machines[JOB].replace(":stateMachine:", ":execution:") + f":{again}"
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    assert [(o.index, o.item, o.status) for o in control.items(again)] == [
        (1, "t-0001", "SUCCEEDED"), (4, "t-0004", "SUCCEEDED")]
    [p] = control.map_progress(again)
    assert (p.total, p.succeeded, p.failed) == (2, 2, 0)


def test_an_items_step_that_returns_no_list_fails_at_once(fan: tuple[LocalAWS, ControlPlane]) -> None:
    aws, control = fan
    name, ex = _run(aws, fanout_bad="not-a-list")
    assert ex.status == "FAILED"
    record = control.execution(name, JOB)
    assert record.failed_step == "tenants"
    assert control.items(name) == []


def test_a_kill_9_of_an_items_runner_leaves_every_record_consistent(fan: tuple[LocalAWS, ControlPlane],
                                                                    tmp_path: Path) -> None:
    aws, control = fan
    arn = aws.start(JOB, execution_input.manual("test", overrides={"count": 4, "hold": "t-0002",
                                                                   "hold_dir": str(tmp_path)}))
    pid_file = tmp_path / "t-0002.pid"
    deadline = time.monotonic() + 300  # a hang guard
    while not pid_file.exists():
        assert time.monotonic() < deadline, "the held item never started"
        time.sleep(0.05)
    time.sleep(0.2)  # the pid is written; let the file be whole
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    ex = aws.wait(arn, timeout=600)
    aws.wait_reconciled(arn, timeout=600)
    name = arn.rsplit(":", 1)[1]
    assert ex.status == "SUCCEEDED"  # the killed attempt was the item's first; its retry succeeded
    outcomes = control.items(name)
    assert [o.index for o in outcomes] == [0, 1, 2, 3]  # one record per item, none twice, none missing
    killed = outcomes[2]
    assert killed.status == "SUCCEEDED" and killed.attempts == 2
    assert all(o.attempts == 1 for o in outcomes if o.index != 2)
    record = control.execution(name, JOB)
    assert record.status == "SUCCEEDED" and not record.running
    state = control.repo.job_state(JOB)
    assert state is not None and name not in (state.running or ())
    assert progress(outcomes, {"close-all": 4})[0].running == 0


def test_the_portal_shows_a_maps_progress_and_re_runs_its_failed_items(fan: tuple[LocalAWS, ControlPlane]) -> None:
    from dataclasses import replace

    from fastapi.testclient import TestClient

    from portal_kit import BILLING, READER, as_user
    from jobplane.portal.app import create_app
    from jobplane.portal.settings import AuthSettings, PortalSettings

    aws, control = fan
    name, ex = _run(aws, count=3, fail_always=["t-0001", "t-0002"])
    assert ex.status == "FAILED"
    config = load_config(fan_root(control))
    settings = PortalSettings.from_config(config, control.deployment, AuthSettings(
        mode="trusted-header", header="X-Forwarded-Email", proxy_secret="proxy-secret-for-tests-0123456789"),
        base_url="http://testserver")
    app = create_app(replace(settings, allowed_hosts=frozenset({"testserver"})), control)
    with TestClient(app) as client:
        maps = client.get(f"/api/executions/{name}/items", headers=as_user(READER)).json()
        assert [(m["map"], m["total"], m["succeeded"], m["failed"], m["running"]) for m in maps] == [
            ("close-all", 3, 1, 2, 0)]
        assert [i["item"] for i in maps[0]["failed_items"]] == ["t-0001", "t-0002"]
        # the items' child executions: 4 transitions each, 4 more per retry (both failed items
        # used their 2 attempts), beside the run's own in the cost line (issue 65 item 8)
        assert maps[0]["transitions"] == 3 * 4 + 2 * 4
        page = client.get(f"/executions/{name}?job={JOB}", headers=as_user(BILLING)).text
        assert "Map items" in page and 'data-item-index="1"' in page and 'data-item-index="2"' in page
        assert "<span data-item-transitions>20</span> in its map items' child executions" in page
        assert "RuntimeError: ledger refused tenant t-0001 (exit code 75)" in page
        assert 'id="rerun-failed-items-close-all"' in page and "Re-run the 2 failed items" in page
        refused = client.post(f"/api/executions/{name}/rerun-failed-items", json={}, headers=as_user(READER))
        assert refused.status_code == 403
        started = client.post(f"/api/executions/{name}/rerun-failed-items",
                              json={"params": {"fail_always": []}, "reason": "fixed"}, headers=as_user(BILLING))
        assert started.status_code == 202, started.text
    again = started.json()["execution"]
    arn = aws.state_machines[JOB].replace(":stateMachine:", ":execution:") + f":{again}"
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    assert [(o.index, o.status) for o in control.items(again)] == [(1, "SUCCEEDED"), (2, "SUCCEEDED")]
    [entry] = [e for e in control.audit() if e.execution == again]
    assert (entry.actor, entry.action) == (BILLING, "rerun_failed_items")


ITEM_BYTES, ITEMS = 1000, 300  # the children's results: ~300 KB together, past the 256 KiB a state may hold


def _big_results_map(aws: LocalAWS, execution: str, with_writer: bool) -> tuple[str, dict[str, Any]]:
    """The compiled jp.map's Map state as the only state of a machine, deployed: its reader,
    selector, tolerance and ResultWriter as compiled, each child answering its 1,000-byte item
    (a Pass) so that ITEMS children's results are more than 256 KiB together, which a map of
    ~90,000 items of ``{}`` reaches the same way; its list written where the reader reads it."""
    job = Job.from_definition(definition())
    m = dict(asl.build_definition(job, "jp")["States"]["close-all"])
    for field in ("Catch", "Next"):
        m.pop(field, None)
    m |= {"End": True, "ItemProcessor": {"ProcessorConfig": m["ItemProcessor"]["ProcessorConfig"], "StartAt": "p",
                                         "States": {"p": {"Type": "Pass", "OutputPath": "$.item", "End": True}}}}
    if not with_writer:
        del m["ResultWriter"]
    name = "fan-results" if with_writer else "fan-results-unwritten"
    aws.deploy(name, json.dumps({"StartAt": "close-all", "States": {"close-all": m}}))
    items = [f"{i:04d}" + "x" * (ITEM_BYTES - 4) for i in range(ITEMS)]
    key = map_items.items_key("fan", execution, "close-all", str(uuid.uuid4()))
    aws.client("s3").put_object(Bucket=aws.resources["items_bucket"], Key=key,
                                Body=map_items.encode(items, list(range(ITEMS))))
    # the run's input as the map's ``items key`` state leaves it (the reader reads the key there)
    return name, execution_input.manual("test").to_json() | {"items_key": {"key": key}}


def test_a_map_whose_results_pass_256_kib_succeeds_with_its_result_writer(fan: tuple[LocalAWS, ControlPlane]) -> None:
    """Issue 62 finding 3: a Distributed Map's collected results are its state's result, at most
    256 KiB (States.DataLimitExceeded). With the compiled ResultWriter the results go to S3 and
    the Map's output is the manifest's reference: the run succeeds, and S3 holds every child's
    result (more than 256 KiB of them) under the job's prefix, listed by the manifest."""
    aws, _ = fan
    s3 = aws.client("s3")
    bucket = aws.resources["items_bucket"]
    execution = "results-with-writer"
    name, run_input = _big_results_map(aws, execution, with_writer=True)
    ex = aws.wait(aws.start(name, run_input, name=execution), timeout=600)  # a hang guard
    assert (ex.status, ex.error) == ("SUCCEEDED", None), ex.cause
    manifests = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="map-results/fan/")["Contents"]
                 if o["Key"].endswith("/manifest.json")]
    [manifest_key] = manifests
    manifest = json.loads(s3.get_object(Bucket=bucket, Key=manifest_key)["Body"].read())
    [written] = manifest["ResultFiles"]["SUCCEEDED"]
    assert manifest["ResultFiles"]["FAILED"] == [] and written["Key"].startswith("map-results/fan/")
    assert written["Size"] > 256 * 1024  # what the state could not have held
    body = s3.get_object(Bucket=bucket, Key=written["Key"])["Body"].read().decode()
    results = sorted(json.loads(line) for line in body.splitlines())
    assert len(results) == ITEMS and all(len(r) == ITEM_BYTES for r in results) and results[7].startswith("0007")


def test_without_its_result_writer_the_same_map_fails_on_its_own_result(fan: tuple[LocalAWS, ControlPlane]) -> None:
    """Issue 62 finding 3, the limit that makes the ResultWriter necessary: the same map without
    it fails States.DataLimitExceeded on the local engine, as on AWS ("Maximum input or output
    size for a task, state, or execution": 256 KiB,
    https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html), even with
    ResultPath null: the result exists before ResultPath discards it (the moto patch
    map_result_limit: stock moto checks only the output after ResultPath, and this map
    succeeded)."""
    aws, _ = fan
    execution = "results-without-writer"
    name, run_input = _big_results_map(aws, execution, with_writer=False)
    ex = aws.wait(aws.start(name, run_input, name=execution), timeout=600)  # a hang guard
    assert (ex.status, ex.error) == ("FAILED", "States.DataLimitExceeded"), (ex.status, ex.error, ex.cause)


def test_a_followed_run_says_how_far_its_map_has_come(fan: tuple[LocalAWS, ControlPlane], tmp_path: Path) -> None:
    """`jobplane run`'s line while a map runs (issue 65 item 8): done, failed, running of N, from
    the item records, read while one item is held running."""
    from jobplane.cli.operate import MapWatch

    aws, control = fan
    arn = aws.start(JOB, execution_input.manual("test", overrides={"count": 4, "hold": "t-0002", "hold_dir": str(tmp_path),
                                                                   "fail_always": ["t-0001"]}))
    name = arn.rsplit(":", 1)[1]
    pid_file = tmp_path / "t-0002.pid"
    try:
        watch = MapWatch(control, name)
        deadline = time.monotonic() + 300  # a hang guard
        lines: list[str] = []
        while not any("3 of 4 done" in line for line in lines):
            assert time.monotonic() < deadline, f"the map never came to its held item: {lines}"
            watch.asked = 0.0  # ask now, not MAP_POLL after the last ask
            lines += watch.changed()
            time.sleep(0.2)
        assert pid_file.exists()
        assert lines[-1] == "  close-all: 3 of 4 done (1 failed), 1 running"
        assert watch.changed() == []  # nothing new, nothing said (and not asked again before MAP_POLL)
        status = _cli(aws, control, tmp_path, "status")
        assert f"  {JOB}: {name} close-all: 3 done of 4 (2 succeeded, 1 failed), 1 running, 0 waiting" in status.output
        [run] = [r for j in json.loads(_cli(aws, control, tmp_path, "status", "--json").output) if j["job"] == JOB
                 for r in j["maps"]]
        assert run["execution"] == name and [(m["succeeded"], m["failed"], m["running"], m["total"])
                                             for m in run["maps"]] == [(2, 1, 1, 4)]
    finally:
        # the held item ends whatever was asserted: a run left holding the job's claim would make
        # the next test's run a skip (SKIP_IF_RUNNING), failing it for this one's reason
        if pid_file.exists():
            with contextlib.suppress(ValueError, ProcessLookupError):  # not written whole, or already gone
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"  # one failure is tolerated


def test_the_portal_role_allows_every_call_of_a_maps_reads_and_its_failed_items_re_run(
        fan: tuple[LocalAWS, ControlPlane]) -> None:
    """The map reads and the re-run of failed items go through the control plane the portal and
    the operator CLI share: the base module's portal role (and so the operator policy, which
    holds its statements) must allow each call they make, as on AWS (issue 64's leftover: the
    role had no right on the map lists, so on AWS a map's "of N" was never known and a re-run of
    its failed items was refused)."""
    import base_module as bm
    from iam_calls import MAP_STATEMENTS, calls_into, iam_calls
    from iam_policy import denied_calls

    aws, control = fan
    name, ex = _run(aws, count=3, fail_always=["t-0001"], fail_once=["t-0002"])
    assert ex.status == "SUCCEEDED"
    recorded: list[dict[str, Any]] = []
    with calls_into(recorded):
        [p] = control.map_progress(name)
        control.items(name)
        again = control.rerun_failed_items(name, "ops@example.com", reason="ledger fixed")
    assert (p.total, p.failed) == (3, 1) and again
    # the local engine names the catalog bucket <prefix>-catalog; on AWS it is the base module's
    # (Deployment.items_bucket reads it from the catalog's s3:// address)
    bucket = bm.resolve("${aws_s3_bucket.catalog.id}", {"name_prefix": aws.prefix})
    for c in recorded:
        if c["service"] == "s3":
            c["params"] = dict(c["params"], Bucket=bucket)
    calls = iam_calls(recorded)
    assert {c.action for c in calls} >= {"s3:ListBucket", "s3:GetObject", "s3:PutObject", "kms:GenerateDataKey",
                                         "logs:GetLogEvents", "dynamodb:Query", "states:StartExecution"}
    for policy in ("portal", "operator"):
        assert denied_calls(bm.policy_statements(policy, {"name_prefix": aws.prefix}), calls) == [], policy
    # and each statement given for these calls is needed by one of them
    statements = bm.policy_statements("portal", {"name_prefix": aws.prefix})
    for i, statement in enumerate(statements):
        if statement.get("sid") in MAP_STATEMENTS:
            assert denied_calls(statements[:i] + statements[i + 1:], calls), statement.get("sid")
    arn = aws.state_machines[JOB].replace(":stateMachine:", ":execution:") + f":{again}"
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"


def _cli(aws: LocalAWS, control: ControlPlane, tmp_path: Path, *args: str) -> Any:
    """`jobplane ARGS` as an operator's shell on AWS runs it (tests/operator_cli.py)."""
    return operator_cli(aws, control, tmp_path, fan_root(control), *args)


def test_jobplane_run_ends_with_its_maps_counts_and_each_failed_items_own_error(
        fan: tuple[LocalAWS, ControlPlane], tmp_path: Path) -> None:
    aws, control = fan
    result = _cli(aws, control, tmp_path, "run", JOB, "-p", "count=3", "-p", 'fail_always=["t-0001","t-0002"]')
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    status = next(line for line in lines if line.startswith("FAILED"))
    assert status.startswith("FAILED at close-all; close-all: 1 succeeded, 2 failed of 3"), result.output
    assert "  close-all #1 t-0001: RuntimeError: ledger refused tenant t-0001 (exit code 75)" in lines
    assert "  close-all #2 t-0002: RuntimeError: ledger refused tenant t-0002 (exit code 75)" in lines


def fan_root(control: ControlPlane) -> Path:
    """The scratch repository the fixture compiled (its output, the catalog, is root/out)."""
    return Path(str(control.deployment.catalog_path)).parent


def test_plan_shows_a_maps_cost_per_item(repo: Repo) -> None:
    assert repo.cli("compile").exit_code == 0
    repo.write("jobs/billing/month-end-fanout.jsonnet", FANOUT)
    result = repo.cli("plan")
    assert "close-all (map: tenants lists, then per item close-tenant)" in result.stdout
    # retry attempts 2: 4 transitions an item, 8 when both attempts run (compiler/map_cost.py)
    assert ("map close-all: close-tenant once per item that tenants lists, in a Distributed Map; "
            "4 (8 if every attempt fails) state transitions per item, $0.10 per 1,000 items") in result.stdout
    assert "IAM" in result.stdout or "IAM roles" in result.stdout


def test_the_cli_re_runs_failed_items_or_the_whole_job_not_both(repo: Repo) -> None:
    from click.testing import CliRunner

    from jobplane.cli import main

    result = CliRunner().invoke(main, ["--root", str(repo.path), "rerun", "some-run", "--failed-items", "--whole"])
    assert result.exit_code == 2 and "--failed-items and --whole are different re-runs" in result.output
    helped = CliRunner().invoke(main, ["--root", str(repo.path), "rerun", "--help"])
    assert "--failed-items" in helped.output and "--map" in helped.output
