"""Corrections to moto where its Step Functions interpreter differs from AWS in ways our
compiled state machines depend on.

Each fix names the upstream behaviour it corrects and is pinned to ``MOTO_VERSION``: these reach
into moto internals, so an upgrade must re-check them. Every fix has a test that shows the stock
behaviour (tests/test_moto_fixes.py), so an upgrade tells which fixes are still needed.
"""

from __future__ import annotations

import datetime
import threading
from importlib.metadata import version

MOTO_VERSION = "5.2.5"

_applied: set[str] = set()
_lock = threading.Lock()


def check_version() -> None:
    installed = version("moto")
    if installed != MOTO_VERSION:
        raise RuntimeError(
            f"jobplane's local engine patches moto {MOTO_VERSION} internals but moto {installed} is installed; "
            "re-check every fix in jobplane.platform.local.moto_fixes before changing the pin")


def aws_timestamp(value: datetime.datetime) -> str:
    """The context object's timestamp format on AWS: ISO 8601, UTC, milliseconds, 'Z'."""
    value = value.astimezone(datetime.timezone.utc)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def fix_context_start_time() -> None:
    """``$$.Execution.StartTime`` is a string on AWS; moto 5.2.5 puts a ``datetime`` there.

    A state that writes it anywhere (our execution records do) fails in moto with
    "Object of type datetime is not JSON serializable".
    """
    from moto.stepfunctions.parser.backend import execution_worker

    original = execution_worker.ExecutionWorker._get_evaluation_environment

    def _get_evaluation_environment(self):  # type: ignore[no-untyped-def]
        env = original(self)
        execution = env.states.context_object.context_object_data["Execution"]
        if isinstance(execution.get("StartTime"), datetime.datetime):
            execution["StartTime"] = aws_timestamp(execution["StartTime"])
        return env

    execution_worker.ExecutionWorker._get_evaluation_environment = _get_evaluation_environment


FIXES = {
    "context_start_time": fix_context_start_time,
}


def apply(*names: str) -> None:
    """Apply the named fixes (all by default), once per process."""
    check_version()
    with _lock:
        for name in names or tuple(FIXES):
            if name not in _applied:
                FIXES[name]()
                _applied.add(name)
