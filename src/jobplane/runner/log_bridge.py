"""The runner's lines through ``logging``, once something imports it (runner/logs.py: until
then the runner writes them itself, in the same format): a handler on the root logger, alone
there, at JOBPLANE_LOG_LEVEL, warnings captured. This module imports ``logging``; nothing on
the runner's way to a step's code imports this module."""

from __future__ import annotations

import logging

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

    from jobplane.runner.logs import LineFormat

#: What every LogRecord carries (``logging.LogRecord.__init__``, plus ``message`` and ``asctime``
#: which formatting adds): not the caller's ``extra``.
_RESERVED = frozenset({
    "args", "asctime", "created", "exc_info", "exc_text", "filename", "funcName", "levelname", "levelno", "lineno",
    "message", "module", "msecs", "msg", "name", "pathname", "process", "processName", "relativeCreated",
    "stack_info", "thread", "threadName", "taskName",
})


class RunFormatter(logging.Formatter):
    """A record as the runner's JSON line (runner/logs.py LineFormat): the record's attributes
    the logging module does not set itself are the caller's ``extra``."""

    def __init__(self, line_format: LineFormat):
        super().__init__()
        self.line_format = line_format

    def format(self, record: logging.LogRecord) -> str:
        extra = ((k, v) for k, v in record.__dict__.items() if k not in _RESERVED and not k.startswith("_"))
        fields = self.line_format.fields_of(record.created, record.levelname, record.name, record.getMessage(),
                                            extra, record.exc_info, record.stack_info)
        return self.line_format.line(fields)


class RunHandler(logging.Handler):
    """Writes through runner/logs.py ``write_line``: one lock for the lines written before
    ``logging`` was imported and after."""

    def __init__(self, write_line: Callable[[str], None]):
        super().__init__()
        self.write_line = write_line

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.write_line(self.format(record))
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - as logging.StreamHandler does
            self.handleError(record)


def install(line_format: LineFormat, level: str, write_line: Callable[[str], None]) -> None:
    """The root logger's one handler: lines formatted by ``line_format``, written by ``write_line``
    (runner/logs.py calls this, passing its own: this module does not import it back)."""
    handler = RunHandler(write_line)
    handler.setFormatter(RunFormatter(line_format))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)
