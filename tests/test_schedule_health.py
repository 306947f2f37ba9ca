"""A calendar job's deployed schedules, read for every view of its page and every `jobplane
status`: one ListSchedules a view once each was read, GetSchedule only for what changed, and the
same answer as reading each (platform/schedule_health.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from jobplane.contract.catalog import CatalogJob
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.schedule_health import DeployedSchedules, deployed_schedules, schedule_problems

GROUP = "jp"


def job(name: str, schedules: int) -> CatalogJob:
    return CatalogJob(name=name, team="billing", schedule=[f"cron({i} 9 * * ? *)" for i in range(schedules)],
                      timezone="Asia/Tokyo", policy="ALWAYS_RUN", timeout=60, steps=[], state_machine=f"{GROUP}-{name}",
                      asl="", states=0)


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAWS]:
    with LocalAWS() as local:
        scheduler = local.client("scheduler")
        scheduler.create_schedule_group(Name=GROUP)
        # payday's five, payday-x's one (its name prefix lists it too), nightly's two
        for name, entry in (("payday", job("payday", 5)), ("payday-x", job("payday-x", 1)),
                            ("nightly", job("nightly", 2))):
            for i, expression in enumerate(entry.schedule):
                scheduler.create_schedule(
                    Name=f"{GROUP}-{name}" if i == 0 else f"{GROUP}-{name}-{i + 1}", GroupName=GROUP,
                    ScheduleExpression=expression, ScheduleExpressionTimezone=entry.timezone,
                    FlexibleTimeWindow={"Mode": "OFF"},
                    Target={"Arn": f"arn:aws:states:us-east-1:123456789012:stateMachine:{GROUP}-{name}",
                            "RoleArn": "arn:aws:iam::123456789012:role/jp-billing-scheduler-00000000-1"})
        yield local


def counted(scheduler: Any) -> Counter[str]:
    calls: Counter[str] = Counter()
    scheduler.meta.events.register("before-call.scheduler.*",
                                   lambda model, **_: calls.update([model.name]))
    return calls


def test_a_job_of_many_schedules_is_listed_once_a_view_and_read_only_where_changed(aws: LocalAWS) -> None:
    scheduler = aws.client("scheduler")
    calls, payday = counted(scheduler), job("payday", 5)
    reader = DeployedSchedules(scheduler, GROUP)
    first = reader.of(payday)
    assert calls == {"ListSchedules": 1, "GetSchedule": 5}
    assert first == deployed_schedules(aws.client("scheduler"), GROUP, payday)  # as reading each
    assert all(s is not None and s["ScheduleExpression"] == e for s, e in zip(first.values(), payday.schedule))
    calls.clear()
    assert reader.of(payday) == first
    assert calls == {"ListSchedules": 1}  # nothing changed: nothing read again
    # changed outside jobplane: one DISABLED, one deleted
    changed = scheduler.get_schedule(Name="jp-payday-3", GroupName=GROUP)
    scheduler.update_schedule(Name="jp-payday-3", GroupName=GROUP, ScheduleExpression=changed["ScheduleExpression"],
                              ScheduleExpressionTimezone=changed["ScheduleExpressionTimezone"],
                              FlexibleTimeWindow={"Mode": "OFF"}, Target=changed["Target"], State="DISABLED")
    scheduler.delete_schedule(Name="jp-payday-5", GroupName=GROUP)
    calls.clear()
    now = reader.of(payday)
    assert calls == {"ListSchedules": 1, "GetSchedule": 1}  # the DISABLED one, read again
    assert now["jp-payday-3"] is not None and now["jp-payday-3"]["State"] == "DISABLED"
    assert now["jp-payday-5"] is None
    assert now == deployed_schedules(aws.client("scheduler"), GROUP, payday)
    problems = schedule_problems(scheduler, GROUP, payday, False, now)
    assert set(problems) == {"jp-payday-3", "jp-payday-5"}
    assert "DISABLED outside jobplane" in problems["jp-payday-3"] and "is missing" in problems["jp-payday-5"]


def test_a_job_of_few_schedules_is_read_directly(aws: LocalAWS) -> None:
    """Its name prefix may list many other jobs' schedules (nightly-*): two GetSchedule are less."""
    scheduler = aws.client("scheduler")
    calls, nightly = counted(scheduler), job("nightly", 2)
    found = DeployedSchedules(scheduler, GROUP).of(nightly)
    assert calls == {"GetSchedule": 2}
    assert [s["Name"] for s in found.values() if s] == ["jp-nightly", "jp-nightly-2"]


def test_the_portal_role_allows_the_reads_and_needs_its_list_right(aws: LocalAWS) -> None:
    """The portal and the operator CLI read a job's schedules through the control plane: the base
    module's portal role (and the operator policy, which holds its statements) must allow each
    call, and its ListSchedules statement is needed by them (the examples have no calendar job:
    tests/test_cli_aws.py leaves it to this test)."""
    import base_module as bm
    from iam_calls import CALENDAR_STATEMENTS, calls_into, iam_calls
    from iam_policy import denied_calls

    recorded: list[dict[str, Any]] = []
    with calls_into(recorded):
        DeployedSchedules(aws.client("scheduler"), GROUP).of(job("payday", 5))
    calls = iam_calls(recorded)
    assert {c.action for c in calls} == {"scheduler:ListSchedules", "scheduler:GetSchedule"}
    for policy in ("portal", "operator"):
        assert denied_calls(bm.policy_statements(policy, {"name_prefix": GROUP}), calls) == [], policy
    statements = bm.policy_statements("portal", {"name_prefix": GROUP})
    needed = [s for s in statements if s.get("sid") in CALENDAR_STATEMENTS]
    assert needed
    for statement in needed:
        assert denied_calls([s for s in statements if s is not statement], calls), statement.get("sid")
