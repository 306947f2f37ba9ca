"""Defects an independent QA pass found in the landed platform (issue 17), each reproduced on
a running local platform (the embedded AWS over HTTP, real runner subprocesses, the portal)."""

from __future__ import annotations

import json
import time
import urllib.error
from pathlib import Path
from typing import Any, Iterator

import pytest

from jobplane.devserver.dev_platform import DevPlatform
from devkit import signed_in
from portal_kit import start_platform


RATE_JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'partner-poll',
  team: 'growth',
  description: 'Every 15 minutes, counted from when the schedule was created.',
  schedule: 'rate(15 minutes)',
  steps: [jp.python('poll', 'sample_apps.functions:behave', kwargs={ mode: 'ok', seconds: 2 })],
}
"""


SHELL_JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'shell-fail',
  team: 'growth',
  schedule: jp.manual,
  steps: [jp.shell('cleanup', ['sh', '-c', 'echo cleaning; exit 3'])],
}
"""


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("correctness")
    (tmp / "repo" / "jobs" / "growth").mkdir(parents=True)
    (tmp / "repo" / "jobs" / "growth" / "partner-poll.jsonnet").write_text(RATE_JOB)
    (tmp / "repo" / "jobs" / "growth" / "shell-fail.jsonnet").write_text(SHELL_JOB)
    p = start_platform(tmp)
    yield p
    p.stop()


def wait_record(platform: DevPlatform, name: str, timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = platform.control.repo.execution(name)
        if record is not None and record.transitions is not None:
            return record
        time.sleep(0.1)
    raise AssertionError(f"{name} has no final record")


def get(platform: DevPlatform, path: str) -> tuple[int, bytes]:
    try:
        with signed_in(platform.portal_login_url).open(f"{platform.portal_url}{path}", timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_an_execution_started_without_a_name_runs_and_breaks_nothing(platform: DevPlatform) -> None:
    sfn = platform.aws.client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=platform.deployment.state_machine_arn("flaky-load"),
                              input=json.dumps({"trigger": "manual", "scheduled_time": "2027-01-01T00:00:00.000001Z",
                                                "requested_by": "console", "params": {"mode": "ok"},
                                                "resume_from": None, "rerun_of": None}))["executionArn"]
    name = arn.rsplit(":", 1)[1]
    assert name != "None"
    assert wait_record(platform, name).status == "SUCCEEDED"
    assert platform.control.job("flaky-load").running == []
    for path in ("/", "/api/jobs/flaky-load", f"/api/executions/{name}"):
        assert get(platform, path)[0] == 200, path


def test_a_malformed_running_set_reads_as_no_claim() -> None:
    """What the unnamed execution used to leave behind (null in the running set, written by the
    claim before the moto fix) is read as no claim rather than failing every page that lists
    jobs. (moto no longer stores it, so this reads the item shape directly.)"""
    from jobplane.contract.records import JobState

    state = JobState.from_item({"pk": {"S": "JOB#long-wait"}, "sk": {"S": "STATE"}, "job": {"S": "long-wait"},
                                "running": {"SS": [None, "abc"]}})
    assert state.running == frozenset({"abc"})


def full_state_item(job: str) -> dict[str, Any]:
    """A job's state item with every JobState field set, index keys included: what the jobs'
    state query finds for a job that ran, is running, is paused and was blocked."""
    from dataclasses import fields

    from jobplane.contract import datamodel as dm
    from jobplane.contract.records import JobState

    item = {"pk": {"S": f"JOB#{job}"}, "sk": {"S": dm.STATE_SK}, "gsi1pk": {"S": dm.JOBS_PARTITION},
            "gsi1sk": {"S": job}}
    for f in fields(JobState):
        item[f.name] = {"SS": ["run-1", "run-2"]} if f.name == dm.ATTR_RUNNING else \
            {"SS": ["FAILED run-3"]} if f.name == dm.ATTR_SNOOZE_HELD else \
            {"M": {"FAILED": {"N": "2"}}} if f.name == dm.ATTR_SNOOZE_COUNTS else \
            {"N": "3"} if f.name in (dm.ATTR_MISSED_COUNT, dm.ATTR_FIRES_CLAIMS, f"{dm.ATTR_CLAIMS_PREFIX}schedule") else \
            {"BOOL": True} if f.name == dm.ATTR_MISSED_ALERT else \
            {"S": job if f.name == "job" else f"2026-11-30T0{len(f.name) % 10}:00:00.000Z"}
    return item


def test_the_jobs_state_query_reads_every_field_a_state_has(platform: DevPlatform) -> None:
    """The jobs' state query asks for JobState.ATTRIBUTES only: a state with every field set
    (plus what the claim writes beside them) reads the same through it as through GetItem of
    the whole item. A field added to JobState but not to the projection fails here.

    It writes into the module's platform (a second LocalAWS in this process would reset the
    shared in-process moto backend under it) and removes its item after."""
    from dataclasses import fields

    from jobplane.contract.records import JobState
    from jobplane.platform.repository import Repository

    job = "state-query-probe"
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    item = full_state_item(job) | {"fire_schedule": {"S": "false|2026-11-30T01:00:00.000Z"},
                                   "fired_schedule": {"S": "2026-11-30T01:00:00.000Z"}, "block_schedule": {"S": "x"}}
    ddb.put_item(TableName=table, Item=item)
    try:
        repo = Repository(ddb, table)
        [listed] = [s for s in repo.job_states() if s.job == job]
        assert listed == repo.job_state(job)
        assert all(getattr(listed, f.name) != f.default for f in fields(JobState))  # every field was read
    finally:
        ddb.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})


def test_the_jobs_page_reads_less_of_each_state_and_shows_the_same_rows(platform: DevPlatform) -> None:
    """The jobs page reads only portal/job_rows.py's STATE_ATTRIBUTES of each state (by the index,
    or by key for a page's own jobs): read that way, a state with every field set (and again without its acknowledgement, so that it blocks)
    gives the same row as read whole. An attribute a row shows but the list leaves out fails here."""
    from jobplane.contract import datamodel as dm
    from jobplane.platform.control import JobSummary
    from jobplane.platform.repository import Repository
    from jobplane.portal.job_rows import STATE_ATTRIBUTES, JobRow

    job = "state-page-probe"
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    item = full_state_item(job)
    key = {"pk": item["pk"], "sk": item["sk"]}
    entry = next(iter(platform.control.entries.values()))
    repo = Repository(ddb, table)
    try:
        for acknowledged in (True, False):
            ddb.put_item(TableName=table, Item=item if acknowledged else
                         {k: v for k, v in item.items() if k != dm.ATTR_ACKNOWLEDGED_BY})
            [whole] = [s for s in repo.job_states() if s.job == job]
            [listed] = [s for s in repo.job_states(STATE_ATTRIBUTES) if s.job == job]
            # a page of the jobs list reads its own jobs' states by key: the same state
            assert repo.job_states_of([job, "no-such-job"], STATE_ATTRIBUTES) == {job: listed}
            assert repo.job_states_of([job]) == {job: whole}
            assert listed != whole  # the page's read really is narrower...
            assert whole.blocked is not acknowledged and whole.paused and whole.running
            for shown in (False, True):  # ...and shows the same, with or without the failures column
                assert JobRow.of(JobSummary(entry, listed), shown) == JobRow.of(JobSummary(entry, whole), shown)
    finally:
        ddb.delete_item(TableName=table, Key=key)


def test_the_status_filter_read_through_dynamodbs_filter_lists_exactly_what_reading_every_state_lists(
        platform: DevPlatform) -> None:
    """The jobs list filtered by status with a page size asks DynamoDB only for the states that
    may match (reads.py's _jobs_for_status: one partition of an index) and decides them here; without a page size it
    reads every state and decides all of them. Both must list the same jobs for every status,
    a made-up one and malformed states included, and those must be the ones the filter's rule
    names. Probe jobs that exist only in this test's catalog copy, so no other test sees them."""
    from jobplane.contract import datamodel as dm
    from jobplane.platform.control import ControlPlane
    from jobplane.portal.pages import STATUSES

    S = lambda v: {"S": v}  # noqa: E731
    states: dict[str, dict[str, Any]] = {  # job -> its state's attributes; None: no state at all
        "p-none": None,
        "p-failed": {"last_status": S("FAILED")},
        "p-succeeded": {"last_status": S("SUCCEEDED")},
        "p-timed-out": {"last_status": S("TIMED_OUT")},
        "p-running": {"running": {"SS": ["run-1"]}, "last_status": S("FAILED")},
        "p-running-first": {"running": {"SS": ["run-2"]}},
        "p-paused": {"paused_at": S("2026-11-30T01:00:00.000Z"), "last_status": S("SUCCEEDED")},
        "p-paused-never": {"paused_at": S("2026-11-30T01:00:00.000Z")},
        "p-claimed-only": {"fire_schedule": S("false|2026-11-30T01:00:00.000Z")},
        "p-status-a-number": {"last_status": {"N": "3"}},
        "p-paused-a-number": {"paused_at": {"N": "3"}, "last_status": S("FAILED")},
        "p-status-paused": {"last_status": S("PAUSED")},
        "p-status-never-run": {"last_status": S("NEVER_RUN")},
    }
    expected = {"NEVER_RUN": {"p-none", "p-paused-never", "p-claimed-only", "p-status-a-number", "p-status-never-run"},
                "FAILED": {"p-failed", "p-paused-a-number"}, "SUCCEEDED": {"p-succeeded", "p-paused"},
                "TIMED_OUT": {"p-timed-out"}, "RUNNING": {"p-running", "p-running-first"},
                "PAUSED": {"p-paused", "p-paused-never", "p-status-paused"}}
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    control = ControlPlane(platform.deployment)
    template = next(iter(platform.control.entries.values()))
    control.entries = {job: template.model_copy(update={"name": job, "team": "probe"}) for job in states}
    keys = []
    for job, attributes in states.items():
        if attributes is not None:
            keys.append({"pk": S(f"{dm.JOB_PREFIX}{job}"), "sk": S(dm.STATE_SK)})
            ddb.put_item(TableName=table, Item=keys[-1] | {"gsi1pk": S(dm.JOBS_PARTITION), "gsi1sk": S(job),
                                                          "job": S(job), "team": S("probe")} | attributes)
    # states written before the status index existed: a filter by a status a run ends with
    # reads the index, so they are not found until `jobplane index-statuses` files them
    assert [j.name for j in control.job_window(team="probe", status="FAILED", limit=3).jobs] == []
    # filed: a last status, a claim held (RUNNING) or a pause (gsi2 PAUSED)
    ended = {job for job, attributes in states.items()
             if attributes and ("S" in attributes.get("last_status", {}) or "running" in attributes
                                or "paused_at" in attributes)}
    assert sorted(control.repo.index_job_statuses()) == sorted(ended)
    assert control.repo.index_job_statuses() == []  # filed once: nothing the second time
    answered: set[str] = set()  # the probe jobs whose states a Query answered
    control.repo.ddb.meta.events.register(
        "after-call.dynamodb.Query",
        lambda parsed, **_: answered.update(i["job"]["S"] for i in parsed.get("Items", []) if i["job"]["S"] in states))
    with_state = {job for job, attributes in states.items() if attributes is not None}
    try:
        for status in (*STATUSES, "NO-SUCH-STATUS"):
            answered.clear()
            paged = control.job_window(team="probe", status=status, limit=3, offset=0)
            if status != "NEVER_RUN":  # DynamoDB left states out, never one that matches
                assert answered < with_state and expected.get(status, set()) <= answered, (status, answered)
            whole = [j.name for j in control.job_window(team="probe", status=status).jobs]
            assert sorted(whole) == sorted(expected.get(status, set())), status
            shown = [j.name for o in range(0, max(paged.total, 1), 3)
                     for j in control.job_window(team="probe", status=status, limit=3, offset=o).jobs]
            assert (shown, paged.total) == (whole, len(whole)), status
            # a page's rows carry their whole state, read after the filter (not its four attributes)
            assert all(j.state is None or j.state.job == j.name for j in paged.jobs)
        failed = {j.name: j for j in control.job_window(team="probe", status="PAUSED", limit=10).jobs}
        assert failed["p-paused"].state is not None and failed["p-paused"].state.last_status == "SUCCEEDED"
    finally:
        for key in keys:
            ddb.delete_item(TableName=table, Key=key)


def test_a_run_that_ends_files_its_job_under_its_status_and_the_status_filter_reads_that_partition(
        platform: DevPlatform) -> None:
    """Issue 66 item 3: the compiled state machine's release sets the job's last status and its
    place in the status index (gsi3) in one write, so the jobs page filtered by a status reads
    that status's jobs only, not every job's state. A failed run files it under FAILED; the
    next success moves it to SUCCEEDED. (flaky-load is manual: no scheduled run interferes.)"""
    from jobplane.contract import datamodel as dm

    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]

    def filed() -> tuple[str | None, str | None]:
        item = ddb.get_item(TableName=table, Key={"pk": {"S": f"{dm.JOB_PREFIX}flaky-load"}, "sk": {"S": dm.STATE_SK}},
                            ConsistentRead=True)["Item"]
        return item["last_status"]["S"], item.get("gsi3pk", {}).get("S")

    def listed(status: str) -> list[str]:
        return [j.name for j in platform.control.job_window(team="billing", status=status, limit=100).jobs]

    for mode, status in (("fail", "FAILED"), ("ok", "SUCCEEDED")):
        name = platform.control.run_now("flaky-load", "dev@localhost", {"mode": mode})
        assert wait_record(platform, name).status == status
        assert filed() == (status, f"STATUS#{status}")
        assert "flaky-load" in [s.job for s in platform.control.repo.job_states_ended(status)]
        assert "flaky-load" in listed(status)
        assert "flaky-load" not in listed("FAILED" if status == "SUCCEEDED" else "SUCCEEDED")


def test_a_dev_snapshot_saved_before_the_status_index_files_its_states_on_restore(platform: DevPlatform) -> None:
    """`jobplane dev` restores its saved table into a fresh one: a job state saved before the
    status index existed (a last status, no gsi3 keys) is filed under its status as it is put
    back, so the jobs page filtered by that status lists it."""
    from jobplane.contract import datamodel as dm
    from jobplane.devserver.snapshot import Snapshot

    S = lambda v: {"S": v}  # noqa: E731
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    key = {"pk": S(f"{dm.JOB_PREFIX}p-saved-before"), "sk": S(dm.STATE_SK)}
    saved = key | {"gsi1pk": S(dm.JOBS_PARTITION), "gsi1sk": S("p-saved-before"), "job": S("p-saved-before"),
                   "team": S("probe"), "last_status": S("TIMED_OUT")}
    try:
        assert Snapshot([saved]).restore(ddb, table) == 1
        assert "p-saved-before" in [s.job for s in platform.control.repo.job_states_ended("TIMED_OUT")]
    finally:
        ddb.delete_item(TableName=table, Key=key)


def test_a_stopped_attempt_is_shown_as_stopped(platform: DevPlatform, tmp_path) -> None:  # type: ignore[no-untyped-def]
    name = platform.control.run_now("long-wait", "dev@localhost", {"release": str(tmp_path / "never")})
    deadline = time.monotonic() + 300
    while not any(r.outcome == "running" for r in platform.control.execution(name, "long-wait").timeline):
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.1)
    platform.control.stop(name, "dev@localhost", "wrong day")
    record = wait_record(platform, name)
    assert record.status == "ABORTED"
    assert [(r.step, r.outcome) for r in record.timeline] == [("wait", "stopped")]
    status, body = get(platform, f"/api/executions/{name}")
    steps = json.loads(body)["steps"]
    assert status == 200 and [(s["step"], s["outcome"]) for s in steps] == [("wait", "stopped")]


def test_the_next_fire_of_a_rate_job_is_counted_from_its_schedule(platform: DevPlatform) -> None:
    """Issue 17: status and the API showed now + 15 min for rate(15 minutes); EventBridge
    Scheduler (and the local scheduler) count from the schedule's start."""
    from datetime import datetime, timedelta, timezone

    schedule = platform.aws.client("scheduler").get_schedule(Name="jp-partner-poll", GroupName="jp")
    start = schedule.get("StartDate") or schedule["CreationDate"]
    status, body = get(platform, "/api/jobs/partner-poll")
    fires = [datetime.fromisoformat(t) for t in json.loads(body)["next_fires"]]
    now = datetime.now(timezone.utc)
    assert status == 200 and len(fires) == 5
    for t in fires:
        assert (t - start) % timedelta(minutes=15) == timedelta(0), (t, start)
    assert now < fires[0] <= now + timedelta(minutes=15)
    assert fires[1] - fires[0] == timedelta(minutes=15)


def test_status_shows_a_utc_time_once(platform: DevPlatform) -> None:
    from click.testing import CliRunner

    from jobplane.cli import main

    out = CliRunner().invoke(main, ["--root", str(platform.config.root), "status", "--data-dir", str(platform.data_dir)])
    assert out.exit_code == 0, out.output
    poll = next(line for line in out.output.splitlines() if line.startswith("partner-poll"))
    other = next(line for line in out.output.splitlines() if line.startswith("other-team"))
    assert poll.count("UTC") == 1, poll  # a UTC job: "11:30 UTC", not "11:30 UTC (11:30 UTC)"
    assert "UTC)" in other and ("EST" in other or "EDT" in other), other  # another zone: both


def test_the_job_page_shows_steps_as_written(platform: DevPlatform) -> None:
    status, body = get(platform, "/jobs/partner-poll")
    page = body.decode()
    assert status == 200
    assert "sample_apps.functions:behave(mode=&#34;ok&#34;, seconds=2)" in page or \
        'sample_apps.functions:behave(mode="ok", seconds=2)' in page
    assert "{&#39;kind&#39;" not in page and "{'kind'" not in page  # not a Python dict
    assert "86400" not in page and "1 d" in page  # the default job timeout, in words
    assert "no retry" in page


def test_a_failed_shell_step_says_its_exit_code_once(platform: DevPlatform, tmp_path: Path) -> None:
    """Issue 17: the alert read "error: error: command exited with status 3" and `jobplane run`
    did not print the exit code. The job is growth's, so the command runs as a growth member
    (`[dev] dev_user`): it obeys the team rule as the portal does (issue 47 item 4)."""
    from click.testing import CliRunner

    from jobplane.cli import main
    from jobplane.platform.notifier import console_text
    from jobplane.contract.notifications import NotificationMessage, Outcome

    toml = (platform.config.root / "jobplane.toml").read_text()
    (tmp_path / "jobplane.toml").write_text(toml.replace('dev_user = "dev@localhost"', 'dev_user = "ben@example.com"'))
    out = CliRunner().invoke(main, ["--root", str(tmp_path), "run", "shell-fail",
                                    "--data-dir", str(platform.data_dir)])
    assert out.exit_code == 1
    assert "FAILED at cleanup (exit code 3): command exited with status 3" in out.output, out.output
    name = out.output.split("started shell-fail: ")[1].split()[0]
    view = platform.control.execution(name)
    assert view.error == "command exited with status 3"
    message = NotificationMessage(version=1, event="FAILED", job="shell-fail", team="growth", execution=name,
                                  execution_arn=view.execution_arn, outcome=Outcome(status="FAILED", step="cleanup"),
                                  channels=[], error=view.error)
    assert "  error: command exited with status 3" in console_text(message, "#growth-alerts", "")
