"""Everything a compile reads, as one digest: so `jobplane dev` can tell, at a restart, that
the compiled output it kept is what compiling again would produce, and skip the compile (~8 s
at 1,000 jobs, issue 13).

A compile reads jobplane.toml, the files under the jobs directory and the DSL library (the only
places a definition may import from, ``ConfinedImporter``), and runs the compiler and contract
code of this installation: all of them are in the digest, contents and paths, so an edited job,
library, setting or jobplane itself means a new compile.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import jobplane
from jobplane.compiler import dir_scan
from jobplane.compiler.file_table import FileTable
from jobplane.compiler.gc_pause import gc_paused
from jobplane.contract import cache_home
from jobplane.contract.config import CONFIG_FILE, PlatformConfig

_CODE = (Path(jobplane.__file__).parent / "compiler", Path(jobplane.__file__).parent / "contract")


def _files(root: Path) -> list[str]:
    """Each file under ``root`` (its relative path), sorted, from one scan of each directory:
    ``rglob`` then ``is_file`` and ``resolve`` per file cost ~2 s of a 5,000-job restart's ~4 s
    digest (cProfile, bench/dev_scale.py), and a stat per file to tell a file ~0.1 s more (the
    directory's listing tells it, but for a link, which is followed: a link to a file counts)."""
    if not root.is_dir():
        return []
    found: list[str] = []
    for parts, entry in dir_scan.entries(str(root), skip=frozenset({"__pycache__"})):
        try:
            if entry.is_file():
                found.append("/".join(parts))
        except OSError:
            continue
    return sorted(found)


@gc_paused
def digest(config: PlatformConfig, table: Path | None = None) -> str:
    """The digest of every file a compile reads, each by its path and its SHA-256, which a
    table of stats gives without reading a file whose stat is unchanged (compiler/file_table.py:
    reading and hashing all of them was ~0.7 s of a one-job edit at 5,000 jobs). ``table``: the
    directory it is kept in (default: the user's cache directory, contract/cache_home.py;
    `jobplane dev` keeps it in its data directory, so ``--reset`` empties it)."""
    h = hashlib.sha256(f"jobplane {jobplane.__version__}\n".encode())
    sources = [(str(config.root / CONFIG_FILE), f"{config.root.name}/{CONFIG_FILE}")]
    # the library is usually under jobs/: its files read once (what a root resolves to, resolved
    # once per root, not once per file)
    seen: set[str] = set()
    for root in (config.jobs_path, config.library_path, *_CODE):
        real = os.path.realpath(root)
        for rel in _files(root):
            where = os.path.join(real, rel)
            if where not in seen:
                seen.add(where)
                sources.append((where, f"{root.name}/{rel}"))
    root_id = hashlib.sha256(str(config.root.resolve()).encode()).hexdigest()[:16]
    files = FileTable((table or Path(cache_home.cache_dir())) / f"inputs-{root_id}.json")
    for where, name in sources:
        found = files.digest(where)
        if found is None:
            continue  # gone since it was listed, or not a regular file
        h.update(f"{name} {found}\n".encode())
    files.save()
    return h.hexdigest()


def output_digest(files: dict[str, str]) -> str:
    """The digest of a compiler output (relative path -> text), to tell that a kept output was
    not changed since it was written."""
    h = hashlib.sha256()
    for rel, text in sorted(files.items()):
        data = text.encode()
        h.update(f"{rel} {len(data)}\n".encode())
        h.update(data)
    return h.hexdigest()
