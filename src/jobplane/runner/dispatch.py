"""The runner's dispatch: a step's runner kind -> the function that runs it, read from
contract/runner.py ``DISPATCH`` (the one list, which the step kinds' table is held to) and
imported only for the kind the step is (bench/runner_start.py: a step pays for its own kind's
imports only). A kind without its line is refused with a reason, permanently: before, an
if-chain ran every kind it did not name as a shell step."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    from typing import Callable

    from jobplane.runner.context import RunContext
    from jobplane.runner.logs import RunLog

from jobplane.contract import runner as rc


class UnknownKind(Exception):
    """The command names a kind this runner has no dispatch for: no retry can fix it."""


def function_of(kind: str) -> Callable[[RunContext, RunLog], None]:
    """The function that runs a step of ``kind``, imported now (and only now)."""
    spec = rc.DISPATCH.get(kind)
    if spec is None:
        raise UnknownKind(f"unknown step kind {kind!r}: this runner runs {', '.join(rc.STEP_KINDS)} steps "
                          "(a runner older than the compiler that wrote the step?)")
    module, _, name = spec.partition(":")
    fn: Callable[[RunContext, RunLog], None] = getattr(__import__(module, fromlist=[name]), name)
    return fn
