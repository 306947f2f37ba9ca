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
    def __init__(self, write: Callable[[], None]) -> None:
        self._pid: int | None = None
        self._write: Callable[[], None] | None = None
        if not fork_workers.can_fork():
            write()
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
            finally:
                os._exit(code)
        os.close(write_end)
        self._pid, self._read_end = pid, read_end
        # What the child writes stays alive here until it ended: freed now, each object freed
        # would copy its page from the child's (copy on write), for nothing.
        self._write = write

    def wait(self) -> None:
        """Until the write ended; raises what it raised."""
        pid, self._pid = self._pid, None
        if pid is None:
            return
        with os.fdopen(self._read_end, "rb") as told:
            sent = told.read()
        _, status = os.waitpid(pid, 0)
        self._write = None
        if os.waitstatus_to_exitcode(status) == 0:
            return
        try:
            error = pickle.loads(sent) if sent else None
        except Exception:  # noqa: BLE001 - an error that does not unpickle is told by its text
            error = None
        if isinstance(error, BaseException):
            raise error
        raise WriteFailed(f"writing the compiled output failed (exit status {os.waitstatus_to_exitcode(status)})"
                          + (f": {sent[:2000].decode(errors='replace')}" if sent and error is None else ""))


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
