"""What the ``jobplane`` console script may do because the process is its own: skip the work of
Python's cyclic garbage collector over objects that live until the process exits.

A command's start-up (click, the control plane, botocore and its clients' service and endpoint
models) leaves some 60,000 objects alive for the whole command. The collections their
allocations set off freed nothing and cost `jobplane run` ~0.1 s, and Python's finalization
collected them all again at exit: longer than the rest of the command on a loaded machine
(issue 54 item 5, bench/dev_e2e.py). gc.freeze() moves every object alive to a permanent
generation that collections ignore (Python library reference, gc.freeze); objects made after
it are collected as usual, so a command that follows a run for an hour does not grow.

Only the console script's own process (:func:`jobplane.cli.console`) does this: a command
invoked inside another program (the tests' CliRunner) must leave that program's collector as
it was, or its cyclic garbage would never be collected.

Such a command also ends without the interpreter's finalization (:func:`leave`): tearing down
some 450 modules took ~9 ms of each `jobplane run` after its result was printed (bench/dev_e2e.py,
os._exit against sys.exit, the same process). What finalization would have done that matters
is done first: the standard streams and logging's handlers are flushed. It is skipped only when
the main thread is the only one left (no pool or server thread whose work exit would cut) and
the exit status is a number, as sys.exit gives it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: True in the console script's own process (set by jobplane.cli.console).
OWN_PROCESS = False
#: True once a command's start-up went through :func:`started` in that process: a command that
#: talks to a platform and then ends (never `jobplane dev`, which saves its state at exit).
_STARTED = False


@contextmanager
def started() -> Iterator[None]:
    """Around a command's start-up (building its control plane): in the console script's own
    process, no collection during it, and what it built frozen after it; elsewhere, nothing."""
    if not OWN_PROCESS:
        yield
        return
    import atexit
    import gc

    global _STARTED
    _STARTED = True
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
        atexit.register(gc.freeze)  # at exit too: finalization's collections skip everything


def leave(end: SystemExit) -> None:
    """End the console script's own process with ``end``'s status now, without finalization,
    if the command went through :func:`started` and nothing else is left to finish; otherwise
    return (the caller re-raises ``end``: Python's usual exit)."""
    import threading

    code = end.code
    if not (OWN_PROCESS and _STARTED) or threading.active_count() != 1 or not (code is None or isinstance(code, int)):
        return
    import logging

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a closed pipe or stream, or none (pythonw):
        # let Python's exit report it as usual
        return
    logging.shutdown()
    os._exit(code or 0)
