"""Structured JSON logs on stdout: one object per line with the run's identity on every line,
the user's own logging and prints included, and nothing that looks like a secret.

The formatter is ours, on the standard library's ``json``: python-json-logger cost a quarter of
the runner's start-up (its import alone ~23 ms of ~110 ms, bench/runner_start.py), and a
runner's line is one small dict.

Nor is the ``logging`` module imported to write them (issue 66 item 2: it and what it imports,
``traceback`` among them, were a third of the runner's start to a step's code): the runner's own
lines, prints and the captured descriptors go through :func:`emit`, which writes the very line
the logging handler writes (:class:`LineFormat`, one for both). Once anything imports ``logging``
(the step's code, a library of it, ``RunContext.logger``), that import installs the runner's
handler on the root logger before the importer gets the module (:class:`_LoggingHook`,
runner/log_bridge.py), and from then on every line passes through ``logging`` as before: the
step's records, filters and handlers see the runner's lines and its output's too. A step that
never imports it (a shell step, a function that prints) never pays for it."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import time
import _thread

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    import importlib.machinery
    from types import ModuleType, TracebackType
    from typing import Iterable, Mapping, TextIO

    ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
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


#: logging's levels by name (``logging._nameToLevel``) and the names its records carry
LEVELS = {"CRITICAL": 50, "FATAL": 50, "ERROR": 40, "WARN": 30, "WARNING": 30, "INFO": 20, "DEBUG": 10, "NOTSET": 0}
LEVEL_NAMES = {50: "CRITICAL", 40: "ERROR", 30: "WARNING", 20: "INFO", 10: "DEBUG", 0: "NOTSET"}
DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40
OUTPUT_LOGGER = "jobplane.output"  # prints and what fds 1 and 2 carry
ENV_LOG_LEVEL = "JOBPLANE_LOG_LEVEL"


class LineFormat:
    """A log line: JSON of time, level, logger, the run's fields, the message, then the caller's
    ``extra``; secret values replaced. The one format of :func:`emit` and of the logging
    handler's formatter (runner/log_bridge.py RunFormatter)."""

    def __init__(self, fields: JsonObject, secrets: list[str]):
        self.fields = fields
        # A secret also appears JSON-escaped inside the serialised line, as this formatter
        # escapes it (quotes and control characters, non-ASCII kept: ensure_ascii=False below),
        # and as json.dumps' default escapes it, when the step logs JSON text it serialised itself.
        escaped = {json.dumps(s, ensure_ascii=ascii_only)[1:-1] for s in secrets for ascii_only in (False, True)}
        patterns = sorted({re.escape(s) for s in [*secrets, *escaped]}, key=len, reverse=True)
        self._secret_re = re.compile("|".join(patterns)) if patterns else None

    def fields_of(self, created: float, levelname: str, name: str, message: str,
                  extra: Iterable[tuple[str, object]], exc_info: ExcInfo | None = None,
                  stack_info: str | None = None) -> JsonObject:
        msecs = int((created - int(created)) * 1000)  # as logging.LogRecord splits it
        out: JsonObject = {
            # ISO 8601 in UTC to the millisecond (datetime's import would be ~3 ms of the start-up)
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{msecs:03d}Z",
            "level": levelname.lower(),
            "logger": name,
            **self.fields,
            "message": message,
        }
        out.update(extra)  # what JSON has no type for goes through _plain
        if exc_info and exc_info[0] is not None:
            import traceback  # only for a line with a traceback

            out["error_type"] = exc_info[0].__name__
            out["traceback"] = "".join(traceback.format_exception(*exc_info)).rstrip()
        elif stack_info:
            out["stack_info"] = stack_info
        return out

    def line(self, fields: JsonObject) -> str:
        text = json.dumps(fields, ensure_ascii=False, default=_plain)
        if self._secret_re is not None:
            text = self._secret_re.sub(REDACTED, text)
        return URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)  # a DSN the step built itself


def _plain(value: JsonValue) -> JsonValue:
    """An ``extra`` value JSON has no type for: dates as ISO 8601, anything else as its str()."""
    isoformat = getattr(value, "isoformat", None)
    return isoformat() if callable(isoformat) else str(value)


class _Sink:
    """Where lines go: the real stdout (runner/capture.py), one line at a time (the capture's
    readers write from their threads), and whether ``logging`` carries them now."""

    def __init__(self) -> None:
        self.out: TextIO | None = None
        self.format: LineFormat | None = None
        self.level = INFO
        self.level_name = "INFO"
        self.lock = _thread.allocate_lock()
        self.via_logging = False


_sink = _Sink()


def write_line(text: str) -> None:
    """One line on the real stdout (the logging handler's too: runner/log_bridge.py)."""
    assert _sink.out is not None
    with _sink.lock:
        _sink.out.write(text + "\n")
        _sink.out.flush()


def emit(name: str, level: int, message: str, extra: JsonObject | None = None,
         exc_info: ExcInfo | None = None) -> None:
    """Log one line as logger ``name`` would: through ``logging`` once it is imported (and
    configured with the runner's handler), else written here, in the same format."""
    if _sink.via_logging:
        logging = sys.modules["logging"]
        logging.getLogger(name).log(level, message, exc_info=exc_info, extra=extra)
        return
    if level < _sink.level or _sink.format is None or _sink.out is None:
        return
    fields = _sink.format.fields_of(time.time(), LEVEL_NAMES.get(level, f"Level {level}"), name, message,
                                    (extra or {}).items(), exc_info)
    write_line(_sink.format.line(fields))


class RunLog:
    """The runner's own logger: what of ``logging.Logger`` the runner calls, each line through
    :func:`emit` (so the same line whether or not ``logging`` was imported)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def log(self, level: int, msg: str, *args: object, extra: JsonObject | None = None,
            exc_info: ExcInfo | None = None) -> None:
        emit(self.name, level, msg % args if args else msg, extra, exc_info)

    def debug(self, msg: str, *args: object, extra: JsonObject | None = None) -> None:
        self.log(DEBUG, msg, *args, extra=extra)

    def info(self, msg: str, *args: object, extra: JsonObject | None = None) -> None:
        self.log(INFO, msg, *args, extra=extra)

    def warning(self, msg: str, *args: object, extra: JsonObject | None = None) -> None:
        self.log(WARNING, msg, *args, extra=extra)

    def error(self, msg: str, *args: object, extra: JsonObject | None = None) -> None:
        self.log(ERROR, msg, *args, extra=extra)

    def exception(self, msg: str, *args: object, extra: JsonObject | None = None) -> None:
        self.log(ERROR, msg, *args, extra=extra, exc_info=sys.exc_info())


class LineLogger(io.TextIOBase):
    """A file-like that turns each written line into a log line (for print() in user code)."""

    def __init__(self, name: str, level: int, stream: str):
        self.name, self.level, self.stream = name, level, stream
        self._buffer = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buffer += text
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            emit(self.name, self.level, line, {"stream": self.stream})
        return len(text)

    def flush(self) -> None:
        if self._buffer:
            line, self._buffer = self._buffer, ""
            emit(self.name, self.level, line, {"stream": self.stream})


def _output_line(level: int, text: str, stream: str) -> None:
    emit(OUTPUT_LOGGER, level, text, {"stream": stream})


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """A warning as a line of the ``py.warnings`` logger, as ``logging.captureWarnings(True)``
    makes it (which takes over once ``logging`` is imported)."""
    import warnings

    if file is not None:
        warnings._showwarning_orig(message, category, filename, lineno, file, line)  # type: ignore[attr-defined]
        return
    emit("py.warnings", WARNING, str(warnings.formatwarning(message, category, filename, lineno, line)))


_capture = Capture()


def configure(fields: JsonObject, env: Mapping[str, str] | None = None) -> RunLog:
    """Route every log line, every print and everything written to fds 1 and 2 (children
    included: runner/capture.py) into one JSON line format on the real stdout; ``logging`` too,
    once it is imported (:class:`_LoggingHook`)."""
    env = os.environ if env is None else env
    secrets = secret_values(env)
    _sink.format = LineFormat(fields, secrets)
    _sink.level_name = os.environ.get(ENV_LOG_LEVEL, "INFO").upper()
    _sink.level = LEVELS.get(_sink.level_name, INFO)
    out = _capture.start(_output_line, secrets) if _capture.real_stdout is None else _capture.real_stdout
    _sink.out = out
    import warnings

    if not hasattr(warnings, "_showwarning_orig"):
        warnings._showwarning_orig = warnings.showwarning  # type: ignore[attr-defined]
    if "logging" in sys.modules or _sink.level_name not in LEVELS:
        _to_logging()  # imported already (or a level only logging can refuse, as it did)
    else:
        warnings.showwarning = _show_warning
        if _LoggingHook not in sys.meta_path:
            sys.meta_path.insert(0, _LoggingHook)
    # a text stream (TextIOBase): what print() and tracebacks need
    sys.stdout = LineLogger(OUTPUT_LOGGER, INFO, "stdout")
    sys.stderr = LineLogger(OUTPUT_LOGGER, WARNING, "stderr")
    return RunLog("jobplane.runner")


def _to_logging() -> None:
    """From now on every line passes through ``logging``, its root logger holding the runner's
    handler alone (runner/log_bridge.py)."""
    if _sink.via_logging:
        return
    from jobplane.runner import log_bridge

    assert _sink.format is not None
    log_bridge.install(_sink.format, _sink.level_name, write_line)
    _sink.via_logging = True


class _LoggingHook:
    """A meta path finder for ``logging`` alone: the module it finds runs as usual, then the
    runner's handler is installed (:func:`_to_logging`) before whoever imported it gets it.
    Used once (it leaves ``sys.meta_path`` when asked), then the module's loader is its own."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name != "logging":
            return None
        if _LoggingHook in sys.meta_path:
            sys.meta_path.remove(_LoggingHook)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ConfiguringLoader(spec.loader)
                return spec  # type: ignore[no-any-return]
        return None


class _ConfiguringLoader:
    """``logging``'s own loader, then :func:`_to_logging`."""

    def __init__(self, loader: importlib.machinery.SourceFileLoader):
        self.loader = loader

    def __getattr__(self, name: str) -> object:
        return getattr(self.loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        _to_logging()


def release_descriptors() -> None:
    """Log what the step and its children wrote so far: called before the step's result is
    logged, so that the result follows it. Fds 1 and 2 stay captured until the process exits
    (issue 48 item 3: an ``atexit`` handler's ``os.system('echo $KEY')`` printed in clear once
    they were handed back): what is written later is logged after the result, redacted."""
    sys.stdout.flush()
    sys.stderr.flush()
    _capture.drain()
