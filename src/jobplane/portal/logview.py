"""Step log lines as an operator reads them: time, level and message in columns, an error's
traceback expanded, filtered by level and by text, and a link to the same stream in the
CloudWatch console when the portal serves a platform on AWS.

The runner writes one JSON object per line (docs/runner.md, "Logs"); anything else in a stream
(a line a container printed before the runner started, a truncated line) is shown as its text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import quote

from jobplane.contract.types import JsonObject

#: Lowest first: a filter on a level shows that level and the ones after it.
LEVELS = ("debug", "info", "warning", "error", "critical")
#: What every runner line carries about its run: the page already says it once.
_RUN_FIELDS = frozenset({"time", "level", "logger", "message", "job", "step", "execution_id", "attempt",
                         "trace_id", "span_id", "error_type", "traceback", "team"})
QUERY_MAX = 200


@dataclass(frozen=True)
class LogLine:
    time: str | None
    level: str  # one of LEVELS, or "" for a line that is not the runner's JSON
    logger: str | None
    message: str
    error_type: str | None = None
    traceback: str | None = None
    fields: JsonObject = field(default_factory=dict)  # the call's extras: duration, exit_code, stream, ...

    @property
    def is_error(self) -> bool:
        return self.level in ("error", "critical") or self.traceback is not None

    def matches(self, text: str) -> bool:
        needle = text.casefold()
        haystack = [self.message, self.logger or "", self.error_type or "", self.traceback or ""]
        haystack += [f"{k}={v}" for k, v in self.fields.items()]
        return any(needle in h.casefold() for h in haystack)


def parse(text: str) -> list[LogLine]:
    lines = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError):  # a step may print anything, ~1,000 brackets deep too
            doc = None
        if not isinstance(doc, dict):
            lines.append(LogLine(None, "", None, raw))
            continue
        level = str(doc.get("level", "")).lower()
        lines.append(LogLine(
            time=str(doc["time"]) if doc.get("time") is not None else None,
            level=level if level in LEVELS else "",
            logger=str(doc["logger"]) if doc.get("logger") is not None else None,
            message=str(doc.get("message", "")),
            error_type=str(doc["error_type"]) if doc.get("error_type") else None,
            traceback=str(doc["traceback"]) if doc.get("traceback") else None,
            fields={k: v for k, v in doc.items() if k not in _RUN_FIELDS}))
    return lines


def checked_level(level: str | None) -> str | None:
    """A level from a request: one of LEVELS, or None for every line (anything else is ignored:
    a filter is a view, not an action)."""
    return level if level in LEVELS else None


def select(lines: list[LogLine], level: str | None = None, text: str | None = None) -> list[LogLine]:
    """The lines at ``level`` or above (a line without a level always shows: it may be the only
    trace of a crash) that contain ``text``, case-insensitively."""
    floor = LEVELS.index(level) if level in LEVELS else 0
    text = (text or "").strip()[:QUERY_MAX]
    return [line for line in lines
            if (not line.level or LEVELS.index(line.level) >= floor) and (not text or line.matches(text))]


def console_url(region: str, group: str, stream: str) -> str:
    """The stream in the CloudWatch Logs console. The console's fragment encodes a path segment
    twice: '/' as '$252F' ('%2F' with its '%' escaped as '$25')."""
    def segment(value: str) -> str:
        return quote(quote(value, safe=""), safe="").replace("%", "$")

    return (f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={quote(region, safe='')}"
            f"#logsV2:log-groups/log-group/{segment(group)}/log-events/{segment(stream)}")
