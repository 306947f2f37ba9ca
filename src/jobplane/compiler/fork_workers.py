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

import mmap
import os
import pickle
import shutil
import sys
import tempfile
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


class Handoff:
    """Results of forked workers passed through files in memory (/dev/shm), not the pool's pipe.

    Measured at 5,000 jobs (each root's result ~100 MB pickled: its files' texts, and the ASL and
    definition its deploy takes, compiler/rendered_jobs.py): a worker sat 0.4-0.7 s after each
    root, its result crossing the pool's 64 KB pipe to the parent's result thread in ~1,600
    writes, each waiting for that thread to read; ~2 s of each worker's ~7 s (/work roots
    timeline, session 38). Written to a file, the worker goes on at once and the parent reads it
    when it gets to it. Made in the parent before the pool forks (the workers inherit the
    directory, owner-only), emptied by :meth:`close`.
    """

    def __init__(self) -> None:
        shm = "/dev/shm"
        where = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
        self.directory = tempfile.mkdtemp(prefix="jobplane-handoff-", dir=where)  # 0700

    def put(self, value: object) -> str:
        """In a worker: ``value`` written; the name to hand the parent."""
        data = memoryview(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        fd, path = tempfile.mkstemp(dir=self.directory)  # 0600
        try:
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
        return os.path.basename(path)

    def take(self, name: str) -> object:
        """In the parent: what :meth:`put` wrote under ``name``, its file removed."""
        path = os.path.join(self.directory, os.path.basename(name))
        try:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return pickle.loads(data)
        finally:
            os.unlink(path)

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
