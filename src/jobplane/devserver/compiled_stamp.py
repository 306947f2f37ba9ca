"""``compiled.json``: what the kept ``compiled/`` directory was compiled from, and each of its
files' SHA-256, so a restart whose inputs are unchanged skips the compile (compiler/inputs.py)
and the deploy record is keyed by the files' digests (deploy_record.py).

Telling that the kept files are still the ones written took reading and hashing all of them at
every restart: ~300 MB at 5,000 jobs, 1.5-3 s of a restart (cProfile of bench/dev_scale.py:
read_text's UTF-8 decoding and the digests). The stamp now also keeps each file's size and
modification time (``st_mtime_ns``) as they were when it was written, and a file whose size and
modification time are unchanged keeps its recorded digest without being read, as git's index
does for a work tree. A file written or touched since has another modification time and is read
and hashed again. As in git ("racy git"), a time is trusted only when it is older than the stamp
itself: a file changed within the same clock tick as the stamp was written (same size) could
otherwise keep its old time, so such a file is always read.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from jobplane.compiler.output import is_generated

Digests = dict[str, str]  # compiled file (relative path) -> SHA-256 of its bytes


def text_digests(files: dict[str, str]) -> Digests:
    """Each compiled file's SHA-256 (relative path -> hex digest), from its text."""
    return {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in files.items()}


def _listed(directory: Path) -> dict[str, os.stat_result]:
    """The compiler's files under ``directory`` (compiler/output.py read_output's selection) and
    their stat, from one directory scan each (no per-file lookups)."""
    found: dict[str, os.stat_result] = {}
    if not directory.is_dir():
        return found
    for top, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != ".terraform"]
        rel_top = Path(top).relative_to(directory).as_posix()
        for name in files:
            rel = name if rel_top == "." else f"{rel_top}/{name}"
            if is_generated(rel):
                st = os.stat(os.path.join(top, name))
                found[rel] = st
    return found


class CompiledStamp:
    """Read with :meth:`load`, asked with :meth:`unchanged`, written with :meth:`write`."""

    def __init__(self, path: Path, output_dir: Path):
        self.path = path
        self.output_dir = output_dir
        self.hashed: list[str] = []  # files :meth:`unchanged` read and hashed (no trusted stat)

    def load(self) -> dict[str, object]:
        try:
            kept = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return kept if isinstance(kept, dict) else {}

    def on_disk(self) -> Digests:
        """The digest of each generated file in the output directory now: the recorded one of a
        file whose size and time are as recorded (older than the stamp), the others read."""
        kept = self.load()
        files, stats = kept.get("files"), kept.get("stats")
        files = files if isinstance(files, dict) else {}
        stats = stats if isinstance(stats, dict) else {}
        try:
            stamped_at = self.path.stat().st_mtime_ns
        except OSError:
            stamped_at = 0
        self.hashed = []
        digests: Digests = {}
        for rel, st in _listed(self.output_dir).items():
            recorded = stats.get(rel)
            if (isinstance(recorded, list) and recorded == [st.st_size, st.st_mtime_ns]
                    and st.st_mtime_ns < stamped_at and isinstance(files.get(rel), str)):
                digests[rel] = files[rel]
            else:
                digests[rel] = hashlib.sha256((self.output_dir / rel).read_bytes()).hexdigest()
                self.hashed.append(rel)
        return digests

    def unchanged(self, inputs: str) -> Digests | None:
        """The kept output's digests if it was compiled from ``inputs`` and no file of it changed
        since (none added, removed or rewritten); else None."""
        kept = self.load()
        if kept.get("inputs") != inputs or not isinstance(kept.get("files"), dict):
            return None
        digests = self.on_disk()
        if digests != kept["files"]:
            return None
        if self.hashed:  # their times are trusted from now on (they are older than the new stamp)
            self.write(inputs, digests)
        return digests

    def write(self, inputs: str, digests: Digests) -> None:
        """Stamp the output directory as the compile of ``inputs`` whose files have ``digests``."""
        on_disk = _listed(self.output_dir)
        stats = {rel: [st.st_size, st.st_mtime_ns] for rel, st in on_disk.items() if rel in digests}
        self.path.write_text(json.dumps({"inputs": inputs, "files": digests, "stats": stats}))

    def remove(self) -> None:
        """An output being rewritten is never taken for a kept one."""
        self.path.unlink(missing_ok=True)
