"""What the runner knows about the run it serves, read from the environment the compiled state
machine sets (jobplane.contract.runner).

Plain classes on purpose: ``dataclasses`` and ``secrets`` were a fifth of the runner's start-up
(bench/runner_start.py), and these two hold a handful of values."""

from __future__ import annotations

import json
import os
from collections import namedtuple

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    import logging
    from typing import Mapping
    from jobplane.contract.types import JsonObject, JsonValue

from jobplane.contract import runner as rc


class ContractError(Exception):
    """The environment does not carry what the contract promises: a permanent failure."""


def _random_hex(n_bytes: int) -> str:
    return os.urandom(n_bytes).hex()  # what secrets.token_hex does, without importing secrets


class TraceContext(namedtuple("TraceContext", "trace_id span_id parent_id flags", defaults=("01",))):
    """W3C trace context (trace_id, span_id, parent_id or None, flags): the runner continues the
    run's trace with a span of its own."""

    __slots__ = ()

    @classmethod
    def continue_from(cls, traceparent: str | None) -> TraceContext:
        parts = (traceparent or "").strip().split("-")
        valid = (len(parts) == 4 and parts[0] == "00" and len(parts[1]) == 32 and len(parts[2]) == 16
                 and _hex(parts[1]) and _hex(parts[2]) and set(parts[1]) != {"0"})
        if valid:
            return cls(parts[1], _random_hex(8), parts[2], parts[3])
        return cls(_random_hex(16), _random_hex(8), None)

    @property
    def traceparent(self) -> str:
        """For children (a shell step, outgoing calls): this runner's span is their parent."""
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"


def _hex(s: str) -> bool:
    return all(c in "0123456789abcdef" for c in s)


class RunContext:
    """Passed to a python step whose function has a ``context`` parameter. Read-only."""

    __slots__ = ("job", "team", "step", "execution_id", "scheduled_time", "trigger", "attempt", "timeout", "params",
                 "target", "trace", "items_uri", "_logger")
    _COMPARED = __slots__[:-1]  # not the logger
    job: str
    team: str
    step: str
    execution_id: str
    scheduled_time: str
    trigger: str
    attempt: int
    timeout: int | None
    params: JsonObject
    target: JsonObject
    trace: TraceContext
    #: a map's items step: where its list goes (contract/map_items.py); else None
    items_uri: str | None
    _logger: logging.Logger | None

    def __init__(self, *, job: str, team: str, step: str, execution_id: str, scheduled_time: str, trigger: str,
                 attempt: int, params: JsonObject, target: JsonObject, trace: TraceContext,
                 timeout: int | None = None, logger: logging.Logger | None = None, items_uri: str | None = None):
        values = dict(job=job, team=team, step=step, execution_id=execution_id, scheduled_time=scheduled_time,
                      trigger=trigger, attempt=attempt, timeout=timeout, params=params, target=target, trace=trace,
                      items_uri=items_uri, _logger=logger)
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"RunContext is read-only: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunContext):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._COMPARED)

    __hash__ = None  # type: ignore[assignment]  # params is a dict: not hashable, as before

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._COMPARED)
        return f"RunContext({inner})"

    @property
    def logger(self) -> logging.Logger:
        """The step's logger ("jobplane.step" unless given): ``logging`` is imported when a step
        asks for it, not before its code runs (runner/logs.py)."""
        if self._logger is None:
            import logging

            object.__setattr__(self, "_logger", logging.getLogger("jobplane.step"))
        assert self._logger is not None
        return self._logger

    @property
    def traceparent(self) -> str:
        traceparent: str = self.trace.traceparent
        return traceparent


def _json(env: Mapping[str, str], name: str, default: JsonValue) -> JsonValue:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise ContractError(f"{name} is not valid JSON: {e}") from None


def fire_resolved(env: Mapping[str, str], params: JsonObject) -> tuple[JsonObject, JsonObject]:
    """``params`` with the job's calendar defaults they lack resolved for the run's scheduled
    time (``JOBPLANE_PARAM_DEFAULTS``, contract/params.py: the function the control plane
    resolves a manual run's with), and the resolved values alone. A scheduled fire sends none of
    them (its input is fixed when compiled): every step of the run resolves the same values."""
    raw = env.get(rc.ENV_PARAM_DEFAULTS)
    if not raw:
        return params, {}
    from jobplane.contract.params import FireDefaults

    try:
        return FireDefaults.from_json(json.loads(raw)).resolve(params, env.get(rc.ENV_SCHEDULED_TIME, ""))
    except (ValueError, KeyError) as e:
        raise ContractError(f"{rc.ENV_PARAM_DEFAULTS}: {e}") from None


def from_environment(kind: str, env: Mapping[str, str] | None = None) -> RunContext:
    env = os.environ if env is None else env
    target = _json(env, rc.ENV_TARGET, None)
    if not isinstance(target, dict):
        raise ContractError(f"{rc.ENV_TARGET} must hold the step's target as a JSON object")
    if target.get("kind") != kind:
        raise ContractError(f"the command says {kind!r} but {rc.ENV_TARGET} says {target.get('kind')!r}")
    params = _json(env, rc.ENV_PARAMS, {})
    if not isinstance(params, dict):
        raise ContractError(f"{rc.ENV_PARAMS} must be a JSON object")
    params, _ = fire_resolved(env, params)
    if env.get(rc.ENV_ITEM) is not None:  # a map's each step: its item is a param like any other
        params = {**params, rc.ITEM_PARAM: _json(env, rc.ENV_ITEM, None)}
    try:
        attempt = int(env.get(rc.ENV_ATTEMPT, "1"))
    except ValueError:
        raise ContractError(f"{rc.ENV_ATTEMPT} must be a whole number") from None
    timeout = None
    if env.get(rc.ENV_STEP_TIMEOUT):
        try:
            timeout = int(env[rc.ENV_STEP_TIMEOUT])
        except ValueError:
            timeout = 0
        if timeout <= 0:
            raise ContractError(f"{rc.ENV_STEP_TIMEOUT} must be a positive whole number of seconds")
    return RunContext(
        job=env.get(rc.ENV_JOB, ""),
        team=env.get(rc.ENV_TEAM, ""),
        step=env.get(rc.ENV_STEP, ""),
        execution_id=env.get(rc.ENV_EXECUTION_ID, ""),
        scheduled_time=env.get(rc.ENV_SCHEDULED_TIME, ""),
        trigger=env.get(rc.ENV_TRIGGER, ""),
        attempt=attempt,
        timeout=timeout,
        params=params,
        target=target,
        trace=TraceContext.continue_from(env.get(rc.ENV_TRACEPARENT)),
        items_uri=env.get(rc.ENV_ITEMS_URI) or None,
    )
