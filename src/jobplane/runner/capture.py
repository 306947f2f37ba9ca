"""File descriptors 1 and 2 of the runner's process turned into log lines, so that what never
passes through ``sys.stdout``/``sys.stderr`` is redacted too: ``os.system`` and ``subprocess``
children of a python step (they inherit the descriptors, not Python's objects), C extensions
writing to fd 1, a library holding ``sys.__stdout__`` (issue 40, item 6).

Each descriptor becomes the write end of a pipe that a daemon thread reads line by line into the
``jobplane.output`` logger (stdout at INFO, stderr at WARNING, as print() already is), whose
formatter redacts; the log handler itself writes to a duplicate of the real stdout kept aside.

What would be lost if only a pipe carried it: a fatal error of the interpreter itself (a
segfault in a C extension) kills the reading thread with the process, so faulthandler is pointed
at the real stderr. Its output is a stack of file and function names, no values.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import threading

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    from typing import BinaryIO, TextIO

#: A line longer than this is logged in pieces (a child writing binary data must not grow one
#: record without bound).
MAX_LINE = 64 * 1024
#: How long the runner waits at exit for output still in the pipes: a step's background child
#: that keeps the descriptor open must not hold the step's end.
DRAIN_SECONDS = 5.0


class Capture:
    """The two redirections of one runner process; ``close`` restores the descriptors and waits
    for the readers to log what was written before it."""

    def __init__(self) -> None:
        self.saved: dict[int, int] = {}
        self.readers: list[threading.Thread] = []
        self.real_stdout: TextIO | None = None
        self.real_stderr: TextIO | None = None

    def start(self, logger: logging.Logger) -> TextIO:
        """Redirect fds 1 and 2; returns the real stdout, for the log handler to write to."""
        for fd, level, stream in ((1, logging.INFO, "stdout"), (2, logging.WARNING, "stderr")):
            self.saved[fd] = os.dup(fd)
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)
            os.close(write_end)
            reader = threading.Thread(target=_read_lines, args=(os.fdopen(read_end, "rb"), logger, level, stream),
                                      name=f"jobplane-{stream}", daemon=True)
            reader.start()
            self.readers.append(reader)
        self.real_stdout = os.fdopen(self.saved[1], "w", encoding="utf-8", errors="backslashreplace",
                                     buffering=1, closefd=False)
        self.real_stderr = os.fdopen(self.saved[2], "w", encoding="utf-8", errors="backslashreplace",
                                     buffering=1, closefd=False)
        faulthandler.enable(file=self.real_stderr)
        return self.real_stdout

    def close(self) -> None:
        """Put the real descriptors back (which closes the pipes' last write ends this process
        holds) and let the readers log what is left; idempotent."""
        for fd, saved in self.saved.items():
            os.dup2(saved, fd)
        self.saved.clear()
        for reader in self.readers:
            reader.join(timeout=DRAIN_SECONDS)
        self.readers.clear()


def _read_lines(pipe: BinaryIO, logger: logging.Logger, level: int, stream: str) -> None:
    with pipe:
        while True:
            line = pipe.readline(MAX_LINE)  # returns what a write made available: no waiting for more
            if not line:
                return
            logger.log(level, line.decode("utf-8", "replace").rstrip("\r\n"), extra={"stream": stream})
