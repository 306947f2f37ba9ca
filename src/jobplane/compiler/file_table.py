"""Each input file's SHA-256 (and the imports its text names) without reading it while it is
unchanged: a table of what each file's stat was when it was last read (issue 66 item 5).

A one-job edit among 5,000 jobs read and hashed every definition twice, once for the compile's
inputs digest (compiler/inputs.py) and once for the evaluation cache's keys
(compiler/validate_cache.py): ~1.3 s of a 3.1 s edit (cProfile, bench/dev_scale.py). The table
keeps, per file (its path with its directories resolved), its size, modification and change
times (``st_mtime_ns``, ``st_ctime_ns``), inode and device as they were when it was read, with
the digest of what was read; a file whose stat is unchanged keeps its digest without being read,
as git's index does for a work tree (devserver/compiled_stamp.py does the same for the compiled
output).

When a stat can lie, and why that is not trusted:

- an edit that keeps the size and sets the old modification time back (``touch -r``, an
  editor or tool that restores times, a checkout) still moves the change time, which no call can
  set: ``st_ctime_ns`` is compared too, and a file replaced by another (a rename over it) has
  another inode;
- a file changed in the same clock tick as it was read keeps its times ("racy git": file
  system times are taken from a coarse clock, or kept in whole seconds, or two on FAT). So a
  file is recorded only when its change time is older than the moment this table started
  reading, less ``RACY_NS`` (2 s, the coarsest granularity in use): any later write then gives
  it a change time the record does not have. A file changed within that margin is read again
  by the next run, and recorded then;
- the record is read only from a file owned by this user and writable by no one else, in a
  directory likewise, as the evaluation cache is: a planted record would make a file's result
  be taken for another content's.

The table is a function of the files alone (what it records is checked against the file at each
use), so a stale or missing table only costs reading the files again. What a file's text yields
(its imports: validate_cache.imports_of) is kept by its digest, so an unchanged file is not read
for that either.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

FORMAT = 1
#: How much older than the moment the table started reading a file's change time must be for
#: the file's record to be kept (above): file systems keep times in ticks of a few ms, one
#: second (ext3, HFS+) or two (FAT); a file written within this margin is read at the next run.
RACY_NS = 2_000_000_000

Stat = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device


def stat_of(st: os.stat_result) -> Stat:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


class FileTable:
    """Read at construction, asked with :meth:`digest` / :meth:`facts`, written with :meth:`save`
    (only what this run looked at is kept: a removed file's record goes)."""

    def __init__(self, path: Path | None, clock: Callable[[], int] = time.time_ns):
        """``path``: the table's file (None: a table of this run alone). ``clock``: the time a
        file's change time is compared with (tests give a later one rather than wait)."""
        self.path = path
        self._started = clock()
        self._kept: dict[str, tuple[Stat, str]] = {}
        self._kept_derived: dict[str, object] = {}
        self._seen: dict[str, tuple[Stat, str] | None] = {}  # this run: real path -> (stat, digest)
        self._derived: dict[str, object] = {}  # digest -> what a caller derived from the text
        self._bytes: dict[str, bytes] = {}  # texts read this run (by real path)
        self.read: list[str] = []  # the files this run read (no trusted record)
        if path is not None:
            self._load(path)

    # -- asking --------------------------------------------------------------------------------------
    def digest(self, real: str) -> str | None:
        """The SHA-256 (hex) of the regular file at ``real`` (links followed), or None when it
        is not one or cannot be read."""
        found = self._look(real)
        return None if found is None else found[1]

    def text(self, real: str) -> bytes | None:
        """The file's bytes (read now, unless this run read them already)."""
        if real not in self._bytes:
            try:
                self._bytes[real] = Path(real).read_bytes()
            except OSError:
                return None
        return self._bytes[real]

    def derived(self, real: str, name: str, compute: Callable[[bytes], object]) -> object:
        """``compute(text)`` of the file, kept by its digest (so an unchanged file is not read
        for it); None for a file :meth:`digest` gives none."""
        digest = self.digest(real)
        if digest is None:
            return None
        key = f"{name}\0{digest}"
        if key not in self._derived:
            if key in self._kept_derived:
                self._derived[key] = self._kept_derived[key]
            else:
                text = self.text(real)
                if text is None or hashlib.sha256(text).hexdigest() != digest:  # changed in between
                    return compute(text) if text is not None else None
                self._derived[key] = compute(text)
        return self._derived[key]

    def _look(self, real: str) -> tuple[Stat, str] | None:
        if real in self._seen:
            return self._seen[real]
        kept = self._kept.get(real)
        if kept is not None:
            try:
                st = os.stat(real)
            except OSError:
                self._seen[real] = None
                return None
            if stat.S_ISREG(st.st_mode) and stat_of(st) == kept[0]:
                self._seen[real] = kept
                return kept
        return self._read(real)

    def _read(self, real: str) -> tuple[Stat, str] | None:
        # the stat taken before the bytes are read: a write after it moves the change time
        found: tuple[Stat, str] | None = None
        try:
            with open(real, "rb") as f:
                st = os.fstat(f.fileno())
                if stat.S_ISREG(st.st_mode):
                    data = f.read()
                    self._bytes[real] = data
                    found = (stat_of(st), hashlib.sha256(data).hexdigest())
        except OSError:
            pass
        self.read.append(real)
        self._seen[real] = found
        return found

    # -- the file ------------------------------------------------------------------------------------
    def _trusted(self, recorded: Stat) -> bool:
        """A record a later run may trust: the file's change time is older than this run's
        start by the racy margin (module docstring)."""
        return max(recorded[1], recorded[2]) < self._started - RACY_NS

    def save(self) -> None:
        """Keep the records of the files this run looked at whose times are old enough."""
        if self.path is None:
            return
        files = {real: found for real, found in self._seen.items() if found is not None and self._trusted(found[0])}
        digests = {d for _, d in files.values()}
        derived = {k: v for k, v in {**self._kept_derived, **self._derived}.items() if k.partition("\0")[2] in digests}
        if files == self._kept and derived == self._kept_derived:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            data = json.dumps({"format": FORMAT, "files": {real: [*st, d] for real, (st, d) in files.items()},
                               "derived": derived}, separators=(",", ":")).encode()
            import tempfile  # only when something is written

            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}-", dir=self.path.parent)  # 0600
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path)
            self._kept, self._kept_derived = files, derived
        except OSError:
            pass  # a table that cannot be written only makes the next run read the files

    def _load(self, path: Path) -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return
        with os.fdopen(fd, "rb") as f:
            try:
                if not (_private(os.fstat(f.fileno())) and _private(os.stat(path.parent))):
                    return
                data = json.loads(f.read())
            except (OSError, ValueError):
                return
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return
        files, derived = data.get("files"), data.get("derived")
        if isinstance(files, dict):
            for real, v in files.items():
                if (isinstance(v, list) and len(v) == 6 and all(type(x) is int for x in v[:5])
                        and isinstance(v[5], str)):
                    self._kept[real] = ((v[0], v[1], v[2], v[3], v[4]), v[5])
        if isinstance(derived, dict):
            self._kept_derived = {k: v for k, v in derived.items() if isinstance(k, str)}


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022
