"""``jobplane-runner``: the container entrypoint of every step.

Kept to the standard library so that it starts fast inside an application image (``pip install
--no-deps jobplane`` is enough), and what only some steps need (argparse for usage errors and
``--help``, subprocess and threading for shell steps, logging for a step that uses it:
runner/logs.py) is imported when needed: bench/runner_start.py, tests/test_runner_start.py.
"""

from __future__ import annotations

import json
import os
import sys
import time

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    import argparse
    import signal
    from typing import NoReturn
else:  # the C module (issue 66 item 2): signal.py only wraps its numbers in enums, which it builds on import
    import _signal as signal

from jobplane.contract import runner as rc
from jobplane.runner import dispatch, logs, progress, stop
from jobplane.runner.context import ContractError, RunContext, fire_resolved, from_environment
from jobplane.runner.errors import ExitCode, PermanentError
from jobplane.runner.failures import PermanentFailure

KINDS = rc.STEP_KINDS


Terminated = stop.Terminated
_on_sigterm = stop.on_sigterm


def parse_kind(argv: list[str] | None) -> str:
    """The step kind of ``run KIND``, the only command line a task sends (a kind this runner
    has no dispatch for is refused once the step's log is set up: :func:`run`); anything else
    (``--help``, a mistake) goes to argparse, which prints usage and exits."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "run" and not args[1].startswith("-"):
        return args[1]
    kind: str = parse_args(args).kind
    return kind


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    import argparse

    parser = argparse.ArgumentParser(
        prog="jobplane-runner",
        description="Run one step of a jobplane job inline. The step's target and the run's "
                    "identity come from the environment set by the compiled state machine "
                    "(docs/runner-contract.md).",
        epilog=f"Exit codes: {rc.EXIT_OK} success, {rc.EXIT_RETRYABLE} retryable failure (an exception "
               f"from user code), {rc.EXIT_PERMANENT} permanent failure (never retried), "
               f"{rc.EXIT_TERMINATED} stopped by SIGTERM; a shell step's own status is passed through.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the step described by JOBPLANE_TARGET")
    run.add_argument("kind", choices=KINDS)
    return parser.parse_args(argv)


def run(kind: str, ctx: RunContext, log: logs.RunLog) -> int:
    started = time.monotonic()
    log.info("step started", extra={"kind": kind, "target": ctx.target.get("target") or ctx.target.get("argv")})
    reporter = progress.start(ctx, log)  # jobplane.progress / jobplane.metric (docs/progress.md)
    try:
        try:
            # the kind's own function, imported now (contract/runner.py DISPATCH): an unknown kind is refused
            dispatch.function_of(kind)(ctx, log)
        finally:
            progress.stop(reporter)  # the last values, written whatever the step's outcome
            logs.release_descriptors()
    except Terminated:
        log.warning("stopped by SIGTERM", extra={"duration": _since(started)})
        return rc.EXIT_TERMINATED
    except (PermanentError, dispatch.UnknownKind) as e:
        log.error("step cannot run: %s", e, extra={"duration": _since(started), "error_type": type(e).__name__,
                                                    "retryable": False})
        return rc.EXIT_PERMANENT
    except PermanentFailure as e:  # the step's own code says no retry can fix it (runner/failures.py)
        log.error("step failed, not retried: %s", e, extra={"duration": _since(started),
                                                            "error_type": type(e).__name__, "retryable": False})
        return rc.EXIT_PERMANENT
    except ExitCode as e:
        log.error("command exited with status %d", e.code, extra={"duration": _since(started), "exit_code": e.code,
                                                                  "retryable": rc.is_retryable(e.code)})
        return e.code
    except Exception:
        log.exception("step failed", extra={"duration": _since(started), "retryable": True})
        return rc.EXIT_RETRYABLE
    log.info("step succeeded", extra={"duration": _since(started)})
    return rc.EXIT_OK


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)


def main(argv: list[str] | None = None) -> NoReturn:
    kind = parse_kind(argv)
    # A process inherits the signal mask of the thread that started it, and exec keeps it: a
    # parent that had SIGTERM blocked (seen under pytest-xdist; any launcher thread can) made the
    # runner deaf to stops until SIGKILL. A stop request must always arrive.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        ctx = from_environment(kind)
        stop.configure()
    except ContractError as e:
        logs.configure({}).error("bad runner environment: %s", e, extra={"error_type": "ContractError"})
        logs.release_descriptors()
        sys.exit(rc.EXIT_PERMANENT)
    fields = {"job": ctx.job, "step": ctx.step, "execution_id": ctx.execution_id, "attempt": ctx.attempt,
              "trace_id": ctx.trace.trace_id, "span_id": ctx.trace.span_id}
    log = logs.configure(fields)
    _, resolved = fire_resolved(os.environ, json.loads(os.environ.get(rc.ENV_PARAMS) or "{}"))
    if resolved:  # recorded in the step's log, which the run page and `jobplane logs` show
        log.info("params resolved at the fire: %s", ", ".join(f"{k}={v}" for k, v in sorted(resolved.items())),
                 extra={"resolved_params": resolved})
        progress.record_resolved(ctx, log, resolved)  # and on the run, for its page
    stop.stop_after(ctx.timeout, log.warning)
    try:
        code = run(kind, ctx, log)
    except Terminated:  # SIGTERM between steps of our own bookkeeping
        log.warning("stopped by SIGTERM")
        code = rc.EXIT_TERMINATED
    logs.release_descriptors()
    if "logging" in sys.modules:  # imported by the step (runner/logs.py): its handlers flushed and closed
        sys.modules["logging"].shutdown()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
