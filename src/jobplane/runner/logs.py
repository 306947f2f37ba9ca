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
from jobplane.contract.secret_names import SECRET_NAME, URL_PASSWORD, url_passwords
from jobplane.runner.capture import Capture

NOT_SECRET = _NOT_SECRET_NAMES | {ENV_TARGET, ENV_PARAMS}
#: The declared secrets of the step (ECS ``secrets``), by name: set by the job's task definition.
ENV_SECRET_NAMES = "JOBPLANE_SECRET_NAMES"
REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 4  # shorter values would redact ordinary words
#: A string inside a JSON secret is redacted from this length: its keys' values include short
#: ordinary words ("postgres", a port as text), which would redact the step's own log text.
MIN_JSON_LEAF_LENGTH = 8


def secret_forms(value: str) -> set[str]:
    """What a secret value may be printed as (issue 48 item 3): itself; stripped (``aws
    secretsmanager create-secret --secret-string file://x`` keeps the file's last newline, and
    a step prints the value it uses, stripped); each string leaf of 8+ characters of a JSON
    secret (Secrets Manager's and RDS's norm: the step parses it and prints a field); and each
    password of a URL in any of these, as written and percent-decoded."""
    forms = {value, value.strip()}
    text = value.strip()
    if text[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        forms.update(s for s in _string_leaves(parsed) if len(s) >= MIN_JSON_LEAF_LENGTH)
    for form in list(forms):
        for password in url_passwords(form):
            forms.update((password, _unquote(password)))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def _unquote(text: str) -> str:
    from urllib.parse import unquote  # only when a URL holds a password: not on every start-up

    return unquote(text)


def _string_leaves(value: object) -> list[str]:
    if isinstance(value, str):
        return [value, value.strip()]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _string_leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in _string_leaves(v)]
    return []


def secret_values(env: Mapping[str, str]) -> list[str]:
    """What must never be printed: the values of the step's declared secrets and of
    secret-looking variables in every form they may be printed (:func:`secret_forms`), and
    every password embedded in a URL-valued variable (contract/secret_names.py, any or no
    user name); longest first (so overlapping values redact whole)."""
    declared = {n.strip() for n in env.get(ENV_SECRET_NAMES, "").split(",") if n.strip()}
    values = set()
    for k, v in env.items():
        if k in NOT_SECRET or len(v) < MIN_SECRET_LENGTH:
            continue
        if k in declared or SECRET_NAME.search(k):
            values.update(secret_forms(v))
        values.update(form for p in url_passwords(v) for form in (p, _unquote(p)) if len(form) >= MIN_SECRET_LENGTH)
    return sorted(values, key=len, reverse=True)


class RunFormatter(logging.Formatter):
    """JSON lines: time, level, logger, the run's fields, the message, then whatever the call
    passed as ``extra`` (a record attribute the logging module does not set itself); secret
    values replaced."""

    def __init__(self, fields: JsonObject, secrets: list[str]):
        super().__init__()
        self.fields = fields
        # A secret also appears JSON-escaped inside the serialised line, as this formatter
        # escapes it (quotes and control characters, non-ASCII kept: ensure_ascii=False below),
        # and as json.dumps' default escapes it, when the step logs JSON text it serialised itself.
        escaped = {json.dumps(s, ensure_ascii=ascii_only)[1:-1] for s in secrets for ascii_only in (False, True)}
        patterns = sorted({re.escape(s) for s in [*secrets, *escaped]}, key=len, reverse=True)
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
    secrets = secret_values(env)
    out = _capture.start(output, secrets) if _capture.real_stdout is None else _capture.real_stdout
    handler = logging.StreamHandler(out)
    handler.setFormatter(RunFormatter(fields, secrets))
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
    """Log what the step and its children wrote so far: called before the step's result is
    logged, so that the result follows it. Fds 1 and 2 stay captured until the process exits
    (issue 48 item 3: an ``atexit`` handler's ``os.system('echo $KEY')`` printed in clear once
    they were handed back): what is written later is logged after the result, redacted."""
    sys.stdout.flush()
    sys.stderr.flush()
    _capture.drain()
