"""A sampling profiler of every thread of the process, for bench/portal.py ``--sample``.

A page of the portal runs in three threads at once (the client, uvicorn's portal, the local
AWS server answering the portal's requests), and cProfile sees only the thread it was started
in (Python 3.11). This takes each thread's stack at most once a millisecond (``sys._current_frames``;
a busy thread holds the GIL for up to 5 ms, so a sample is often later),
drops the threads that wait (their top frame is a select, a lock or a socket read), and counts
each function where a sample found it running ("self") and anywhere on its stack ("total").
Coarse (the GIL decides when a sample is taken; a thread in a system call that releases the GIL,
a socket's connect or write, counts as running), but it names where a page's time goes across
the threads.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from types import FrameType

#: Frames a thread sits in while it waits, not runs (its blocking call is C code below them).
_WAITS = frozenset({"select", "poll", "wait", "_wait_for_tstate_lock", "accept", "readinto", "recv_into", "recv",
                    "sleep", "get", "_recv_bytes", "serve_forever", "acquire", "read", "readline"})


def _where(frame: FrameType) -> str:
    code = frame.f_code
    return f"{code.co_filename.rsplit('site-packages/', 1)[-1].rsplit('src/', 1)[-1]}:{code.co_firstlineno}({code.co_name})"


class Sampler:
    """Samples while started (``start``, ``stop``); ``report`` gives the top functions."""

    def __init__(self, interval: float = 0.001) -> None:
        self.interval, self.samples = interval, 0
        self.own: Counter[str] = Counter()
        self.total: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="sampler")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.is_set():
            for ident, frame in sys._current_frames().items():
                if ident == me or frame.f_code.co_name in _WAITS:
                    continue
                self.samples += 1
                self.own[_where(frame)] += 1
                seen = set()
                f: FrameType | None = frame
                while f is not None:
                    seen.add(_where(f))
                    f = f.f_back
                self.total.update(seen)
            time.sleep(self.interval)

    def report(self, top: int = 40) -> str:
        lines = [f"{self.samples} running samples (every thread; one a ms)", "  self%  total%  function"]
        for name, n in self.own.most_common(top):
            lines.append(f"  {100 * n / max(1, self.samples):5.1f}  {100 * self.total[name] / max(1, self.samples):6.1f}  {name}")
        lines.append("  by total:")
        for name, n in self.total.most_common(top):
            lines.append(f"  {100 * self.own[name] / max(1, self.samples):5.1f}  {100 * n / max(1, self.samples):6.1f}  {name}")
        return "\n".join(lines)
