"""How many forked workers a compile step may use: one rule for the jobs' documents
(job_build.py), the roots' files (root_pool.py) and the files' checks (check_pool.py), in a module
that imports none of them, so the check pool does not import the ASL builder, which imports the
checks back.

From MIN_JOBS items on, in a process with no other thread (a fork copies only the forking
thread: a lock another thread held would stay held in the child, so `jobplane dev`, whose
compile runs beside its services' threads, works in process), one worker per available CPU up
to MAX_WORKERS.
"""

from __future__ import annotations

import os
import sys
import threading

MIN_JOBS = 500
MAX_WORKERS = 2


def can_fork() -> bool:
    """Whether this process may fork a child that runs Python (Linux, no other thread)."""
    return sys.platform == "linux" and threading.active_count() == 1


def workers_for(count: int) -> int:
    """How many processes share ``count`` items (1: this one, no fork)."""
    if count < MIN_JOBS or not can_fork():
        return 1
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))
