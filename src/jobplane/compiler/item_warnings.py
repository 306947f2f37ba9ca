"""One EXPECTATION alert for the items of a ``jp.map`` that warned (issue 67 part 3, "per item";
docs/expectations.md "Per item of a jp.map").

An expectation on a map's ``each`` step is judged per item in the item's child execution
(compiler/expect_states.py); an item whose verdict is ``warn`` goes on SUCCEEDED with its checks
on its record, and raises no alert of its own (one alert per item is noise: a month-end close
over 5,000 tenants would page 5,000 times). Instead:

* in the child, a warned item counts itself on one run-level item (``EXEC#<run>`` /
  ``WARNED#<map>``, contract/map_items.py :func:`~jobplane.contract.map_items.warned_sk`): an
  UpdateItem ``ADD warned 1`` returning the new count (``ReturnValues UPDATED_NEW``: each
  concurrent child gets its own number, DynamoDB applies an item's updates one at a time,
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/WorkingWithItems.html#WorkingWithItems.AtomicCounters);
  the first :data:`~jobplane.contract.map_items.WARNED_NAMED` numbers also append their index,
  item and words to its ``first`` list, so the item stays bounded whatever the count;
* after the Map (all children ended), the run reads that item (one consistent GetItem) and, when
  any item warned, publishes ONE ``EXPECTATION`` notification: the count, the first few items
  with their check's words, and the previous run's count of this map's warned items (the job's
  ``EXPECT#<job>`` / ``<map>#warned`` item, which the same state keeps for the next run), so
  "12 items warned; the previous run 0" reads at a glance.

A failed count or read loses the mention, never the item or the run (caught, the run goes on).
Only a map whose each step has a check that can warn (``on_fail`` or ``on_missing`` ``warn``)
gets these states: every other job compiles as before.

Cost: per warned item 1 state transition and 1 write (2 and 2 for the first few); per run of
such a map 4 transitions (two reads, Choice, keep) and 2 reads and 1 write, +1 transition for the
alert.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobplane.compiler import jsonata
from jobplane.compiler.choice_rules import Test, When
from jobplane.compiler.states import DISCARD, Catch, Choice, Graph, Retry, Task
from jobplane.contract import map_items
from jobplane.contract import states as sn
from jobplane.contract.bindings import token
from jobplane.contract.datamodel import EXEC_PREFIX
from jobplane.contract.statuses import Event, ExecutionStatus
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.expect_states import Publish
    from jobplane.compiler.model import Job, Step

GET_ITEM = "arn:aws:states:::dynamodb:getItem"
UPDATE_ITEM = "arn:aws:states:::dynamodb:updateItem"
#: The job's item that keeps each map's last warned count for the next run's alert.
HISTORY_PREFIX = "EXPECT#"
#: Where the read puts what the alert says, in the run's state data (not in ``run``: not recorded).
SLOT = "map_warned"


def can_warn(each: Step) -> bool:
    """Whether any item of the map can warn: only then are this module's states compiled."""
    return any("warn" in (e.on_fail, e.on_missing) for e in each.expect)


def last_key(job: str, map_name: str) -> JsonObject:
    return {"pk": {"S": f"{HISTORY_PREFIX}{job}"}, "sk": {"S": f"{map_name}{map_items.WARNED_SUFFIX}"}}


def item_states(m: Step, each: Step, done: str, into: Graph, ddb_retry: Retry) -> str:
    """The child's states for a warned item, going on to ``done`` (the item's SUCCEEDED record);
    returns the first (where the judge's ``warn`` verdict goes)."""
    count, few, name = sn.expect_warned(each.name), sn.expect_warned_few(each.name), sn.expect_warned_name(each.name)
    key = {"pk": {"S.$": f"States.Format('{EXEC_PREFIX}{{}}', $.execution)"}, "sk": {"S": map_items.warned_sk(m.name)}}
    lost = [Catch(["States.ALL"], done, "$.warned_error")]  # a lost count loses the mention, never the item
    into.add(count, Task(
        comment="A warned item counts itself on the run's one item of its map's warnings",
        resource=UPDATE_ITEM,
        parameters={"TableName": token("table_name"), "Key": key, "UpdateExpression": "ADD #w :one",
                    "ExpressionAttributeNames": {"#w": map_items.ATTR_WARNED},
                    "ExpressionAttributeValues": {":one": {"N": "1"}}, "ReturnValues": "UPDATED_NEW"},
        result_selector={"n.$": f"States.StringToJson($.Attributes.{map_items.ATTR_WARNED}.N)"},
        result_path="$.warned", retry=[ddb_retry], catch=lost, next=few))
    into.add(few, Choice(choices=[When(Test("$.warned.n", "NumericLessThanEquals", map_items.WARNED_NAMED), name)],
                         default=done))
    into.add(name, Task(
        comment="One of the first few warned items: named in the map's one alert",
        resource=UPDATE_ITEM,
        parameters={"TableName": token("table_name"), "Key": key,
                    "UpdateExpression": "SET #f = list_append(if_not_exists(#f, :none), :me)",
                    "ExpressionAttributeNames": {"#f": map_items.ATTR_WARNED_FIRST},
                    "ExpressionAttributeValues": {":none": {"L": []}, ":me": {"L": [{"M": {
                        "index": {"N.$": "States.Format('{}', $.index)"},
                        "item": {"S.$": "States.JsonToString($.item)"},
                        "words": {"S.$": f"$.run.steps.{each.key}.expect.words"}}}]}}},
        result_path=DISCARD, retry=[ddb_retry], catch=lost, next=done))
    return count


def _read_output(m: Step, each: Step) -> str:
    """The read's Output: the state data with ``map_warned`` = {count, previous, items, words}."""
    named = map_items.WARNED_NAMED
    return jsonata.expression(
        "($i := $states.result.Item; $n := $exists($i." + map_items.ATTR_WARNED + ".N) ? $number($i."
        + map_items.ATTR_WARNED + ".N) : 0; "
        "$prev := $lookup($states.input, " + jsonata.literal(SLOT + "_last") + ").Item.count.N; "
        "$prev := $exists($prev) ? $number($prev) : null; "
        "$few := $i." + map_items.ATTR_WARNED_FIRST + ".L.M; $few := $exists($few) ? $few : []; "
        "$few := $sort($few, function($a, $b) { $number($a.index.N) > $number($b.index.N) }); "
        "$shown := $map($few, function($f) { ($s := $f.item.S; "
        "$s := ($substring($s, 0, 1) = '\"' and $substring($s, -1) = '\"') ? $substring($s, 1, $length($s) - 2) : $s; "
        "\"#\" & $f.index.N & \" \" & $substring($s, 0, 60) & \": \" & $f.words.S) }); "
        "$words := $string($n) & ($n = 1 ? \" item\" : \" items\") & \" warned in map \" & "
        + jsonata.literal(m.name) + " & \" (\" & " + jsonata.literal(each.name) + " & \")\" & "
        "($prev = null ? \"\" : \"; the previous run: \" & $string($prev)) & "
        "($count($shown) > 0 ? \":\\n  \" & $join($shown, \"\\n  \") : \"\") & "
        f"($n > {named} ? \"\\n  and \" & $string($n - {named}) & \" more\" : \"\"); "
        "$merge([$sift($states.input, function($v, $k) { $k != " + jsonata.literal(SLOT + "_last") + " }), "
        "{" + jsonata.literal(SLOT) + ": {\"count\": $n, \"previous\": $prev, "
        "\"items\": $map($few, function($f) { {\"index\": $number($f.index.N), \"item\": $f.item.S} }), "
        "\"words\": $words}}]))")


def after_map(job: Job, m: Step, each: Step, nxt: str, into: Graph, ddb_retry: Retry, publish: Publish) -> str:
    """The run's states after the Map: read the count (and the previous run's), alert once when
    any item warned, keep this run's count; go on to ``nxt``. Returns the first state's name."""
    last, read = sn.expect_warned_last(m.name), sn.expect_warned_read(m.name)
    check, alert, keep = sn.expect_warned_check(m.name), sn.expect_warned_alert(m.name), sn.expect_warned_keep(m.name)
    into.add(last, Task(
        comment="The previous run's count of this map's warned items",
        resource=GET_ITEM,
        parameters={"TableName": token("table_name"), "Key": last_key(job.name, m.name), "ConsistentRead": True},
        result_path=f"$.{SLOT}_last", retry=[ddb_retry], catch=[Catch(["States.ALL"], read, f"$.{SLOT}_last")],
        next=read))
    args = ('{"TableName": ' + jsonata.literal(token("table_name")) + ', "Key": {"pk": {"S": '
            + jsonata.literal(EXEC_PREFIX) + ' & $states.context.Execution.Name}, "sk": {"S": '
            + jsonata.literal(map_items.warned_sk(m.name)) + '}}, "ConsistentRead": true}')
    no_mention = jsonata.expression(
        "$sift($states.input, function($v, $k) { $k != " + jsonata.literal(SLOT + "_last") + " })")
    into.add(read, Task(
        comment="How many items of the map warned, and the first few: the map's one EXPECTATION alert",
        resource=GET_ITEM, arguments=jsonata.expression(args), output=_read_output(m, each),
        retry=[ddb_retry], catch=[Catch(["States.ALL"], nxt, output=no_mention)], next=check))
    into.add(check, Choice(choices=[When(Test(f"$.{SLOT}.count", "NumericGreaterThan", 0), alert)], default=keep))
    message = publish(Event.EXPECTATION.value, next_=keep, outcome={
        "status": ExecutionStatus.RUNNING.value, "step": each.name, "map": m.name,
        "warned.$": f"$.{SLOT}.count", "previous.$": f"$.{SLOT}.previous", "items.$": f"$.{SLOT}.items"})
    body = (message.parameters or {}).get("Message")
    assert isinstance(body, dict)
    body["error.$"] = f"$.{SLOT}.words"
    into.add(alert, message)
    into.add(keep, Task(
        comment="This run's count, for the next run's alert",
        resource=UPDATE_ITEM,
        parameters={"TableName": token("table_name"), "Key": last_key(job.name, m.name),
                    "UpdateExpression": "SET #c = :c, #e = :e",
                    "ExpressionAttributeNames": {"#c": "count", "#e": "execution"},
                    "ExpressionAttributeValues": {":c": {"N.$": f"States.Format('{{}}', $.{SLOT}.count)"},
                                                  ":e": {"S.$": "$$.Execution.Name"}}},
        result_path=DISCARD, retry=[ddb_retry], catch=[Catch(["States.ALL"], nxt, "$.warned_error")], next=nxt))
    return last


def role_statements(job: Job) -> list[JsonObject]:
    """The reads these states add to the job's state machine role (its writes of ``EXEC#`` items are
    the role's ``JobStateAndHistory``): GetItem of its runs' ``WARNED#`` items and GetItem /
    UpdateItem of its own ``EXPECT#<job>`` item, for a job with a map whose items can warn."""
    from jobplane.compiler.terraform_iam import statement

    if not any((each := s.kind.per_item(s)) is not None and can_warn(each) for s in job.steps):
        return []
    table = ["${local.platform.table_arn}"]
    return [statement("ReadWarnedItems", ["dynamodb:GetItem"], table,
                      [{"test": "ForAllValues:StringLike", "variable": "dynamodb:LeadingKeys",
                        "values": [f"{EXEC_PREFIX}*"]}]),
            statement("KeepWarnedCount", ["dynamodb:GetItem", "dynamodb:UpdateItem"], table,
                      [{"test": "ForAllValues:StringEquals", "variable": "dynamodb:LeadingKeys",
                        "values": [f"{HISTORY_PREFIX}{job.name}"]}])]
