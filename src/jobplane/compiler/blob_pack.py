"""Many kept blobs in one file: an append-only pack of their bytes and an index naming it, with
each blob's offset, size and CRC-32 (compiler/validate_cache.py keeps each definition file's
built documents so, ~60 KB a job).

They were a file each: at 5,000 jobs a first `jobplane dev` start wrote 5,001 files (mkstemp,
write, rename each: ~1.6 s of the compile's ~2.4 s saving them, in the parent while a core
idled, issue 66 item 5). The pack is written with one file open; an edit appends only what
changed and replaces the small index, and reads back only the blobs it asks for (pread), so a
one-job edit still reads a few MB of the ~320 MB. Once more than half of the pack is bytes no
entry names (replaced or dropped blobs), the next save writes a new one of the live blobs only.

What comes back is never trusted on the index's word alone: a blob whose bytes are short (a
pack torn by a crash, truncated) or whose CRC-32 differs (damaged, or overwritten by another
writer) is reported missing, so the caller computes it again. The caller's blobs carry their
own identity too (validate_cache checks each one's key). The index is replaced atomically,
after the bytes it points at are written; a pack another index names is never written into.
Both are owner-only (0600, in an owner-only directory, opened without following links): the
blobs are pickles, read only from files no one else could have written.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import zlib
from collections.abc import Iterable
from pathlib import Path

FORMAT = 1


def owner_only(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else."""
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def write_owner_only(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically with a file only this user can read (mkstemp: 0600)."""
    import tempfile  # (with shutil and random) only when something is written

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class BlobPack:
    """``<directory>/<stem>.index`` and the pack it names (``<stem>-<random>.pack``); read at
    construction, blobs read with :meth:`get`, added with :meth:`put`, written with :meth:`save`."""

    def __init__(self, directory: Path, stem: str):
        self.directory = directory
        self.stem = stem
        self.index_path = directory / f"{stem}.index"
        self._pack: str | None = None  # the pack's name, as the index gives it
        self._entries: dict[str, tuple[int, int, int]] = {}  # name -> (offset, size, crc32)
        self._fd: int | None = None
        self._added: dict[str, bytes] = {}
        self._read_index()

    def _read_index(self) -> None:
        try:
            fd = os.open(self.index_path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return
        try:
            with os.fdopen(fd, "rb") as f:
                if not (owner_only(os.fstat(f.fileno())) and owner_only(os.stat(self.directory))):
                    return
                index = json.loads(f.read())
        except (OSError, ValueError):
            return
        pack = index.get("pack") if isinstance(index, dict) else None
        entries = index.get("entries") if isinstance(index, dict) else None
        if (index.get("format") != FORMAT or not isinstance(pack, str) or not pack.startswith(f"{self.stem}-")
                or "/" in pack or not isinstance(entries, dict)):
            return
        for name, entry in entries.items():
            if (isinstance(entry, list) and len(entry) == 3 and all(type(x) is int and x >= 0 for x in entry)):
                self._entries[name] = (entry[0], entry[1], entry[2])
        self._pack = pack

    def names(self) -> set[str]:
        return set(self._entries) | set(self._added)

    def get(self, name: str) -> bytes | None:
        """The blob kept as ``name``, or None when there is none or its bytes are not those kept."""
        if name in self._added:
            return self._added[name]
        entry = self._entries.get(name)
        fd = self._open() if entry is not None else None
        if entry is None or fd is None:
            return None
        offset, size, crc = entry
        try:
            data = os.pread(fd, size, offset)
        except OSError:
            return None
        if len(data) != size or zlib.crc32(data) != crc:
            return None  # torn or damaged: computed again by the caller
        return data

    def _open(self) -> int | None:
        if self._fd is None and self._pack is not None:
            try:
                fd = os.open(self.directory / self._pack, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                self._pack = None
                return None
            if not owner_only(os.fstat(fd)):
                os.close(fd)
                self._pack = None
                return None
            self._fd = fd
        return self._fd

    def put(self, name: str, blob: bytes) -> None:
        self._added[name] = blob

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()

    def save(self, keep: Iterable[str]) -> None:
        """Write the blobs put since, and keep only those named in ``keep`` (of the kept and the
        put ones). Raises OSError when the directory cannot be written (the caller's choice)."""
        wanted = set(keep)
        kept = {name: e for name, e in self._entries.items() if name in wanted and name not in self._added}
        added = {name: blob for name, blob in self._added.items() if name in wanted}
        if not added and kept == self._entries:
            return
        kept_bytes = sum(e[1] for e in kept.values())
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = self._append_to()
        if fd is not None:
            end = os.lseek(fd, 0, os.SEEK_END)
            # more than half of it no entry would name: a new pack of the live blobs
            if end - kept_bytes > kept_bytes + sum(map(len, added.values())):
                os.close(fd)
                fd = None
        entries: dict[str, tuple[int, int, int]] = {}
        copied: list[str] = []  # the kept blobs written again (into a new pack)
        if fd is None or self._pack is None:
            pack = f"{self.stem}-{secrets.token_hex(8)}.pack"
            fd = os.open(self.directory / pack, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            end = 0
            copied = sorted(kept)
        else:
            pack = self._pack
            entries.update(kept)
        # the kept ones copied as they are, read one at a time (checked first)
        blobs = itertools.chain(((name, self.get(name)) for name in copied), sorted(added.items()))
        with os.fdopen(fd, "wb") as f:
            for name, blob in blobs:
                if blob is None:
                    continue  # a damaged kept blob is dropped: computed again when asked for
                entries[name] = (end, len(blob), zlib.crc32(blob))
                f.write(blob)
                end += len(blob)
        write_owner_only(self.index_path, json.dumps({"format": FORMAT, "pack": pack,
                                                      "entries": {k: list(v) for k, v in entries.items()}}).encode())
        self._entries, self._added = entries, {}
        if pack != self._pack:
            self.close()
            self._pack = pack
            for found in os.listdir(self.directory):  # the packs no index names any more
                if found.startswith(f"{self.stem}-") and found.endswith(".pack") and found != pack:
                    (self.directory / found).unlink(missing_ok=True)

    def _append_to(self) -> int | None:
        """The kept pack opened to append, when it is there and this user's alone."""
        if self._pack is None:
            return None
        try:
            fd = os.open(self.directory / self._pack, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        if not owner_only(os.fstat(fd)):
            os.close(fd)
            return None
        return fd
