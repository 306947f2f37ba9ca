"""Expectations (issue 67 part 3, docs/expectations.md): a step's reported metrics judged by the
compiled state machine on the local engine, the step run by the real runner in a subprocess."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Repo, served
from jobplane.contract import execution_input
from jobplane.platform.control import ControlPlane
from jobplane.platform.local.engine import LocalAWS


def _job(name: str, expect: str, params: str = "{ rows: 0, invoices: -1, log: '' }", retry: str = "") -> str:
    return f"""\
local jp = import 'jobplane.libsonnet';
{{
  name: '{name}',
  team: 'billing',
  params: {params},
  steps: [jp.python('load', 'sample_apps.expect_steps:load', opts={{ expect: {expect}{retry} }}),
          jp.shell('after', ['true'])],
}}
"""


JOBS = {
    # a run that loads no rows fails its step; its retry applies first
    "load-rows": _job("load-rows", "[jp.expect('rows_loaded', '>= 1')]", retry=", retry: jp.retry(2, interval=1)"),
    # the same check as a warning: the run goes on, SUCCEEDED, marked, with an EXPECTATION alert
    "warn-rows": _job("warn-rows", "[jp.expect('rows_loaded', '>= 1', on_fail='warn')]"),
    # a metric never reported is not 0: it fails (on_missing defaults to on_fail) or does what on_missing says
    "quiet-fail": _job("quiet-fail", "[jp.expect('rows_loaded', '>= 0')]").replace(
        "expect_steps:load'", "expect_steps:silent'"),
    "quiet-warn": _job("quiet-warn", "[jp.expect('rows_loaded', '>= 0', on_missing='warn')]").replace(
        "expect_steps:load'", "expect_steps:silent'"),
    # a baseline: the median of the last runs' values, skipped (and saying so) before there are enough
    "invoices": _job("invoices", "[jp.expect('rows_loaded', '>= 1'), "
                                 "jp.expect('invoices_sent', '>= 0.5 * baseline', on_fail='warn')]"),
    # judged on business days only (no calendar: Monday to Friday in the job's zone)
    "weekday-rows": _job("weekday-rows", "[jp.expect('rows_loaded', '>= 1', when='business_days')]").replace(
        "  team: 'billing',", "  team: 'billing',\n  timezone: 'Asia/Tokyo',"),
    # per item of a map: each item's own count judged in its child execution
    "tenant-load": """\
local jp = import 'jobplane.libsonnet';
{
  name: 'tenant-load',
  team: 'billing',
  params: { empty: [] },
  steps: [jp.map('load-all', jp.python('tenants', 'sample_apps.expect_steps:tenants'),
                 jp.python('load-tenant', 'sample_apps.expect_steps:load_tenant',
                           opts={ expect: [jp.expect('rows_loaded', '>= 1')] }),
                 opts={ tolerated_failures: 0 })],
}
""",
    # the same map warning instead: the run goes on, and the warned items make ONE alert
    "tenant-warn": """\
local jp = import 'jobplane.libsonnet';
{
  name: 'tenant-warn',
  team: 'billing',
  params: { empty: [] },
  steps: [jp.map('load-all', jp.python('tenants', 'sample_apps.expect_steps:tenants'),
                 jp.python('load-tenant', 'sample_apps.expect_steps:load_tenant',
                           opts={ expect: [jp.expect('rows_loaded', '>= 1', on_fail='warn')] })),
          jp.shell('after', ['true'])],
}
""",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalAWS, ControlPlane, str]]:
    repo = Repo(tmp_path_factory.mktemp("repo"))
    for name, text in JOBS.items():
        repo.write(f"jobs/billing/{name}.jsonnet", text)
    with served(repo) as (aws, control):
        sqs = aws.client("sqs")
        queue = sqs.create_queue(QueueName="expectations")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        aws.client("sns").subscribe(TopicArn=control.deployment.topic_arn, Protocol="sqs", Endpoint=arn,
                                    Attributes={"RawMessageDelivery": "true"})
        yield aws, control, queue


def _run(aws: LocalAWS, job: str, now: Any = None, **params: Any) -> tuple[str, Any, dict[str, Any]]:
    arn = aws.start(job, execution_input.manual("test", overrides=params, now=now))
    ex = aws.wait(arn, timeout=600)  # a hang guard, not a time assert
    aws.wait_reconciled(arn, timeout=600)
    name = arn.rsplit(":", 1)[1]
    record = aws.client("dynamodb").get_item(
        TableName=aws.resources["table_name"], Key={"pk": {"S": f"EXEC#{name}"}, "sk": {"S": "EXEC"}},
        ConsistentRead=True).get("Item") or {}
    return name, ex, record


def _expect(record: dict[str, Any]) -> dict[str, Any]:
    steps = json.loads(record["steps"]["S"])
    return dict(steps["load"]["expect"])


def _messages(aws: LocalAWS, queue: str, execution: str) -> list[dict[str, Any]]:
    sqs, out = aws.client("sqs"), []
    while True:
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        if not got:
            return [m for m in out if m["execution"] == execution]
        for m in got:
            out.append(json.loads(m["Body"]))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])


def test_a_run_that_loads_no_rows_fails_its_step_after_its_retries(engine: tuple[LocalAWS, ControlPlane, str],
                                                                   tmp_path: Path) -> None:
    aws, _, queue = engine
    log = tmp_path / "attempts"
    name, ex, record = _run(aws, "load-rows", rows=0, log=str(log))
    assert ex.status == "FAILED", ex
    assert record["status"]["S"] == "FAILED" and record["failed_step"]["S"] == "load"
    assert log.read_text().count("attempt") == 2  # its retry applied: a late upstream can catch up
    [failure] = [m for m in _messages(aws, queue, name) if m["event"] == "FAILED"]
    assert failure["outcome"]["step"] == "load"
    history = aws.client("stepfunctions").get_execution_history(executionArn=ex.arn, maxResults=1000)["events"]
    exits = [e["stateExitedEventDetails"] for e in history if e["type"] == "PassStateExited"]
    errors = [json.loads(d["output"])["run"]["error"] for d in exits if d["name"] == "load: expect failed"]
    assert [e["Cause"] for e in errors] == ["rows_loaded = 0, expected >= 1: fail"] * 2  # each attempt's


def test_a_run_that_loads_rows_passes_and_records_each_check(engine: tuple[LocalAWS, ControlPlane, str]) -> None:
    aws, _, queue = engine
    name, ex, record = _run(aws, "load-rows", rows=12)
    assert ex.status == "SUCCEEDED", ex
    expect = _expect(record)
    assert expect["verdict"] == "pass"
    assert expect["checks"] == [{"metric": "rows_loaded", "check": ">= 1", "outcome": "pass", "value": 12,
                                 "threshold": 1, "baseline": None, "reported": True, "note": ""}]
    assert [m for m in _messages(aws, queue, name) if m["event"] == "EXPECTATION"] == []


def test_a_warning_keeps_the_run_succeeded_marked_and_alerts(engine: tuple[LocalAWS, ControlPlane, str]) -> None:
    from jobplane.contract.notifications import NotificationMessage, subscribed
    from jobplane.contract.statuses import DEFAULT_EVENTS

    aws, _, queue = engine
    name, ex, record = _run(aws, "warn-rows", rows=0)
    assert ex.status == "SUCCEEDED", ex
    assert record["status"]["S"] == "SUCCEEDED"
    expect = _expect(record)
    assert expect["verdict"] == "warn" and expect["checks"][0]["outcome"] == "warn"
    [alert] = [m for m in _messages(aws, queue, name) if m["event"] == "EXPECTATION"]
    message = NotificationMessage.model_validate(alert)
    assert message.outcome.step == "load" and message.error == "rows_loaded = 0, expected >= 1: warn"
    assert subscribed(message, tuple(e.value for e in DEFAULT_EVENTS))  # where failures go


def test_a_metric_never_reported_is_not_reported_not_zero(engine: tuple[LocalAWS, ControlPlane, str]) -> None:
    aws, _, _ = engine
    _, ex, record = _run(aws, "quiet-fail")
    assert ex.status == "FAILED", ex  # '>= 0' would hold for a 0: nothing reported fails it
    _, ex, record = _run(aws, "quiet-warn")
    assert ex.status == "SUCCEEDED", ex
    [check] = _expect(record)["checks"]
    assert (check["outcome"], check["value"], check["reported"], check["note"]) == ("warn", None, False, "not reported")


def test_a_baseline_is_skipped_until_enough_runs_then_the_median_of_the_last(
        engine: tuple[LocalAWS, ControlPlane, str]) -> None:
    from jobplane.contract.expectations import BASELINE_RUNS

    aws, _, queue = engine
    for i, sent in enumerate([10, 30, 12, 8, 11]):
        name, ex, record = _run(aws, "invoices", rows=5, invoices=sent)
        assert ex.status == "SUCCEEDED", ex
        check = _expect(record)["checks"][1]
        assert (check["outcome"], check["baseline"]) == ("skipped", None)
        assert check["note"] == f"{i} comparable earlier runs, a baseline needs {BASELINE_RUNS}"
    name, ex, record = _run(aws, "invoices", rows=5, invoices=3)
    assert ex.status == "SUCCEEDED", ex
    check = _expect(record)["checks"][1]
    assert (check["outcome"], check["baseline"], check["threshold"], check["value"]) == ("warn", 11, 5.5, 3)
    assert [m["error"] for m in _messages(aws, queue, name) if m["event"] == "EXPECTATION"] == [
        "rows_loaded = 5, expected >= 1: pass; invoices_sent = 3, expected >= 0.5 * baseline (baseline 11): warn"]
    # the warned value is kept too: the next baseline is the median of the last six (3 8 10 11 12 30)
    _, _, record = _run(aws, "invoices", rows=5, invoices=9)
    assert _expect(record)["checks"][1]["baseline"] == 10.5


@pytest.mark.parametrize(("expect", "says"), [
    ({"metric": "rows loaded", "check": ">= 1"}, "'rows loaded' is not a metric name"),
    ({"metric": "rows", "check": "at least 1"}, "'at least 1' is not a check"),
    ({"metric": "rows", "check": ">= 2 * 3"}, "a factor multiplies the baseline"),
    ({"metric": "rows", "check": ">= 1", "on_fail": "page"}, "'page' is not one of fail, warn"),
    ({"metric": "rows", "check": ">= 1", "on_missing": "ignore"}, "'ignore' is not one of fail, warn, pass"),
])
def test_a_bad_expectation_is_refused_naming_its_field(expect: dict[str, Any], says: str) -> None:
    from jobplane.compiler.fields import Invalid
    from jobplane.compiler.model import Job

    with pytest.raises(Invalid) as raised:
        Job.from_definition({"name": "j", "team": "billing", "steps": [
            {"name": "s", "python": "m:f", "expect": [{"metric": "ok", "check": "> 0"}, expect]}]})
    assert says in str(raised.value)
    assert "steps.0.expect.1." in str(raised.value)


def test_the_api_and_the_execution_page_show_each_check(engine: tuple[LocalAWS, ControlPlane, str]) -> None:
    from fastapi.testclient import TestClient

    from portal_kit import READER, as_user
    from test_progress import _portal

    aws, control, _ = engine
    warned, ex, _ = _run(aws, "warn-rows", rows=0)
    quiet, ex2, _ = _run(aws, "quiet-warn")
    assert (ex.status, ex2.status) == ("SUCCEEDED", "SUCCEEDED")
    with TestClient(_portal(control)) as client:
        [step] = client.get(f"/api/executions/{warned}", headers=as_user(READER)).json()["expectations"]
        assert (step["step"], step["verdict"]) == ("load", "warn")
        assert step["checks"] == [{"metric": "rows_loaded", "check": ">= 1", "outcome": "warn", "value": 0.0,
                                   "threshold": 1.0, "baseline": None, "reported": True, "note": ""}]
        page = client.get(f"/executions/{warned}", headers=as_user(READER)).text
        row = page.split('<tr data-expect-step="load" data-expect-metric="rows_loaded" data-outcome="warn">')[1]
        assert "<td data-expect-value>0</td>" in row.split("</tr>")[0]
        page = client.get(f"/executions/{quiet}", headers=as_user(READER)).text
        row = page.split('data-expect-metric="rows_loaded" data-outcome="warn">')[1].split("</tr>")[0]
        assert "<em>not reported</em>" in row and "(not reported)" in row


def test_a_maps_items_are_judged_each_on_its_own_count(engine: tuple[LocalAWS, ControlPlane, str]) -> None:
    """Each item keeps its own record of what it reported; the items that loaded nothing fail
    their expectation (the map then fails), the failure alert lists them with the check's words,
    and a re-run of the failed items takes exactly them."""
    from jobplane.contract.notifications import NotificationMessage
    from jobplane.contract import progress as cp
    from jobplane.platform.map_alert import with_failed_items

    aws, control, _ = engine
    name, ex, record = _run(aws, "tenant-load", empty=["t-1", "t-3"])
    assert ex.status == "FAILED", ex
    items = control.items(name)
    assert [(o.item, o.status) for o in items] == [("t-0", "SUCCEEDED"), ("t-1", "FAILED"), ("t-2", "SUCCEEDED"),
                                                   ("t-3", "FAILED")]
    ddb, table = aws.client("dynamodb"), aws.resources["table_name"]
    for i, rows in enumerate([10, 0, 10, 0]):  # each item's own record: <step>#<index>
        item = ddb.get_item(TableName=table, Key={"pk": {"S": cp.pk("tenant-load", name)}, "sk": {"S": f"load-tenant#{i}"}},
                            ConsistentRead=True)["Item"]
        assert item["metrics"] == {"M": {"rows_loaded": {"N": str(rows)}}} and item["cursor"] == {"S": f"t-{i}"}
    # the items' records are not the run's steps (its step table; tenants itself reported nothing)
    assert [p.step for p in control.step_progress("tenant-load", name)] == []
    alert = NotificationMessage.model_validate({
        "version": 1, "event": "FAILED", "job": "tenant-load", "team": "billing", "execution": name,
        "execution_arn": ex.arn, "outcome": {"status": "FAILED", "step": "load-all"}, "channels": []})
    told = with_failed_items(alert, ddb, table)
    assert told.error is not None and told.error.splitlines()[0].startswith("2 items failed in map load-all")
    assert "#1 t-1: Jobplane.ExpectationFailed: rows_loaded = 0, expected >= 1: fail" in told.error
    assert "#3 t-3: Jobplane.ExpectationFailed: rows_loaded = 0, expected >= 1: fail" in told.error
    again = control.rerun_failed_items(name, "ops@example.com", params={"empty": []})
    arn = aws.state_machines["tenant-load"].replace(":stateMachine:", ":execution:") + f":{again}"
    assert aws.wait(arn, timeout=600).status == "SUCCEEDED"
    aws.wait_reconciled(arn, timeout=600)
    assert [(o.item, o.status) for o in control.items(again)] == [("t-1", "SUCCEEDED"), ("t-3", "SUCCEEDED")]


def test_a_maps_warned_items_make_one_alert_naming_them(engine: tuple[LocalAWS, ControlPlane, str]) -> None:
    """Items whose check warns keep the run SUCCEEDED; after the map, exactly one EXPECTATION
    alert names them (their index, item and the check's words) with their count, and the next
    run's alert says how many warned the run before. A run where no item warns alerts nothing."""
    aws, control, queue = engine
    name, ex, _ = _run(aws, "tenant-warn", empty=["t-0", "t-2", "t-3"])
    assert ex.status == "SUCCEEDED", ex
    assert [(o.item, o.status) for o in control.items(name)] == [(f"t-{i}", "SUCCEEDED") for i in range(4)]
    alerts = [m for m in _messages(aws, queue, name) if m["event"] == "EXPECTATION"]
    assert len(alerts) == 1, alerts
    [alert] = alerts
    assert alert["outcome"]["step"] == "load-tenant" and alert["outcome"]["map"] == "load-all"
    assert alert["outcome"]["warned"] == 3 and alert["outcome"]["previous"] is None
    assert [i["index"] for i in alert["outcome"]["items"]] == [0, 2, 3]
    assert alert["error"].splitlines() == [
        "3 items warned in map load-all (load-tenant):",
        "  #0 t-0: rows_loaded = 0, expected >= 1: warn",
        "  #2 t-2: rows_loaded = 0, expected >= 1: warn",
        "  #3 t-3: rows_loaded = 0, expected >= 1: warn"]
    # a run where every item passes: no alert at all
    quiet, ex, _ = _run(aws, "tenant-warn", empty=[])
    assert ex.status == "SUCCEEDED" and [m for m in _messages(aws, queue, quiet) if m["event"] == "EXPECTATION"] == []
    # the next warning compares with the run before (the quiet one: 0 warned)
    again, ex, _ = _run(aws, "tenant-warn", empty=["t-1"])
    [alert] = [m for m in _messages(aws, queue, again) if m["event"] == "EXPECTATION"]
    assert alert["error"].splitlines() == ["1 item warned in map load-all (load-tenant); the previous run: 0:",
                                           "  #1 t-1: rows_loaded = 0, expected >= 1: warn"]


def test_a_baseline_per_map_item_is_refused() -> None:
    from jobplane.compiler.fields import Invalid
    from jobplane.compiler.model import Job

    with pytest.raises(Invalid) as raised:
        Job.from_definition({"name": "j", "team": "billing", "steps": [{"name": "m", "map": {
            "items": {"name": "i", "python": "m:f"},
            "each": {"name": "e", "python": "m:g", "expect": [{"metric": "rows", "check": ">= baseline"}]}}}]})
    assert "a map's each step takes expectations of a number" in str(raised.value)


def test_when_business_days_skips_the_check_on_a_closed_day_in_the_jobs_zone(
        engine: tuple[LocalAWS, ControlPlane, str]) -> None:
    from datetime import datetime, timezone

    aws, _, _ = engine
    # Friday 23:00 in Tokyo (14:00 UTC): a business day, the empty load fails
    _, ex, record = _run(aws, "weekday-rows", now=datetime(2026, 12, 4, 14, 0, tzinfo=timezone.utc), rows=0)
    assert ex.status == "FAILED", ex
    # Saturday 01:00 in Tokyo, still Friday in UTC: skipped, and it says why
    _, ex, record = _run(aws, "weekday-rows", now=datetime(2026, 12, 4, 16, 0, tzinfo=timezone.utc), rows=0)
    assert ex.status == "SUCCEEDED", ex
    [check] = _expect(record)["checks"]
    assert (check["outcome"], check["value"], check["note"]) == ("skipped", 0, "not a business day (Saturday)")


def _judge(tmp_path: Path, when: str, calendar_line: str) -> Any:
    """The judge's Output of a job validated with a calendar of its jobplane.toml, as the
    engine's JSONata evaluator (jsonata-python, the local engine's) evaluates it."""
    import jsonata

    from conftest import Repo
    from jobplane.compiler import asl
    from jobplane.compiler.validate import load_jobs
    from jobplane.contract.config import load_config

    repo = Repo(tmp_path)
    with open(repo.path / "jobplane.toml", "a") as f:
        f.write('\n[calendars.gw-test]\nholidays = "JP"\nopen_dates = ["2026-05-02"]\n')
    repo.write("jobs/billing/gw.jsonnet", f"""
local jp = import 'jobplane.libsonnet';
{{ name: 'gw', team: 'billing', timezone: 'Asia/Tokyo', {calendar_line}
  steps: [jp.python('load', 'm:f', opts={{ expect: [jp.expect('rows_loaded', '>= 1', when='{when}')] }})] }}
""")
    [lj] = [j for j in load_jobs(load_config(repo.path)) if j.job.name == "gw"]
    output = asl.build_definition(lj.job, "jp")["States"]["load: expect"]["Output"][3:-3]

    def judged(scheduled: str) -> dict[str, Any]:
        states = {"input": {"scheduled_time": scheduled, "run": {"steps": {"load": {}}}},
                  "result": {"Item": {"metrics": {"M": {"rows_loaded": {"N": "0"}}}}}}
        out = jsonata.Jsonata(output).evaluate(None, {"states": states})
        return dict(out["run"]["steps"]["load"]["expect"]["checks"][0])
    return judged


def test_when_a_calendar_skips_its_holidays_and_judges_its_open_dates(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    judged = _judge(tmp_path / "a", "business_days", "schedule: jp.businessDays('09:00'), calendar: 'gw-test',")
    # Wed 2026-04-29 Showa Day (a JP holiday) at 09:00 Tokyo: skipped, with the holiday's name
    check = judged("2026-04-29T00:00:00.000Z")
    assert check["outcome"] == "skipped" and check["note"].startswith("not a business day (")
    assert "Showa" in check["note"]
    assert judged("2026-04-28T00:00:00.000Z")["outcome"] == "fail"  # Tuesday: judged
    assert judged("2026-05-02T00:00:00.000Z")["outcome"] == "fail"  # a Saturday the calendar opens
    assert judged("2026-05-09T00:00:00.000Z")["note"] == "not a business day (Saturday)"
    # a calendar named by `when` itself, on a job without one
    other = _judge(tmp_path / "b", "gw-test", "")
    assert other("2026-05-05T00:00:00.000Z")["outcome"] == "skipped"  # Children's Day
    assert other("2026-05-07T00:00:00.000Z")["outcome"] == "fail"


def test_a_when_naming_no_calendar_is_refused(tmp_path: Path) -> None:
    from jobplane.compiler.problems import DefinitionError
    from jobplane.compiler.validate import load_jobs
    from jobplane.contract.config import load_config

    from conftest import Repo

    repo = Repo(tmp_path)
    repo.write("jobs/billing/gw.jsonnet", """
local jp = import 'jobplane.libsonnet';
{ name: 'gw', team: 'billing',
  steps: [jp.python('load', 'm:f', opts={ expect: [jp.expect('rows_loaded', '>= 1', when='no-such-calendar')] })] }
""")
    with pytest.raises(DefinitionError) as raised:
        load_jobs(load_config(repo.path))
    assert "step 'load': expect rows_loaded when 'no-such-calendar': 'business_days' or a calendar" in str(raised.value)


def test_a_calendar_jobs_baseline_is_the_same_business_day_of_earlier_months(tmp_path: Path) -> None:
    """The judge keys a calendar job's history by the business day of the month (Golden Week
    2026 in Tokyo: 05-07 is May's 2nd business day, 05-01 its 1st), reads that day's list, and
    the keep appends to it."""
    import jsonata

    from conftest import Repo
    from jobplane.compiler import asl
    from jobplane.compiler.validate import load_jobs
    from jobplane.contract.config import load_config

    repo = Repo(tmp_path)
    repo.write("jobs/billing/close.jsonnet", """
local jp = import 'jobplane.libsonnet';
{ name: 'close', team: 'billing', timezone: 'Asia/Tokyo', schedule: jp.businessDays('09:00'), calendar: 'jp-business',
  steps: [jp.python('send', 'm:f', opts={ expect: [jp.expect('invoices_sent', '>= 0.5 * baseline', on_fail='warn')] })] }
""")
    [lj] = [j for j in load_jobs(load_config(repo.path)) if j.job.name == "close"]
    states = asl.build_definition(lj.job, "jp")["States"]
    judge, keep = states["send: expect"]["Output"][3:-3], states["send: expect keep"]["Arguments"][3:-3]
    lists = {"m_invoices_sent": [1, 1, 1, 1, 1], "m_invoices_sent_bd2": [100, 90, 110, 95, 105],
             "m_invoices_sent_bd1": [7, 7, 7, 7, 7]}
    history = {"Item": {k: {"L": [{"N": str(v)} for v in vs]} for k, vs in lists.items()}}

    def run(scheduled: str, sent: int) -> tuple[dict[str, Any], dict[str, Any]]:
        given = {"input": {"scheduled_time": scheduled, "run": {"steps": {"send": {"history": history}}}},
                 "result": {"Item": {"metrics": {"M": {"invoices_sent": {"N": str(sent)}}}}},
                 "context": {"Execution": {"StartTime": scheduled}}}
        out = jsonata.Jsonata(judge).evaluate(None, {"states": given})
        call = jsonata.Jsonata(keep).evaluate(None, {"states": {**given, "input": out}})
        return dict(out["run"]["steps"]["send"]["expect"]), dict(call)

    expect, call = run("2026-05-07T00:00:00.000Z", 40)  # Thursday 05-07 09:00 JST: May's 2nd business day
    assert expect["day"] == "bd2"
    assert (expect["checks"][0]["baseline"], expect["checks"][0]["outcome"]) == (100, "warn")
    [(name_ref, attr)] = call["ExpressionAttributeNames"].items() - {("#at", "kept_at")}
    assert attr == "m_invoices_sent_bd2"
    kept = call["ExpressionAttributeValues"][":x0"]["L"]
    assert [x["N"] for x in kept] == ["100", "90", "110", "95", "105", "40"]
    expect, _ = run("2026-05-01T00:00:00.000Z", 6)  # Friday 05-01: the 1st (04-29 Showa Day was April's)
    assert (expect["day"], expect["checks"][0]["baseline"], expect["checks"][0]["outcome"]) == ("bd1", 7, "pass")
