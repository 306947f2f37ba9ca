"""Structured JSON logs on stdout: one object per line with the run's identity on every line,
the user's own logging and prints included, and nothing that looks like a secret.

The formatter is ours, on the standard library's ``json``: python-json-logger cost a quarter of
the runner's start-up (its import alone ~23 ms of ~110 ms, bench/runner_start.py), and a
runner's line is one small dict."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import time
import traceback

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    from typing import Mapping
    from jobplane.contract.types import JsonObject, JsonValue

from jobplane.contract.runner import ENV_PARAMS, ENV_TARGET
from jobplane.contract.secret_names import NOT_SECRET as _NOT_SECRET_NAMES
from jobplane.contract.secret_names import SECRET_NAME, URL_PASSWORD
from jobplane.runner.capture import Capture

NOT_SECRET = _NOT_SECRET_NAMES | {ENV_TARGET, ENV_PARAMS}
#: The declared secrets of the step (ECS ``secrets``), by name: set by the job's task definition.
ENV_SECRET_NAMES = "JOBPLANE_SECRET_NAMES"
REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 4  # shorter values would redact ordinary words


def secret_values(env: Mapping[str, str]) -> list[str]:
    """What must never be printed: the values of the step's declared secrets and of
    secret-looking variables, and every password embedded in a URL-valued variable; longest
    first (so overlapping values redact whole)."""
    declared = {n.strip() for n in env.get(ENV_SECRET_NAMES, "").split(",") if n.strip()}
    values = set()
    for k, v in env.items():
        if k in NOT_SECRET or len(v) < MIN_SECRET_LENGTH:
            continue
        if k in declared or SECRET_NAME.search(k):
            values.add(v)
        values.update(m.group(2) for m in URL_PASSWORD.finditer(v) if len(m.group(2)) >= MIN_SECRET_LENGTH)
    return sorted(values, key=len, reverse=True)


class RunFormatter(logging.Formatter):
    """JSON lines: time, level, logger, the run's fields, the message, then whatever the call
    passed as ``extra`` (a record attribute the logging module does not set itself); secret
    values replaced."""

    def __init__(self, fields: JsonObject, secrets: list[str]):
        super().__init__()
        self.fields = fields
        # A secret also appears JSON-escaped inside the serialised line.
        patterns = [re.escape(s) for s in secrets] + [re.escape(json.dumps(s)[1:-1]) for s in secrets]
        self._secret_re = re.compile("|".join(patterns)) if patterns else None

    def fields_of(self, record: logging.LogRecord) -> JsonObject:
        out: JsonObject = {
            # ISO 8601 in UTC to the millisecond, from logging's own split of the time (datetime's
            # import would be ~3 ms of the runner's start-up)
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            **self.fields,
            "message": record.getMessage(),
        }
        out.update((k, v) for k, v in record.__dict__.items() if k not in _RESERVED and not k.startswith("_"))
        if record.exc_info and record.exc_info[0] is not None:
            out["error_type"] = record.exc_info[0].__name__
            out["traceback"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        elif record.stack_info:
            out["stack_info"] = record.stack_info
        return out

    def format(self, record: logging.LogRecord) -> str:
        line = json.dumps(self.fields_of(record), ensure_ascii=False, default=_plain)
        if self._secret_re is not None:
            line = self._secret_re.sub(REDACTED, line)
        return URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{REDACTED}@", line)  # a DSN the step built itself


def _plain(value: JsonValue) -> JsonValue:
    """An ``extra`` value JSON has no type for: dates as ISO 8601, anything else as its str()."""
    isoformat = getattr(value, "isoformat", None)
    return isoformat() if callable(isoformat) else str(value)


#: What every LogRecord carries (``logging.LogRecord.__init__``, plus ``message`` and ``asctime``
#: which formatting adds): not the caller's ``extra``.
_RESERVED = frozenset({
    "args", "asctime", "created", "exc_info", "exc_text", "filename", "funcName", "levelname", "levelno", "lineno",
    "message", "module", "msecs", "msg", "name", "pathname", "process", "processName", "relativeCreated",
    "stack_info", "thread", "threadName", "taskName",
})


class LineLogger(io.TextIOBase):
    """A file-like that turns each written line into a log record (for print() in user code)."""

    def __init__(self, logger: logging.Logger, level: int, stream: str):
        self.logger, self.level, self.stream = logger, level, stream
        self._buffer = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buffer += text
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            self.logger.log(self.level, line, extra={"stream": self.stream})
        return len(text)

    def flush(self) -> None:
        if self._buffer:
            line, self._buffer = self._buffer, ""
            self.logger.log(self.level, line, extra={"stream": self.stream})


_capture = Capture()


def configure(fields: JsonObject, env: Mapping[str, str] | None = None) -> logging.Logger:
    """Route every log record, every print and everything written to fds 1 and 2 (children
    included: runner/capture.py) through one JSON handler on the real stdout."""
    env = os.environ if env is None else env
    output = logging.getLogger("jobplane.output")
    out = _capture.start(output) if not _capture.saved else _capture.real_stdout
    handler = logging.StreamHandler(out)
    handler.setFormatter(RunFormatter(fields, secret_values(env)))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(os.environ.get("JOBPLANE_LOG_LEVEL", "INFO").upper())
    logging.captureWarnings(True)
    # a text stream (TextIOBase): what print() and tracebacks need
    sys.stdout = LineLogger(output, logging.INFO, "stdout")
    sys.stderr = LineLogger(output, logging.WARNING, "stderr")
    return logging.getLogger("jobplane.runner")


def release_descriptors() -> None:
    """Give fds 1 and 2 back and log what the step's children wrote before: called before the
    step's result is logged, so that the result is the last line."""
    sys.stdout.flush()
    sys.stderr.flush()
    _capture.close()
