"""The input every starter gives a compiled state machine (SPEC "The compiled state machine").

:class:`ExecutionInput` is defined once: EventBridge Scheduler sends the schedule's form
(written into Terraform by the compiler); the CLI, the portal and the local scheduler build
theirs here; the compiled ``Start: defaults`` and upstream states build theirs with
:meth:`ExecutionInput.asl`; readers get it back from a record with :meth:`ExecutionInput.read`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Union

from jobplane.contract.items import Ref
from jobplane.contract.statuses import Trigger
from jobplane.contract.types import JsonObject, JsonValue, Params

#: Replaced by EventBridge Scheduler with the fire's scheduled time (ISO 8601, UTC, 'Z').
SCHEDULER_TIME = "<aws.scheduler.scheduled-time>"

#: Every field the state machine reads; a starter that sends them all is a jobplane starter.
FIELDS = ("trigger", "scheduled_time", "requested_by", "params", "resume_from", "rerun_of")

#: Fields sent only when set (the state machine reads none of them).
LINEAGE = ("upstream", "backfill", "definition")

#: ``requested_by`` of a run started with an incomplete input (the Step Functions console, ``aws
#: stepfunctions start-execution``). A running execution cannot learn who started it (its context
#: object has no caller:
#: https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html); CloudTrail's
#: StartExecution event for the execution names the caller (``userIdentity``).
UNATTRIBUTED = "console (unknown caller)"

#: A field's value as the state machine builds it: known now, or a path it reads when it runs.
Template = Union[str, None, Ref]


@dataclass(frozen=True)
class ExecutionInput:
    """What a run was started with. ``upstream`` and ``backfill`` are lineage: sent only by the
    starters that have them, and read by no claim."""

    trigger: str
    scheduled_time: str
    requested_by: str
    params: Params = field(default_factory=dict)
    resume_from: str | None = None
    rerun_of: str | None = None
    upstream: str | None = None  # the run of another job whose end started this one (``after``)
    backfill: str | None = None  # the backfill that started this past fire
    #: the digest of the definition the starter started (contract/definition_digest.py): the
    #: catalog's, compiled into the schedules' and rules' inputs; read by no state
    definition: str | None = field(default=None, metadata={
        "description": "the SHA-256 of the job's definition this run was started with (its first 12 digits "
                       "name it on the run page; `jobplane diff RUN_A RUN_B` compares two runs'); null: unknown"})

    def to_json(self) -> JsonObject:
        """The object a starter sends: every one of :data:`FIELDS`, lineage only when set."""
        out: JsonObject = {f: getattr(self, f) for f in FIELDS}
        out["params"] = dict(self.params)
        for lineage in LINEAGE:
            if getattr(self, lineage) is not None:
                out[lineage] = getattr(self, lineage)
        return out

    @classmethod
    def read(cls, given: JsonValue, started_at: str | None, params: Params | None = None) -> ExecutionInput:
        """The input a run had, from what was sent (a record's ``input``, DescribeExecution's).

        A field that is missing gets :func:`defaults`' value, the way the compiled ``Start:
        defaults`` state merges it (``States.JsonMerge``, shallow: a given ``params`` replaces
        the defaults' whole object). A value of the wrong type (an input the state machine
        refused as invalid) reads as its JSON text (an optional one as absent), so a hostile input
        is shown as sent, never raised on."""
        sent = given if isinstance(given, dict) else {}
        base = defaults(started_at or "", params)

        def text(name: str, fallback: str) -> str:
            value = sent.get(name, fallback)
            return value if isinstance(value, str) else json.dumps(value)

        def optional(name: str) -> str | None:
            value = sent.get(name)
            return value if isinstance(value, str) else None

        given_params = sent.get("params", base.params)
        return cls(trigger=text("trigger", base.trigger), scheduled_time=text("scheduled_time", base.scheduled_time),
                   requested_by=text("requested_by", base.requested_by),
                   params=dict(given_params) if isinstance(given_params, dict) else {},
                   resume_from=optional("resume_from"), rerun_of=optional("rerun_of"),
                   upstream=optional("upstream"), backfill=optional("backfill"),
                   definition=optional("definition"))

    @staticmethod
    def asl(*, trigger: Template, scheduled_time: Template, requested_by: Template, params: Params | Ref,
            resume_from: Template = None, rerun_of: Template = None, upstream: Template = None,
            backfill: Template = None, definition: Template = None, refs_last: bool = False) -> JsonObject:
        """The input as an ASL ``Parameters`` block: a :class:`Ref` becomes a ``<field>.$`` key.

        The keyword names are the record's fields (a test holds them equal). ``refs_last``
        writes the literal fields before the paths, the order ``Start: defaults`` has always
        had: kept so no deployed state machine's definition changes for a refactor."""
        values: dict[str, Template | Params | Ref] = {
            "trigger": trigger, "scheduled_time": scheduled_time, "requested_by": requested_by, "params": params,
            "resume_from": resume_from, "rerun_of": rerun_of, "upstream": upstream, "backfill": backfill,
            "definition": definition}
        rendered = [(f"{name}.$", value.expr) if isinstance(value, Ref) else (name, value)
                    for name, value in values.items()
                    if isinstance(value, Ref) or value is not None or name in FIELDS]  # lineage only when set
        if refs_last:
            rendered.sort(key=lambda item: item[0].endswith(".$"))  # stable: each group keeps field order
        return dict(rendered)

    @staticmethod
    def ref(name: str) -> Ref:
        """The path of one of the input's fields in the state data (checked: a misspelt field
        is an error when the compiler runs, not when the state machine does)."""
        if name not in _FIELD_NAMES:
            raise KeyError(f"the execution input has no field {name!r}")
        return Ref(f"$.{name}")


#: ExecutionInput's field names (ref checks every path the compiler makes against them).
_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(ExecutionInput))


def defaults(started_at: str, params: Params | None = None) -> ExecutionInput:
    """What a run whose input lacks fields gets for them: a manual run of the job's default
    params, scheduled at the execution's start. The compiled first claim merges the same object
    under the input in its JSONata arguments, and ``Start: defaults`` builds it for an input that
    claim leaves to Start (``started_at`` is the context object's ``Execution.StartTime`` there)."""
    return ExecutionInput(trigger=Trigger.MANUAL.value, scheduled_time=started_at, requested_by=UNATTRIBUTED,
                          params=dict(params or {}))


def iso(t: datetime) -> str:
    """UTC, second precision, 'Z' — the format of EventBridge Scheduler's scheduled-time."""
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def scheduled(scheduled_time: datetime | str, params: Params | None = None,
              definition: str | None = None) -> ExecutionInput:
    """What a schedule sends; the compiler writes it with ``SCHEDULER_TIME`` as the time, and
    the digest of the job's definition it compiled (``definition``)."""
    when = scheduled_time if isinstance(scheduled_time, str) else iso(scheduled_time)
    return ExecutionInput(trigger=Trigger.SCHEDULE.value, scheduled_time=when, requested_by="scheduler",
                          params=dict(params or {}), definition=definition)


def manual(requested_by: str, defaults: Params | None = None, overrides: Params | None = None,
           now: datetime | None = None, resume_from: str | None = None,
           definition: str | None = None) -> ExecutionInput:
    """A run started by a person. Its scheduled_time is the request time with microseconds, so
    a double-submitted request (same instant) is recognised as a duplicate, two requests are not."""
    now = now or datetime.now(timezone.utc)
    return ExecutionInput(trigger=Trigger.MANUAL.value,
                          scheduled_time=now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                          requested_by=requested_by, params={**(defaults or {}), **(overrides or {})},
                          resume_from=resume_from, definition=definition)


def rerun(requested_by: str, of_execution: str, params: Params, resume_from: str | None,
          now: datetime | None = None, definition: str | None = None) -> ExecutionInput:
    return dataclasses.replace(manual(requested_by, params, None, now), trigger=Trigger.RERUN.value,
                               resume_from=resume_from, rerun_of=of_execution, definition=definition)


def backfill(requested_by: str, fire: datetime, params: Params, backfill_id: str,
             definition: str | None = None) -> ExecutionInput:
    """A past fire started by a backfill: its scheduled_time is the fire's (what the job's code
    reads as the time it runs for); ``backfill`` names the backfill (lineage; the state machine
    does not read it)."""
    return ExecutionInput(trigger=Trigger.BACKFILL.value, scheduled_time=iso(fire), requested_by=requested_by,
                          params=dict(params), backfill=backfill_id, definition=definition)


def parse_params(items: list[str]) -> Params:
    """'key=value' items from a person (CLI flags, a portal form's lines): values that parse as
    JSON (numbers, booleans, lists) are taken as such, anything else as a string."""
    from jobplane.contract.quoting import quoted

    params: Params = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{quoted(item)} is not key=value")
        try:
            params[key.strip()] = json.loads(value.strip())
        except RecursionError:  # a RuntimeError, not a ValueError: it was a 500 from the portal's form
            raise ValueError(f"{quoted(key.strip())}: the value nests too deep") from None
        except ValueError:
            params[key.strip()] = value.strip()
    return params
