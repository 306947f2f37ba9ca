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
from pathlib import Path

import jobplane
from jobplane.contract.config import CONFIG_FILE, PlatformConfig

_CODE = (Path(jobplane.__file__).parent / "compiler", Path(jobplane.__file__).parent / "contract")


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts) if root.is_dir() else []


def digest(config: PlatformConfig) -> str:
    h = hashlib.sha256(f"jobplane {jobplane.__version__}\n".encode())
    sources = [(config.root / CONFIG_FILE, config.root)]
    seen: set[Path] = set()
    for root in (config.jobs_path, config.library_path, *_CODE):
        for path in _files(root):
            if path.resolve() not in seen:  # the library is usually under jobs/: read it once
                seen.add(path.resolve())
                sources.append((path, root))
    for path, root in sources:
        if not path.is_file():
            continue
        data = path.read_bytes()
        h.update(f"{root.name}/{path.relative_to(root).as_posix()} {len(data)}\n".encode())
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
