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
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: True in the console script's own process (set by jobplane.cli.console).
OWN_PROCESS = False


@contextmanager
def started() -> Iterator[None]:
    """Around a command's start-up (building its control plane): in the console script's own
    process, no collection during it, and what it built frozen after it; elsewhere, nothing."""
    if not OWN_PROCESS:
        yield
        return
    import atexit
    import gc

    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
        atexit.register(gc.freeze)  # at exit too: finalization's collections skip everything
