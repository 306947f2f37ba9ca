"""The moto patch ``stepfunctions_fast_history``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_stepfunctions_fast_history`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from typing import Any

#: a value the fast path does not write (the whole answer then goes through moto's serializer)
_UNKNOWN = object()


def _wire(value: Any, shape: Any) -> Any:
    """``value`` as the JSON protocol writes a member of ``shape``, or _UNKNOWN for anything this
    does not write exactly as moto's serializer does (a key the shape has not, a map, a blob, a
    float): strings (an enum by its value), integers, booleans, timestamps, lists, structures."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return _UNKNOWN
        out = {}
        members = shape.members
        for key, held in value.items():
            if held is None:
                continue  # the serializer leaves out a member without a value
            member = members.get(key)
            if member is None:
                return _UNKNOWN
            wired = _wire(held, member)
            if wired is _UNKNOWN:
                return _UNKNOWN
            out[key] = wired
        return out
    if kind == "list":
        if not isinstance(value, list):
            return _UNKNOWN
        items = [_wire(v, shape.member) for v in value]
        return _UNKNOWN if any(i is _UNKNOWN for i in items) else items
    if kind == "string":
        if isinstance(value, Enum):
            value = value.value
        return value if isinstance(value, str) else _UNKNOWN
    if kind in ("integer", "long"):
        return value if type(value) is int else _UNKNOWN
    if kind == "boolean":
        return value if type(value) is bool else _UNKNOWN
    if kind == "timestamp" and not shape.serialization.get("timestampFormat"):
        from moto.core.serialize import TimestampSerializer

        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                return _UNKNOWN
        if not isinstance(value, datetime) or value.tzinfo is None:
            return _UNKNOWN
        return TimestampSerializer._timestamp_unixtimestamp(value)  # the JSON protocol's epoch seconds
    return _UNKNOWN


def fix_stepfunctions_fast_history() -> None:
    """moto 5.2.5 writes GetExecutionHistory's answer by walking botocore's shape model member by
    member: each event's ~46 possible members are looked for under several spellings, and each
    timestamp is parsed with dateutil. A one-step run's 20 events took ~35 ms of the local AWS
    (cProfile: 18,000 member lookups for 20 answers), on `jobplane run`'s path after its run has
    ended and on every execution page. The events moto keeps are already the protocol's shape
    (dicts of the HistoryEvent members, enums, ISO timestamps), so they are written with
    ``json.dumps`` here, each checked against the shape as it is written; the rest of the answer,
    and any answer holding something else, goes through moto's serializer as before."""
    from moto.core.responses import ActionResult
    from moto.stepfunctions.responses import StepFunctionResponse

    original = StepFunctionResponse.get_execution_history

    class _History(ActionResult):
        def execute_result(self, context):
            result = self.result
            events = result.get("events") if isinstance(result, dict) else None
            output = context.operation_model.output_shape
            member = output.members.get("events") if output is not None else None
            wired = _wire(events, member) if isinstance(events, list) and member is not None else _UNKNOWN
            if wired is _UNKNOWN:
                return ActionResult.execute_result(self, context)
            status, headers, body = ActionResult({k: v for k, v in result.items() if k != "events"}) \
                .execute_result(context)
            answer = json.loads(body) if body else {}
            answer["events"] = wired
            return status, headers, json.dumps(answer)

    def get_execution_history(self):
        done = original(self)
        return _History(done.result) if type(done) is ActionResult else done

    StepFunctionResponse.get_execution_history = get_execution_history
