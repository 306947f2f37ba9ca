"""Pools and jp.map together (issue 52: "at no moment do more than the pool's size of slots run
across all jobs and map items"): a job's or a map's pool is the default of its items and each
steps, each item's attempts hold a slot inside its child execution, and an aborted parent leaves
nothing held (docs/pools.md "A map's items")."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo
from iam_policy import Call, allowed, denied_calls
from test_iam_contract import ACCOUNT, REGION, Resolver, _merged, sfn_calls
from test_pools_on_moto import HOLD, deploy, finish, from_log, from_records, holders, most_at_once, start, until

from jobplane.compiler import asl
from jobplane.compiler.kinds.map_ import MapSpec
from jobplane.compiler.model import Job, PoolUse
from jobplane.compiler.output import compile_all, job_files
from jobplane.contract import execution_input
from jobplane.contract import pools as pc
from jobplane.contract import states as sn
from jobplane.contract.config import load_config
from jobplane.platform.local.engine import LocalAWS
from jobplane.platform.map_records import item_outcomes
from jobplane.platform.pool_slots import PoolSweep

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
TENANTS = "sample_apps.fanout:list_tenants"


def a_map(each: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"name": "close-all", "map": {"items": {"name": "tenants", "python": TENANTS},
                                         "each": each or {"name": "close-tenant", "python": "m:close"}} | fields}


# -- compiled ------------------------------------------------------------------------------------
def test_a_job_pool_on_a_map_keeps_the_map_and_pools_its_items_and_each_steps() -> None:
    job = Job.from_definition({"name": "fan", "team": "billing", "pool": "db", "steps": [a_map()]})
    [m] = job.steps
    assert isinstance(m.target, MapSpec)
    assert (m.target.items.pool, m.target.each.pool) == (PoolUse(name="db"), PoolUse(name="db"))
    states = asl.build_definition(job, "jp", {"db": 2})["States"]
    processor = states["close-all"]["ItemProcessor"]
    assert states["close-all"]["Type"] == "Map"
    # each item's attempt queues first, with a ticket of the child's own execution
    assert processor["StartAt"] == sn.pool("close-tenant")
    ticket = processor["States"][sn.pool("close-tenant")]
    assert ticket["Parameters"]["key.$"].startswith("States.Format('{}|close_tenant|{}', $$.Execution.Id")
    claim = processor["States"][sn.pool_claim("close-tenant")]
    counter = claim["Parameters"]["TransactItems"][0]["Update"]
    assert counter["ExpressionAttributeValues"][":limit"] == {"N": "1"}
    assert claim["Next"] == "close-tenant"
    # the items step is a pooled step at the top, and a re-run from the map or the items step queues
    assert sn.pool_claim("tenants") in states
    route = {c["StringEquals"]: c["Next"] for c in states["Route"]["Choices"] if "StringEquals" in c}
    # into the pooled items step through the map's key draw (issue 64 item 2)
    assert route == {"close-all": sn.items_key("close-all"), "tenants": sn.items_key("close-all"),
                     "close-tenant": sn.rerun_items_key("close-all")}
    assert states[sn.items_key("close-all")]["Next"] == sn.pool("tenants")


def test_a_maps_pool_is_the_default_of_its_members_and_a_members_own_wins() -> None:
    job = Job.from_definition({"name": "fan", "team": "billing", "pool": "other", "steps": [
        a_map(each={"name": "close-tenant", "python": "m:close", "pool": {"name": "api", "weight": 2}}) | {"pool": "db"}]})
    spec = job.steps[0].target
    assert (job.steps[0].pool, spec.items.pool, spec.each.pool) == (PoolUse(name="db"), PoolUse(name="db"), PoolUse(name="api", weight=2))
    states = asl.build_definition(job, "jp", {"db": 1, "api": 3, "other": 1})["States"]
    claim = states["close-all"]["ItemProcessor"]["States"][sn.pool_claim("close-tenant")]
    counter = claim["Parameters"]["TransactItems"][0]["Update"]
    assert counter["Key"]["pk"] == {"S": pc.pool_pk("api")}
    assert counter["ExpressionAttributeValues"][":limit"] == {"N": "1"}  # 3 - weight 2
    assert counter["ExpressionAttributeValues"][":weight"] == {"N": "2"}


def test_plan_counts_a_pooled_items_three_more_transitions_per_attempt() -> None:
    from jobplane.compiler.catalog import step_entry
    from jobplane.compiler.map_cost import per_item

    each = {"name": "close-tenant", "python": "m:close", "retry": {"attempts": 2}}
    pooled, plain = (Job.from_definition({"name": "fan", "team": "billing", "steps": [a_map(each=each | extra)]})
                     for extra in ({"pool": "db"}, {}))
    [pooled_each] = [step_entry(s) for s in pooled.steps[0].parallel or []][1:]
    [plain_each] = [step_entry(s) for s in plain.steps[0].parallel or []][1:]
    assert per_item(plain_each) == (4, 8)
    assert per_item(pooled_each) == (4 + 3, 8 + 3 * 2)  # ticket, claim, release per attempt


def test_an_unpooled_map_compiles_as_before() -> None:
    job = Job.from_definition({"name": "fan", "team": "billing", "steps": [a_map()]})
    text = json.dumps(asl.build_definition(job, "jp", {}))
    assert ": pool" not in text


MAPPED = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'month-end-fanout', team: 'billing',
  steps: [
    jp.map('close-all',
           items=jp.python('tenants', 'sample_apps.fanout:list_tenants'),
           each=jp.python('close-tenant', 'sample_apps.fanout:close_month', opts={ pool: %(each)s }),
           opts={ pool: %(map)s }),
  ],
}
"""


def with_pools(repo: Repo, pools: str) -> None:
    """``name = size`` lines, each written as its pool's table, open to every team (who may use a
    pool is tested in test_security_pools.py)."""
    tables = "".join(f'\n[pools.{name.strip()}]\nsize = {size.strip()}\nteams = ["*"]\n'
                     for name, size in (line.split("=", 1) for line in pools.splitlines()))
    toml = repo.path / "jobplane.toml"
    toml.write_text(toml.read_text() + tables)


def test_a_maps_members_are_named_by_their_field(repo: Repo) -> None:
    with_pools(repo, "billing-db = 3")
    repo.write("jobs/billing/month-end-fanout.jsonnet",
               MAPPED % {"each": "jp.pool('billing-db', 4)", "map": "'partner-api'"})
    result = repo.cli("compile")
    assert result.exit_code == 2
    out = result.output
    assert ("job 'month-end-fanout': steps[0].pool: unknown pool 'partner-api'; pools are declared in "
            "jobplane.toml [pools] (declared: billing-db)") in out
    assert "steps[0].map.each.pool: weight 4 is more than pool 'billing-db' has (3 slots)" in out
    assert "parallel" not in out  # named by its field, once: the items step inherits, so it is not named
    assert "map.items.pool" not in out


def test_the_role_lets_each_child_hold_its_slots(repo: Repo) -> None:
    """The children run under the job's state machine role: the pool statement covers their
    claims and releases (the IAM contract walks the ItemProcessor)."""
    with_pools(repo, "billing-db = 3")
    repo.write("jobs/billing/month-end-fanout.jsonnet", MAPPED % {"each": "'billing-db'", "map": "null"})
    files = compile_all(load_config(repo.path)).files
    rel = job_files(files)["month-end-fanout"]
    doc = json.loads(files[rel])
    r = Resolver(_merged(files, rel.rsplit("/", 1)[0]))  # its roles are its team root's (roles.tf.json)
    tid = next(iter(doc["resource"]["aws_sfn_state_machine"]))
    calls = sfn_calls(doc, r, tid)
    pool_calls = [c for c in calls if c.context.get("dynamodb:LeadingKeys", [""])[0].startswith(pc.POOL_PREFIX)]
    assert {c.why.split(": ", 1)[1] for c in pool_calls} >= {"close-tenant: pool claim", "close-tenant: pool release"}
    assert {c.context["dynamodb:LeadingKeys"][0] for c in pool_calls} == {"POOL#billing-db",
                                                                          "POOL#billing-db#0f3b1e2c-run"}
    policy = r.text(doc["data"]["aws_iam_policy_document"][f"{tid}_sfn"]["statement"])
    assert denied_calls(policy, calls) == []
    trimmed = [s for s in policy if s.get("sid") not in ("HoldPoolSlots", "PoolHolders")]
    assert sorted(denied_calls(trimmed, calls)) == sorted(str(c) for c in pool_calls)


def test_the_sweep_may_describe_a_child_execution() -> None:
    """A child holds with its own ARN, ``execution:<state machine>/<map run label>:<id>``
    (https://docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html); the
    periodic check's role may DescribeExecution it, so the sweep releases an ended child's slots."""
    tf = (ROOT / "terraform/platform/slow.tf").read_text()
    block = tf[tf.index('sid       = "ReadExecutions"'):]
    block = block[:block.index("\n  }")]
    actions = re.findall(r'"(states:[A-Za-z]+)"', block.split("resources")[0])
    resources = re.findall(r'"(arn:[^"]+)"', block.split("resources")[1])
    subst = {"${local.partition}": "aws", "${local.region}": REGION, "${local.account}": ACCOUNT, "${var.name_prefix}": "jp"}
    for k, v in subst.items():
        resources = [x.replace(k, v) for x in resources]
    policy = [{"sid": "ReadExecutions", "actions": actions, "resources": resources}]
    child = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:jp-month-end-fanout/close-all-label:0f3b1e2c"
    parent = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:jp-month-end-fanout:run-1"
    for arn in (child, parent):
        assert allowed(policy, Call("states:DescribeExecution", arn, {}, "PoolSweep"))
    holder = pc.Holder.parse(f"{child}|close_tenant|abc#1")
    assert holder == pc.Holder(f"{child}|close_tenant|abc#1", child, "close_tenant")
    # `jobplane status` names the child's job, the parent's
    assert (holder.job("jp"), pc.Holder(f"{parent}|load|x#1", parent, "load").job("jp")) == ("month-end-fanout",) * 2
    assert pc.Holder("e", "arn:aws:sqs:us-east-1:1:q", "s").job("jp") is None


# -- on the local AWS ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def aws():
    # a server: the items step writes its list to the local S3 (docs/fan-out.md, Locally)
    with LocalAWS(server_port=0, env={"PYTHONPATH": str(HERE), "JOBPLANE_STOP_GRACE_SECONDS": "3"}) as local:
        yield local


def map_step(each: dict[str, Any], max_concurrency: int) -> dict[str, Any]:
    return {"name": "close-all", "map": {"items": {"name": "tenants", "python": TENANTS}, "each": each,
                                         "max_concurrency": max_concurrency}}


def test_map_items_and_another_job_share_a_pool_of_two(aws: LocalAWS, tmp_path: Path) -> None:
    """Six items at up to six at once, each item's step pooled, while another job's two pooled
    steps want the same pool of 2: by the steps' own logs and the other job's records, never more
    than two at once; every item recorded SUCCEEDED and every slot given back."""
    log = tmp_path / "held.log"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    each = {"name": "close-tenant", "python": HOLD, "kwargs": {"log": str(log), "seconds": 0.4}, "pool": pool}
    fan = deploy(aws, [map_step(each, 6)], {pool: 2}, params={"count": 1})
    members = [{"name": f"m{i}", "python": HOLD, "kwargs": {"log": str(log), "seconds": 0.4}} for i in range(2)]
    other = deploy(aws, [{"name": "all", "parallel": members}], {pool: 2}, pool=pool)
    arns = [aws.start(fan, execution_input.manual("ops@example.com", overrides={"count": 6})), start(aws, other)]
    (fan_ex, fan_rec), (_, other_rec) = [finish(aws, arn) for arn in arns]
    assert (fan_rec.status, other_rec.status) == ("SUCCEEDED", "SUCCEEDED"), fan_rec.error
    held = from_log(log)
    assert len(held) == 8, log.read_text()  # six items and two steps, each one attempt
    assert most_at_once(held) <= 2
    assert most_at_once(from_records([other_rec])) <= 2
    items = item_outcomes(aws.client("dynamodb"), aws.resources["table_name"], arns[0].rsplit(":", 1)[1])
    assert [(i.index, i.status, i.attempts) for i in items] == [(i, "SUCCEEDED", 1) for i in range(6)]
    assert holders(aws, pool) == ()


def test_an_abort_of_the_parent_while_items_hold_and_wait_leaves_nothing_held(aws: LocalAWS,
                                                                              tmp_path: Path) -> None:
    """Pool of 1, three items at once: one holds, two wait; the parent is stopped. A child's
    ``$$.Execution.Id`` is the child's own (as on AWS: moto patch map_child_executions), so its
    holder names the child, stopped with its parent, and the periodic sweep gives it back; the
    next run of another pooled job then gets the slot."""
    log, release = tmp_path / "held.log", tmp_path / "release"
    pool = f"db-{uuid.uuid4().hex[:6]}"
    each = {"name": "close-tenant", "python": HOLD, "pool": pool,
            "kwargs": {"log": str(log), "release": str(release)}}
    fan = deploy(aws, [map_step(each, 3)], {pool: 1}, params={"count": 1})
    arn = aws.start(fan, execution_input.manual("ops@example.com", overrides={"count": 3}))
    until("an item holds the slot", lambda: log.exists() and "start" in log.read_text())
    until("the item's slot is seen held", lambda: len(holders(aws, pool)) == 1)
    [holder] = holders(aws, pool)
    # the child's own ARN: execution:<state machine>/<map run label>:<id>
    machine = arn.rsplit(":", 1)[0]
    assert holder.execution_arn.startswith(machine + "/") and holder.step == "close_tenant"
    aws.client("stepfunctions").stop_execution(executionArn=arn, error="Ops.Stop", cause="month closed by hand")
    ex, rec = finish(aws, arn)
    assert ex.status == "ABORTED" and rec.status == "ABORTED"
    release.write_text("go")  # the stopped item's process, if the local agent left it running
    # the parent's history has none of its children's claims (the reconciler cannot name them):
    # the holder is left to the sweep, which finds its execution (the child) ABORTED with its parent
    assert [h.execution_arn for h in holders(aws, pool)] == [holder.execution_arn]
    assert aws.client("stepfunctions").describe_execution(executionArn=holder.execution_arn)["status"] == "ABORTED"
    sweep = PoolSweep(aws.client("dynamodb"), aws.resources["table_name"], aws.client("stepfunctions"))
    assert sweep.check() == [holder.element]
    assert holders(aws, pool) == () and sweep.check() == []
    assert log.read_text().count("start") == 1  # the waiting items never ran
    # the two waiters' records still say WAITING (their children were stopped while they waited);
    # the ended run's progress counts them neither waiting nor failed, and nothing is re-runnable
    from jobplane.platform.map_records import progress

    items = item_outcomes(aws.client("dynamodb"), aws.resources["table_name"], arn.rsplit(":", 1)[1])
    assert sorted(i.status for i in items) == ["WAITING", "WAITING"] and not any(i.failed for i in items)
    [p] = progress(items, {"close-all": 3}, live=False)
    assert (p.succeeded, p.failed, p.waiting, p.running) == (0, 0, 0, 3)
    single = deploy(aws, [{"name": "load", "python": HOLD, "pool": pool, "kwargs": {"log": str(log), "seconds": 0.1}}],
                    {pool: 1})
    ex, rec = finish(aws, start(aws, single))
    assert rec.status == "SUCCEEDED" and "load: pool wait" not in ex.states_entered
    assert holders(aws, pool) == ()
