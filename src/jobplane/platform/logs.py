"""Step logs: where each step attempt's output is kept and how the CLI and portal read it.

Locally the ECS agent writes one file per task under the data directory, grouped by execution
so a whole execution's logs are one directory listing (no index to keep in sync). In production
the runner's awslogs driver writes one CloudWatch stream per task; that reader is not built yet.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9._#-]")


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def local_log_path(log_dir: Path, execution: str, step: str, attempt: str, task_id: str) -> Path:
    directory = Path(log_dir) / _safe(execution)
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{_safe(step)}.{_safe(attempt or '1')}.{_safe(task_id)}.log"


@dataclass(frozen=True)
class LogStream:
    step: str
    attempt: int
    task_id: str
    path: Path

    def read(self, limit: int = 1_000_000) -> str:
        """The stream's text; the last ``limit`` bytes of a long one (logs can be large)."""
        size = self.path.stat().st_size
        with open(self.path, "rb") as f:
            if size > limit:
                f.seek(size - limit)
            data = f.read()
        text = data.decode("utf-8", errors="replace")
        return (f"[... {size - limit} earlier bytes not shown ...]\n" + text) if size > limit else text


class LocalLogStore:
    def __init__(self, log_dir: Path | str):
        self.log_dir = Path(log_dir)

    def streams(self, execution: str, step: str | None = None) -> list[LogStream]:
        """The execution's log streams in the order the tasks started."""
        directory = self.log_dir / _safe(execution)
        if not directory.is_dir():
            return []
        out = []
        for path in directory.glob("*.log"):
            name = path.name[:-len(".log")]
            step_name, attempt, task_id = name.rsplit(".", 2)
            if step is None or step_name == _safe(step):
                out.append(LogStream(step_name, int(attempt) if attempt.isdigit() else 1, task_id, path))
        return sorted(out, key=lambda s: (s.path.stat().st_ctime_ns, s.step, s.attempt))


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
    plain = [line for line in lines if not line.startswith("{")]
    return "\n".join(plain[-5:])[:max_chars] or None
