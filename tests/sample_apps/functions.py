"""Plain Python step targets."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)


def record(out: str, **values: object) -> None:
    Path(out).write_text(json.dumps(values, sort_keys=True))


def write_greeting(out: str, name: str = "world", greeting: str = "hello") -> str:
    log.info("greeting %s", name, extra={"records": 1})
    print(f"{greeting}, {name}")
    record(out, text=f"{greeting}, {name}")
    return "ok"


def with_context(out: str, context) -> None:  # noqa: ANN001 - RunContext
    record(out, job=context.job, step=context.step, execution_id=context.execution_id, attempt=context.attempt,
           scheduled_time=context.scheduled_time, params=context.params, traceparent=context.traceparent)


def boom(reason: str = "upstream returned 503") -> None:
    raise ConnectionError(reason)


def needs_a_day(day: str | None = None) -> None:
    """Refuses to run without its param: no retry would bring it (jobplane.runner.PermanentFailure)."""
    from jobplane.runner import PermanentFailure

    if not day:
        raise PermanentFailure("needs the param day (YYYY-MM-DD): run it again with -p day=...")


def record_env(out: str) -> None:
    """Writes the step's whole environment (what a step could print to its log)."""
    Path(out).write_text(json.dumps(dict(os.environ), sort_keys=True))


def leaky() -> None:
    secret = os.environ["DB_PASSWORD"]
    log.info("connecting with password %s", secret)
    print(f"dsn=postgres://app:{secret}@db/app")
    raise RuntimeError(f"login failed for password {secret}")


def leaky_children() -> None:
    """What a python step's own children and C code write goes to fds 1 and 2, not sys.stdout."""
    import subprocess

    os.system("echo system=$STRIPE_KEY")
    subprocess.run(["sh", "-c", "echo child-err=$DB_PASSWORD >&2"], check=True)
    os.write(1, f"fd1={os.environ['DB_PASSWORD']}\n".encode())
    sys.__stderr__.write(f"dunder={os.environ['STRIPE_KEY']}\n")
    sys.__stderr__.flush()


def segfault() -> None:
    """A C extension's crash: the interpreter dies with the thread that reads the pipes."""
    import ctypes

    print("about to crash")
    ctypes.string_at(0)


def slow(ready: str, seconds: float = 60) -> None:
    Path(ready).write_text(str(os.getpid()))
    try:
        time.sleep(seconds)
    except Exception:  # user code that swallows everything must still be stoppable
        pass


def mark_called(out: str) -> None:
    Path(out).write_text(repr(time.time()))


NOT_CALLABLE = 42


def behave(mode: str = "ok", marker: str | None = None, seconds: float = 30, release: str | None = None) -> None:
    """One target whose outcome the run's params choose: ok, fail (retryable), sleep, or wait
    until the ``release`` file exists (at most ``seconds``)."""
    if marker:
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\n")
    if mode == "fail":
        raise ConnectionError("partner API answered 503")
    if mode == "sleep":
        time.sleep(seconds)
    if mode == "wait":
        deadline = time.monotonic() + seconds
        while release and not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.05)


def prepare() -> str:
    """Takes no params, so a run's params never change what it does."""
    print("prepared")
    return "prepared"


def hold(log: str, seconds: float = 0.3, release: str | None = None, limit: float = 300) -> None:
    """A step on a shared resource: appends 'start <pid> <t>' and 'end <pid> <t>' to ``log``
    (what it really held, from its own process), and stays ``seconds``, or until ``release``
    exists (at most ``limit``)."""
    with open(log, "a") as f:
        f.write(f"start {os.getpid()} {time.time()!r}\n")
    if release:
        deadline = time.monotonic() + limit
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.05)
    else:
        time.sleep(seconds)
    with open(log, "a") as f:
        f.write(f"end {os.getpid()} {time.time()!r}\n")


def print_variable(name: str) -> None:
    """Prints one variable's value, as a step that logs its configuration does."""
    print(f"the configured value is {os.environ.get(name)}")
