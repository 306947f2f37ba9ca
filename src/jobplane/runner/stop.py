"""A stop request (SIGTERM, what ECS sends) as an exception in the main thread.

The exception can surface between any two bytecodes. Where that would lose something, a
section *holds* the request: a SIGTERM that arrives meanwhile is raised when the section
releases it. A shell step holds it from before it starts its child until the child is in its
hands: a SIGTERM right after ``Popen`` returned, before the code that stops the child was
armed, used to leave the child running after the runner had exited (seen under load).
"""

from __future__ import annotations

import os
import time
import _thread
from types import FrameType

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    import signal
    from typing import Callable, Mapping
else:  # the C module: signal.py's enums are not worth their import (runner/main.py)
    import _signal as signal

from jobplane.contract import runner as rc
from jobplane.runner.context import ContractError

#: How long a stopped step (and a shell step's child) has between SIGTERM and SIGKILL (default 10 s).
ENV_STOP_GRACE = "JOBPLANE_STOP_GRACE_SECONDS"
#: How long past its Task's timeout the step may run before the runner stops it (default 60 s).
ENV_TIMEOUT_MARGIN = "JOBPLANE_TIMEOUT_MARGIN_SECONDS"

_holding = False
_pending = False
_grace = 10.0
_margin = 60.0


def configure(env: Mapping[str, str] | None = None) -> None:
    """Read the two settings once, at start: a value that is not a number of seconds is a
    ContractError then (a permanent failure with its own log line), not a crash inside the
    SIGTERM handler later; and the step's own code cannot change them by editing os.environ."""
    global _grace, _margin
    env = os.environ if env is None else env
    _grace = _seconds(env, ENV_STOP_GRACE, 10.0)
    _margin = _seconds(env, ENV_TIMEOUT_MARGIN, 60.0)


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ContractError(f"{name} must be a number of seconds, 0 or more (got {raw[:40]!r})")
    return value


def grace() -> float:
    """Seconds between SIGTERM and SIGKILL for what the step started."""
    return _grace


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM; a BaseException so ``except Exception`` in user
    code cannot swallow the stop request."""


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    global _pending
    if _holding:
        _pending = True
        return
    _terminate()


def _terminate() -> None:
    # If user code sits in a C call that never returns to Python, leave anyway before ECS's SIGKILL.
    _thread.start_new_thread(_watchdog, (_grace + 5,))  # daemonic, as stop_after's thread below
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one stop request is enough
    raise Terminated()


def _watchdog(seconds: float) -> None:
    time.sleep(seconds)
    os._exit(rc.EXIT_TERMINATED)


def hold() -> None:
    """From now on a SIGTERM is kept until :func:`release`."""
    global _holding
    _holding = True


def release() -> None:
    """Stop holding; raise Terminated now if a SIGTERM came while held."""
    global _holding, _pending
    _holding = False
    if _pending:
        _pending = False
        _terminate()


def drop() -> None:
    """Stop holding without raising (already leaving by another exception)."""
    global _holding
    _holding = False


def stop_after(timeout: int | None, warn: Callable[[str], object]) -> None:
    """Stop this step (as ECS's SIGTERM would) once it has run a margin past ``timeout``.

    When an attempt's Task times out, Step Functions records it and the run ends, releasing
    its claim; AWS documents stopping a .sync task when the *execution* is stopped, not when a
    Task state times out. A step left running could then overlap the job's next run (under
    SKIP_IF_RUNNING too), so the runner ends itself. The margin makes Step Functions' timeout,
    which counts from the Task state's start (before the container started), come first.
    """
    if not timeout:
        return
    margin = _margin

    def expire() -> None:
        time.sleep(timeout + margin)
        warn(f"still running {margin:g} s past the step's timeout ({timeout} s): stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    # a daemonic thread that sleeps: threading.Timer's start waits until the thread has run,
    # which delayed the step's start on a loaded machine (issue 54 item 5, runner/capture.py)
    _thread.start_new_thread(expire, ())
