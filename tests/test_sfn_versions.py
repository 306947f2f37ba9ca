"""The Step Functions versions of the jobs' state machines (issue 69 part 1): which are pruned
before the 1,000 a state machine may hold (platform/sfn_versions.py), on the local engine's
Step Functions (moto with the ``sfn_versions`` patch), and what IAM the periodic pass needs."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from jobplane.platform.sfn_versions import PRUNE_ABOVE, Version, VersionPruning, to_delete

ROLE = "arn:aws:iam::123456789012:role/r"


def held(n: int, now: datetime, days_apart: float = 1.0) -> list[Version]:
    """``n`` versions, newest first, one every ``days_apart`` days back from ``now``."""
    return [Version(f"arn:aws:states:us-east-1:123456789012:stateMachine:m:{n - i}", now - timedelta(days=i * days_apart))
            for i in range(n)]


def test_nothing_is_pruned_up_to_the_threshold_then_all_but_what_a_run_may_need() -> None:
    now = datetime(2027, 1, 1, tzinfo=timezone.utc)
    assert to_delete(held(PRUNE_ABOVE, now), set(), now - timedelta(days=400)) == []
    versions = held(PRUNE_ABOVE + 50, now)  # one a day: 950 days of deploys
    running = {versions[-1].arn}  # the oldest still has a run going
    gone = to_delete(versions, running, now - timedelta(days=400))
    kept = {v.arn for v in versions} - set(gone)
    assert versions[-1].arn in kept  # a running execution's version stays
    assert {v.arn for v in versions[:100]} <= kept  # the newest
    # what a run of the last 400 days could have run: each published since, and the one before
    assert {v.arn for v in versions[:401]} <= kept and versions[401].arn in kept and versions[402].arn not in kept
    assert len(kept) == 403 and gone == sorted(gone, key=lambda a: int(a.rsplit(":", 1)[1]))  # oldest first


def test_past_the_threshold_even_rerunnable_versions_go_oldest_first_but_never_a_running_one() -> None:
    now = datetime(2027, 1, 1, tzinfo=timezone.utc)
    versions = held(PRUNE_ABOVE + 80, now, days_apart=0.1)  # 980 deploys in 98 days: all re-runnable
    running = {versions[-1].arn, versions[-2].arn}
    gone = to_delete(versions, running, now - timedelta(days=400))
    assert len(versions) - len(gone) == PRUNE_ABOVE and not running & set(gone)
    assert set(gone) == {v.arn for v in versions[-82:-2]}  # the oldest 80 that are not running


def machine(sfn: Any, name: str, seconds: int) -> str:
    definition = {"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": seconds, "End": True}}}
    return str(sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE,
                                        publish=True)["stateMachineArn"])


def test_the_periodic_pass_prunes_a_machine_past_the_threshold_and_keeps_a_running_version() -> None:
    """On the local engine: a machine of 14 versions, the second running an execution; pruning
    above 10 (keeping the newest 3) deletes the oldest that no run uses, down to 10, through the
    calls the base module's periodic role allows (and needs: its PruneVersions statement); a
    machine within the threshold is only listed."""
    import base_module as bm
    from iam_calls import calls_into, iam_calls
    from iam_policy import denied_calls

    from jobplane.platform.local.engine import LocalAWS

    with LocalAWS() as aws:
        sfn = aws.client("stepfunctions")
        arn = machine(sfn, f"{bm.PREFIX}-pruned", 0)
        other = machine(sfn, f"{bm.PREFIX}-small", 0)
        for seconds in range(1, 14):
            sfn.update_state_machine(stateMachineArn=arn, publish=True, definition=json.dumps(
                {"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 300 if seconds == 1 else seconds,
                                                  "End": True}}}))
        running = sfn.start_execution(stateMachineArn=f"{arn}:2", name="long", input="{}")["executionArn"]
        try:
            now = datetime.now(timezone.utc)
            # every version is one a run still in the records could have run (published within
            # the retention): only the count decides, the oldest that no run uses go first
            pruning = VersionPruning(sfn, lambda: [arn, other], retention_days=1, clock=lambda: now,
                                     prune_above=10, keep_newest=3)
            recorded: list[dict[str, Any]] = []
            with calls_into(recorded):
                deleted = pruning.check()
            listed = [v["stateMachineVersionArn"] for v in sfn.list_state_machine_versions(
                stateMachineArn=arn)["stateMachineVersions"]]
            assert sorted(int(a.rsplit(":", 1)[1]) for a in deleted) == [1, 3, 4, 5]
            assert sorted(int(a.rsplit(":", 1)[1]) for a in listed) == [2, *range(6, 15)]
            assert sfn.describe_execution(executionArn=running)["status"] == "RUNNING"
            assert pruning.check() == []  # within the threshold now
        finally:
            sfn.stop_execution(executionArn=running)
    calls = iam_calls(recorded)
    assert {c.action for c in calls} == {"states:ListStateMachineVersions", "states:ListExecutions",
                                         "states:DeleteStateMachineVersion"}
    slow = bm.policy_statements("slow", {})
    assert denied_calls(slow, calls) == []
    without = [s for s in slow if s.get("sid") != "PruneVersions"]
    assert denied_calls(without, calls)


def test_a_version_holds_the_compiled_asl_whatever_its_tokens_were_bound_to() -> None:
    """What `jobplane record-definitions` matches a version to: the compiled ASL, tokens
    included, against the deployed text (Terraform bound each token)."""
    from jobplane.platform.sfn_versions import holds

    asl = '{"T":"<<jobplane:table_name>>","R":"<<jobplane:cluster_arn>>","n":1}'
    assert holds(asl, '{"T":"jobplane","R":"arn:aws:ecs:us-east-1:123456789012:cluster/jobplane","n":1}')
    assert not holds(asl, '{"T":"jobplane","R":"arn:aws:ecs:us-east-1:123456789012:cluster/jobplane","n":2}')
    # a token's value is a string's content: it cannot swallow another member
    assert not holds(asl, '{"T":"x","extra":"","R":"y","n":1}')
