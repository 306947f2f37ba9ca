"""The jobs page's status filters read one partition of an index each, never every job's state
(issue 66 item 3), and list exactly the jobs a scan of every state decides: on a running local
platform (the embedded AWS over HTTP, real runner subprocesses for the runs)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from jobplane.contract import datamodel as dm
from jobplane.contract.records import JobState
from jobplane.devserver.dev_platform import DevPlatform
from jobplane.platform.control import ControlPlane
from jobplane.platform.control.reads import _status_matches
from jobplane.portal.pages import STATUSES
from portal_kit import start_platform

#: Runs may overlap (ALWAYS_RUN); each waits for its own release file.
OVERLAP_JOB = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'overlap-wait',
  team: 'growth',
  schedule: jp.manual,
  policy: jp.policy.ALWAYS_RUN,
  params: { mode: 'wait', release: null, seconds: 120 },
  steps: [jp.python('wait', 'sample_apps.functions:behave')],
}
"""

S = lambda v: {"S": v}  # noqa: E731


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevPlatform]:
    tmp = tmp_path_factory.mktemp("status-filters")
    (tmp / "repo" / "jobs" / "growth").mkdir(parents=True)
    (tmp / "repo" / "jobs" / "growth" / "overlap-wait.jsonnet").write_text(OVERLAP_JOB)
    p = start_platform(tmp)
    yield p
    p.stop()


def wait_for(predicate: Any, what: str, timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


#: job -> its state's attributes as the platform's writers leave them (None: no state at all):
#: a claim files the job under RUNNING, a run's end under its status (contract/items.py
#: release_job), a pause in gsi2 PAUSED (Repository.set_paused).
RUNNING_FILED = {"gsi3pk": S("STATUS#RUNNING")}
PAUSED_FILED = {"paused_at": S("2026-11-30T01:00:00.000Z"), "gsi2pk": S("PAUSED")}
STATES: dict[str, dict[str, Any] | None] = {
    "q-none": None,
    "q-failed": {"last_status": S("FAILED"), "gsi3pk": S("STATUS#FAILED")},
    "q-succeeded": {"last_status": S("SUCCEEDED"), "gsi3pk": S("STATUS#SUCCEEDED")},
    "q-timed-out": {"last_status": S("TIMED_OUT"), "gsi3pk": S("STATUS#TIMED_OUT")},
    "q-aborted": {"last_status": S("ABORTED"), "gsi3pk": S("STATUS#ABORTED")},
    "q-skipped": {"last_status": S("SKIPPED"), "gsi3pk": S("STATUS#SKIPPED")},
    "q-missed": {"last_status": S("MISSED"), "gsi3pk": S("STATUS#MISSED")},
    "q-running": {"running": {"SS": ["run-1"]}, "last_status": S("FAILED")} | RUNNING_FILED,
    "q-running-first": {"running": {"SS": ["run-2"]}} | RUNNING_FILED,
    "q-running-paused": {"running": {"SS": ["run-3"]}, "last_status": S("SUCCEEDED")} | RUNNING_FILED | PAUSED_FILED,
    # a dead first run's claim dropped, not filed back yet: decided by its state (never run)
    "q-claim-dropped": {"fire_schedule": S("false|2026-11-30T01:00:00.000Z")} | RUNNING_FILED,
    "q-paused": {"last_status": S("SUCCEEDED"), "gsi3pk": S("STATUS#SUCCEEDED")} | PAUSED_FILED,
    "q-paused-never": dict(PAUSED_FILED),
    "q-claimed-only": {"fire_schedule": S("false|2026-11-30T01:00:00.000Z")},
    # a hand-made last status that reads as never run, filed where index-statuses files it
    "q-status-never-run": {"last_status": S("NEVER_RUN"), "gsi3pk": S("STATUS#NEVER_RUN")},
}
EXPECTED = {"NEVER_RUN": {"q-none", "q-claim-dropped", "q-paused-never", "q-claimed-only", "q-status-never-run"},
            "FAILED": {"q-failed"}, "SUCCEEDED": {"q-succeeded", "q-paused"}, "TIMED_OUT": {"q-timed-out"},
            "ABORTED": {"q-aborted"}, "SKIPPED": {"q-skipped"}, "MISSED": {"q-missed"},
            "RUNNING": {"q-running", "q-running-first", "q-running-paused"},
            "PAUSED": {"q-paused", "q-paused-never", "q-running-paused"}}


@pytest.fixture()
def probes(platform: DevPlatform) -> Iterator[ControlPlane]:
    """A control plane whose catalog is the probe jobs alone, their states written."""
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    control = ControlPlane(platform.deployment)
    template = next(iter(platform.control.entries.values()))
    control.entries = {job: template.model_copy(update={"name": job, "team": "probe"}) for job in STATES}
    keys = []
    for job, attributes in STATES.items():
        if attributes is not None:
            keys.append({"pk": S(f"{dm.JOB_PREFIX}{job}"), "sk": S(dm.STATE_SK)})
            filed = {k: v for k, v in attributes.items() if k in ("gsi2pk", "gsi3pk")}
            index_sk = {k.replace("pk", "sk"): S(job) for k in filed}
            ddb.put_item(TableName=table, Item=keys[-1] | {"gsi1pk": S(dm.JOBS_PARTITION), "gsi1sk": S(job),
                                                          "job": S(job), "team": S("probe")} | attributes | index_sk)
    try:
        yield control
    finally:
        for key in keys:
            ddb.delete_item(TableName=table, Key=key)


def scanned(platform: DevPlatform, status: str) -> set[str]:
    """The probe jobs a Scan of every item decides for ``status`` (a job without an item: none)."""
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    states: dict[str, JobState] = {}
    for page in ddb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for item in page["Items"]:
            if item["sk"]["S"] == dm.STATE_SK and item.get("job", {}).get("S") in STATES:
                states[item["job"]["S"]] = JobState.from_item(item)
    return {job for job in STATES if _status_matches(states.get(job), status)}


def test_each_status_filter_lists_exactly_the_jobs_a_scan_of_every_state_decides(
        platform: DevPlatform, probes: ControlPlane) -> None:
    for status in (*STATUSES, "NO-SUCH-STATUS"):
        paged = probes.job_window(team="probe", status=status, limit=2, offset=0)
        shown = [j.name for o in range(0, max(paged.total, 1), 2)
                 for j in probes.job_window(team="probe", status=status, limit=2, offset=o).jobs]
        assert set(shown) == scanned(platform, status) == EXPECTED.get(status, set()), status
        assert paged.total == len(shown) == len(set(shown)), status
        # and as the list without a page size reads it: every state, decided here
        assert [j.name for j in probes.job_window(team="probe", status=status).jobs] == shown, status


def test_each_status_filter_queries_one_partition_of_an_index_never_every_state(
        platform: DevPlatform, probes: ControlPlane) -> None:
    """Counted at the client: a filtered page makes no Scan and no Query of every job's state
    (gsi1 ``JOBS``); the RUNNING, PAUSED and NEVER_RUN filters used to query every state through
    a filter expression."""
    calls: list[tuple[str, str | None, str | None]] = []

    def count(model: Any, params: dict[str, Any], **_: Any) -> None:
        values = params.get("ExpressionAttributeValues") or {}
        calls.append((model.name, params.get("IndexName"), (values.get(":v") or {}).get("S")))

    probes.repo.ddb.meta.events.register("before-parameter-build.dynamodb", count)
    for status in STATUSES:
        calls.clear()
        probes.job_window(team="probe", status=status, limit=2, offset=0)
        assert calls, status
        assert all(op in ("Query", "BatchGetItem") for op, _, _ in calls), (status, calls)
        assert (dm.GSI_BY_OWNER, dm.JOBS_PARTITION) not in [(i, v) for _, i, v in calls], (status, calls)
        queried = {(i, v) for op, i, v in calls if op == "Query"}
        if status == "PAUSED":
            assert queried == {(dm.GSI_BY_KIND, "PAUSED"), (dm.GSI_BY_STATUS, "STATUS#PAUSED")}
        elif status != "NEVER_RUN":
            assert queried == {(dm.GSI_BY_STATUS, dm.status_partition(status))}, (status, calls)


def test_index_statuses_files_states_written_before_the_index_as_their_writers_would(
        platform: DevPlatform) -> None:
    """`jobplane index-statuses` (docs/deploy.md) files a state written before the index, or
    before it filed running and paused jobs: the filters list them after, and a second pass
    files nothing."""
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    control = ControlPlane(platform.deployment)
    template = next(iter(platform.control.entries.values()))
    old = {"o-running": {"running": {"SS": ["r"]}, "last_status": S("FAILED")},
           "o-paused": {"paused_at": S("2026-11-30T01:00:00.000Z"), "last_status": S("SUCCEEDED")},
           "o-failed": {"last_status": S("FAILED")}, "o-nothing": {}}
    control.entries = {job: template.model_copy(update={"name": job, "team": "probe-old"}) for job in old}
    keys = [{"pk": S(f"{dm.JOB_PREFIX}{job}"), "sk": S(dm.STATE_SK)} for job in old]
    try:
        for key, (job, attributes) in zip(keys, old.items()):
            ddb.put_item(TableName=table, Item=key | {"gsi1pk": S(dm.JOBS_PARTITION), "gsi1sk": S(job),
                                                     "job": S(job)} | attributes)
        assert sorted(control.repo.index_job_statuses()) == ["o-failed", "o-paused", "o-running"]
        assert control.repo.index_job_statuses() == []
        for status, jobs in (("RUNNING", ["o-running"]), ("PAUSED", ["o-paused"]), ("FAILED", ["o-failed"]),
                             ("SUCCEEDED", ["o-paused"]), ("NEVER_RUN", ["o-nothing"])):
            assert [j.name for j in control.job_window(team="probe-old", status=status, limit=10).jobs] == jobs
    finally:
        for key in keys:
            ddb.delete_item(TableName=table, Key=key)


def test_a_claim_files_its_job_under_running_and_a_run_ending_beside_another_leaves_it_there(
        platform: DevPlatform, tmp_path: Path) -> None:
    """The compiled claim files the job under RUNNING; runs of an ALWAYS_RUN job overlap, and
    the first to end files the job under its status while the other still holds the claim (one
    update cannot ask whether it leaves ``running`` empty): the reconciler, handling that end,
    files it back under RUNNING. The last run's end files it under its status."""
    job, control = "overlap-wait", platform.control

    def listed(status: str) -> list[str]:
        return [j.name for j in control.job_window(team="growth", status=status, limit=100).jobs]

    def filed() -> str | None:
        item = platform.aws.client("dynamodb").get_item(
            TableName=platform.aws.resources["table_name"], ConsistentRead=True,
            Key={"pk": S(dm.job_partition(job)), "sk": S(dm.STATE_SK)}).get("Item") or {}
        return item.get(dm.ATTR_STATUS_PK, {}).get("S")

    def ended(name: str) -> Any:  # its record, completed by the reconciler
        return wait_for(lambda: (r := control.repo.execution(name)) is not None and r.transitions is not None and r,
                        f"{name}'s record")

    first = control.run_now(job, "dev@localhost", {"release": str(tmp_path / "first")})
    wait_for(lambda: (s := control.repo.job_state(job)) is not None and first in s.running, "the first claim")
    assert filed() == "STATUS#RUNNING" and job in listed("RUNNING") and job not in listed("NEVER_RUN")
    second = control.run_now(job, "dev@localhost", {"release": str(tmp_path / "second")})
    wait_for(lambda: (s := control.repo.job_state(job)) is not None and second in s.running, "the second claim")
    (tmp_path / "first").write_text("")
    assert ended(first).status == "SUCCEEDED"
    state = control.repo.job_state(job)
    assert state is not None and state.running == {second} and state.last_status == "SUCCEEDED"
    assert filed() == "STATUS#RUNNING"
    assert job in listed("RUNNING") and job not in listed("SUCCEEDED")
    (tmp_path / "second").write_text("")
    assert ended(second).status == "SUCCEEDED"
    assert filed() == "STATUS#SUCCEEDED"
    assert job in listed("SUCCEEDED") and job not in listed("RUNNING")


def test_a_filter_by_an_ended_status_builds_a_state_only_for_the_jobs_of_its_page(
        platform: DevPlatform, probes: ControlPlane, monkeypatch: pytest.MonkeyPatch) -> None:
    """The jobs filed under a status a run ends with are decided from their names and ``running``
    alone; a state is built only for the page's own jobs (at 5,000 jobs, one for each of
    SUCCEEDED's ~4,400 filed jobs, then a copy of each, was half of that page: bench/portal.py).
    Counted where states are built, so the page's answer is still the one checked above."""
    built: list[str] = []
    from_item = JobState.from_item

    def counted(item: dict[str, Any]) -> JobState:
        state = from_item(item)
        built.append(state.job)
        return state

    monkeypatch.setattr(JobState, "from_item", staticmethod(counted))
    for status, page_size in (("SUCCEEDED", 1), ("FAILED", 1), ("SUCCEEDED", 2)):
        built.clear()
        window = probes.job_window(team="probe", status=status, limit=page_size)
        shown = [j.name for j in window.jobs]
        assert window.total == len(EXPECTED[status]) and set(shown) <= EXPECTED[status], (status, shown)
        assert sorted(built) == sorted(shown), (status, built)


#: States of jobs no longer in the catalog (a job's state stays when the job is removed): filed
#: as their writers left them, so an index count of their status includes them.
GONE: dict[str, dict[str, Any]] = {
    "gone-succeeded": {"last_status": S("SUCCEEDED"), "gsi3pk": S("STATUS#SUCCEEDED")},
    "gone-failed": {"last_status": S("FAILED"), "gsi3pk": S("STATUS#FAILED")},
    "gone-running": {"running": {"SS": ["run-9"]}, "last_status": S("SUCCEEDED")} | RUNNING_FILED,
}


@pytest.fixture()
def whole(platform: DevPlatform, probes: ControlPlane) -> Iterator[ControlPlane]:
    """The probe jobs as the whole catalog, beside the states of jobs gone from it, with the
    read in the page's order taken at any size (Reads.NAMES_MAX: at 5,000 jobs it is taken for a
    status more than 1,000 jobs are filed under)."""
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    keys = [{"pk": S(f"{dm.JOB_PREFIX}{job}"), "sk": S(dm.STATE_SK)} for job in GONE]
    for key, (job, attributes) in zip(keys, GONE.items()):
        ddb.put_item(TableName=table, Item=key | {"gsi1pk": S(dm.JOBS_PARTITION), "gsi1sk": S(job), "job": S(job),
                                                 "gsi3sk": S(job)} | attributes)
    probes.reads.NAMES_MAX, probes.reads.WALK_MAX = 0, 10_000  # type: ignore[misc]
    try:
        yield probes
    finally:
        for key in keys:
            ddb.delete_item(TableName=table, Key=key)


def count_reads(control: ControlPlane) -> list[tuple[str, str | None, str | None, str | None]]:
    """Every DynamoDB call the control plane makes from now on: (operation, index, the key
    condition's value, Select)."""
    calls: list[tuple[str, str | None, str | None, str | None]] = []

    def count(model: Any, params: dict[str, Any], **_: Any) -> None:
        values = params.get("ExpressionAttributeValues") or {}
        calls.append((model.name, params.get("IndexName"), (values.get(":v") or {}).get("S"), params.get("Select")))

    control.repo.ddb.meta.events.register("before-parameter-build.dynamodb", count)
    return calls


def test_the_status_filter_alone_reads_a_page_in_order_and_counts_the_rest_listing_what_a_scan_decides(
        platform: DevPlatform, whole: ControlPlane) -> None:
    """Issue 66 item 3: the jobs page filtered by a status most jobs have (SUCCEEDED at 5,000
    jobs: ~4,400 filed) read every name filed under it. With the filter alone, the count is
    DynamoDB's (Select=COUNT) less the jobs gone from the catalog, and the page's jobs are found
    by reading the catalog's states in the page's order: every page of every size lists what a
    scan of every state decides, and no item filed under the status is read from the index."""
    calls = count_reads(whole)
    for status in (*STATUSES, "NO-SUCH-STATUS"):
        expected = scanned(platform, status)
        assert expected == EXPECTED.get(status, set()), status
        for size in (1, 2, 3, 100):
            calls.clear()
            first = whole.job_window(status=status, limit=size, offset=0)
            pages = [first] + [whole.job_window(status=status, limit=size, offset=o)
                               for o in range(size, max(first.total, 1), size)]
            shown = [j.name for p in pages for j in p.jobs]
            assert set(shown) == expected and len(shown) == len(expected) == first.total, (status, size, shown)
            assert shown == [j.name for j in whole.job_window(status=status).jobs], (status, size)  # the same order
            if status in ("SUCCEEDED", "FAILED"):
                read = [c for c in calls if c[0] == "Query" and c[3] != "COUNT" and c[2] == dm.status_partition(status)]
                assert not read, (status, size, calls)
        # a page past the end, kept on the last page (a link kept while jobs went away; none: as asked)
        last = whole.job_window(status=status, limit=1, offset=50, last_page_if_beyond=True)
        assert last.offset == (len(expected) - 1 if expected else 50) and len(last.jobs) == min(len(expected), 1), status


def test_the_never_run_filter_reads_no_filed_name_once_it_knows_which_jobs_may_never_have_run(
        platform: DevPlatform, whole: ControlPlane) -> None:
    """NEVER_RUN read the names of every job filed under any status (at 5,000 jobs ~4,900) on
    each view. A job with a last status never loses it, so the jobs that may never have run are
    read once and each view decides those by their states (one BatchGetItem per 100): a job
    that ends its first run meanwhile drops out, and one whose first claim is dropped is
    listed again."""
    ddb, table = platform.aws.client("dynamodb"), platform.aws.resources["table_name"]
    assert {j.name for j in whole.job_window(status="NEVER_RUN", limit=100).jobs} == EXPECTED["NEVER_RUN"]
    calls = count_reads(whole)
    key = {"pk": S(f"{dm.JOB_PREFIX}q-claimed-only"), "sk": S(dm.STATE_SK)}
    ddb.update_item(TableName=table, Key=key, UpdateExpression="SET last_status = :s, gsi3pk = :p, gsi3sk = :j",
                    ExpressionAttributeValues={":s": S("SUCCEEDED"), ":p": S("STATUS#SUCCEEDED"), ":j": S("q-claimed-only")})
    ddb.update_item(TableName=table, Key={"pk": S(f"{dm.JOB_PREFIX}q-running-first"), "sk": S(dm.STATE_SK)},
                    UpdateExpression="REMOVE #r", ExpressionAttributeNames={"#r": "running"})
    window = whole.job_window(status="NEVER_RUN", limit=100)
    assert {j.name for j in window.jobs} == scanned(platform, "NEVER_RUN") == (
        EXPECTED["NEVER_RUN"] - {"q-claimed-only"} | {"q-running-first"})
    assert window.total == len(window.jobs)
    assert calls and {op for op, _, _, _ in calls} == {"BatchGetItem"}, calls
