"""Expand a job into its Step Functions state machine (Amazon States Language, JSONPath; the
first claim alone is a JSONata state).

The expansion is the product's core guarantee, so its shape is dictated by the product contract
(docs/state-machine.md) and by cost (Standard workflows bill per state transition):

* **Claim (first)**, the first state, is the claim of every input a jobplane starter sends and of
  a console start, whose missing fields get defaults (a manual run) inside its own arguments
  (:meth:`_Builder.first_claim`); any other input goes on to **Start**, which checks it: a field
  of the wrong type is recorded and ends the run before any claim.
* **Claim** is one DynamoDB conditional UpdateItem. Its condition holds the whole policy table
  and duplicate-fire detection, so deciding and claiming cost one state and can never race.
* **Route** sends a re-run to ``resume_from``; only a re-run's claim (``Claim (re-run)``) goes there.
* Each step's attempts are its kind's executor's (compiler/executors/: an ``ecs:runTask.sync``
  or ``lambda:invoke`` Task that goes straight on when it succeeds, and whose failures reach a
  **check** Choice). Retries of the step's own failures
  loop back to the same Task through a counter (``<step>: retry``) and the back-off
  (``<step>: wait``), built here for every executor.
* **Finish** / **record failure** are one DynamoDB transaction each: release the claim and write
  the execution record together (the very writes the reconciler makes for a run that could not:
  :mod:`jobplane.contract.items`). For a job that announces RECOVERED, Finish's condition (no
  failure block) decides it: only the run that ends a failure streak pays for the decision.
* The skip path loads the job state once, with the claim's duplicate condition (a duplicate
  goes straight to its record), and (for a job whose policy holds the claim) asks Step
  Functions about the claim's holder, then one Choice says *why* (paused, running, last
  failed); a stale holder is taken over, and a REPLACE job stops a running one and takes over.

States are typed objects (:mod:`jobplane.compiler.states`) named only through
:mod:`jobplane.contract.states`, whose classifier the runtime uses to read histories back.

State data: the input fields (:mod:`jobplane.contract.execution_input`), ``$.run.steps.<step_key>`` (the attempt counter, and the current
attempt's container when its task ran to its end), ``$.run.error`` (the latest failed attempt's
error: one slot, so the state data cannot grow with failed attempts toward the 256 KB limit),
``$.run.infra`` (infrastructure retries used).
What each attempt ended with is read back from the execution history (:mod:`jobplane.platform.timeline`).

Transitions (see docs/state-machine.md; SPEC targets): one-step success 3 (issue 66), each further
step +1 (a ``.sync`` Task that succeeded ran its container to exit 0: no check follows it),
duplicate skip 3, other skips 4-5, failure 5-6, each retry +4; a re-run from a step and an
upstream start pay Start after the first claim's refusal.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import re
from typing import Any

from jobplane.compiler import blackout_states, jsonata
from jobplane.contract.blackouts import JobWindow
from jobplane.compiler.model import Job, Step
from jobplane.compiler.state_data import ATTEMPT, BACKOFF, FAILED_STEP, steps_slot
from jobplane.compiler.kinds import GroupKind
from jobplane.compiler.choice_rules import (Not, Rule, Test, When, all_of, any_of, equals, is_null, is_string,
                                          matches, number_equals, present)
from jobplane.compiler.states import DISCARD, Catch, Choice, Fail, Graph, Kept, Parallel, Pass, Retry, State, Task, Wait
from jobplane.contract import asl_shape
from jobplane.contract import datamodel as dm
from jobplane.contract import execution_input, items, policies
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract import runner as rc
from jobplane.contract import upstream
from jobplane.contract import states as sn
from jobplane.contract.bindings import token
from jobplane.contract.items import Ref, Text
from jobplane.contract.statuses import AUTOMATIC_TRIGGERS, UNCOMPARED_TRIGGERS, Event, ExecutionStatus, SkipReason, Trigger
from jobplane.contract.types import JsonObject

_TRANSIENT = ("ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerErrorException",
              "RequestLimitExceeded")



def sdk_error(name: str) -> str:
    """An error's name as an AWS SDK integration reports it (see below)."""
    return name if name.endswith("Exception") else f"{name}Exception"


# The optimised DynamoDB integration names errors "DynamoDB.X"; the aws-sdk one "DynamoDb.X", always with
# the "Exception" suffix, even where the service's own name has none ("RequestLimitExceeded" becomes
# "DynamoDb.RequestLimitExceededException": "Learning to use AWS service SDK integrations in Step
# Functions", https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html).
DDB_RETRY = Retry((*(f"DynamoDB.{e}" for e in _TRANSIENT), "DynamoDB.AmazonDynamoDBException"), 5, interval=1,
                  backoff=2.0, max_delay=20, full_jitter=True)
# A transaction without conditions is only cancelled by a conflicting concurrent write: retry it.
SDK_DDB_RETRY = Retry((*(f"DynamoDb.{sdk_error(e)}" for e in _TRANSIENT), "DynamoDb.TransactionCanceledException",
                       "DynamoDb.TransactionConflictException"), 5, interval=1, backoff=2.0, max_delay=20,
                      full_jitter=True)
# The Finish of a job that announces RECOVERED carries a condition (no failure block): a
# cancellation is then either that condition or a transient one, which its Catch tells apart by
# the cancellation reasons in the Cause, so only the transient errors with names of their own
# are retried here (finish_states).
FINISH_RETRY = Retry((*(f"DynamoDb.{sdk_error(e)}" for e in _TRANSIENT), "DynamoDb.TransactionConflictException"), 5, interval=1,
                     backoff=2.0, max_delay=20, full_jitter=True)
TRANSACTION_CANCELLED = "DynamoDb.TransactionCanceledException"
SNS_RETRY = Retry(("SNS.ThrottledException", "SNS.InternalErrorException", "SNS.AmazonSNSException",
                   "SNS.KMSThrottlingException"), 5, interval=1, backoff=2.0, full_jitter=True)
SFN_RETRY = Retry(("Sfn.ThrottlingException", "Sfn.SfnException"), 3, interval=1, backoff=2.0)
UPDATE_ITEM = "arn:aws:states:::dynamodb:updateItem"
GET_ITEM = "arn:aws:states:::dynamodb:getItem"
PUT_ITEM = "arn:aws:states:::dynamodb:putItem"
TRANSACT = "arn:aws:states:::aws-sdk:dynamodb:transactWriteItems"
DESCRIBE_EXECUTION = "arn:aws:states:::aws-sdk:sfn:describeExecution"
STOP_EXECUTION = "arn:aws:states:::aws-sdk:sfn:stopExecution"
PUBLISH = "arn:aws:states:::sns:publish"

# What the running execution knows about itself (the context object) and its input.
EXECUTION_NAME = Ref("$$.Execution.Name")
EXECUTION_ARN = Ref("$$.Execution.Id")
STARTED_AT = Ref("$$.Execution.StartTime")
NOW = Ref("$$.State.EnteredTime")
INPUT_JSON = Ref("States.JsonToString($$.Execution.Input)")
TRIGGER = ExecutionInput.ref("trigger")
SCHEDULED_TIME = ExecutionInput.ref("scheduled_time")
REQUESTED_BY = ExecutionInput.ref("requested_by")
RESUME_FROM = ExecutionInput.ref("resume_from")
STEPS_JSON = Ref("States.JsonToString($.run.steps)")
HOLDER = f"$.state.Item.{dm.ATTR_HOLDER}.S"
BLOCKER = f"$.state.Item.{dm.ATTR_BLOCKED_BY}.S"
INVALID_INPUT_ERROR = (f"invalid input: trigger must be {', '.join(t.value for t in Trigger)}; scheduled_time and "
                       "requested_by strings; resume_from and rerun_of strings or null (docs/state-machine.md, Input)")
#: What the claim stores as this fire's key (``fire_<trigger>``): "<not a scheduled fire>|<time>",
#: so scheduled fires order by time and every other trigger sorts after them (claim_update).
FIRE_KEY = Ref("States.Format('{}|{}', States.ArrayContains(States.Array("
               + ", ".join(f"'{t.value}'" for t in UNCOMPARED_TRIGGERS) + f"), {TRIGGER.expr}), {SCHEDULED_TIME.expr})")
#: The holder a job state without one is read with: no ARN, so DescribeExecution refuses it
#: (Base64 of its JSON: an intrinsic's string argument would need escapes for the braces).
_NO_HOLDER = base64.b64encode(json.dumps({dm.ATTR_HOLDER: {"S": "none"}}).encode()).decode()


def _initial_slots(steps: list[Step]) -> JsonObject:
    """The attempt counter of each step that may be retried, before its first attempt."""
    # a group's members attempted in the run itself (a map's items step; its each step: in the map's children)
    inside = [m for s in steps if isinstance(s.kind_, GroupKind) for m in s.kind_.run_members(s)]
    return {s.key: {ATTEMPT: 1} for s in steps + inside if s.parallel is None and s.retry.attempts > 1}


#: sn.classify, kept by the name (all it reads; a StateName is frozen): most names are the
#: same in every job (Claim, Finish, Notify failure, a step's check), classified once each.
_classify = functools.lru_cache(maxsize=4096)(sn.classify)

@functools.lru_cache(maxsize=2)
def _start_choice(after: bool) -> Kept:
    """``Start``'s Choice (_Builder.start_states): a function of whether the job has ``after``
    alone, so made once for each (~1.2 KB of every job's definition)."""
    missing = any_of(*(Not(present(ExecutionInput.ref(f).expr)) for f in execution_input.FIELDS))

    def nullable_string(f: str) -> Rule:
        return any_of(is_string(ExecutionInput.ref(f).expr), is_null(ExecutionInput.ref(f).expr))

    by_upstream = equals(TRIGGER.expr, Trigger.UPSTREAM.value)
    valid = all_of(
        any_of(*(equals(TRIGGER.expr, t.value) for t in Trigger)),
        is_string(SCHEDULED_TIME.expr),
        is_string(REQUESTED_BY.expr),
        nullable_string("resume_from"),
        nullable_string("rerun_of"),
        # a run started by another job's end names that run
        any_of(Not(by_upstream), is_string(ExecutionInput.ref("upstream").expr)))
    choices = [
        When(missing, sn.START_DEFAULTS),
        When(Not(valid), sn.INVALID_INPUT),
        When(is_string(RESUME_FROM.expr), sn.CLAIM_RERUN),
    ]
    if after:
        choices.append(When(by_upstream, sn.UPSTREAM_LOAD))
    return Kept(Choice(choices=choices, default=sn.CLAIM))


@functools.lru_cache(maxsize=1024)
def _retry_states(slot: str, delays: str, wait: str, attempt: str) -> tuple[Kept, Kept]:
    """_Builder.retry_loop's two states: a function of the step's slot, its back-offs (as
    written), its wait's and its attempt's names alone, the same in every job whose step has
    the same name and retries, so made once."""
    counter = f"{slot}.{ATTEMPT}"
    return (Kept(Pass(comment="Count the next attempt; a fresh result slot, so the check reads only its own",
                      parameters={f"{ATTEMPT}.$": f"States.MathAdd({counter}, 1)",
                                  f"{BACKOFF}.$": f"States.ArrayGetItem(States.Array({delays}), {counter})"},
                      result_path=slot, next=wait)),
            Kept(Wait(seconds_path=f"{slot}.{BACKOFF}", next=attempt)))


def claim_update(job: str, team: str, policy: policies.ExecutionPolicy, takeover: bool = False) -> JsonObject:
    """The claim's conditional UpdateItem. ``takeover``: replace the claim of a stale holder
    (the state's holder must still be the one found stale) instead of requiring none. The
    policy adds its own conditions and writes (contract/policies.py)."""
    # Duplicate fires: a scheduled fire must be newer than the newest claimed. The stored key
    # is "<not a scheduled fire>|<time>", so it orders by time among scheduled fires, while a
    # manual run, re-run, backfill or upstream-started run ("true|...") always sorts after them
    # and is never a duplicate (each has its own guard: statuses.UNCOMPARED_TRIGGERS);
    # it is stored under its own trigger's name, so it never moves the scheduled key.
    # A paused job refuses its scheduled fires (pause_schedule): the pause disables the
    # schedule, but an apply of the team's Terraform root enables it again.
    conditions = ["(attribute_not_exists(#sched) OR #sched < :fire)", "attribute_not_exists(#paused)"]
    names = {"#sched": f"{dm.ATTR_FIRE_PREFIX}{Trigger.SCHEDULE.value}",
             "#fire.$": f"States.Format('{dm.ATTR_FIRE_PREFIX}{{}}', {TRIGGER.expr})",
             "#fired.$": f"States.Format('{dm.ATTR_FIRED_PREFIX}{{}}', {TRIGGER.expr})",
             "#claims.$": f"States.Format('{dm.ATTR_CLAIMS_PREFIX}{{}}', {TRIGGER.expr})",
             "#paused.$": f"States.Format('{dm.ATTR_PAUSE_PREFIX}{{}}', {TRIGGER.expr})",
             "#running": dm.ATTR_RUNNING}
    values: dict[str, items.Value] = {
        ":t": SCHEDULED_TIME,
        ":fire": FIRE_KEY,
        ":me": items.StringSet(EXECUTION_NAME),
        ":job": job,
        ":team": team,
        ":jobs": dm.JOBS_PARTITION,
        ":one": items.Number(1),
        ":runstatus": dm.status_partition(dm.RUNNING_STATUS),
    }
    # The claim files the job under RUNNING in the status index (gsi3, datamodel.status_filed):
    # the jobs page filtered to RUNNING queries that partition, not every job's state.
    update = (f"SET #fire = :fire, #fired = :t, job = :job, team = :team, gsi1pk = :jobs, gsi1sk = :job, "
              f"{dm.ATTR_STATUS_PK} = :runstatus, {dm.ATTR_STATUS_SK} = :job")
    terms = policy.claim_terms(takeover)
    conditions += terms.conditions
    update += terms.set_
    names |= terms.names
    values |= terms.values
    # A fresh claim adds this run to the set; a takeover replaces the stale holder's set.
    # Each claim counts itself (claims_<trigger>): as scheduled fires are claimed strictly in
    # order, the count since a time tells the fire ledger (platform/missed.py) that every
    # fire since then ran, without reading the runs.
    update += ", #running = :me ADD #claims :one" if takeover else " ADD #running :me, #claims :one"
    if takeover:
        values[":stale"] = policies.STALE_HOLDER
    return {
        "TableName": token("table_name"),
        "Key": items.as_asl(items.job_key(job)),
        "UpdateExpression": update,
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": items.as_asl(values),
    }


#: The job's name and team while the first claim's JSONata text is made once per policy
#: (:func:`_claim_text`): a NUL is in no other part of the claim, so their JSON escapes
#: (``\u0000...``) mark exactly where the job's own go.
_NAME_MARK, _TEAM_MARK = "\x00job\x00", "\x00team\x00"


def _escaped(text: str) -> str:
    """``text`` as it is written inside a JSON (and JSONata) string literal."""
    return jsonata.literal(text)[1:-1]


_MARKS = re.compile(f"({re.escape(_escaped(_NAME_MARK))}|{re.escape(_escaped(_TEAM_MARK))})")


@functools.lru_cache(maxsize=64)
def _claim_parts(policy: policies.ExecutionPolicy) -> tuple[str, ...]:
    """The first claim's JSONata translation of :func:`claim_update` for a job of ``policy``, cut
    at the job's name and team (odd items: which mark)."""
    return tuple(_MARKS.split(jsonata.template(claim_update(_NAME_MARK, _TEAM_MARK, policy))))


def _claim_text(policy: policies.ExecutionPolicy, job: str, team: str) -> str:
    """``jsonata.template(claim_update(job, team, policy))``, the same text: the claim is the same
    object for every job of a policy but for its name and team, which it holds only as string
    values (literals, each escaped character by character, so the job's escape goes where the
    mark's was). Translated for each job it was ~54 JSON literals, ~22 us a job; filled in, ~2 us
    (CPU, one process)."""
    fill = {_escaped(_NAME_MARK): _escaped(job), _escaped(_TEAM_MARK): _escaped(team)}
    return "".join(part if i % 2 == 0 else fill[part] for i, part in enumerate(_claim_parts(policy)))


#: The states _order puts before the steps, and where.
_FIRST = {sn.Role.BLACKOUT: -1, sn.Role.CLAIM: 0, sn.Role.START: 1, sn.Role.UPSTREAM: 1, sn.Role.ROUTE: 2}


class _Builder:
    ddb_retry = DDB_RETRY  # a group's record writes (a map item's record) retry as the job's own

    def __init__(self, job: Job, prefix: str, pools: dict[str, int] | None = None,
                 windows: list[JobWindow] | None = None):
        self.job = job
        self.windows = windows or []  # its blackout windows (compiler/blackout_states.py)
        self.prefix = prefix
        self.pools = pools or {}  # jobplane.toml [pools]: the size each pooled step's claim allows
        self.entries: dict[str, str] = {}  # a pooled step's first state (its ticket), for Route
        self.graph = Graph()
        self.events = set(job.notify.events)
        self.policy = policies.of(job.policy)
        self._step_index: dict[str, int] | None = None  # _order's
        #: record_state's claim release, by (status, unblocked): all else it holds is this job's
        #: name and constants (one object in each of the job's record states: rendered, never changed)
        self._releases: dict[tuple[ExecutionStatus, bool], JsonObject] = {}

    def add(self, name: str, state: State) -> str:
        return self.graph.add(name, state)

    # -- the whole machine ------------------------------------------------------------------
    def build(self) -> JsonObject:
        first = self.steps_chain(self.job.steps, final=self.finish_states())
        self.start_states()
        self.add(sn.CLAIM_FIRST, self.first_claim(next_=first))
        self.add(sn.CLAIM, self.claim_state(next_=first))
        self.add(sn.CLAIM_RERUN, self.claim_state(next_=sn.ROUTE))
        self.add(sn.ROUTE, self.route_state(first))
        self.skip_states()
        self.failure_tail()
        self.graph.start_at = sn.CLAIM_FIRST
        if self.windows:
            self.graph.start_at = blackout_states.add_states(self, self.windows, sn.CLAIM_FIRST, PUT_ITEM, DDB_RETRY)
        body = self.graph.to_dict(order=sorted(self.graph, key=self._order))
        return {
            "Comment": f"jobplane job {self.job.name} (team {self.job.team}); compiled, do not edit",
            "StartAt": body["StartAt"],
            "TimeoutSeconds": self.job.timeout,
            "States": body["States"],
        }

    def _order(self, name: str) -> tuple[int, str]:
        # Stable, readable order: start, claims, route, steps (in definition order), the rest by name.
        state = _classify(name)
        if state.role in _FIRST:
            return (_FIRST[state.role], name)
        if state.step is not None:
            if self._step_index is None:  # each step's and member's position, once per job
                self._step_index = {}
                for i, step in enumerate(self.job.steps):
                    for n in (step.name, *(m.name for m in step.parallel or [])):
                        self._step_index.setdefault(n, 3 + i)
            if state.step in self._step_index:
                return (self._step_index[state.step], name)
        return (1000, name)

    # -- start ------------------------------------------------------------------------------
    def start_states(self) -> None:
        """Check an input the first claim did not take (:meth:`first_claim`), before anything
        reads it.

        Every jobplane starter sends all of ``execution_input.FIELDS``; an execution started
        from the Step Functions console (or ``aws stepfunctions start-execution``) with ``{}`` or
        a partial object gets ``execution_input.defaults`` for what it left out, and comes back
        here. An input with a field of the wrong type ends at once (``Job.InvalidInput``) before
        any claim (recorded FAILED): a state that read it would fail with an uncatchable
        ``States.Runtime``.
        A re-run goes to its own claim, whose next state honours ``resume_from``, so a run that
        resumes nothing never pays for the Route. Any other valid input goes to ``Claim``, the
        JSONPath claim the first one translates (an upstream start, once carried; an input the
        first claim would have taken never comes here)."""
        if self.job.after:
            self.upstream_states()
        self.add(sn.START, _start_choice(bool(self.job.after)))
        fallback = execution_input.defaults(started_at="", params=self.job.param_defaults)
        self.add(sn.START_DEFAULTS, Pass(
            comment="Started without jobplane's input (the console): a manual run of the job's default params",
            parameters={"defaults": ExecutionInput.asl(
                trigger=fallback.trigger, scheduled_time=STARTED_AT, requested_by=fallback.requested_by,
                params=self.params_ref(), refs_last=True), "given.$": "$"},
            next=sn.START_MERGE))
        self.add(sn.START_MERGE, Pass(parameters={"input.$": "States.JsonMerge($.defaults, $.given, false)"},
                                      output_path="$.input", next=sn.START))
        # Recorded (FAILED, with what was sent) without touching the job state: it never claimed,
        # so it neither blocks a SKIP_IF_FAILED job nor clears its last status.
        record = items.execution_record(
            execution=EXECUTION_NAME, execution_arn=EXECUTION_ARN, job=self.job.name, team=self.job.team,
            status=ExecutionStatus.FAILED, trigger=None, scheduled_time=None, requested_by=None,
            input_json=INPUT_JSON, started_at=STARTED_AT, finished_at=NOW, error=INVALID_INPUT_ERROR)
        self.add(sn.INVALID_INPUT, Task(
            comment="An input field of the wrong type: recorded, never run",
            resource=PUT_ITEM, parameters=record.asl(token("table_name")),
            result_selector={"status": ExecutionStatus.FAILED.value, "step": None, "reason": "invalid input"},
            result_path="$.outcome", retry=[DDB_RETRY], next=sn.FAIL))

    def params_ref(self) -> Ref:
        """The job's params as the state machine builds them: Base64 of their JSON, so a key
        ending in ".$" stays a key and no character needs an intrinsic-function escape. Their
        size is bounded by the steps' container overrides (overrides.params_budget), well inside
        what the intrinsic accepts."""
        encoded = base64.b64encode(json.dumps(self.job.param_defaults, sort_keys=True, separators=(",", ":"),
                                              ensure_ascii=False).encode()).decode()
        return Ref(f"States.StringToJson(States.Base64Decode('{encoded}'))")

    def upstream_states(self) -> None:
        """A run started by the end of a run of a job this one is ``after`` (contract/upstream.py):
        read that run's record; start only if it ended the way this job waits for (the status
        event cannot tell a skip from a success); mark it, so the same event delivered again is
        a duplicate; then run with its scheduled_time, as a scheduled run of this job would."""
        record = "$.upstream_record.Item"
        self.add(sn.UPSTREAM_LOAD, Task(
            comment="The upstream run's record (it is written before its execution ends)",
            resource=GET_ITEM,
            parameters={"TableName": token("table_name"),
                        "Key": items.as_asl(items.execution_key(ExecutionInput.ref("upstream"))), "ConsistentRead": True},
            result_path="$.upstream_record", retry=[DDB_RETRY], next=sn.UPSTREAM_CHECK))
        matches = []
        for a in self.job.after:
            matches.append(When(all_of(
                present(f"{record}.job.S"),
                equals(f"{record}.job.S", a.job),
                present(f"{record}.scheduled_time.S"),
                any_of(*(equals(f"{record}.status.S", s) for s in upstream.RECORD_STATUSES[a.on]))),
                sn.UPSTREAM_ONCE))
        self.add(sn.UPSTREAM_CHECK, Choice(choices=matches, default=sn.UPSTREAM_NOTHING))
        self.add(sn.UPSTREAM_NOTHING, Pass(
            comment="The upstream run was a skip, or ended otherwise than this job waits for: nothing runs"))
        self.add(sn.UPSTREAM_ONCE, Task(
            comment="Mark the upstream run as having started this job; already marked: a duplicate event",
            resource=UPDATE_ITEM,
            parameters={"TableName": token("table_name"),
                        "Key": items.as_asl(items.execution_key(ExecutionInput.ref("upstream"))),
                        "UpdateExpression": "ADD #jobs :job, #runs :me",
                        "ConditionExpression": "attribute_exists(pk) AND NOT contains(#jobs, :name)",
                        "ExpressionAttributeNames": {"#jobs": dm.ATTR_AFTER_JOBS, "#runs": dm.ATTR_AFTER_RUNS},
                        "ExpressionAttributeValues": items.as_asl({
                            ":job": items.StringSet(self.job.name), ":name": self.job.name,
                            ":me": items.StringSet(EXECUTION_NAME)})},
            result_path=DISCARD, retry=[DDB_RETRY],
            catch=[Catch(["DynamoDB.ConditionalCheckFailedException"], self.skip_record(SkipReason.DUPLICATE),
                         "$.claim_error")],
            next=sn.UPSTREAM_CARRY))
        self.add(sn.UPSTREAM_CARRY, Pass(
            comment="Run for the upstream run's scheduled time, with this job's params",
            parameters=ExecutionInput.asl(trigger=TRIGGER, scheduled_time=Ref(f"{record}.scheduled_time.S"),
                                          requested_by=REQUESTED_BY, params=self.params_ref(),
                                          upstream=ExecutionInput.ref("upstream")),
            next=sn.CLAIM))

    # -- claim ------------------------------------------------------------------------------
    def claim_update(self, takeover: bool = False) -> JsonObject:
        """The claim's conditional UpdateItem (:func:`claim_update`) for this job."""
        return claim_update(self.job.name, self.job.team, self.policy, takeover)

    def run_selector(self) -> JsonObject:
        """``$.run`` as a claim starts it; each retried step's attempt counter at 1 (a re-run
        from a step starts its attempts afresh, as the claim is its own). The claim returns
        nothing: the job state it replaced was read only to decide RECOVERED, which the Finish
        transaction's condition decides now (finish_states)."""
        return {"steps": _initial_slots(self.job.steps), "infra": {"n": 0}}

    def claim_state(self, next_: str) -> Task:
        return Task(
            comment=f"Policy {self.job.policy.value} and duplicate-fire check in one conditional write",
            resource=UPDATE_ITEM, parameters=self.claim_update(), result_selector=self.run_selector(),
            result_path="$.run", retry=[DDB_RETRY],
            catch=[Catch(["DynamoDB.ConditionalCheckFailedException"], sn.SKIP_LOAD_STATE, "$.claim_error")],
            next=next_)

    def first_claim(self, next_: str) -> Task:
        """The machine's first state: the claim, with a console start's defaults merged in its own
        arguments, so a run with the input every jobplane starter sends, or with ``{}``, costs no
        state before it (3 transitions for a one-step success: issue 66).

        A JSONata Task in a JSONPath machine (per-state ``QueryLanguage``:
        https://docs.aws.amazon.com/step-functions/latest/dg/statemachine-structure.html). Each of
        its expressions binds ``$in`` to the input over its defaults: JSONata's ``$merge`` of
        objects, a later key replacing an earlier one (https://docs.jsonata.org/object-functions),
        the shallow merge ``Start: merge`` makes with ``States.JsonMerge(..., false)``; the time
        is ``$states.context.Execution.StartTime``, the context object's
        (https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html,
        https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html).
        ``Arguments`` are the JSONPath claim's ``Parameters`` translated (compiler/jsonata.py), when
        ``$in`` is an input this claim takes: of the types ``Start`` checks, resuming nothing, and
        (for a job with ``after``) not an upstream start. Any other input makes them ``$error()``
        (JSONata's own, https://docs.jsonata.org/object-functions#error), which fails the state
        with ``States.QueryEvaluationError`` before any call, and a Catcher may name that error
        (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html): its
        ``Output`` (a JSONata catcher's, in place of ``ResultPath``) hands the input as given
        to ``Start``, which decides as it always did. ``Output`` is the state data a JSONPath
        claim leaves (the input, ``run``), a refused claim's catcher adds ``claim_error``
        (``$states.result`` and ``$states.errorOutput``: transforming-data.html above)."""
        fallback = execution_input.defaults(started_at="", params=self.job.param_defaults)

        def given(with_params: bool) -> str:
            # the input over its defaults; an input that is not an object takes none (Start decides)
            defaults = ", ".join(
                [f"\"trigger\":{jsonata.literal(fallback.trigger)}",
                 "\"scheduled_time\":$states.context.Execution.StartTime",
                 f"\"requested_by\":{jsonata.literal(fallback.requested_by)}"]
                + ([f"\"params\":{jsonata.literal(self.job.param_defaults)}"] if with_params else [])
                + ["\"resume_from\":null", "\"rerun_of\":null"])
            return (f"{jsonata.INPUT} := $type($states.input) = \"object\" ? "
                    f"$merge([{{{defaults}}}, $states.input]) : {{}}")

        i = jsonata.INPUT
        triggers = [t.value for t in Trigger if not (self.job.after and t is Trigger.UPSTREAM)]
        takes = " and ".join([
            f"({i}.trigger in {jsonata.literal(triggers)})",
            f"$type({i}.scheduled_time) = \"string\"",
            f"$type({i}.requested_by) = \"string\"",
            f"$type({i}.resume_from) = \"null\"",  # a string: a re-run from a step (Start)
            f"($type({i}.rerun_of) in [\"string\", \"null\"])",
            f"({i}.trigger != {jsonata.literal(Trigger.UPSTREAM.value)} or $type({i}.upstream) = \"string\")"])
        refused = jsonata.literal("not an input the first claim takes: Start decides (an invalid input, a re-run "
                                  "from a step, an upstream start)")
        arguments = f"({given(False)}; {takes} ? {_claim_text(self.policy, self.job.name, self.job.team)} : $error({refused}))"
        merged = given(True)  # the output's and the refused claim's catcher's, made once
        state = f"$merge([{i}, {{\"run\":{jsonata.literal(self.run_selector())}}}])"
        claim_error = f"$merge([{i}, {{\"claim_error\":$states.errorOutput}}])"
        return Task(
            comment=f"Policy {self.job.policy.value} and duplicate-fire check in one conditional write; "
                    "a console start's defaults merged in; any input it does not take goes to Start",
            resource=UPDATE_ITEM, arguments=jsonata.expression(arguments),
            output=jsonata.expression(f"({merged}; {state})"), retry=[DDB_RETRY],
            catch=[Catch(["DynamoDB.ConditionalCheckFailedException"], sn.SKIP_LOAD_STATE,
                         output=jsonata.expression(f"({merged}; {claim_error})")),
                   Catch(["States.QueryEvaluationError"], sn.START, output=jsonata.expression("$states.input"))],
            next=next_)

    def route_state(self, first: str) -> Choice:
        choices = [When(equals(RESUME_FROM.expr, s.name), self.entries.get(s.name, sn.attempt(s.name)))
                   for s in self.job.steps if s.kind.resumed_at_attempt]
        for group in self.job.steps:  # a group's members (a map: the map too), as its kind routes them
            choices += group.kind.resume_routes(group, self.entries)
        # A resume_from naming no step must not silently run the whole job.
        choices.append(When(is_string(RESUME_FROM.expr), sn.UNKNOWN_RESUME_FROM))
        self.add(sn.UNKNOWN_RESUME_FROM, self.record_state(ExecutionStatus.FAILED, None))
        return Choice(choices=choices, default=first)

    # -- steps ------------------------------------------------------------------------------
    def steps_chain(self, steps: list[Step], final: str) -> str:
        """Add states for ``steps`` in order; return the first state's name."""
        nxt = final
        for i in range(len(steps) - 1, -1, -1):
            step = steps[i]
            is_last = i == len(steps) - 1
            if isinstance(step.kind, GroupKind):  # its members run: the kind adds its states
                nxt = step.kind.states(self, step, nxt, is_last)
            else:
                nxt = self.step_states(step, nxt, is_last, self.graph, record=True)
        return nxt

    def step_states(self, step: Step, nxt: str, is_last: bool, into: Graph, record: bool) -> str:
        """The attempts of one step, as its kind's executor compiles them (compiler/executors/);
        a pooled step's attempts each hold a slot of its pool (compiler/pools.py); a step's
        expectations judge a successful attempt before ``nxt`` (compiler/expect_states.py)."""
        if step.expect:
            from jobplane.compiler import expect_states

            nxt = expect_states.add(self, step, nxt, into, record, publish=self.publish_state)
        first = step.kind.executor.attempt_states(self, step, nxt, is_last, into, record)
        if step.pool is not None:
            from jobplane.compiler import pools

            first = self.entries[step.name] = pools.wrap(self, step, into, record, self.pools[step.pool.name])
        return first

    def retry_loop(self, step: Step, into: Graph) -> str:
        """``<step>: retry`` and ``<step>: wait``: count the next attempt of a step's own retried
        failure, wait its back-off, run the attempt's Task again.

        Back-offs are static (no pow in the intrinsics): attempt n waits delays[n - 1], index n
        of an array that starts with a placeholder. States.MathAdd, States.Array and
        States.ArrayGetItem (0-based) are JSONPath intrinsics allowed in a Pass's Parameters
        (https://docs.aws.amazon.com/step-functions/latest/dg/intrinsic-functions.html); a Wait
        takes its seconds from a path with SecondsPath
        (https://docs.aws.amazon.com/step-functions/latest/dg/state-wait.html)."""
        retry, wait = sn.retry(step.name), sn.wait(step.name)
        delays = ", ".join(str(d) for d in (0, *step.retry.delays()))
        counting, waiting = _retry_states(steps_slot(step), delays, wait, sn.attempt(step.name))
        into.add(retry, counting)
        into.add(wait, waiting)
        return retry

    def step_failure_state(self, step: Step, status: ExecutionStatus, into: Graph, record: bool) -> str:
        """Where a step's failure goes: its own record state (a timeout: the job's one
        Finish (timed out), told the step by the catcher's FAILED_STEP), or inside a parallel
        branch a Pass that ends the branch with the member's outcome."""
        if record and status == ExecutionStatus.TIMED_OUT:
            if sn.FINISH_TIMED_OUT not in self.graph:
                self.graph.add(sn.FINISH_TIMED_OUT, self.record_state(status, FAILED_STEP))
            return sn.FINISH_TIMED_OUT
        name = sn.step_failed(step.name) if status == ExecutionStatus.FAILED else sn.step_timed_out(step.name)
        if name in into:
            return name
        if record:
            into.add(name, self.record_state(status, step.name))
        else:
            into.add(name, Pass(parameters={"attempts.$": steps_slot(step), "status": status.value}))
        return name

    def initial_slots(self, steps: list[Step]) -> JsonObject:
        """The attempt counters ``steps`` start with (a parallel group's branches: its members)."""
        return _initial_slots(steps)

    # -- records ----------------------------------------------------------------------------
    def execution_record(self, status: ExecutionStatus, **extra: Any) -> items.Put:
        """This run's final record, as the state machine writes it (the reconciler writes the
        same item for a run that could not)."""
        return items.execution_record(
            execution=EXECUTION_NAME, execution_arn=EXECUTION_ARN, job=self.job.name, team=self.job.team,
            status=status, trigger=TRIGGER, scheduled_time=SCHEDULED_TIME, requested_by=REQUESTED_BY,
            input_json=INPUT_JSON, started_at=STARTED_AT, finished_at=NOW, **extra)

    def record_state(self, status: ExecutionStatus, step: Text | None, next_: str | None = None,
                     unblocked: bool = False) -> Task:
        """Release the claim and write the final execution record in one transaction. A failure
        goes on to its notification; a success ends the run unless ``next_`` says otherwise.
        ``unblocked``: only if the job has no failure block (finish_states)."""
        succeeded = status == ExecutionStatus.SUCCEEDED
        extra: JsonObject = {"steps": STEPS_JSON}
        if not succeeded:
            extra["failed_step"] = step if step else RESUME_FROM
        table = token("table_name")
        if (status, unblocked) not in self._releases:  # the same for each step's failure record of the job
            release = items.release_job(self.job.name, execution=EXECUTION_NAME, status=status, started_at=STARTED_AT,
                                        finished_at=NOW)
            if unblocked:
                release = dataclasses.replace(release, condition=f"attribute_not_exists({dm.ATTR_BLOCKED_BY})")
            self._releases[(status, unblocked)] = release.asl(table)
        return Task(
            resource=TRANSACT,
            parameters={"TransactItems": [{"Update": self._releases[(status, unblocked)]},
                                          {"Put": self.execution_record(status, **extra).asl(table)}]},
            result_selector={"status": status.value,
                             **({"step.$": step.expr} if isinstance(step, Ref) else {"step": step})},
            result_path="$.outcome",
            retry=[SDK_DDB_RETRY],
            next=next_ if succeeded else sn.NOTIFY_FAILURE)

    def finish_states(self) -> str:
        """``Finish``: release and record the success. For a job that announces RECOVERED, the
        transaction holds the decision (SPEC: what one DynamoDB write can decide costs no state):
        it releases only a job without a failure block (``blocked_by``, set by a failed run and
        kept by an acknowledgement), so the success that ends a failure streak has its
        transaction cancelled with the reason ConditionalCheckFailed, and goes on to
        ``Finish (recovered)`` (unconditional) and ``Notify recovered``. The reasons are in the
        Cause, in the order of the transaction's items ("Transaction cancelled, please refer
        cancellation reasons for specific reasons [ConditionalCheckFailed, None]": TransactWriteItems,
        TransactionCanceledException, https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html;
        the message as AWS sends it: aws/aws-sdk-go#2318, aws/aws-sdk-js#2464). A cancellation for
        any other reason (a concurrent transaction on the job's item, throttling) runs the same
        conditional transaction again with the usual retries (``Finish (again)``); cancelled
        even then, it can only be the block (a transient reason does not last through five
        back-offs) and the run is announced RECOVERED.

        The success costs nothing for the RECOVERED decision (4 states for one step); the
        recovering run pays 3 more than a plain success (its Finish is entered, cancelled, then
        the Choice and Notify recovered). A success that ends a streak another one ends at the
        same moment may announce it too (both transactions met the block), as when the claim's
        old job state decided it."""
        if Event.RECOVERED not in self.events:
            self.add(sn.FINISH, self.record_state(ExecutionStatus.SUCCEEDED, None))
            return sn.FINISH
        finish = self.record_state(ExecutionStatus.SUCCEEDED, None, unblocked=True)
        finish.retry = [FINISH_RETRY]
        finish.catch = [Catch([TRANSACTION_CANCELLED], sn.FINISH_CANCELLED, "$.finish_error")]
        self.add(sn.FINISH, finish)
        cause = "$.finish_error.Cause"
        self.add(sn.FINISH_CANCELLED, Choice(
            comment="Cancelled by its condition: the job had a failure block, this success ends it",
            choices=[When(all_of(present(cause), matches(cause, "*[ConditionalCheckFailed*")), sn.FINISH_RECOVERED)],
            default=sn.FINISH_AGAIN))
        again = self.record_state(ExecutionStatus.SUCCEEDED, None, unblocked=True)
        again.catch = [Catch([TRANSACTION_CANCELLED], sn.FINISH_RECOVERED, "$.finish_error")]
        self.add(sn.FINISH_AGAIN, again)
        self.add(sn.FINISH_RECOVERED, self.record_state(ExecutionStatus.SUCCEEDED, None,
                                                        next_=sn.NOTIFY_RECOVERED))
        self.add(sn.NOTIFY_RECOVERED, self.publish_state(Event.RECOVERED.value))
        return sn.FINISH

    def publish_state(self, event: str | None, next_: str | None = None,
                      outcome: JsonObject | None = None) -> Task:
        """One SNS message per event; attributes let subscribers filter by team, job, status.
        ``outcome``: built here instead of taken from ``$.outcome``."""
        event_field = {"event": event} if event else {"event.$": "$.outcome.status"}
        message = {
            "version": 1,
            **event_field,
            "job": self.job.name,
            "team": self.job.team,
            "execution.$": "$$.Execution.Name",
            "execution_arn.$": "$$.Execution.Id",
            "trigger.$": TRIGGER.expr,
            "scheduled_time.$": SCHEDULED_TIME.expr,
            "requested_by.$": REQUESTED_BY.expr,
            "started_at.$": "$$.Execution.StartTime",
            "finished_at.$": "$$.State.EnteredTime",
            "outcome.$": "$.outcome",
            "channels": self.job.notify.channels,
            "events": [e.value for e in self.job.notify.events],
            "runbook": self.job.runbook.as_dict() if self.job.runbook else None,
            # only when set: every other job's compiled messages stay as they were
            **({"after_failures": self.job.notify.after_failures} if self.job.notify.after_failures > 1 else {}),
        }
        if outcome is not None:
            del message["outcome.$"]
            message["outcome"] = outcome
        status_attr = {"DataType": "String", "StringValue": event} if event else {"DataType": "String", "StringValue.$": "$.outcome.status"}
        return Task(
            resource=PUBLISH,
            parameters={
                "TopicArn": token("topic_arn"),
                "Message": message,
                "MessageAttributes": {
                    "team": {"DataType": "String", "StringValue": self.job.team},
                    "job": {"DataType": "String", "StringValue": self.job.name},
                    "status": status_attr,
                },
            },
            result_path=DISCARD,
            retry=[SNS_RETRY],
            next=next_)

    def failure_tail(self) -> None:
        # Failures are always published: the notifier routes by the job's events, and other
        # subscribers (the portal's feed, paging) must not depend on a Slack subscription.
        self.add(sn.NOTIFY_FAILURE, self.publish_state(None, next_=sn.FAIL))
        self.add(sn.FAIL, Fail(error_path="States.Format('Job.{}', $.outcome.status)",
                               cause_path="States.JsonToString($.outcome)"))

    # -- skip path --------------------------------------------------------------------------
    def skip_states(self) -> None:
        """Say why the claim was refused: load the job state once and, for a job whose policy
        holds the claim (contract/policies.py), ask Step Functions about the claim's holder at
        once, so one Choice decides (duplicate, holder really running, stale holder to take
        over, blocked). What a running holder means is the policy's: a skip, or (REPLACE) a
        stop of the holder before the takeover."""
        policy = self.policy
        # A duplicate fire is told by this read's own condition (the claim's condition on the
        # newest scheduled fire; a paused job's fire is recorded PAUSED first), so a duplicate
        # goes from here straight to its record (SPEC: a duplicate skip enters at most 4
        # states). DynamoDB has no conditional read: the read is an UpdateItem that sets the
        # job's name to itself and answers with the item (ALL_NEW, so as consistent as the
        # claim), on an item that exists (a refused claim read it; job items are never deleted)
        # so a skip never creates job state.
        load = Task(
            comment="The claim was refused: read the job state once to record why (a duplicate fire fails the condition)",
            resource=UPDATE_ITEM,
            parameters={"TableName": token("table_name"), "Key": items.as_asl(items.job_key(self.job.name)),
                        "UpdateExpression": "SET #job = :job",
                        "ConditionExpression": "attribute_exists(pk) AND (attribute_not_exists(#sched) OR "
                                               "#sched < :fire OR attribute_exists(#paused))",
                        "ExpressionAttributeNames": {"#job": "job",
                                                     "#sched": f"{dm.ATTR_FIRE_PREFIX}{Trigger.SCHEDULE.value}",
                                                     "#paused": f"{dm.ATTR_PAUSE_PREFIX}{Trigger.SCHEDULE.value}"},
                        "ExpressionAttributeValues": items.as_asl({":job": self.job.name, ":fire": FIRE_KEY}),
                        "ReturnValues": "ALL_NEW"},
            result_selector={"Item.$": "$.Attributes"},
            result_path="$.state", retry=[DDB_RETRY],
            catch=[Catch(["DynamoDB.ConditionalCheckFailedException"], self.skip_record(SkipReason.DUPLICATE),
                         "$.claim_error")],
            next=sn.SKIP_CHECK_HOLDER if policy.holds_claim else sn.SKIP_WHY)
        if policy.holds_claim:
            # A refused claim found an item (the condition read it); its holder may be missing
            # (a job that skipped nothing before), so the item is merged over a holder that
            # DescribeExecution refuses as no ARN, which the Choice reads as "cannot tell".
            load.result_selector = {"Item.$": f"States.JsonMerge(States.StringToJson(States.Base64Decode("
                                              f"'{_NO_HOLDER}')), $.Attributes, false)"}
        self.add(sn.SKIP_LOAD_STATE, load)
        choices = [When(all_of(
            equals(TRIGGER.expr, Trigger.SCHEDULE.value),
            present(f"$.state.Item.{dm.ATTR_PAUSE_PREFIX}{Trigger.SCHEDULE.value}")),
            self.skip_record(SkipReason.PAUSED))]
        if policy.holds_claim:
            self.add(sn.SKIP_CHECK_HOLDER, Task(
                comment="Is the execution holding the claim still running? A stale claim is taken over",
                resource=DESCRIBE_EXECUTION,
                parameters={"ExecutionArn.$": HOLDER},
                result_selector={"Status.$": "$.Status"},
                result_path="$.holder",
                retry=[SFN_RETRY],
                # any answer goes on to the Choice: {Status} or {Error, Cause}
                catch=[Catch(["States.ALL"], sn.SKIP_WHY, "$.holder")],
                next=sn.SKIP_WHY))
            running = present(f"$.state.Item.{dm.ATTR_RUNNING}")
            status = "$.holder.Status"
            choices.append(When(all_of(running, present(status), equals(status, "RUNNING")),
                                self.holder_running()))
            # ended, or gone (a holder that never existed is just as stale): take over
            choices.append(When(all_of(running, any_of(
                present(status),
                all_of(present("$.holder.Error"), equals("$.holder.Error", "Sfn.ExecutionDoesNotExistException")))),
                sn.TAKE_OVER))
            # Step Functions could not say (no holder recorded, throttled, denied): honour the claim
            choices.append(When(running, self.skip_record(SkipReason.RUNNING)))
            self.add(sn.TAKE_OVER, Task(
                comment="The holder is no longer running: replace its claim if nobody else did",
                resource=UPDATE_ITEM,
                parameters=self.claim_update(takeover=True),
                result_selector=self.run_selector(),
                result_path="$.run",
                retry=[DDB_RETRY],
                catch=[Catch(["DynamoDB.ConditionalCheckFailedException"], self.skip_record(SkipReason.CLAIM_CONFLICT),
                             "$.claim_error")],
                next=sn.ROUTE))
        if policy.skips_after_failure:
            for trigger in AUTOMATIC_TRIGGERS:
                choices.append(When(all_of(equals(TRIGGER.expr, trigger.value),
                                           present(f"$.state.Item.{dm.ATTR_BLOCK_PREFIX}{trigger.value}")),
                                    self.skip_record(SkipReason.LAST_FAILED)))
        self.add(sn.SKIP_WHY, Choice(choices=choices, default=self.skip_record(SkipReason.CLAIM_CONFLICT)))

    def holder_running(self) -> str:
        """Where a refused claim goes when its holder really runs: the policy decides
        (contract/policies.py ``WhileRunning``)."""
        if self.policy.while_running is policies.WhileRunning.REPLACE:
            return self.replace_states()
        return self.skip_record(SkipReason.RUNNING)

    def replace_states(self) -> str:
        """REPLACE: stop the running holder, then take over its claim (``Take over stale claim``,
        whose condition also accepts a claim the reconciler already released).

        The stop names the policy's error and, as its cause, this execution's ARN: the
        reconciler reads both back from DescribeExecution and records the stopped run ABORTED
        with reason REPLACED and no failure alert (platform/reconciler.py). StopExecution
        takes ``error`` and ``cause`` (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StopExecution.html);
        stopping an execution stops the ECS task of its ``.sync`` step
        (https://docs.aws.amazon.com/step-functions/latest/dg/connect-ecs.html). A stop that
        fails after its retries (throttled, denied) honours the claim: a RUNNING skip."""
        self.add(sn.REPLACE_STOP_HOLDER, Task(
            comment="REPLACE: stop the running execution that holds the claim, then take the claim over",
            resource=STOP_EXECUTION,
            parameters={"ExecutionArn.$": HOLDER, "Error": policies.REPLACED_ERROR, "Cause.$": EXECUTION_ARN.expr},
            result_path=DISCARD,
            retry=[SFN_RETRY],
            catch=[Catch(["States.ALL"], self.skip_record(SkipReason.RUNNING), "$.stop_error")],
            next=sn.TAKE_OVER))
        return sn.REPLACE_STOP_HOLDER

    def skip_record(self, reason: SkipReason) -> str:
        name = sn.skip_record(reason)
        if name in self.graph:
            return name
        blocked_by = Ref(BLOCKER) if reason == SkipReason.LAST_FAILED else None  # the failed run that blocks
        record = self.execution_record(ExecutionStatus.SKIPPED, skip_reason=reason.value, blocked_by=blocked_by)
        nxt = None
        if Event.SKIPPED in self.events and reason == SkipReason.LAST_FAILED:
            # its own message: the outcome names the blocking run (a ResultSelector sees only the
            # putItem's result, so the publish state builds the outcome from the state input)
            nxt = sn.NOTIFY_SKIPPED_LAST_FAILED
            self.add(nxt, self.publish_state(Event.SKIPPED.value, outcome={
                "status": ExecutionStatus.SKIPPED.value, "step": None, "reason": reason.value,
                f"{dm.ATTR_BLOCKED_BY}.$": BLOCKER}))
        elif Event.SKIPPED in self.events:
            nxt = sn.NOTIFY_SKIPPED
            if nxt not in self.graph:
                self.add(nxt, self.publish_state(Event.SKIPPED.value))
        self.add(name, Task(
            comment="Skips are recorded, never counted as failures",
            resource=PUT_ITEM,
            parameters=record.asl(token("table_name")),
            result_selector={"status": ExecutionStatus.SKIPPED.value, "step": None, "reason": reason.value},
            result_path="$.outcome",
            retry=[DDB_RETRY],
            next=nxt))
        return name


def build_definition(job: Job, prefix: str, pools: dict[str, int] | None = None,
                     windows: list[JobWindow] | None = None) -> JsonObject:
    """``pools``: jobplane.toml's [pools] (needed only by a job whose steps hold one);
    ``windows``: its blackout windows resolved (compiler/blackouts.py job_windows)."""
    return _Builder(job, prefix, pools, windows).build()


def render(definition: JsonObject) -> str:
    """Deterministic, compact bytes: the very string deployed (after binding), so its size is
    what counts against the 1 MB definition quota. ``jq .`` or the portal show it indented."""
    # check_circular off: a definition is built fresh as a tree, and the check's bookkeeping
    # for every dict and list was a fifth of rendering (issue 54 item 4)
    # a ShapedAsl: the create's shape check read from the definition, not parsed again (asl_shape.py)
    return asl_shape.dumps_shaped(definition, separators=(",", ":"), ensure_ascii=False, check_circular=False)


def compile_job(job: Job, prefix: str, pools: dict[str, int] | None = None) -> str:
    return render(build_definition(job, prefix, pools))
