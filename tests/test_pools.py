"""Pools as written and compiled: jobplane.toml's [pools], a step's or a job's ``pool``, the
problems named by file, job and field, the compiled states and their costs, and the IAM the
compiled claim and release need, exactly (docs/pools.md). Run on the local AWS:
tests/test_pools_on_moto.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import Repo
from iam_policy import Call, allowed, denied_calls
from test_iam_contract import ACCOUNT, REGION, Resolver, _merged, sfn_calls

from jobplane.compiler import asl
from jobplane.compiler.model import Job
from jobplane.compiler.output import compile_all, job_files
from jobplane.contract import pools as pc
from jobplane.contract import states as sn
from jobplane.contract.config import ConfigError, load_config

POOLED = """\
local jp = import 'jobplane.libsonnet';
{
  name: 'month-end-close',
  team: 'billing',
  schedule: jp.monthly('L', '23:00'),
  pool: 'billing-db',
  steps: [
    jp.python('extract', 'm:extract'),
    jp.parallel('post', [jp.python('ledger', 'm:ledger', opts={ pool: jp.pool('billing-db', 2) }),
                         jp.python('notify', 'm:notify', opts={ pool: 'partner-api' })]),
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


# -- jobplane.toml ------------------------------------------------------------------------------
@pytest.mark.parametrize("pools, message", [
    ("billing-db = 0", "[pools.billing-db] size = 0: a pool's size is a whole number of slots, 1-1000"),
    ("billing-db = '3'", "a pool's size is a whole number of slots"),
    ("billing-db = 3.5", "a pool's size is a whole number of slots"),
    ("Billing_DB = 3", "'Billing_DB': a pool name is 1-40 lower-case letters"),
])
def test_pool_sizes_and_names_are_checked(repo: Repo, pools: str, message: str) -> None:
    with_pools(repo, pools)
    with pytest.raises(ConfigError, match="jobplane.toml") as e:
        load_config(repo.path)
    assert message in str(e.value)


def test_pools_are_read(repo: Repo) -> None:
    with_pools(repo, "billing-db = 3\npartner-api = 5")
    assert load_config(repo.path).pools == {"billing-db": 3, "partner-api": 5}


# -- definitions --------------------------------------------------------------------------------
def test_an_unknown_pool_is_named_by_file_job_and_field_and_nothing_is_written(repo: Repo) -> None:
    with_pools(repo, "billing-db = 3")
    repo.write("jobs/billing/month-end-close.jsonnet", POOLED.replace("'billing-db', 2", "'billing-db', 4"))
    result = repo.cli("compile")
    assert result.exit_code == 2
    out = result.output
    assert ("jobs/billing/month-end-close.jsonnet: job 'month-end-close': steps[1].parallel[1].pool: unknown pool "
            "'partner-api'; pools are declared in jobplane.toml [pools] (declared: billing-db)") in out
    assert ("steps[1].parallel[0].pool: weight 4 is more than pool 'billing-db' has (3 slots)") in out
    assert not repo.out.exists()


def test_a_job_pool_is_the_default_of_its_steps_and_groups() -> None:
    job = Job.from_definition({"name": "a", "team": "t", "pool": "db", "steps": [
        {"name": "x", "python": "m:f"},
        {"name": "g", "parallel": [{"name": "m", "shell": ["true"], "pool": {"name": "api", "weight": 2}},
                                   {"name": "n", "shell": ["true"]}]},
        {"name": "y", "python": "m:f", "pool": "api"}]})
    assert {s.name: (s.pool.name, s.pool.weight) for s in job.runnable_steps() if s.pool} == {
        "x": ("db", 1), "m": ("api", 2), "n": ("db", 1), "y": ("api", 1)}


# -- the compiled machine -----------------------------------------------------------------------
def _definition(steps: list[dict[str, Any]], sizes: dict[str, int], **fields: Any) -> dict[str, Any]:
    job = Job.from_definition({"name": "pooled", "team": "billing", "steps": steps} | fields)
    return asl.build_definition(job, "jp", sizes)


def _walk(definition: dict[str, Any], outcome: dict[str, str]) -> list[str]:
    """The states a run enters when each Choice takes ``outcome[name]`` (else its first rule)
    and every Task succeeds."""
    states, name, seen = definition["States"], definition["StartAt"], []
    while name:
        seen.append(name)
        state = states[name]
        if state["Type"] == "Choice":
            name = outcome.get(name) or state["Choices"][0]["Next"]
        else:
            name = state.get("Next")
    return seen


@pytest.mark.parametrize("kind", ["python", "lambda"])  # each executor's attempt Task is wrapped alike
def test_a_pooled_step_costs_three_states_per_attempt_and_its_timeout_is_the_tasks(kind: str) -> None:
    d = _definition([{"name": "load", kind: "m:f", "pool": "db", "timeout": "10m"}], {"db": 3})
    states = d["States"]
    path = _walk(d, {"Start": "Claim"})
    # a success goes straight on (no check after a success: docs/state-machine.md, issue 54)
    assert path == ["Claim (first)", "load: pool", "load: pool claim", "load", "load: pool release", "Finish"]
    # the step's timeout is its Task's: waiting for a slot does not consume it
    assert states["load"]["TimeoutSeconds"] == 600
    assert all("TimeoutSeconds" not in states[n] for n in path if n != "load")
    # one transaction: the small counter under its room condition, and the attempt's holder item
    claim = states["load: pool claim"]
    assert claim["Resource"] == "arn:aws:states:::aws-sdk:dynamodb:transactWriteItems"
    counter, holder = (w for item in claim["Parameters"]["TransactItems"] for w in item.values())
    assert counter["Key"] == {"pk": {"S": "POOL#db"}, "sk": {"S": "SLOTS"}}
    assert counter["ExpressionAttributeValues"][":limit"] == {"N": "2"}
    assert holder["Item"]["pk"] == {"S.$": "States.Format('POOL#db#{}', $.pool.load.key)"}
    assert holder["ConditionExpression"] == "attribute_not_exists(pk)"
    assert "gsi1pk" not in holder["Item"] and "gsi1pk" not in json.dumps(counter)  # out of the jobs pages' index
    # no throttle ends in failed: a cancelled try waits, an error that outlasts the retries is checked
    catches = {tuple(c["ErrorEquals"]): c["Next"] for c in claim["Catch"]}
    assert catches[("DynamoDb.TransactionCanceledException",)] == "load: pool backoff"
    throttles = next(e for e in catches if "DynamoDb.ThrottlingException" in e)
    assert "DynamoDb.ProvisionedThroughputExceededException" in throttles and catches[throttles] == "load: pool check"
    assert catches[("States.ALL",)] == "load: failed"
    assert states["load: pool check"]["Next"] == "load: pool held"
    assert {c["Next"] for c in states["load: pool held"]["Choices"]} == {"load"}
    assert states["load: pool held"]["Default"] == "load: pool backoff"
    # every outcome of the attempt goes through a release: its next and each Catch
    task = states["load"]
    targets = [task["Next"], *(c["Next"] for c in task["Catch"])]
    assert all(sn.classify(t).role == sn.Role.POOL_RELEASE for t in targets)
    # (a Lambda step with one attempt has a check too: a function that cannot run now goes there,
    # to the infrastructure retry; issue 62 finding 2)
    assert {states[t]["Next"] for t in targets} == {"Finish", "Finish (timed out)", "load: failed", "load: check"}
    # a release that fails still goes on, to the same place
    assert all(states[t]["Catch"][0]["Next"] == states[t]["Next"] for t in targets)


def test_every_way_into_an_attempt_queues_for_a_slot_first() -> None:
    d = _definition([{"name": "first", "shell": ["true"]},
                     {"name": "load", "python": "m:f", "pool": "db", "retry": {"attempts": 3}}], {"db": 3})
    into_task = [(name, s) for name, s in d["States"].items()
                 if "load" in ([s.get("Next"), s.get("Default")] + [c["Next"] for c in s.get("Choices", [])]
                               + [c["Next"] for c in s.get("Catch", [])])]
    # the claim, and the check of a try whose answer was lost, only when its holder item exists
    assert sorted(name for name, _ in into_task) == ["load: pool claim", "load: pool held"]
    assert d["States"]["load: pool held"]["Choices"] == [{"Variable": "$.pool.load.found.Item", "IsPresent": True,
                                                          "Next": "load"}]
    route = d["States"]["Route"]
    assert {c["Next"] for c in route["Choices"] if c.get("StringEquals") == "load"} == {"load: pool"}
    assert d["States"]["load: wait"]["Next"] == "load: pool"  # a retry waits for a slot again
    assert d["States"]["load: infra wait"]["Next"] == "load: pool"


def test_the_wait_backs_off_to_a_cap_with_jitter() -> None:
    """A random sleep between POLL_BASES[n] and twice it (the jitter keeps waiters that began
    together from trying together), the counter stopping at the table's end (docs/pools.md)."""
    d = _definition([{"name": "load", "python": "m:f", "pool": "db"}], {"db": 1})
    backoff = d["States"]["load: pool backoff"]["Parameters"]
    bases = ", ".join(map(str, pc.POLL_BASES))
    ends = ", ".join(str(2 * b) for b in pc.POLL_BASES)
    assert backoff["wait.$"] == (f"States.MathRandom(States.ArrayGetItem(States.Array({bases}), $.pool.load.n), "
                                 f"States.ArrayGetItem(States.Array({ends}), $.pool.load.n))")
    last = len(pc.POLL_BASES) - 1
    assert backoff["n.$"] == f"States.ArrayGetItem(States.Array({', '.join(map(str, [*range(1, last + 1), last]))}), $.pool.load.n)"
    assert pc.POLL_BASES[:3] == (1, 2, 4) and max(pc.POLL_BASES) == pc.POLL_BASES[-1] == pc.POLL_CAP // 2
    # at most 10 intrinsics nested in one field (Step Functions' limit)
    assert backoff["wait.$"].count("States.") <= 10
    assert d["States"]["load: pool wait"] == {"Type": "Wait", "SecondsPath": "$.pool.load.wait",
                                              "Next": "load: pool claim"}


def test_a_job_without_pools_compiles_as_before(repo: Repo) -> None:
    """Declaring pools changes no job that does not use one (the examples' bytes)."""
    repo.copy_examples()
    before = compile_all(load_config(repo.path)).files
    with_pools(repo, "billing-db = 3")
    after = compile_all(load_config(repo.path)).files
    assert after == before


# -- IAM: exactly what the claim and the release call ------------------------------------------
def test_the_role_allows_exactly_the_pool_calls(repo: Repo) -> None:
    with_pools(repo, "billing-db = 3\npartner-api = 5\nother = 1")
    repo.write("jobs/billing/month-end-close.jsonnet", POOLED)
    files = compile_all(load_config(repo.path)).files
    rel = job_files(files)["month-end-close"]
    doc = json.loads(files[rel])
    r = Resolver(_merged(files, rel.rsplit("/", 1)[0]))  # its roles are its team root's (roles.tf.json)
    tid = next(iter(doc["resource"]["aws_sfn_state_machine"]))
    calls = sfn_calls(doc, r, tid)
    pool_calls = [c for c in calls if c.context.get("dynamodb:LeadingKeys", [""])[0].startswith(pc.POOL_PREFIX)]
    # each pool's counter (UpdateItem, in the claim's and the release's transactions) and the
    # attempt's own holder items (PutItem, DeleteItem; GetItem when a try's answer was lost)
    assert {(c.action, c.context["dynamodb:LeadingKeys"][0]) for c in pool_calls} == {
        *(("dynamodb:UpdateItem", f"POOL#{n}") for n in ("billing-db", "partner-api")),
        *((a, f"POOL#{n}#0f3b1e2c-run") for n in ("billing-db", "partner-api")
          for a in ("dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:GetItem"))}
    policy = r.text(doc["data"]["aws_iam_policy_document"][f"{tid}_sfn"]["statement"])
    assert denied_calls(policy, calls) == []
    # another pool's items, or any other call on a pool's items, is denied
    table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/jp"
    for action, pk in (("dynamodb:UpdateItem", "POOL#other"), ("dynamodb:PutItem", "POOL#other#t"),
                       ("dynamodb:PutItem", "POOL#billing-db"), ("dynamodb:DeleteItem", "POOL#billing-db"),
                       ("dynamodb:UpdateItem", "POOL#billing-db#t"), ("dynamodb:PutItem", "POOL#billing-dbx#t"),
                       ("dynamodb:Query", "POOL#billing-db")):
        assert not allowed(policy, Call(action, table, {"dynamodb:LeadingKeys": [pk]}, "not compiled"))
    # each statement is needed: without the pool statements the claims and releases are denied
    trimmed = [s for s in policy if s.get("sid") not in ("HoldPoolSlots", "PoolHolders")]
    assert len(trimmed) == len(policy) - 2
    assert sorted(denied_calls(trimmed, calls)) == sorted(str(c) for c in pool_calls)


def _reconciler_policy() -> list[dict[str, Any]]:
    """The reconciler's table statements as terraform/platform/functions.tf writes them."""
    import re

    tf = (Path(__file__).resolve().parents[1] / "terraform/platform/functions.tf").read_text()
    block = tf[tf.index('data "aws_iam_policy_document" "reconciler"'):]
    block = block[:block.index("\n}\n")]
    out = []
    for body in re.findall(r"\n  statement \{\n(.*?)\n  \}", block, re.S):
        if "aws_dynamodb_table.jobplane.arn]" not in body:
            continue
        st: dict[str, Any] = {"sid": re.search(r'sid\s+= "([^"]+)"', body)[1],  # type: ignore[index]
                              "actions": re.findall(r'"(dynamodb:[A-Za-z]+)"', body.split("resources")[0]),
                              "resources": [f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/jp"]}
        cond = re.search(r'test\s+= "([^"]+)"\s+variable\s+= "([^"]+)"\s+values\s+= \[([^\]]*)\]', body)
        if cond:
            st["condition"] = [{"test": cond[1], "variable": cond[2], "values": re.findall(r'"([^"]+)"', cond[3])}]
        out.append(st)
    return out


def test_the_reconciler_may_release_a_holder_and_nothing_more() -> None:
    """What release_run calls (platform/pool_slots.py): GetItem of the holder item, then one
    transaction deleting it and updating the pool's counter; a transaction needs each write's
    permission (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html).
    It may delete a holder item, never a counter or any other item."""
    policy = _reconciler_policy()
    table = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/jp"
    ticket = "arn:aws:states:us-east-1:1:execution:jp-a:run-1|load|0f3b"
    holder, counter = pc.holder_key("db", ticket)["pk"]["S"], pc.counter_key("db")["pk"]["S"]
    calls = [Call("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": [holder]}, "release_run: held?"),
             Call("dynamodb:DeleteItem", table, {"dynamodb:LeadingKeys": [holder]}, "release: holder"),
             Call("dynamodb:UpdateItem", table, {"dynamodb:LeadingKeys": [counter]}, "release: counter")]
    assert denied_calls(policy, calls) == []
    for pk in (counter, "EXEC#run-1", "JOB#a"):
        assert not allowed(policy, Call("dynamodb:DeleteItem", table, {"dynamodb:LeadingKeys": [pk]}, "not made"))
    trimmed = [s for s in policy if s["sid"] != "ReleasePoolSlots"]
    assert denied_calls(trimmed, calls) == [str(calls[1])]


@pytest.mark.parametrize("pool, ok", [("db", True), ({"name": "db", "weight": 2}, True), (None, True),
                                      ({"name": "db", "weight": 0}, False), ({"weight": 2}, False),
                                      ({"name": "db", "wieght": 2}, False), (3, False)])
def test_the_schema_and_the_checker_agree_on_pool(repo: Repo, pool: Any, ok: bool) -> None:
    import jsonschema

    from jobplane.compiler.fields import Invalid

    schema = json.loads(repo.cli("schema").stdout)
    definition = {"name": "a", "team": "billing", "pool": pool,
                  "steps": [{"name": "s", "python": "m:f", "pool": pool}]}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(definition))
    try:
        Job.from_definition(definition)
        checked = True
    except Invalid:
        checked = False
    assert (not errors, checked) == (ok, ok)
