"""Problems found in definitions, reported together, one line each."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    file: str
    job: str | None
    field: str | None
    message: str

    def sort_key(self) -> tuple[str, str, str, str]:
        """By file, job, field: a problem without a job or field (a whole file, a whole job) first.
        (Comparing None with a name raised TypeError: a file holding a job and a non-object crashed.)"""
        return self.file, self.job or "", self.field or "", self.message

    def __str__(self) -> str:
        where = [self.file]
        if self.job:
            where.append(f"job {self.job!r}")
        if self.field:
            where.append(self.field)
        return ": ".join(where) + ": " + self.message


class DefinitionError(Exception):
    """Raised when any definition is invalid; carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems, key=Problem.sort_key)
        super().__init__("\n".join(str(p) for p in self.problems))


def rel(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` as it was found: its directory resolved, but not a file that
    is a symbolic link (the problem names the link, not whatever it points at)."""
    try:
        return str((path.absolute().parent.resolve() / path.name).relative_to(root.resolve()))
    except ValueError:
        return str(path)


def rels(paths: Iterable[Path], root: Path) -> dict[Path, str]:
    """:func:`rel` of each of ``paths``, each directory resolved once: a check of 5,000
    definitions resolved and parsed their few directories and the root 5,000 times (~0.4 s at
    5,000 jobs, issue 66 item 5)."""
    resolved_root = root.resolve()
    dirs: dict[Path, str | None] = {}  # directory as given -> resolved, relative to the root (None: outside it)
    out: dict[Path, str] = {}
    for path in paths:
        parent = path.parent
        if parent not in dirs:
            try:
                dirs[parent] = str(path.absolute().parent.resolve().relative_to(resolved_root))
            except ValueError:
                dirs[parent] = None
        where = dirs[parent]
        out[path] = str(path) if where is None else path.name if where == "." else os.path.join(where, path.name)
    return out
