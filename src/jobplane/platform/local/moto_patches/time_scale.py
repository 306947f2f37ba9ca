"""The moto patch ``time_scale``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_time_scale`` says what upstream moto does and what the local engine does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.

Why: the compiled state machines wait for real between tries (a Retrier's IntervalSeconds,
BackoffRate, MaxDelaySeconds and JitterStrategy; the infrastructure retry's Wait states of 15, 60
and 180 s; a pool's wait loop). A test of those paths waited them out: over a minute of the CI
run for one test. With a scale above 1 the interpreter runs the SAME ASL (the same parse, the same
retriers deciding the same attempts, the same intervals computed in the same order) and only the
sleep at the end of each is divided by the scale. At 1 (the default, and always under `jobplane
dev` unless asked) the patch calls moto's own code: real time.

What is scaled: a Retrier's interval (after backoff, cap and jitter: what moto sleeps) and a Wait
state's ``Seconds``/``SecondsPath`` (and their JSONata form). Not scaled: a Wait's ``Timestamp``/
``TimestampPath`` (a wall-clock instant, not a duration), a state's or an execution's
``TimeoutSeconds``/``HeartbeatSeconds`` (the runner's processes run in real time, so a timeout
scaled would fire before the step it bounds), and moto's own polls. So a test that sets a scale
is one whose subject is the order of tries and waits, not a race of a wait against a timeout.
"""

from __future__ import annotations

import collections
import threading
import time

#: The divisor of every Retrier interval and Wait duration; 1: real time (moto's own code runs).
SCALE = [1.0]
#: (what, seconds asked by the ASL, seconds really waited) of the latest scaled waits, newest
#: last: ``what`` is "retry" or "wait". Read by the tests that prove a scaled run's tries and
#: intervals are the unscaled run's; bounded, and filled only while the scale is above 1.
ASKED: collections.deque[tuple[str, float, float]] = collections.deque(maxlen=10_000)
_asked_lock = threading.Lock()


def set_scale(factor: float) -> None:
    if not factor >= 1 or factor == float("inf"):
        raise ValueError(f"a time scale divides waits: a finite number >= 1, not {factor!r}")
    SCALE[0] = float(factor)


def _note(what: str, asked: float, waited: float) -> None:
    with _asked_lock:
        ASKED.append((what, asked, waited))


class _ScaledTime:
    """What retrier_decl's ``time`` module name is bound to: its one call (``time.sleep`` of the
    interval the Retrier computed) divided by the scale; everything else is the time module."""

    def __getattr__(self, attr):  # type: ignore[no-untyped-def]
        return getattr(time, attr)

    @staticmethod
    def sleep(seconds):  # type: ignore[no-untyped-def]
        factor = SCALE[0]
        if factor == 1:
            return time.sleep(seconds)
        waited = seconds / factor
        _note("retry", seconds, waited)
        return time.sleep(waited)


def fix_time_scale() -> None:
    """moto sleeps every Retrier interval and Wait duration in real time, whatever the local
    engine's time scale; divide both by it (SCALE), and at scale 1 run moto's code unchanged."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

    retrier_decl.time = _ScaledTime()
    original = WaitFunction._wait_interval

    def wait_interval(self, env, wait_seconds):  # type: ignore[no-untyped-def]
        factor = SCALE[0]
        if factor == 1 or isinstance(self, Timestamp) or wait_seconds <= 0:
            return original(self, env, wait_seconds)
        # moto's loop re-waits the whole seconds not yet waited, which never ends for a fraction:
        # wait until one deadline instead, as moto does ending early only when the run stops
        waited = wait_seconds / factor
        _note("wait", wait_seconds, waited)
        deadline = time.monotonic() + waited
        while env.is_running():
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            env.program_state_event.wait(left)
        return None

    WaitFunction._wait_interval = wait_interval
