"""The awslogs log driver of the local ECS agent: a task's output becomes CloudWatch Logs events.

On AWS the runner container's ``awslogs`` driver sends each line the container prints to the
stream ``<awslogs-stream-prefix>/<container>/<task id>`` of ``awslogs-group``. The local agent
does the same into the embedded AWS's CloudWatch Logs, so every reader uses GetLogEvents in both
places (:mod:`jobplane.platform.logs`).

Each stream is also appended to a cache file under the data directory,
``<log_dir>/<execution>/<step>.<attempt>.<task id>.jsonl`` (a header line, then one event per
line): moto keeps CloudWatch Logs in memory only, so ``jobplane dev`` replays the cache into it
when it starts again, and ``jobplane logs`` can read it while ``jobplane dev`` is stopped.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, Callable

from jobplane.contract.lambda_step import function_of_log_group, invocation_lines
from jobplane.contract.executor_runtime import SharedLog
from jobplane.platform.logs import LogStream
from jobplane.contract.types import JsonObject

log = logging.getLogger(__name__)

#: CloudWatch Logs takes events up to 256 KB (less 26 bytes of overhead); Docker's awslogs driver
#: splits longer lines too.
EVENT_MAX_CHARS = 64 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9._#-]")

#: put(group, stream, events): how events reach CloudWatch Logs (moto's backend in its process).
Put = Callable[[str, str, list[JsonObject]], None]


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


@dataclass(frozen=True)
class Destination:
    """Where a task's output goes: the container's awslogs options and the cache file."""

    group: str
    stream: str
    cache: Path


class LogCache:
    def __init__(self, log_dir: Path | str):
        self.log_dir = Path(log_dir)

    def path(self, execution: str, step: str, attempt: str, task_id: str) -> Path:
        directory = self.log_dir / _safe(execution)
        directory.mkdir(parents=True, exist_ok=True)
        return directory / f"{_safe(step)}.{_safe(attempt or '1')}.{_safe(task_id)}.jsonl"

    def open(self, destination: Destination) -> BinaryIO:
        f = open(destination.cache, "ab")
        f.write(json.dumps({"group": destination.group, "stream": destination.stream}).encode() + b"\n")
        f.flush()
        return f

    # -- reading while jobplane dev is stopped -----------------------------------------------
    def streams(self, execution: str, step: str | None = None) -> list[LogStream]:
        directory = self.log_dir / _safe(execution)
        if not directory.is_dir():
            return []
        found = []
        for path in directory.glob("*.jsonl"):
            step_name, attempt, task_id = path.name[:-len(".jsonl")].rsplit(".", 2)
            if step is None or step_name == _safe(step):
                found.append((path.stat().st_ctime_ns, LogStream(step_name, int(attempt) if attempt.isdigit() else 1,
                                                                 task_id, self, _lambda_log(path))))
        return [s for _, s in sorted(found, key=lambda f: (f[0], f[1].step, f[1].attempt))]

    def read(self, task_id: str, limit: int, where: SharedLog | None = None) -> str:
        """A task's (or a Lambda invocation's: ``task_id`` its request id) cached output."""
        path = next(self.log_dir.glob(f"*/*.{_safe(task_id)}.jsonl"), None)
        if path is None:
            return ""
        _, events = _load(path)
        lines = [e["message"] for e in events]
        if where is not None:
            lines = invocation_lines(lines, task_id)
        text = "".join(line + "\n" for line in lines)
        return ("[... earlier lines not shown ...]\n" + text[-limit:]) if len(text) > limit else text

    # -- a new start of jobplane dev ---------------------------------------------------------
    def restore(self, put: Put) -> int:
        """Replay every cached stream into CloudWatch Logs; returns how many streams."""
        count = 0
        for path in sorted(self.log_dir.glob("*/*.jsonl")):
            header, events = _load(path)
            if header and events:
                for i in range(0, len(events), 5000):
                    put(header["group"], header["stream"], events[i:i + 5000])
                count += 1
        return count


def _lambda_log(path: Path) -> SharedLog | None:
    """Where a Lambda invocation's cached stream was (its header), None for a task's."""
    with open(path, "rb") as f:
        try:
            header = json.loads(f.readline())
        except ValueError:
            return None
    if isinstance(header, dict) and function_of_log_group(str(header.get("group", ""))):
        return SharedLog(str(header["group"]), str(header.get("stream", "")))
    return None


def _load(path: Path) -> tuple[JsonObject | None, list[JsonObject]]:
    header, events = None, []
    for n, line in enumerate(path.read_bytes().splitlines()):
        try:
            item = json.loads(line)
        except ValueError:  # a line cut short by a crash
            continue
        if n == 0:
            header = item
        elif isinstance(item, dict) and "message" in item:
            events.append({"timestamp": int(item.get("timestamp", 0)), "message": str(item["message"])})
    return header, events


def ship(pipe: IO[bytes], destination: Destination, put: Put, cache: BinaryIO) -> None:
    """Read a container's output until it closes; each line becomes an event, sent as soon as it
    is read (whatever one read returns is one PutLogEvents call), so a running step's log can
    be followed. Returns once everything is sent, which the agent waits for before it reports
    the task stopped: a reader of a finished step's log sees all of it."""
    pending = b""
    last = 0
    try:
        while True:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            last = _send(lines, destination, put, cache, last)
        if pending:
            _send([pending], destination, put, cache, last)
    finally:
        pipe.close()
        cache.close()


def _send(lines: list[bytes], destination: Destination, put: Put, cache: BinaryIO, last: int) -> int:
    now = max(last, int(time.time() * 1000))  # events of one call must not go back in time
    events = []
    for raw in lines:
        text = raw.decode("utf-8", errors="replace").rstrip("\r")
        for i in range(0, len(text), EVENT_MAX_CHARS):  # an empty line is not an event
            events.append({"timestamp": now, "message": text[i:i + EVENT_MAX_CHARS]})
    if events:
        cache.write(b"".join(json.dumps(e).encode() + b"\n" for e in events))
        cache.flush()
        try:
            put(destination.group, destination.stream, events)
        except Exception:  # noqa: BLE001 - the cache keeps them; the next start replays them
            log.exception("%d log events of %s not sent to CloudWatch Logs (kept in %s)", len(events),
                          destination.stream, destination.cache)
    return now


def start_shipping(pipe: IO[bytes], destination: Destination, put: Put, cache: BinaryIO,
                   name: str) -> threading.Thread:
    thread = threading.Thread(target=ship, args=(pipe, destination, put, cache), name=name, daemon=True)
    thread.start()
    return thread
