"""A step's expectations compiled into its state machine (issue 67 part 3; docs/expectations.md).

After an attempt succeeds, before the next step:

* ``<step>: expect`` reads the step's progress record (contract/progress.py: ``PROGRESS#<job>#<execution>``
  / ``<step>``, its ``metrics`` map only, a consistent read: the runner writes the last values before
  the step's process ends) and, in the same state, judges every expectation. It is a JSONata Task
  (``"QueryLanguage": "JSONata"`` on the state alone, as the first claim is): its ``Output``
  expression compares each metric with its threshold and puts ``{checks, verdict, words}`` in the
  step's slot of the state data (``$.run.steps.<key>.expect``), which the run's record keeps in
  its ``steps`` (the API and the execution page read it there; each attempt's is in the
  execution history). DynamoDB answers a number as a string (``{"N": "12"}``): ``$number`` reads it.
  JSONata 2.0.6 on AWS (https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html).
* A step whose checks use a baseline reads, in the state before (``<step>: expect baseline``), the
  job's history of that step's metrics (one item, :func:`history_key`); its median of comparable
  earlier runs is the baseline, and the judge appends this attempt's values after
  (``<step>: expect keep``) when the step passed or warned.
* ``<step>: expect check`` (a Choice) goes on when all passed; ``warn``: ``<step>: expect warn``
  publishes an EXPECTATION notification and goes on (the run stays SUCCEEDED, marked);
  ``fail``: ``<step>: expect failed`` sets the attempt's error (``Jobplane.ExpectationFailed``,
  the checks as its Cause), then the step's own retry loop while attempts are left, else its
  failure record, as any failed attempt.

What it costs: 2 state transitions per successful attempt of a step with static expectations
(3 with a baseline, 4 when the values are kept), +1 for a warning, +2 for a failure
(:func:`states_per_run`, which ``jobplane plan`` and ``make bench`` print).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from jobplane.compiler import jsonata
from jobplane.compiler.choice_rules import Test, When, equals
from jobplane.compiler.state_data import ATTEMPT, ERROR, steps_slot
from jobplane.compiler.states import DISCARD, Catch, Choice, Graph, Pass, Retry, Task
from jobplane.contract import expectations as ce
from jobplane.contract import progress as cp
from jobplane.contract import states as sn
from jobplane.contract.bindings import token
from jobplane.contract.statuses import Event, ExecutionStatus
from jobplane.contract.types import JsonObject

if TYPE_CHECKING:
    from jobplane.compiler.model import Expectation, Job, Step
    from jobplane.contract.catalog import CatalogStep

GET_ITEM = "arn:aws:states:::dynamodb:getItem"
UPDATE_ITEM = "arn:aws:states:::dynamodb:updateItem"
#: The history item of a job's step metrics (baselines): ``pk`` this prefix + job, ``sk`` the step.
HISTORY_PREFIX = "EXPECT#"
#: How many earlier values of each metric the history keeps (the newest last).
HISTORY_KEEP = ce.BASELINE_MAX_RUNS


class ExpectBuilder(Protocol):
    job: Job
    ddb_retry: Retry

    def step_failure_state(self, step: Step, status: ExecutionStatus, into: Graph, record: bool) -> str: ...


class Publish(Protocol):
    """The job builder's SNS publish state (compiler/asl.py ``publish_state``)."""

    def __call__(self, event: str | None, next_: str | None = None, outcome: JsonObject | None = None) -> Task: ...


def role_statements(job: Job) -> list[JsonObject]:
    """What a job's state machine calls for its steps' expectations, nothing else (a job without
    any: nothing): GetItem of its runs' progress records (``PROGRESS#<job>#<execution>``, the judge's
    read; an execution's name is not known before it starts, so by the job's prefix) and, for a baseline,
    GetItem and UpdateItem of the job's own history item (``EXPECT#<job>`` exactly).
    ``dynamodb:LeadingKeys``: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html"""
    from jobplane.compiler.terraform_iam import statement

    steps = [s for s in job.all_steps() if s.expect]
    if not steps:
        return []
    table = ["${local.platform.table_arn}"]
    out = [statement("ReadStepMetrics", ["dynamodb:GetItem"], table,
                     [{"test": "ForAllValues:StringLike", "variable": "dynamodb:LeadingKeys",
                       "values": [cp.job_keys(job.name)]}])]
    if any(uses_baseline(s) for s in steps):
        out.append(statement("KeepMetricHistory", ["dynamodb:GetItem", "dynamodb:UpdateItem"], table,
                             [{"test": "ForAllValues:StringEquals", "variable": "dynamodb:LeadingKeys",
                               "values": [f"{HISTORY_PREFIX}{job.name}"]}]))
    return out


def history_key(job: str, step: str) -> JsonObject:
    return {"pk": {"S": f"{HISTORY_PREFIX}{job}"}, "sk": {"S": step}}


def uses_baseline(step: Step) -> bool:
    return any(e.uses_baseline for e in step.expect)


def states_per_run(step: Step) -> int:
    """States a successful attempt of ``step`` enters for its expectations when all pass."""
    if not step.expect:
        return 0
    return ce.transitions(uses_baseline(step))


def plan_lines(steps: list[CatalogStep]) -> list[str]:
    """``jobplane plan``'s words for each step (a group's members too) that has expectations."""
    from jobplane.contract.map_transitions import PRICE_PER_TRANSITION

    from jobplane.contract.step_kinds import per_item_steps

    each = {m.parallel[1].name for m in per_item_steps(steps) if m.parallel and len(m.parallel) == 2}
    out = []
    for s in [m for t in steps for m in (t, *(t.parallel or []))]:
        if s.expect:
            line = ce.plan_line(s.name, [dict(e) for e in s.expect], PRICE_PER_TRANSITION)
            out.append(line.replace(" per run", " per item").replace(" runs;", " items;") if s.name in each else line)
    return out


def add(b: ExpectBuilder, step: Step, nxt: str, into: Graph, record: bool, publish: Publish | None,
        warned: str | None = None) -> str:
    """Add ``step``'s expectation states going on to ``nxt``; return the first one's name (the
    attempt's Task goes there when it succeeds). ``publish`` None: a map's each step in its
    child execution, judged per item (:func:`item_key`): a warning is kept on the item's record
    (its ``detail``, the child's state data), not alerted item by item; a failure fails the item
    (its retries apply), which the run's failure alert lists with its error (platform/map_alert.py)
    and ``jobplane rerun --failed-items`` takes. ``warned``: where such an item's ``warn`` verdict
    goes (compiler/item_warnings.py: counted for the map's one alert), else on as a pass."""
    slot = steps_slot(step)
    judge, check = sn.expect(step.name), sn.expect_check(step.name)
    warn, failed = sn.expect_warn(step.name), sn.expect_failed(step.name)
    baseline = uses_baseline(step)
    keep = sn.expect_keep(step.name)
    go_on = keep if baseline else nxt
    into.add(check, Choice(choices=[When(equals(f"{slot}.expect.verdict", "fail"), failed),
                                    When(equals(f"{slot}.expect.verdict", "warn"), warn if publish else (warned or go_on))],
                           default=go_on))
    if publish is not None:
        alert = publish(Event.EXPECTATION.value, next_=go_on, outcome={
            "status": ExecutionStatus.RUNNING.value, "step": step.name, "checks.$": f"{slot}.expect.checks"})
        # the words of the alert: the message's error (what the channels show as its detail)
        message = (alert.parameters or {}).get("Message")
        assert isinstance(message, dict)
        message["error.$"] = f"{slot}.expect.words"
        into.add(warn, alert)
    step_failed = b.step_failure_state(step, ExecutionStatus.FAILED, into, record)
    after_failure = step_failed
    if step.retry.attempts > 1:
        after_failure = sn.expect_retry(step.name)
        into.add(after_failure, Choice(
            choices=[When(Test(f"{slot}.{ATTEMPT}", "NumericGreaterThanEquals", step.retry.attempts), step_failed)],
            default=sn.retry(step.name)))
    into.add(failed, Pass(
        comment="An expectation with on_fail 'fail' failed: the attempt's error (its retries apply)",
        parameters={"Error": ce.ERROR, "Cause.$": f"{slot}.expect.words"}, result_path=ERROR, next=after_failure))
    read_error = Catch(["States.ALL"], step_failed, output=jsonata.expression(
        f"$merge([$states.input, {{\"run\": $merge([$states.input.run, {{\"error\": $states.errorOutput}}])}}])"))
    into.add(judge, Task(
        comment="The step's reported metrics, judged by its expectations",
        resource=GET_ITEM, arguments=jsonata.expression(jsonata_arguments(b.job.name, step, item=publish is None)),
        output=jsonata.expression(judge_expression(b.job.name, step, baseline, b.job.expect_days)),
        retry=[b.ddb_retry], catch=[read_error], next=check))
    first = judge
    if baseline:
        history = sn.expect_baseline(step.name)
        into.add(history, Task(
            comment="The job's earlier values of this step's metrics (the baselines' median)",
            resource=GET_ITEM,
            parameters={"TableName": token("table_name"), "Key": history_key(b.job.name, step.name),
                        "ConsistentRead": True},
            result_path=f"{slot}.history", retry=[b.ddb_retry],
            catch=[Catch(["States.ALL"], judge, f"{slot}.history")], next=judge))
        first = history
        into.add(keep, keep_state(b.job.name, step, nxt))
    return first


def jsonata_arguments(job: str, step: Step, item: bool = False) -> str:
    """The judge's GetItem. ``item``: in a map's child execution, whose ``$$.Execution`` is its own:
    the run's name and the item's index come in its input (compiler/map_states.py ``ItemSelector``),
    and the item's record is ``<step>#<index>`` (contract/progress.py ``step_sk``, as the runner writes it)."""
    if item:
        key = ('{"pk": {"S": ' + jsonata.literal(cp.job_prefix(job)) + ' & $states.input.execution}, '
               '"sk": {"S": ' + jsonata.literal(cp.step_sk(step.name, "")) + ' & $string($states.input.index)}}')
    else:
        key = ('{"pk": {"S": ' + jsonata.literal(cp.job_prefix(job)) + ' & $states.context.Execution.Name}, '
               '"sk": {"S": ' + jsonata.literal(step.name) + '}}')
    return ('{"TableName": ' + jsonata.literal(token("table_name")) + ', "Key": ' + key
            + ', "ConsistentRead": true, "ProjectionExpression": "#m", '
            '"ExpressionAttributeNames": {"#m": ' + jsonata.literal(cp.ATTR_METRICS) + '}}')


_OPS = {">=": ">=", "<=": "<=", "==": "=", "!=": "!=", ">": ">", "<": "<"}


def _check_expression(e: Expectation, whens: list[str | None]) -> str:
    """One expectation's check object in JSONata (contract/expectations.py ``evaluate`` in words).
    ``whens``: the step's distinct ``when`` values, whose closed-day reasons the judge binds first
    (``$w<i>``: '' on a business day)."""
    cond = ce.parse(e.check)
    missing = e.on_missing or e.on_fail
    name = jsonata.literal(e.metric)
    if cond.uses_baseline:
        threshold = f"($b != null ? {cond.factor} * $b : null)"
        baseline = "$b"
        bind = (f"$hs := $sort($history({name})); $nh := $count($hs); "
                f"$b := $nh >= {ce.BASELINE_RUNS} ? ($nh % 2 = 1 ? $hs[$floor($nh / 2)] : "
                f"($hs[$nh / 2 - 1] + $hs[$nh / 2]) / 2) : null; ")
    else:
        threshold, baseline, bind = jsonata.literal(cond.value), "null", "$nh := 0; "
    op = _OPS[cond.op]
    closed = f"$w{whens.index(e.when)}" if e.when is not None else "\"\""
    return ("(" + bind + f"$r := $lookup($m, {name}); $x := $exists($r.N) ? $number($r.N) : null; "
            f"$t := {threshold}; $closed := {closed}; "
            f"$o := $closed != \"\" ? \"skipped\" : ($x = null ? {jsonata.literal(missing)} : ($t = null ? \"skipped\" : "
            f"($x {op} $t ? \"pass\" : {jsonata.literal(e.on_fail)}))); "
            f"$note := $closed != \"\" ? \"not a business day (\" & $closed & \")\" : "
            f"($x = null ? \"not reported\" : ($t = null ? $string($nh) & \" comparable earlier runs, "
            f"a baseline needs {ce.BASELINE_RUNS}\" : \"\")); "
            f"{{\"metric\": {name}, \"check\": {jsonata.literal(e.check)}, \"outcome\": $o, \"value\": $x, "
            f"\"threshold\": $t, \"baseline\": {baseline}, \"reported\": $x != null, \"note\": $note}})")


def history_attribute(metric: str) -> str:
    """The history item's attribute of a metric's earlier values (a list of numbers, newest last)."""
    return f"m_{metric}"


def judge_expression(job: str, step: Step, baseline: bool, job_days: dict[str, object] | None = None) -> str:
    """The judge's Output: the state data with the checks in the step's slot (and the history read
    for the baselines left out of it: the run's record keeps the checks, not the history)."""
    key = jsonata.literal(step.key)
    from jobplane.compiler.expect_calendar import JOB_CALENDAR, ExpectDays, business_day_expression

    by_day = (job_days or {}).get(JOB_CALENDAR)
    # a calendar job compares the same business day of earlier months: one list per day of the month
    bdkey = (business_day_expression(by_day) if baseline and isinstance(by_day, ExpectDays) else "null")
    hist = ("$hitem := $lookup($states.input.run.steps, " + key + ").history.Item; "
            f"$bd := {bdkey}; "
            "$history := function($name) { $map($lookup($hitem, \"m_\" & $name & ($bd != null ? \"_\" & $bd : \"\")).L, "
            "function($n) { $number($n.N) }) }; "
            ) if baseline else "$bd := null; "
    from jobplane.compiler.expect_calendar import closed_reason_expression

    whens = sorted({e.when for e in step.expect if e.when is not None})
    days = {w: d for w, d in (job_days or {}).items() if isinstance(d, ExpectDays)}
    # a `when` whose days validation resolved (a job compiled without its config judges every day)
    bound = "".join(f"$w{i} := {closed_reason_expression(days[w]) if w in days else jsonata.literal('')}; "
                    for i, w in enumerate(whens))
    checks = ", ".join(_check_expression(e, list(whens)) for e in step.expect)
    return ("($m := $states.result.Item.metrics.M; $m := $exists($m) ? $m : {}; " + hist + bound
            + f"$checks := [{checks}]; $outs := $checks.outcome; "
            "$verdict := \"fail\" in $outs ? \"fail\" : (\"warn\" in $outs ? \"warn\" : \"pass\"); "
            "$words := $join($map($checks, function($c) { $c.metric & ($c.value = null ? \" not reported\" : \" = \" & "
            "$string($c.value)) & \", expected \" & $c.check & ($c.baseline = null ? \"\" : \" (baseline \" & "
            "$string($c.baseline) & \")\") & \": \" & $c.outcome & ($c.note = \"\" ? \"\" : \" (\" & $c.note & \")\") }), "
            "\"; \"); "
            f"$in := $states.input; $slot := $lookup($in.run.steps, {key}); "
            "$slot := $exists($slot) ? $slot : {}; "
            f"$merge([$in, {{\"run\": $merge([$in.run, {{\"steps\": $merge([$in.run.steps, {{{key}: "
            "$merge([$slot, {\"expect\": {\"checks\": $checks, \"verdict\": $verdict, \"words\": $words, "
            "\"day\": $bd}}])}])}])}]))")


def keep_state(job: str, step: Step, nxt: str) -> Task:
    """Keep this attempt's values of the baselines' metrics in the job's history of the step: per
    metric the last :data:`HISTORY_KEEP` values, newest last (the list the baseline read, with
    this value appended and the oldest dropped: one bounded item, never a growing one), and when
    (``kept_at``, the run's start). A metric it did not report adds nothing. Whatever fails here only loses a value: the run goes on."""
    metrics = sorted({e.metric for e in step.expect if e.uses_baseline})
    slot = "$lookup($states.input.run.steps, " + jsonata.literal(step.key) + ")"
    parts = []
    for i, m in enumerate(metrics):
        # a calendar job's list of this business day of the month (the judge's ``day``)
        attr = f"({jsonata.literal(history_attribute(m))} & ($day != null ? \"_\" & $day : \"\"))"
        parts.append(f"($v := $lookup($c, {jsonata.literal(m)}); $old := $lookup($hitem, {attr}).L; "
                     f"$old := $exists($old) ? $old : []; $new := $append($old, [{{\"N\": $string($v)}}]); "
                     f"$new := $count($new) > {HISTORY_KEEP} ? $new[[$count($new) - {HISTORY_KEEP}..$count($new) - 1]] : $new; "
                     f"$type($v) = \"number\" ? {{\"set\": \"#m{i} = :x{i}\", \"names\": {{\"#m{i}\": {attr}}}, "
                     f"\"values\": {{\":x{i}\": {{\"L\": $new}}}}}} : null)")
    args = ("($c := $merge($map(" + slot + ".expect.checks, function($k) { {$k.metric: $k.value} })); "
            "$day := " + slot + ".expect.day; "
            "$hitem := " + slot + ".history.Item; "
            # (no bare ``$`` in a filter: Step Functions refuses the references ``$`` and ``$$`` in JSONata)
            "$ps := $filter([" + ", ".join(parts) + "], function($p) { $p != null }); "
            "{\"TableName\": " + jsonata.literal(token("table_name")) + ", \"Key\": "
            + jsonata.literal(history_key(job, step.name)) + ", "
            "\"UpdateExpression\": \"SET \" & $join($append([\"#at = :at\"], $ps.set), \", \"), "
            "\"ExpressionAttributeNames\": $merge($append([{\"#at\": \"kept_at\"}], $ps.names)), "
            "\"ExpressionAttributeValues\": $merge($append([{\":at\": {\"S\": $states.context.Execution.StartTime}}], "
            "$ps.values))})")
    key = jsonata.literal(step.key)
    # the state data as it was, without the history read (the run's record keeps the checks only)
    out = jsonata.expression(
        f"($in := $states.input; $merge([$in, {{\"run\": $merge([$in.run, {{\"steps\": $merge([$in.run.steps, "
        f"{{{key}: $sift($lookup($in.run.steps, {key}), function($v, $k) {{ $k != \"history\" }})}}])}}])}}]))")
    return Task(comment="Keep this run's values for the next runs' baselines", resource=UPDATE_ITEM,
                arguments=jsonata.expression(args), output=out, catch=[Catch(["States.ALL"], nxt, output=out)], next=nxt)
