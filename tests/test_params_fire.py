"""Calendar defaults resolved at a scheduled fire (issue 69 part 2): the input EventBridge
Scheduler sends is fixed when compiled, so the runner resolves a job's ``last_closed`` month and
``previous_business_day`` for the run's scheduled time, in the job's timezone and from its
calendar, with the function the control plane resolves a manual run's with; every step of the
run gets the same values and the step's log records them. On the local engine, the deployed
schedule's own target input, the runner a real subprocess."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import Repo, served
from jobplane.contract.execution_input import SCHEDULER_TIME, iso
from jobplane.platform.control import ControlPlane
from jobplane.platform.local.engine import LocalAWS

JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'ledger-close',
  team: 'billing',
  schedule: 'cron(0 0 * * ? *)',
  timezone: 'Asia/Tokyo',
  calendar: 'jp-business',
  on_closed_day: 'next',
  params: {
    out: '%(out)s',
    month: jp.param.month(default='last_closed'),
    day: jp.param.date(default='previous_business_day'),
    fired: jp.param.date(default='fire_date'),
  },
  steps: [
    jp.python('first', 'sample_apps.functions:with_context'),
    jp.python('second', 'sample_apps.functions:with_context', kwargs={ out: '%(out)s.second' }),
    jp.lambda('third', 'sample_apps.functions:with_context', kwargs={ out: '%(out)s.third' }),
  ],
}
"""


@pytest.fixture(scope="module")
def platform_(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane, Path]]:
    tmp = tmp_path_factory.mktemp("fire")
    (tmp / "repo").mkdir()
    repo = Repo(tmp / "repo")
    out = tmp / "seen.json"
    repo.write("jobs/billing/ledger-close.jsonnet", JOB % {"out": out})
    with served(repo) as (aws, control):
        yield aws, control, out


def _fire(aws: LocalAWS, control: ControlPlane, when: datetime) -> str:
    """Start the job as its deployed schedule does at ``when`` (its target input, the time put in)."""
    scheduler = aws.client("scheduler")
    groups = [g["Name"] for g in scheduler.list_schedule_groups()["ScheduleGroups"] if g["Name"] != "default"]
    found = [scheduler.get_schedule(Name=s["Name"], GroupName=g) for g in groups
             for s in scheduler.list_schedules(GroupName=g)["Schedules"] if "ledger-close" in s["Name"]]
    assert found, groups
    target = found[0]["Target"]
    sent = json.loads(target["Input"])
    assert "month" not in sent["params"] and "day" not in sent["params"]  # fixed when compiled: not resolvable there
    arn = aws.client("stepfunctions").start_execution(
        stateMachineArn=target["Arn"], input=target["Input"].replace(SCHEDULER_TIME, iso(when)))["executionArn"]
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    return arn.rsplit(":", 1)[1]


def test_a_scheduled_fire_resolves_its_calendar_defaults_in_the_jobs_timezone_and_calendar(
        platform_: tuple[LocalAWS, ControlPlane, Path]) -> None:
    aws, control, out = platform_
    # 00:00 on Thursday 7 May 2026 in Tokyo (6 May in UTC): 3-6 May are Golden Week's holidays
    # (6 May substitutes for Sunday's Constitution Day), 2-3 May a weekend: the business day
    # before is Friday 1 May; the last closed month is April
    name = _fire(aws, control, datetime(2026, 5, 6, 15, 0, tzinfo=timezone.utc))
    first, second = json.loads(out.read_text())["params"], json.loads(Path(f"{out}.second").read_text())["params"]
    assert (first["month"], first["day"], first["fired"]) == ("2026-04", "2026-05-01", "2026-05-07")
    assert {k: second[k] for k in ("month", "day", "fired")} == {k: first[k] for k in ("month", "day", "fired")}
    third = json.loads(Path(f"{out}.third").read_text())["params"]  # a Lambda step: the same runner, the same values
    assert {k: third[k] for k in ("month", "day", "fired")} == {k: first[k] for k in ("month", "day", "fired")}
    logs = "\n".join(s.read() for s in control.log_streams(name))
    assert "params resolved at the fire: day=2026-05-01, fired=2026-05-07, month=2026-04" in logs, logs[-2000:]
    # recorded on the run (its #params item, beside its steps' progress), not mistaken for a step
    assert control.resolved_params("ledger-close", name) == {"month": "2026-04", "day": "2026-05-01", "fired": "2026-05-07"}
    assert sorted(p.step for p in control.step_progress("ledger-close", name)) in ([], ["first", "second", "third"])
    # a re-run runs for the same fire's values, not for the day it is started
    again = control.rerun(name, "tester", from_failed_step=False, reason="re-close")
    arn = control.deployment.execution_arn("ledger-close", again)
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    assert {k: control.execution(again, "ledger-close").input.params[k] for k in ("month", "day", "fired")} == {
        "month": "2026-04", "day": "2026-05-01", "fired": "2026-05-07"}
    seen = json.loads(out.read_text())["params"]
    assert (seen["month"], seen["day"]) == ("2026-04", "2026-05-01")


def test_the_run_page_shows_what_the_fire_resolved(platform_: tuple[LocalAWS, ControlPlane, Path]) -> None:
    from fastapi.testclient import TestClient

    from jobplane.portal.app import create_app
    from jobplane.portal.settings import AuthSettings, PortalSettings
    from portal_kit import BILLING, PROXY_SECRET, as_user

    aws, control, _ = platform_
    name = _fire(aws, control, datetime(2026, 6, 30, 15, 0, tzinfo=timezone.utc))  # 1 July in Tokyo
    settings = PortalSettings(deployment=control.deployment, auth=AuthSettings(mode="trusted-header", header="X-Forwarded-Email", proxy_secret=PROXY_SECRET),
                              base_url="http://testserver", allowed_hosts=frozenset({"testserver"}))
    page = TestClient(create_app(settings, control)).get(f"/executions/{name}?job=ledger-close", headers=as_user(BILLING))
    assert page.status_code == 200, page.text[:500]
    assert "Resolved at the fire" in page.text and "2026-06" in page.text and "2026-06-30" in page.text, page.text[-3000:]


def test_a_fire_given_a_value_keeps_it(platform_: tuple[LocalAWS, ControlPlane, Path]) -> None:
    """A backfill or a person who gives the month: the runner resolves only what was not given."""
    from jobplane.contract import execution_input

    aws, control, out = platform_
    # a later fire than the first test's (an older one would be skipped as a late duplicate)
    arn = aws.start("ledger-close", execution_input.scheduled(datetime(2027, 1, 3, 15, 0, tzinfo=timezone.utc),
                                                              {"out": str(out), "month": "2025-06"}))
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    seen = json.loads(out.read_text())["params"]
    # Monday 4 Jan 2027 in Tokyo: the business day before is before the year-end closure (29 Dec - 3 Jan)
    assert (seen["month"], seen["day"], seen["fired"]) == ("2025-06", "2026-12-28", "2027-01-04")


def test_the_runner_task_role_may_record_the_resolved_params_and_nothing_more(
        platform_: tuple[LocalAWS, ControlPlane, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The record's write, as IAM judges it: the base module's ``runner_params`` statement
    allows it, and names exactly the attributes it writes (contract/progress.py)."""
    from typing import Any

    import base_module as bm
    from iam_policy import Call, allowed
    from jobplane.contract import progress as cp
    from iam_calls import runner_env, runner_requests
    from jobplane.runner.context import RunContext, TraceContext
    from jobplane.runner.progress import record_resolved

    aws, control, _ = platform_
    sent = runner_requests(monkeypatch)
    env = runner_env(aws) | {cp.ENV_TABLE: aws.resources["table_name"]}
    ctx = RunContext(job="ledger-close", team="billing", step="first", execution_id="run-iam", scheduled_time="",
                     trigger="schedule", attempt=1, params={}, target={}, trace=TraceContext.continue_from(None))
    assert record_resolved(ctx, None, {"month": "2026-04"}, env) is True  # type: ignore[arg-type]
    assert control.resolved_params("ledger-close", "run-iam") == {"month": "2026-04"}
    ((target, request),) = sent
    names = set(request["Key"]) | set(request["ExpressionAttributeNames"].values())
    call = Call(f"dynamodb:{target.rsplit('.', 1)[1]}",
                f"arn:aws:dynamodb:{bm.REGION}:{bm.ACCOUNT}:table/{request['TableName']}",
                {"dynamodb:LeadingKeys": [request["Key"]["pk"]["S"]], "dynamodb:Attributes": sorted(names)},
                "the runner's record of resolved params")
    statements = bm.policy_statements("runner_params", {})
    assert allowed(statements, call)
    (statement,) = statements
    attrs = [c["values"] for c in statement["condition"] if c["variable"] == "dynamodb:Attributes"][0]
    assert sorted(attrs) == sorted(cp.PARAMS_ATTRIBUTES) == sorted(names)
    # not a run's record, nor another attribute
    other = Call(call.action, call.resource, {"dynamodb:LeadingKeys": ["EXEC#run-iam"],
                                              "dynamodb:Attributes": sorted(names)}, "a run's record")
    assert not allowed(statements, other)
    # nor an answer carrying attributes the grant leaves out (AWS's companion of an attribute grant)
    for returns in ("ALL_NEW", "ALL_OLD"):
        assert not allowed(statements, Call(call.action, call.resource, call.context | {"dynamodb:ReturnValues": returns}))
    # the job's Lambda step records with its runner function's role: the compiled role has the same
    # statement (and a job without calendar defaults has none)
    from jobplane.compiler import asl
    from jobplane.compiler.model import Job
    from jobplane.compiler.terraform import job_module
    from jobplane.contract.config import PlatformConfig

    for params, expected in (({"month": {"$param": "month", "default": "last_closed"}}, True),
                             ({"month": "2026-04"}, False)):
        # the job whose run the call records: a role may write its own job's progress partitions only
        job = Job.from_definition({"name": "ledger-close", "team": "billing", "timezone": "UTC", "params": params,
                                   "steps": [{"name": "close", "lambda": "sample_apps.functions:with_context"}]})
        doc = job_module(job, asl.compile_job(job, bm.PREFIX), PlatformConfig(root=Path("."), name_prefix=bm.PREFIX))
        (role,) = doc["resource"]["aws_lambda_function"]
        table_arn = bm.resolve("${aws_dynamodb_table.jobplane.arn}", {})
        found = [bm.resolve(st, {"local.platform.table_arn": table_arn})
                 for st in doc["data"]["aws_iam_policy_document"][role]["statement"] if st["sid"] == "RecordResolvedParams"]
        assert bool(found) is expected, params
        if found:
            assert allowed(found, call) and not allowed(found, other)
            assert sorted([c["values"] for c in found[0]["condition"]
                           if c["variable"] == "dynamodb:Attributes"][0]) == sorted(cp.PARAMS_ATTRIBUTES)


def test_a_backfill_resolves_each_fires_calendar_defaults_and_records_them_in_its_input(
        platform_: tuple[LocalAWS, ControlPlane, Path]) -> None:
    import time

    from jobplane.platform.backfill import Backfills
    from jobplane.platform.backfill_model import Status

    aws, control, _ = platform_
    backfills = Backfills(control.runs)
    # 1 and 2 April 2026 at 00:00 in Tokyo
    bf = backfills.create("ledger-close", "tester", "2026-03-31T15:00:00Z", "2026-04-01T15:00:00Z", mode="all",
                          reason="re-close the start of April")
    assert [f.at for f in bf.fires] == ["2026-03-31T15:00:00Z", "2026-04-01T15:00:00Z"]
    deadline = time.monotonic() + 600  # a hang guard, not a time assert
    while (bf := backfills.tick(bf.id)).status == Status.RUNNING:
        assert time.monotonic() < deadline, bf
        time.sleep(0.2)
    assert bf.status == Status.COMPLETED and [f.status for f in bf.fires] == ["SUCCEEDED", "SUCCEEDED"], bf
    recorded = [control.execution(f.execution or "", "ledger-close").input.params for f in bf.fires]
    assert [(p["month"], p["day"], p["fired"]) for p in recorded] == [
        ("2026-03", "2026-03-31", "2026-04-01"), ("2026-03", "2026-04-01", "2026-04-02")]
