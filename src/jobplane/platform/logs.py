"""Step logs: each step attempt's output, read where the runner's log driver wrote it.

On AWS the runner container's awslogs driver writes one CloudWatch Logs stream per ECS task,
``runner/runner/<task id>`` in the group ``/<prefix>/runner``; locally the ECS agent writes the
very same streams to the embedded AWS. So the portal, ``jobplane logs`` and the alerts' error
excerpt read logs through one boto3 client in both places. A stream's name knows only its task:
which task ran which attempt comes from the execution history (the timeline rows' ``task_id``).
Where each attempt's log is (its own stream, or its lines of a stream it shares) is the
executor's to say (contract/executor_runtime.py ``log_place``), not this module's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Protocol

from jobplane.contract import runner as rc
from jobplane.contract.attempts import Attempt
from jobplane.contract.executor_runtime import SharedLog, log_place
from jobplane.contract.lambda_step import invocation_lines
from jobplane.contract.types import Client, JsonObject

#: The most one read returns: a page of the portal or one `jobplane logs` stream.
READ_LIMIT = 1_000_000


#: An attempt's lines of a stream it shares (a Lambda invocation's): contract/executor_runtime.py.
LambdaLog = SharedLog


class LogSource(Protocol):
    def read(self, task_id: str, limit: int, where: SharedLog | None = None) -> str: ...


@dataclass(frozen=True)
class LogStream:
    step: str
    attempt: int
    task_id: str  # the ECS task, or the Lambda invocation's request id
    source: LogSource
    where: SharedLog | None = None  # its lines of a shared stream; None: its own stream, named by its id

    def read(self, limit: int = READ_LIMIT) -> str:
        """The stream's text, one line per log event; the last ``limit`` characters of a long one."""
        return self.source.read(self.task_id, limit, self.where) if self.where else self.source.read(self.task_id, limit)

    @property
    def log_group(self) -> str | None:
        return self.where.group if self.where else None

    @property
    def log_stream(self) -> str:
        return self.where.stream if self.where else rc.log_stream(self.task_id)


def streams_of(source: LogSource, rows: Sequence[Attempt], step: str | None = None,
               execution: str | None = None) -> list[LogStream]:
    """The log streams of an execution's attempts (timeline rows), in the order they ran; with
    ``execution`` (its name), also the attempts found by their run's identity (a Lambda
    attempt that timed out before it answered). Where each is, its executor says."""
    out, seen = [], set()
    for row in rows:
        if step is not None and row.step != step:
            continue
        place = log_place(row, execution)
        if place is not None and place.key and place.key not in seen:
            seen.add(place.key)
            out.append(LogStream(row.step, row.attempt, place.key, source, place.shared))
    return out


class StepLogs:
    """Step output in CloudWatch Logs (GetLogEvents on the runner's log group)."""

    def __init__(self, client: Client, group: str):
        self.client = client
        self.group = group

    def streams(self, rows: Sequence[Attempt], step: str | None = None, execution: str | None = None) -> list[LogStream]:
        return streams_of(self, rows, step, execution)

    def read(self, task_id: str, limit: int = READ_LIMIT, where: SharedLog | None = None) -> str:
        """Newest events first, page by page backwards, until ``limit`` characters: a long log
        shows its end, where the error is. A stream not created yet (the task is starting) is
        empty. An attempt's lines of a shared stream (``where``: a Lambda invocation's), its
        request's lines, or its run's identity's where it has no stream."""
        if where is not None and not where.stream:
            return self._read_by_identity(limit, where)
        if where is not None:
            return self._read_invocation(task_id, limit, where)
        return self._read(self.group, rc.log_stream(task_id), limit)

    def _read_invocation(self, request_id: str, limit: int, where: SharedLog) -> str:
        """Read forwards (an execution environment's stream holds every invocation it served, in
        order; this one's lines are few next to a long-lived stream's) from the head, then keep
        the lines between this request's START and END (contract/lambda_step.py)."""
        lines: list[str] = []
        kwargs: JsonObject = {"logGroupName": where.group, "logStreamName": where.stream, "startFromHead": True}
        while True:
            try:
                page = self.client.get_log_events(**kwargs)
            except self.client.exceptions.ResourceNotFoundException:
                break
            events = page.get("events") or []
            lines += [event.get("message", "") for event in events]
            token = page.get("nextForwardToken")
            if not events or not token or token == kwargs.get("nextToken"):
                break
            kwargs["nextToken"] = token
        text = "".join(line + "\n" for line in invocation_lines(lines, request_id))
        return ("[... earlier lines not shown ...]\n" + text[-limit:]) if len(text) > limit else text

    def _read_by_identity(self, limit: int, where: SharedLog) -> str:
        """The lines of an attempt that never answered (its Task timed out): those of its
        function's group that carry its run's identity (the runner's and the handler's JSON
        lines), found with a filter on the execution's name, in the order they were written."""
        found: list[tuple[int, str]] = []
        kwargs: JsonObject = {"logGroupName": where.group, "filterPattern": json.dumps(where.execution)}
        while True:
            try:
                page = self.client.filter_log_events(**kwargs)
            except self.client.exceptions.ResourceNotFoundException:
                break
            for event in page.get("events") or []:
                message = event.get("message", "")
                try:
                    record = json.loads(message)
                except ValueError:
                    continue
                if (isinstance(record, dict) and record.get("execution_id") == where.execution
                        and record.get("step") == where.step and str(record.get("attempt")) == str(where.attempt)):
                    found.append((int(event.get("timestamp", 0)), message))
            if not page.get("nextToken"):
                break
            kwargs["nextToken"] = page["nextToken"]
        text = "".join(m + "\n" for _, m in sorted(found, key=lambda f: f[0]))
        return ("[... earlier lines not shown ...]\n" + text[-limit:]) if len(text) > limit else text

    def _read(self, group: str, stream: str, limit: int) -> str:
        lines: list[str] = []
        size, cut = 0, False
        kwargs: JsonObject = {"logGroupName": group, "logStreamName": stream, "startFromHead": False}
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
