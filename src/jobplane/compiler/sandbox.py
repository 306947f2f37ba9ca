"""The definitions' Jsonnet, evaluated in a child process with a memory limit and a timeout
(issue 48 item 5; ``[evaluation]`` in jobplane.toml sets both).

A pull request's job files are evaluated on the CI machine: in process, a 4-line definition
reached 13 GB in 2 minutes and exponential recursion ran on past 60 s, with nothing to stop
either but the workflow's own timeout. The child sets its data segment limit
(``RLIMIT_DATA``: go-jsonnet's heap is anonymous memory, which Linux counts there since 4.7;
``RLIMIT_AS`` would not do, the Go runtime reserves 1.6 GB of address space at start) before
it loads go-jsonnet, evaluates every file at once (the DSL library parsed once), and writes one
JSON line per result. When that fails in any way (a Jsonnet error, a limit), the files are
evaluated one by one, so a problem names its own file; the parent gives each evaluation the
whole timeout, and when the child exceeds a limit on a file, names that file and starts a new
child for the files after it.

Run as ``python -m jobplane.compiler.sandbox`` by :func:`evaluate_all` only.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

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
    """Each of ``paths`` evaluated (in order), within ``config.evaluation``'s limits; many files
    are shared among children that run at once (:func:`children_for`)."""
    n = children_for(len(paths))
    if n == 1:
        return _evaluate_share(paths, config)
    size = -(-len(paths) // n)
    shares = [paths[i:i + size] for i in range(0, len(paths), size)]
    with ThreadPoolExecutor(len(shares)) as pool:  # each thread waits on its child's pipe
        return [r for share in pool.map(lambda share: _evaluate_share(share, config), shares) for r in share]


def _evaluate_share(paths: list[Path], config: PlatformConfig) -> list[Evaluated]:
    results: dict[int, Evaluated] = {}
    todo = list(range(len(paths)))
    together = True
    while todo:
        done, stopped = _run_child([paths[i] for i in todo], config, together)
        for k, outcome in done.items():
            results[todo[k]] = outcome
        if stopped is None:
            break
        position, why = stopped
        if position is None:  # all at once failed on a limit: find the file, one by one
            together = False
            continue
        results[todo[position]] = Evaluated(limit=limit_words(config.evaluation, why))
        todo = [i for k, i in enumerate(todo) if k > position and k not in done]
        together = False
    return [results[i] for i in range(len(paths))]


def _run_child(paths: list[Path], config: PlatformConfig, together: bool) -> tuple[
        dict[int, Evaluated], tuple[int | None, str] | None]:
    """One child over ``paths``: what it finished, and where it stopped on a limit (the file's
    position, None for the evaluation of all at once) and why, or None."""
    limits = config.evaluation
    request = {"root": str(config.root), "jobs_dir": config.jobs_dir, "paths": [str(p) for p in paths],
               "together": together, "memory_mb": limits.memory_mb}
    done: dict[int, Evaluated] = {}
    expected: int | None = None if together else 0  # what the child works on now
    with tempfile.TemporaryFile() as errors:  # a file: Go's fatal error writes every goroutine's stack
        proc = subprocess.Popen([sys.executable, "-m", "jobplane.compiler.sandbox"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=errors, env=_child_env())
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request).encode())
        proc.stdin.close()
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        buffer = b""
        deadline = time.monotonic() + limits.timeout_seconds
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(timeout=remaining):
                    proc.kill()
                    return done, (expected, "timeout")
                chunk = os.read(proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    break
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line)
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
                    deadline = time.monotonic() + limits.timeout_seconds
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


def _child_env() -> dict[str, str]:
    """The child finds this package as the parent does (an editable install, or PYTHONPATH)."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _child() -> None:
    import resource

    request = json.loads(sys.stdin.read())
    limit = request["memory_mb"] << 20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))  # before go-jsonnet's runtime starts

    from jobplane.compiler.jsonnet_eval import ImportRefused, evaluate, evaluate_together

    config = PlatformConfig(root=Path(request["root"]), jobs_dir=request["jobs_dir"])
    paths = [Path(p) for p in request["paths"]]

    def say(message: dict[str, JsonValue]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    if request["together"]:
        values = evaluate_together(paths, config)
        say({"together": values})
        if values is not None:
            return
    for i, path in enumerate(paths):
        try:
            say({"i": i, "value": evaluate(path, config)})
        except ImportRefused as e:
            say({"i": i, "refusals": list(e.refusals)})
        except RuntimeError as e:
            say({"i": i, "error": str(e)})


if __name__ == "__main__":
    _child()
