"""The failures page's incident view: which state each job with failures is in now, and the
one action offered for it."""

from __future__ import annotations

from types import SimpleNamespace

from jobplane.contract.statuses import Policy
from jobplane.contract.records import JobState
from jobplane.portal.views import failure_groups


def failure(job: str, n: int, step: str | None = "load") -> SimpleNamespace:
    return SimpleNamespace(job=job, team="billing", execution=f"{job}-{n}", status="FAILED", failed_step=step,
                           finished_at="2026-11-30T10:00:00Z")


def test_each_job_once_with_its_newest_failure_its_state_now_and_one_action() -> None:
    failures = [failure("a", 3), failure("b", 2), failure("a", 1), failure("c", 1), failure("d", 1),
                failure("e", 1), failure("gone", 1)]
    states = {
        "a": JobState("a", last_status="FAILED", blocked_by="a-3"),  # SKIP_IF_FAILED, not acknowledged
        "b": JobState("b", last_status="SUCCEEDED"),
        "c": JobState("c", last_status="FAILED", blocked_by="c-1", acknowledged_by="ops@example.com"),
        "d": JobState("d", last_status="FAILED", running=frozenset({"d-2"})),
        "e": JobState("e", last_status="FAILED", blocked_by="e-1"),  # blocked_by, but its policy never skips
    }
    entries = {name: SimpleNamespace(policy=Policy.SKIP_IF_FAILED if name in "ac" else Policy.SKIP_IF_RUNNING)
               for name in "abcde"}
    groups = {g["job"]: g for g in failure_groups(failures, states, entries)}
    assert list(groups) == ["a", "b", "c", "d", "e", "gone"]  # newest failure first
    assert groups["a"]["count"] == 2 and groups["a"]["latest"].execution == "a-3"
    assert [(j, groups[j]["state"], groups[j]["action"]) for j in groups] == [
        ("a", "blocked", "acknowledge"), ("b", "recovered", None), ("c", "acknowledged", "rerun"),
        ("d", "running", None), ("e", "failing", "rerun"), ("gone", "failing", None)]
    assert groups["c"]["state_by"] == "ops@example.com"
