"""The compile's files written by a forked child while `jobplane dev`'s start goes on.

Profiled at 5,000 jobs (issue 66 item 5, /work timeline of a first start): once compiled, the
start wrote the evaluation cache (~290 MB, the built documents pickled), the output directory
(~5,000 files, ~330 MB) and the stamp, 2-4 s alone in the process, then started the local AWS
and deployed (~7 s), a core idle all along. The deploy needs none of it on disk (it reads the
compile's texts: contract/output_files.py). A thread was tried first and gained nothing: the
cache's pickling holds the GIL, and each of the write's ~25,000 system calls gave the GIL up and
waited up to a switch interval to take it back from the deploy.

So the write runs in a forked child (it inherits what it writes: nothing is pickled across),
under compiler/fork_workers.py's rule (Linux, no other thread in the process: a lock another
thread held would stay held in the child); else in this process, before :class:`WriteBehind`
returns. :meth:`WriteBehind.wait` raises what the write raised (an OSError of a full disk
stays an OSError), so the start fails as it did when it wrote first.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Callable

from jobplane.compiler import fork_workers

log = logging.getLogger(__name__)


class WriteFailed(RuntimeError):
    """The child's error, when it could not be sent whole (told by its text)."""


class WriteBehind:
    """``write`` (the output, then its stamp) and after it ``then`` (the caches: only the next
    compile reads them) run in the child; :meth:`wait` returns once ``write`` is done, and
    :meth:`close` once the child ended."""

    def __init__(self, write: Callable[[], None], then: Callable[[], None] | None = None) -> None:
        self._pid: int | None = None
        self._read_end: int | None = None
        self._write: tuple[Callable[[], None], Callable[[], None] | None] | None = None
        if not fork_workers.can_fork():
            write()
            if then is not None:
                then()
            return
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: write, tell the error if any, and leave without cleaning up the parent's
            os.close(read_end)
            code = 0
            try:
                write()
            except BaseException as e:  # noqa: BLE001 - every error goes to the parent
                code = 1
                _send(write_end, e)
                os._exit(code)
            try:
                os.write(write_end, WRITTEN)
                os.close(write_end)
                if then is not None:
                    then()
            except BaseException:  # noqa: BLE001 - told by the exit status (the parent logs it)
                code = 2
            finally:
                os._exit(code)
        os.close(write_end)
        self._pid, self._read_end = pid, read_end
        # What the child writes stays alive here until it ended: freed now, each object freed
        # would copy its page from the child's (copy on write), for nothing.
        self._write = (write, then)

    def wait(self) -> None:
        """Until ``write`` ended; raises what it raised."""
        if self._pid is None or self._read_end is None:
            return
        told = os.read(self._read_end, 1)
        if told == WRITTEN:
            os.close(self._read_end)
            self._read_end = None
            return
        with os.fdopen(self._read_end, "rb") as rest:
            sent = told + rest.read()
        self._read_end = None
        pid, self._pid = self._pid, None
        _, status = os.waitpid(pid, 0)
        self._write = None
        code = os.waitstatus_to_exitcode(status)
        try:
            error = pickle.loads(sent) if sent else None
        except Exception:  # noqa: BLE001 - an error that does not unpickle is told by its text
            error = None
        if isinstance(error, BaseException):
            raise error
        raise WriteFailed(f"writing the compiled output failed (exit status {code})"
                          + (f": {sent[:2000].decode(errors='replace')}" if sent and error is None else ""))

    def close(self) -> None:
        """Until the child ended (``then`` too: its failure only makes the next compile slower,
        so it is logged); after :meth:`wait`, or instead of it when the start failed."""
        if self._read_end is not None:
            os.close(self._read_end)
            self._read_end = None
        pid, self._pid = self._pid, None
        if pid is None:
            return
        _, status = os.waitpid(pid, 0)
        self._write = None
        if os.waitstatus_to_exitcode(status) != 0:
            log.warning("writing the compile's caches failed (exit status %d): the next compile "
                        "evaluates again what they would have kept", os.waitstatus_to_exitcode(status))


#: What the child says once ``write`` is done (a pickled error starts with 0x80, a text with a letter).
WRITTEN = b"\0"


def _send(fd: int, error: BaseException) -> None:
    try:
        data = pickle.dumps(error)
        pickle.loads(data)  # sent only if the parent can read it back
    except Exception:  # noqa: BLE001
        data = f"{type(error).__name__}: {error}".encode()
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass  # the parent still sees the exit status
