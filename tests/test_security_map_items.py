"""One team's step cannot choose another job's map items (issue 64, item 2).

Every ECS step runs with the one runner task role, which may ``s3:PutObject`` under
``map-items/*`` (its items steps write their lists there). The Map read
``map-items/<job>/<execution>/<map>.jsonl``: a key built from what any reader can list (the job,
the execution's name, backfill names are guessable), so a growth step racing the window between
billing's items step and its Map wrote the list billing's ``each`` step then ran, with billing's
secrets, on items growth chose. Now the key carries a UUID the state machine draws before the
items step (``States.UUID()``), passed to the runner and the ItemReader in the state data only;
a re-run of failed items reads its list under ``map-reruns/``, which no runner may write."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from iam_policy import _like
from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.contract import map_items

ROOT = Path(__file__).resolve().parents[1]
BUCKET_ARN = "arn:aws:s3:::acme-jobplane-catalog"


def definition() -> dict[str, Any]:
    return {"name": "month-end", "team": "billing", "timezone": "UTC", "steps": [{"name": "close-all", "map": {
        "items": {"name": "tenants", "python": "billing.close:tenants"},
        "each": {"name": "close-tenant", "python": "billing.close:close", "secrets": {}}}}]}


def _states() -> dict[str, Any]:
    return asl.build_definition(Job.from_definition(definition()), "jp")["States"]  # type: ignore[no-any-return]


def _setter(states: dict[str, Any], path: str, into: str) -> dict[str, Any]:
    """The one state before ``into`` (following Next) that writes ``path`` of the state data."""
    writers = [s for s in states.values() if s.get("ResultPath") == path and s.get("Next") == into]
    assert len(writers) == 1, (path, into, writers)
    return writers[0]


def _derivable(expr: str) -> bool:
    """Can a reader who lists executions (their names) and knows the definition compute the key
    this intrinsic makes? Only if every argument is the execution's name (or id) or a literal."""
    m = re.fullmatch(r"States\.Format\('[^']*'((?:, [^,()]+(?:\(\))?)*)\)", expr)
    assert m, expr
    args = [a.strip() for a in m.group(1).split(",") if a.strip()]
    return all(a in ("$$.Execution.Name", "$$.Execution.Id", "$$.StateMachine.Name") for a in args)


def test_the_list_a_map_reads_is_at_a_key_no_reader_can_derive() -> None:
    states = _states()
    reader = states["close-all"]["ItemReader"]["Parameters"]
    assert "Key" not in reader, "a literal key is derivable by anyone who reads the definition"
    key_path = reader["Key.$"]
    assert key_path.startswith("$.") and "States." not in key_path, key_path
    field = key_path.rsplit(".", 1)[0]
    # the key is drawn in the state data just before the items step, with a fresh UUID
    draw = _setter(states, field, "tenants")
    expr = draw["Parameters"]["key.$"]
    assert "States.UUID()" in expr and not _derivable(expr), expr
    # the runner of the items step writes where the Map reads: the same field, not a derivation of its own
    env = {e["Name"]: e for e in states["tenants"]["Parameters"]["Overrides"]["ContainerOverrides"][0]["Environment"]}
    assert env[map_items.ENV_ITEMS_URI]["Value.$"].endswith(f", {key_path})")
    assert "$$.Execution" not in env[map_items.ENV_ITEMS_URI]["Value.$"]


def test_the_key_of_before_was_derivable() -> None:
    """The check itself, on the expression the Map read before issue 64."""
    assert _derivable("States.Format('map-items/month-end/{}/close-all.jsonl', $$.Execution.Name)")
    assert not _derivable(map_items.items_key_expr("month-end", "close-all"))


def _runner_write_patterns() -> list[str]:
    """The S3 resources the runner task role may PutObject (terraform/platform/runner.tf)."""
    tf = (ROOT / "terraform" / "platform" / "runner.tf").read_text()
    block = tf[tf.index('data "aws_iam_policy_document" "runner_map_items"'):]
    block = block[:block.index('resource "aws_iam_role_policy"')]
    found = re.findall(r'resources\s*=\s*\["\$\{aws_s3_bucket\.catalog\.arn\}(/[^"]*)"\]', block)
    assert found, block
    return [BUCKET_ARN + f for f in found]


def test_a_re_runs_list_is_where_no_step_may_write() -> None:
    """A re-run of failed items starts at its Map over the list the control plane wrote: under
    map-reruns/, which the runner task role's PutObject does not reach (the only prefix it may
    write is map-items/, whose keys carry the run's UUID)."""
    patterns = _runner_write_patterns()
    rerun = f"{BUCKET_ARN}/{map_items.rerun_key('month-end', 'rerun-1', 'close-all')}"
    assert not any(_like(p, rerun) for p in patterns), patterns
    listed = f"{BUCKET_ARN}/{map_items.items_key('month-end', 'run-1', 'close-all', '0b4f...')}"
    assert any(_like(p, listed) for p in patterns)
    states = _states()
    route = {c["StringEquals"]: c["Next"] for c in states["Route"]["Choices"] if "StringEquals" in c}
    draw = states[route["close-tenant"]]
    assert draw["Next"] == "close-all" and draw["ResultPath"] == states["close-all"]["ItemReader"]["Parameters"][
        "Key.$"].rsplit(".", 1)[0]
    assert draw["Parameters"]["key.$"].startswith(f"States.Format('{map_items.RERUN_PREFIX}")
