"""Step logs: each step attempt's output, read where the runner's log driver wrote it.

On AWS the runner container's awslogs driver writes one CloudWatch Logs stream per ECS task,
``runner/runner/<task id>`` in the group ``/<prefix>/runner``; locally the ECS agent writes the
very same streams to the embedded AWS. So the portal, ``jobplane logs`` and the alerts' error
excerpt read logs through one boto3 client in both places. A stream's name knows only its task:
which task ran which attempt comes from the execution history (the timeline rows' ``task_id``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Protocol

from jobplane.contract import runner as rc
from jobplane.contract.attempts import Attempt
from jobplane.contract.types import Client, JsonObject

#: The most one read returns: a page of the portal or one `jobplane logs` stream.
READ_LIMIT = 1_000_000


class LogSource(Protocol):
    def read(self, task_id: str, limit: int) -> str: ...


@dataclass(frozen=True)
class LogStream:
    step: str
    attempt: int
    task_id: str
    source: LogSource

    def read(self, limit: int = READ_LIMIT) -> str:
        """The stream's text, one line per log event; the last ``limit`` characters of a long one."""
        return self.source.read(self.task_id, limit)


def streams_of(source: LogSource, rows: Sequence[Attempt], step: str | None = None) -> list[LogStream]:
    """The log streams of an execution's attempts (timeline rows), in the order they ran."""
    out, seen = [], set()
    for row in rows:
        task_id = row.task_id
        if task_id and task_id not in seen and (step is None or row.step == step):
            seen.add(task_id)
            out.append(LogStream(row.step, row.attempt, task_id, source))
    return out


class StepLogs:
    """Step output in CloudWatch Logs (GetLogEvents on the runner's log group)."""

    def __init__(self, client: Client, group: str):
        self.client = client
        self.group = group

    def streams(self, rows: Sequence[Attempt], step: str | None = None) -> list[LogStream]:
        return streams_of(self, rows, step)

    def read(self, task_id: str, limit: int = READ_LIMIT) -> str:
        """Newest events first, page by page backwards, until ``limit`` characters: a long log
        shows its end, where the error is. A stream not created yet (the task is starting) is
        empty."""
        lines: list[str] = []
        size, cut = 0, False
        kwargs: JsonObject = {"logGroupName": self.group, "logStreamName": rc.log_stream(task_id),
                                  "startFromHead": False}
        while not cut:
            try:
                page = self.client.get_log_events(**kwargs)
            except self.client.exceptions.ResourceNotFoundException:
                break
            events = page.get("events") or []
            for event in reversed(events):
                message = event.get("message", "")
                if size + len(message) + 1 > limit:
                    cut = True
                    break
                lines.append(message)
                size += len(message) + 1
            token = page.get("nextBackwardToken")
            # the first page backwards repeats its token once there is nothing earlier
            if not events or not token or token == kwargs.get("nextToken"):
                break
            kwargs["nextToken"] = token
        text = "".join(line + "\n" for line in reversed(lines))
        return ("[... earlier lines not shown ...]\n" + text) if cut else text


def error_excerpt(streams: list[LogStream], max_chars: int = 600) -> str | None:
    """What went wrong, in a line or two, from the last attempt's log: the runner's JSON
    "step failed" line (exception type and message), else the last lines a shell step printed."""
    if not streams:
        return None
    text = streams[-1].read(200_000)
    lines = [line for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("level") == "error":
            tb = (record.get("traceback") or "").strip().splitlines()
            message = str(record.get("message", ""))
            # "ValueError: bad row"; a shell step's own status has no exception type: its message
            # alone ("command exited with status 3"), not "error: ..." (then "error: error: ...")
            detail = tb[-1] if tb else f"{record['error_type']}: {message}" if record.get("error_type") else message
            return detail[:max_chars]
    plain = [line for line in lines if not line.startswith("{") and not line.startswith("[... earlier")]
    return "\n".join(plain[-5:])[:max_chars] or None
