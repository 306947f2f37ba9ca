"""The states a job in blackout windows starts with: one Choice on the fire's time, and a record
per window (contract/blackouts.py).

EventBridge Scheduler fires anyway (a schedule's state is ENABLED or DISABLED, not "off between
these instants"), so the state machine itself refuses a fire inside a window, the same on AWS
and on the local engine: the window's occurrences are compiled in as constants, so nothing is
read at run time and nothing needs to be running for the refusal to happen (the horizon is
``[blackouts] years``; `jobplane plan` says when it nears its end: docs/operate.md).

``Blackout`` (a JSONPath Choice, the machine's StartAt) takes a scheduled fire whose
``scheduled_time`` is inside an occurrence ``[start, end)`` of a window; a ``defer`` window lets
through the run it starts itself once it ends (platform/blackouts.py), which carries the last
deferred fire's time and says so in ``requested_by`` (contract/blackouts.py
``deferred_requester``).
``scheduled_time`` is EventBridge Scheduler's ``<aws.scheduler.scheduled-time>``, RFC 3339 in UTC
("2022-03-22T18:59:43Z": https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html).
Timestamps are compared as instants by the ``Timestamp*`` operators, and an ``And`` evaluates a
comparison only after the ``IsPresent`` before it held
(https://docs.aws.amazon.com/step-functions/latest/dg/state-choice.html: "StringEquals rule is
only evaluated if $.keyThatMightNotExist exists because of the preceding IsPresent"), so a
console start's ``{}`` goes on to the claim as before. Any other start (a manual run, a re-run,
a backfill, an upstream start) is never refused: an operator's explicit start wins.

``Blackout: <window>`` writes the run's record, status BLACKED_OUT with the window's name and
action, and ends the run: no claim (the job's last status and its failure block stay as they
were), no notification (a blackout is planned, not news). One transition more for the jobs in a
window, none for the others.
"""

from __future__ import annotations

from typing import Protocol

from jobplane.compiler.choice_rules import Not, Rule, Test, When, all_of, any_of, equals, is_string, matches, present
from jobplane.compiler.states import Choice, Retry, State, Task
from jobplane.contract import items
from jobplane.contract import states as sn
from jobplane.contract.bindings import token
from jobplane.contract.blackouts import DEFERRED_PATTERN, JobWindow, iso, ordered
from jobplane.contract.execution_input import ExecutionInput
from jobplane.contract.statuses import ExecutionStatus, Trigger

_TIME = ExecutionInput.ref("scheduled_time").expr


class _Builds(Protocol):
    def add(self, name: str, state: State) -> str: ...

    def execution_record(self, status: ExecutionStatus, **extra: object) -> items.Put: ...


def inside(window: JobWindow) -> Rule:
    """The fire's time in one of the window's occurrences."""
    return any_of(*(all_of(Test(_TIME, "TimestampGreaterThanEquals", iso(s)), Test(_TIME, "TimestampLessThan", iso(e)))
                    for s, e in window.intervals))


def add_states(builder: _Builds, windows: list[JobWindow], next_: str, put_item: str, retry: Retry) -> str:
    """Add ``Blackout`` and a record per window; return the name the machine starts at
    (``next_`` when no window has an occurrence)."""
    trigger = ExecutionInput.ref("trigger").expr
    scheduled = all_of(present(trigger), equals(trigger, Trigger.SCHEDULE.value), present(_TIME),
                       Test(_TIME, "IsTimestamp"), present(ExecutionInput.ref("requested_by").expr),
                       is_string(ExecutionInput.ref("requested_by").expr))
    choices = []
    for window in ordered(windows):
        if not window.intervals:
            continue
        record = sn.blackout_record(window.name)
        owed = (Not(matches(ExecutionInput.ref("requested_by").expr, DEFERRED_PATTERN)),) \
            if window.action == "defer" else ()
        choices.append(When(all_of(*scheduled.rules, *owed, inside(window)), record))
        put = builder.execution_record(ExecutionStatus.BLACKED_OUT, blackout=window.name,
                                       blackout_action=window.action)
        builder.add(record, Task(
            comment=f"A fire inside blackout window {window.name} ({window.action}): recorded, not run, no alert",
            resource=put_item, parameters=put.asl(token("table_name")),
            result_selector={"status": ExecutionStatus.BLACKED_OUT.value, "step": None, "reason": window.name},
            result_path="$.outcome", retry=[retry]))
    if not choices:
        return next_
    builder.add(sn.BLACKOUT, Choice(choices=choices, default=next_,
                                    comment="A scheduled fire inside a blackout window is recorded, not run"))
    return sn.BLACKOUT
