"""The definitions' Jsonnet, evaluated in a child process with a memory limit and a timeout
(issue 48 item 5; ``[evaluation]`` in jobplane.toml sets both).

A pull request's job files are evaluated on the CI machine: in process, a 4-line definition
reached 13 GB in 2 minutes and exponential recursion ran on past 60 s, with nothing to stop
either but the workflow's own timeout. The child sets its data segment limit
(``RLIMIT_DATA``: go-jsonnet's heap is anonymous memory, which Linux counts there since 4.7;
``RLIMIT_AS`` would not do, the Go runtime reserves 1.6 GB of address space at start) before
it loads go-jsonnet, evaluates every file at once (the DSL library parsed once), and writes one
JSON line per result. When that fails in any way (a Jsonnet error, a limit), the files are
evaluated one by one, so a problem names its own file; when the child exceeds a limit on a
file, the parent names that file and starts a new child for the files after it.

``timeout_seconds`` bounds the whole run, once (issue 64 item 7: a fork bomb with 10 s ran
20.7 s, the evaluation of all files at once and then the bomb's own each taking the whole
timeout). Every child of a run stops at the run's one deadline. So that the file at fault is
still named when the evaluation of all at once runs out of time, a second child starts
evaluating the files one by one if all at once has not finished after a second and 20 ms a
file (a run that finishes in its usual time pays nothing for it; while both run, the run may take twice ``memory_mb`` and
two CPUs), each file at most a quarter of the timeout: a file that takes longer is named and the
child starts again after it. If all at once does not finish, the second child's outcomes are the
run's; the files it did not reach by the deadline are reported as not evaluated for want of time.

The child is compiler/jsonnet_child.py, in an interpreter that imports nothing but it, the
evaluator and go-jsonnet (:func:`child_command`): its start is most of what `jobplane validate`
pays for evaluating a few files.
"""

from __future__ import annotations

import functools
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from jobplane.compiler import jsonnet_child
from jobplane.contract.config import EvaluationLimits, PlatformConfig
from jobplane.contract.types import JsonValue


@dataclass(frozen=True)
class Evaluated:
    """One file's outcome: its value, or why it has none."""

    value: JsonValue = None
    refusals: tuple[str, ...] = ()  # imports or the file itself refused (jsonnet_eval.py)
    error: str | None = None  # Jsonnet's own error text
    limit: str | None = None  # the limit it exceeded, in words


def limit_words(limits: EvaluationLimits, kind: str) -> str:
    if kind == "timeout":
        return (f"Jsonnet evaluation took longer than {limits.timeout_seconds} s and was stopped "
                "([evaluation] timeout_seconds in jobplane.toml)")
    if kind == "memory":
        return (f"Jsonnet evaluation needed more than {limits.memory_mb} MiB and was stopped "
                "([evaluation] memory_mb in jobplane.toml)")
    return f"Jsonnet evaluation stopped: {kind}"


#: At most this many children evaluate at once, each at least MIN_SHARE files (fewer files
#: are not worth a second child's start and its own parse of the DSL library).
MAX_CHILDREN = 2
MIN_SHARE = 250


def children_for(count: int) -> int:
    """How many children share ``count`` files: one per available CPU, up to MAX_CHILDREN.

    Profiled (issue 54 item 4): Jsonnet was half of compiling 1,000 jobs, run in one child
    while the compiler waited. Two children on a 2-core machine halve that wait; each has the
    whole ``[evaluation]`` limits (so at most MAX_CHILDREN times ``memory_mb`` at once) and
    evaluates its share exactly as one child evaluated all of them."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_CHILDREN, cpus, count // MIN_SHARE))


def evaluate_all(paths: list[Path], config: PlatformConfig) -> list[Evaluated]:
    """Each of ``paths`` evaluated (in order), within ``config.evaluation``'s limits, the timeout
    once for the whole run; many files are shared among children that run at once
    (:func:`children_for`)."""
    run = Run(time.monotonic() + config.evaluation.timeout_seconds)
    n = children_for(len(paths))
    if n == 1:
        return _evaluate_share(paths, config, run)
    size = -(-len(paths) // n)
    shares = [paths[i:i + size] for i in range(0, len(paths), size)]
    with ThreadPoolExecutor(len(shares)) as pool:  # each thread waits on its child's pipe
        return [r for share in pool.map(lambda share: _evaluate_share(share, config, run), shares) for r in share]


class Run:
    """One run's deadline, which every child of it shares, and what it started (``children``:
    each child's mode and deadline; read by tests/test_security_sandbox.py)."""

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.children: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    def started(self, mode: str, deadline: float) -> None:
        with self._lock:
            self.children.append((mode, deadline))


#: the last run's record (tests)
LAST_RUN: Run | None = None


def _out_of_time(limits: EvaluationLimits) -> Evaluated:
    return Evaluated(limit=(f"not evaluated: the definitions' evaluation took longer than {limits.timeout_seconds} s "
                            "in all before this file was reached ([evaluation] timeout_seconds in jobplane.toml)"))


def spare_after(limits: EvaluationLimits, files: int) -> float:
    """When the second child starts, if all at once has not finished: after SPARE_AFTER s and
    SPARE_PER_FILE s a file (bench/compile.py's 1,000 files took 7.4 s on 2 cores, two shares of
    500: a run that finishes in its usual time pays nothing), at most half the timeout."""
    return min(SPARE_AFTER + SPARE_PER_FILE * files, limits.timeout_seconds / 2)


SPARE_AFTER = 1.0
SPARE_PER_FILE = 0.02
#: In the second child, each file may take at most this share of the timeout: a file that takes
#: longer is named, and the files after it still get evaluated in the run's time.
SPARE_FILE_SHARE = 4


class _OneByOne:
    """The files evaluated one by one in a second child from ``start`` on, in case the
    evaluation of all at once does not finish in the run's time (see the module's docstring):
    ``results`` holds each file's outcome (its own, a limit it exceeded, or not reached)."""

    def __init__(self, paths: list[Path], config: PlatformConfig, run: Run, start: float):
        self.results: dict[int, Evaluated] = {}
        self.cancel = threading.Event()
        self._thread = threading.Thread(target=self._body, args=(paths, config, run, start), daemon=True)
        self._thread.start()

    def _body(self, paths: list[Path], config: PlatformConfig, run: Run, start: float) -> None:
        if self.cancel.wait(max(0.0, start - time.monotonic())):
            return
        limits = config.evaluation
        todo = list(range(len(paths)))
        while todo:
            done, stopped = _run_child([paths[i] for i in todo], config, False, run, self.cancel,
                                       file_seconds=limits.timeout_seconds / SPARE_FILE_SHARE)
            self.results.update({todo[k]: outcome for k, outcome in done.items()})
            if stopped is None:
                return
            position, why = stopped
            if position is None or why == "cancelled":
                return
            self.results[todo[position]] = Evaluated(limit=limit_words(limits, why))
            todo = [i for k, i in enumerate(todo) if k > position and k not in done]
            if time.monotonic() >= run.deadline:
                return

    def stop(self) -> None:
        self.cancel.set()
        self._thread.join()

    def join(self) -> None:
        self._thread.join()


def _evaluate_share(paths: list[Path], config: PlatformConfig, run: Run | None = None) -> list[Evaluated]:
    global LAST_RUN
    limits = config.evaluation
    run = run or Run(time.monotonic() + limits.timeout_seconds)
    LAST_RUN = run
    results: dict[int, Evaluated] = {}
    todo = list(range(len(paths)))
    together = True
    while todo:
        share = [paths[i] for i in todo]
        spare = _OneByOne(share, config, run, run.deadline - limits.timeout_seconds + spare_after(limits, len(share))) \
            if together else None
        done, stopped = _run_child(share, config, together, run)
        if spare is not None:
            if stopped == (None, "timeout"):  # all at once ran out of the run's time: the spare's outcomes
                spare.join()
                results.update({todo[k]: o for k, o in spare.results.items()})
                results.update({i: _out_of_time(limits) for i in todo if i not in results})
                break
            spare.stop()
        for k, outcome in done.items():
            results[todo[k]] = outcome
        if stopped is None:
            break
        position, why = stopped
        if position is None:  # all at once failed on a limit: find the file, one by one
            together = False
            continue
        results[todo[position]] = Evaluated(limit=limit_words(limits, why))
        todo = [i for k, i in enumerate(todo) if k > position and k not in done]
        together = False
        if why == "timeout" or time.monotonic() >= run.deadline:  # the run's time is spent
            results.update({i: _out_of_time(limits) for i in todo})
            break
    return [results[i] for i in range(len(paths))]


def _run_child(paths: list[Path], config: PlatformConfig, together: bool, run: Run,
               cancel: threading.Event | None = None, file_seconds: float | None = None) -> tuple[
        dict[int, Evaluated], tuple[int | None, str] | None]:
    """One child over ``paths``: what it finished, and where it stopped on a limit (the file's
    position, None for the evaluation of all at once) and why, or None. It is stopped at the
    run's deadline (``timeout``), when one file takes more than ``file_seconds`` (counted from
    the child's start-up done, then from the file before: ``timeout`` too), or when ``cancel``
    is set (then: "cancelled")."""
    limits = config.evaluation
    request = {"root": str(config.root), "jobs_path": str(config.jobs_path), "library_path": str(config.library_path),
               "paths": [str(p) for p in paths],
               "together": together, "memory_mb": limits.memory_mb, "ready": file_seconds is not None}
    file_deadline = float("inf")  # set once the child says it is ready
    done: dict[int, Evaluated] = {}
    expected: int | None = None if together else 0  # what the child works on now
    run.started("together" if together else "one by one", run.deadline)
    with tempfile.TemporaryFile() as errors:  # a file: Go's fatal error writes every goroutine's stack
        proc = subprocess.Popen(child_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request).encode())
        proc.stdin.close()
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        buffer = b""
        try:
            while True:
                remaining = min(run.deadline, file_deadline) - time.monotonic()
                if cancel is not None and cancel.is_set():
                    proc.kill()
                    return done, (expected, "cancelled")
                if remaining <= 0:
                    proc.kill()
                    return done, (expected, "timeout")
                # a cancellable child looks up now and then; the other waits for its child or the deadline
                if not selector.select(timeout=min(remaining, 0.25) if cancel is not None else remaining):
                    continue
                chunk = os.read(proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    break
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line)
                    if file_seconds is not None:  # the next file's own time starts now
                        file_deadline = time.monotonic() + file_seconds
                    if "ready" in message:
                        continue
                    if "together" in message:
                        if message["together"] is not None:
                            done = {k: Evaluated(value=v) for k, v in enumerate(message["together"])}
                            return done, None
                        expected = 0
                    else:
                        done[message["i"]] = Evaluated(value=message.get("value"),
                                                       refusals=tuple(message.get("refusals", ())),
                                                       error=message.get("error"))
                        expected = message["i"] + 1
        finally:
            selector.close()
            proc.stdout.close()
            code = proc.wait()
        if expected is not None and expected >= len(paths):
            return done, None
        errors.seek(0)
        text = errors.read().decode("utf-8", "replace")
        # Go's runtime says "out of memory" or "cannot allocate memory" (the limit's ENOMEM);
        # Python's own allocations raise MemoryError
        why = "memory" if any(w in text for w in ("out of memory", "cannot allocate memory", "MemoryError")) else (
            f"the evaluating process ended with status {code}")
        return done, (expected, why)


@functools.cache
def child_command() -> tuple[str, ...]:
    """The evaluating child's command line (compiler/jsonnet_child.py says why so): this
    interpreter, isolated and without site, given the directories of this package and of
    go-jsonnet, found without loading it (its Go runtime must start in the child only)."""
    import importlib.util

    import jobplane

    here = str(Path(jobplane.__file__).resolve().parents[1])
    spec = importlib.util.find_spec("_gojsonnet")
    if spec is None or spec.origin is None:
        raise ImportError("go-jsonnet (the gojsonnet package) is not installed")
    gojsonnet = str(Path(spec.origin).resolve().parent)
    return (sys.executable, "-I", "-S", "-c", jsonnet_child.CODE, here) + ((gojsonnet,) if gojsonnet != here else ())
