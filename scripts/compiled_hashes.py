"""Hashes of the compiled output of the examples and of the 300-job bench tree (issue 63).

A refactoring commit must leave what the compiler writes byte-identical: run this before and after
and compare the two lines it prints (``examples <sha256>`` and ``bench-300 <sha256>``). Each hash
covers every file's path and bytes under the compiled output, in sorted order.

    .venv/bin/python scripts/compiled_hashes.py
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from jobtree import write_repo  # noqa: E402  (bench/ is not a package)


def tree_hash(out: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(out)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def compiled(repo: Path, out: Path) -> str:
    jobplane = Path(sys.executable).with_name("jobplane")
    subprocess.run([str(jobplane), "compile", "--out", str(out)], cwd=repo, check=True,
                   stdout=subprocess.DEVNULL)
    return tree_hash(out)


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        print("examples", compiled(ROOT, tmp / "examples"))
        print("bench-300", compiled(write_repo(tmp / "bench", 300, mix=True), tmp / "bench-out"))


if __name__ == "__main__":
    main()
