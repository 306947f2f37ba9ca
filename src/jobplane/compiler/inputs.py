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
from jobplane.contract.config import CONFIG_FILE, PlatformConfig

_CODE = (Path(jobplane.__file__).parent / "compiler", Path(jobplane.__file__).parent / "contract")


def _files(root: Path) -> list[tuple[str, Path]]:
    """Each file under ``root`` (relative path, path), sorted by relative path, from one
    directory scan: ``rglob`` then ``is_file`` and ``resolve`` per file cost ~2 s of a 5,000-job
    restart's ~4 s digest (cProfile, bench/dev_scale.py); the files read are the same."""
    found: list[tuple[str, Path]] = []
    if not root.is_dir():
        return found
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel_top = os.path.relpath(top, root)
        for name in files:
            path = os.path.join(top, name)
            if os.path.isfile(path):  # a link to a file counts, as is_file() counted it
                found.append((name if rel_top == "." else f"{rel_top}/{name}".replace(os.sep, "/"), Path(path)))
    return sorted(found)


def digest(config: PlatformConfig, contents: dict[str, bytes] | None = None) -> str:
    """``contents``: filled with each file read, by the path it was read at (whose directories
    are resolved), so a compile that follows reads them from there rather than from the disk
    again (compiler/validate_cache.py: ~5,000 reads of a 5,000-job one-job edit)."""
    h = hashlib.sha256(f"jobplane {jobplane.__version__}\n".encode())
    sources = [(config.root / CONFIG_FILE, f"{config.root.name}/{CONFIG_FILE}")]
    # the library is usually under jobs/: its files read once (what a root resolves to, resolved
    # once per root, not once per file)
    seen: set[str] = set()
    wheres: dict[Path, str] = {}  # a definition file -> its path with its root resolved
    for root in (config.jobs_path, config.library_path, *_CODE):
        real = os.path.realpath(root)
        for rel, path in _files(root):
            where = os.path.join(real, rel)
            if where not in seen:
                seen.add(where)
                sources.append((path, f"{root.name}/{rel}"))
                if contents is not None and root == config.jobs_path:
                    wheres[path] = where
    for path, name in sources:
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            continue
        if path in wheres:
            assert contents is not None
            contents[wheres[path]] = data
        h.update(f"{name} {len(data)}\n".encode())
        h.update(data)
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
