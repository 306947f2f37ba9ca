"""The timeline's kept days (portal/timeline_days.py) on the local engine's DynamoDB: a kept day
is what reading the whole day answers, after every way a run of it is noted (a run of the day
ending, the same run noted again with its end), read again only where the day's counters moved;
its memory is bounded; a day written before the counters is read whole and not kept."""

from __future__ import annotations

from collections import Counter
from typing import Iterator

import pytest

from jobplane.contract import run_days
from jobplane.contract.records import ExecutionRecord
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.run_history import RunHistory
from jobplane.portal.timeline_days import DayCache

DAY = "2026-03-02"


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAWS]:
    with LocalAWS() as local:
        yield local


@pytest.fixture
def history(aws: LocalAWS) -> Iterator[tuple[RunHistory, list[tuple[str, object]]]]:
    """The run history over the engine's table, and the DynamoDB calls made through it."""
    ddb = aws.client("dynamodb")
    calls: list[tuple[str, object]] = []

    def record(model, params, **_):  # type: ignore[no-untyped-def]
        calls.append((model.name, params))

    ddb.meta.events.register("before-parameter-build.dynamodb", record)
    yield RunHistory(ddb, aws.resources["table_name"]), calls


def run(n: int, day: str = DAY, hour: int = 2, status: str = "SUCCEEDED", ended: bool = True,
        job: str | None = None) -> ExecutionRecord:
    started = f"{day}T{hour:02d}:{n % 60:02d}:00.000Z"
    return ExecutionRecord(execution=f"{day}-run-{n:04d}", job=job or f"job-{n % 7}", team="billing", status=status,
                           started_at=started, finished_at=f"{day}T{hour:02d}:{n % 60:02d}:30.000Z" if ended else None,
                           scheduled_time=started, expires_at=2_000_000_000)


def day_keys_read(calls: list[tuple[str, object]]) -> list[str]:
    """The sort keys of the day's items the calls read."""
    return [k["sk"]["S"] for name, p in calls if name == "BatchGetItem"
            for t in p["RequestItems"].values() for k in t["Keys"]]  # type: ignore[index]


def test_a_kept_day_is_the_whole_day_after_each_run_of_it_ends_reading_only_what_moved(
        history: tuple[RunHistory, list[tuple[str, object]]]) -> None:
    h, calls = history
    for n in range(40):
        h.note_day(run(n, hour=n % 24))
    cache = DayCache()
    assert cache.day(h, DAY).runs == h.day(DAY) and len(h.day(DAY)) == 40
    calls.clear()
    assert cache.day(h, DAY).runs == h.day(DAY)  # unchanged: the counters alone
    assert [name for name, _ in calls[:1]] == ["GetItem"] and day_keys_read(calls[:1]) == []
    # a run of the day ends (hours later: it started at 05:00)
    late = run(100, hour=5, status="FAILED")
    h.note_day(late)
    calls.clear()
    kept = cache.day(h, DAY)
    assert day_keys_read(calls) == [run_days.day_sk(late.job, late.started_at or "")]  # only its item again
    assert late.execution in {r.execution: r for r in kept.runs} and kept.runs == h.day(DAY)
    # the same run noted again, now with its end (noted first without one): the line with its end
    open_run = run(101, hour=7, ended=False)
    h.note_day(open_run)
    assert next(r for r in cache.day(h, DAY).runs if r.execution == open_run.execution).finished_at is None
    h.note_day(run(101, hour=7, status="TIMED_OUT"))
    drawn = next(r for r in cache.day(h, DAY).runs if r.execution == open_run.execution)
    assert (drawn.status, drawn.finished_at) == ("TIMED_OUT", f"{DAY}T07:41:30.000Z")
    assert cache.day(h, DAY).runs == h.day(DAY)
    # what a view worked out of the day is worked out again once the day changed
    kept = cache.day(h, DAY)
    assert kept.derived("count", len) == len(kept.runs)
    h.note_day(run(102, hour=9))
    assert cache.day(h, DAY).derived("count", len) == len(kept.runs) + 1


def test_memory_is_bounded_by_days_and_runs(history: tuple[RunHistory, list[tuple[str, object]]]) -> None:
    h, _ = history
    days = [f"2026-04-0{d}" for d in range(1, 5)]
    for d, day in enumerate(days):
        for n in range(10 * (d + 1)):  # 10, 20, 30, 40 runs
            h.note_day(run(n, day=day))
    cache = DayCache(days=2, runs=50)
    for day in days[:3]:
        assert cache.day(h, day).runs == h.day(day)
    assert cache.kept() == {days[1]: 20, days[2]: 30}  # two days at most, the least recently viewed gone
    cache.day(h, days[1])  # viewed again: the most recent
    assert cache.day(h, days[3]).runs == h.day(days[3])
    assert cache.kept() == {days[3]: 40}  # 20 + 40 or 30 + 40 is over 50 runs: the older go
    small = DayCache(days=8, runs=35)
    assert small.day(h, days[3]).runs == h.day(days[3]) and small.kept() == {}  # a day over the bound: not kept


def test_a_day_noted_before_the_counters_is_read_whole_and_not_kept(
        history: tuple[RunHistory, list[tuple[str, object]]]) -> None:
    h, calls = history
    day = "2026-05-01"
    line = run(1, day=day)
    # as note_day wrote before the counters: the line alone
    h.ddb.update_item(TableName=h.table, Key={"pk": {"S": run_days.day_pk(day)},
                                              "sk": {"S": run_days.day_sk(line.job, line.started_at or "")}},
                      UpdateExpression="ADD #l :one", ExpressionAttributeNames={"#l": run_days.ATTR_LINES},
                      ExpressionAttributeValues={":one": {"SS": [run_days.DayRun(
                          line.execution, line.job, line.team, line.status, line.started_at or "",
                          line.finished_at).to_json()]}})
    cache = DayCache()
    for _ in range(2):
        calls.clear()
        assert [r.execution for r in cache.day(h, day).runs] == [line.execution]
        assert len(day_keys_read(calls)) == len(run_days.day_keys(day))  # every item, each view
    assert cache.kept() == {}


def test_a_kept_day_is_read_whole_again_after_its_age(history: tuple[RunHistory, list[tuple[str, object]]]) -> None:
    """An item that goes without moving a counter (TTL deletes it) is not drawn past MAX_AGE."""
    h, calls = history
    day = "2026-06-01"
    gone, kept_run = run(1, day=day, hour=1), run(2, day=day, hour=20)
    h.note_day(gone)
    h.note_day(kept_run)
    now = [0.0]
    cache = DayCache(max_age=60, clock=lambda: now[0])
    assert {r.execution for r in cache.day(h, day).runs} == {gone.execution, kept_run.execution}
    h.ddb.delete_item(TableName=h.table, Key={"pk": {"S": run_days.day_pk(day)},
                                              "sk": {"S": run_days.day_sk(gone.job, gone.started_at or "")}})
    now[0] = 59
    assert {r.execution for r in cache.day(h, day).runs} == {gone.execution, kept_run.execution}
    now[0] = 61
    calls.clear()
    assert {r.execution for r in cache.day(h, day).runs} == {kept_run.execution}
    assert Counter(day_keys_read(calls)) == Counter(run_days.day_sks())
