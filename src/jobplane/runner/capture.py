"""File descriptors 1 and 2 of the runner's process turned into log lines, so that what never
passes through ``sys.stdout``/``sys.stderr`` is redacted too: ``os.system`` and ``subprocess``
children of a python step (they inherit the descriptors, not Python's objects), C extensions
writing to fd 1, a library holding ``sys.__stdout__`` (issue 40, item 6).

Each descriptor becomes the write end of a pipe that a daemon thread reads line by line into the
``jobplane.output`` logger's lines (stdout at INFO, stderr at WARNING, as print() already is:
runner/logs.py), which are redacted; the lines themselves go to a duplicate of the real stdout kept aside.

The descriptors stay captured until the process exits (issue 48 item 3): an ``atexit`` handler
of the step's code running ``os.system('echo $KEY')`` printed in clear once they were given
back. ``drain`` (before the step's result is logged) swaps in fresh pipes and waits for the old
ones' readers, so the result follows what the step wrote; at exit, the descriptors are pointed
at /dev/null and the readers log what is left. A line longer than ``MAX_LINE`` is logged in
pieces, never cut inside a secret (its start is held back for the next piece).

The readers are started with ``_thread``, not ``threading.Thread``: ``Thread.start`` waits
until the new thread has run, a wait for the scheduler that a loaded machine made several
milliseconds per thread, before the step's code could start (issue 54 item 5,
bench/runner_start.py); nothing needs the reader running before the first write, which the
pipe holds until it reads.

What would be lost if only a pipe carried it: a fatal error of the interpreter itself (a
segfault in a C extension) kills the reading thread with the process, so faulthandler is pointed
at the real stderr. Its output is a stack of file and function names, no values.
"""

from __future__ import annotations

import atexit
import codecs
import faulthandler
import os
import sys
import _thread

TYPE_CHECKING = False  # typing is not imported at run time: the runner's start-up
if TYPE_CHECKING:
    from typing import BinaryIO, Callable, TextIO

    #: how a line is logged: (level, text, stream), stream "stdout" or "stderr"
    LineSink = Callable[[int, str, str], None]

#: A line longer than this is logged in pieces (a child writing binary data must not grow one
#: record without bound).
MAX_LINE = 64 * 1024
#: How long the runner waits at exit for output still in the pipes: a step's background child
#: that keeps the descriptor open must not hold the step's end.
DRAIN_SECONDS = 5.0
INFO, WARNING = 20, 30  # logging's levels (the logging module is not imported: runner/logs.py)


class Capture:
    """The two redirections of one runner process, from ``start`` to the process's exit."""

    def __init__(self) -> None:
        self.saved: dict[int, int] = {}
        self.readers: dict[int, _thread.LockType] = {}  # each held until its reader has ended
        self.real_stdout: TextIO | None = None
        self.real_stderr: TextIO | None = None
        self.logger: LineSink | None = None
        self.secrets: list[str] = []

    def start(self, logger: LineSink, secrets: list[str] | None = None) -> TextIO:
        """Redirect fds 1 and 2; returns the real stdout, for the log handler to write to."""
        self.logger, self.secrets = logger, list(secrets or [])
        for fd in (1, 2):
            self.saved[fd] = os.dup(fd)
            self._redirect(fd)
        self.real_stdout = os.fdopen(self.saved[1], "w", encoding="utf-8", errors="backslashreplace",
                                     buffering=1, closefd=False)
        self.real_stderr = os.fdopen(self.saved[2], "w", encoding="utf-8", errors="backslashreplace",
                                     buffering=1, closefd=False)
        faulthandler.enable(file=self.real_stderr)
        atexit.register(self.finish)  # registered before the step's code runs: its handlers run first
        return self.real_stdout

    def _redirect(self, fd: int) -> None:
        """Point ``fd`` at a fresh pipe read by a new thread (closing the old pipe's write end
        this process held there); wait for the old pipe's reader to log what is left."""
        assert self.logger is not None
        level, stream = (INFO, "stdout") if fd == 1 else (WARNING, "stderr")
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        old = self.readers.get(fd)
        self.readers[fd] = _spawn(_read_lines, os.fdopen(read_end, "rb"), self.logger, level, stream, self.secrets)
        if old is not None:
            _join(old)

    def drain(self) -> None:
        """Log everything written to fds 1 and 2 so far; they stay captured."""
        for fd in list(self.saved):
            self._redirect(fd)

    def finish(self) -> None:
        """At exit: nothing more can be written through fds 1 and 2 (/dev/null), and the readers
        log what is left; idempotent."""
        if not self.saved:
            return
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in self.saved:
            os.dup2(null, fd)
        os.close(null)
        self.saved.clear()
        for reader in self.readers.values():
            _join(reader)
        self.readers.clear()


def _spawn(target: Callable[..., None], *args: object) -> _thread.LockType:
    """``target(*args)`` in a new thread, not waiting for it to start (daemonic: it does not
    hold the process's exit); the lock returned is released when it has ended."""
    ended = _thread.allocate_lock()
    ended.acquire()

    def body() -> None:
        try:
            target(*args)
        finally:
            ended.release()

    _thread.start_new_thread(body, ())
    return ended


def _join(ended: _thread.LockType) -> None:
    """Wait for a reader to end, at most DRAIN_SECONDS (a step's background child may keep its pipe open)."""
    if ended.acquire(timeout=DRAIN_SECONDS):
        ended.release()


def held_back(text: str, secrets: list[str]) -> int:
    """How many characters at the end of ``text`` may be the start of a secret (the longest
    end of ``text`` that is a proper beginning of one): a piece of a long line keeps them for
    the next piece, so no secret is logged cut in two, each half unrecognised."""
    keep = 0
    for secret in secrets:
        for k in range(min(len(secret) - 1, len(text)), keep, -1):
            if text.endswith(secret[:k]):
                keep = k
                break
    return keep


def _read_lines(pipe: BinaryIO, logger: LineSink, level: int, stream: str, secrets: list[str]) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a piece may end inside a character
    held = ""
    with pipe:
        while True:
            piece = pipe.readline(MAX_LINE)
            text = held + decoder.decode(piece, final=not piece)
            held = ""
            if piece and not piece.endswith(b"\n"):  # a piece of a longer line
                keep = held_back(text, secrets)
                text, held = text[:len(text) - keep], text[len(text) - keep:]
            if text:
                logger(level, text.rstrip("\r\n"), stream)
            if not piece:
                return
