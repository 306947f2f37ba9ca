"""Jsonnet evaluation of definition files, confined: imports read only jobs/ and the DSL
library, and a definition is a regular file inside them.

Light on imports, so that the child process compiler/sandbox.py evaluates in starts in a few
milliseconds (compiler/jsonnet_child.py): the standard library's json, os and pathlib, the
contract's quoting, and go-jsonnet itself, which is loaded only by the first evaluation (its Go
runtime starts then: in the child, after its memory limit is set). The settings it reads are
the three paths of :class:`Roots` (a PlatformConfig is one), not the whole jobplane.toml.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from jobplane.contract.quoting import quoted

TYPE_CHECKING = False  # typing is not imported at run time: the evaluating child's start-up
if TYPE_CHECKING:
    from typing import Protocol

    from jobplane.contract.types import JsonValue

    class Roots(Protocol):
        """Where definitions and the DSL library are (PlatformConfig, or the child's Paths)."""

        @property
        def root(self) -> Path: ...

        @property
        def jobs_path(self) -> Path: ...

        @property
        def library_path(self) -> Path: ...


class Paths:
    """:class:`Roots` given as paths (the evaluating child has no jobplane.toml to read)."""

    def __init__(self, root: Path, jobs_path: Path, library_path: Path):
        self.root, self.jobs_path, self.library_path = root, jobs_path, library_path


#: Why a symbolic link loop is not read (issue 48 item 8: it crashed validate with a traceback).
LOOP = "refused: a symbolic link loop (it never leads to a file)"


def resolved(path: Path) -> Path | None:
    """``path`` with every link followed, or None when links loop (Python 3.11 raises
    RuntimeError, later versions OSError; ``strict`` is not used: a link out of jobs/ to a
    missing file is refused by where it leads, not as missing)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


def evaluate(path: Path, config: Roots) -> JsonValue:
    """Evaluate one Jsonnet file with the DSL library on the import path.

    go-jsonnet (PyPI ``gojsonnet``), not the C++ binding: the C++ one spends ~60 ms per file
    initialising its standard library, which made 1,000 jobs take over a minute.

    Imports are confined (:class:`ConfinedImporter`): a job file comes from a pull request and
    is evaluated on the CI machine, so ``importstr '/etc/passwd'`` must not work.
    """
    refusal = outside_definitions(path, config)
    if refusal:
        raise ImportRefused([refusal])
    import _gojsonnet as _jsonnet  # its Go runtime starts here (sandbox.py: after the child's limits)

    importer = ConfinedImporter((config.jobs_path, config.library_path), config.root)
    try:
        text = _jsonnet.evaluate_file(str(path), jpathdir=[str(config.library_path)], import_callback=importer)
    except RuntimeError:
        if importer.refusals:  # the refusal is the cause; Jsonnet only saw an empty file
            raise ImportRefused(importer.refusals) from None
        raise
    if importer.refusals:
        raise ImportRefused(importer.refusals)
    return json.loads(text)


def evaluate_together(paths: list[Path], config: Roots) -> list[JsonValue] | None:
    """Every definition of ``paths`` in one Jsonnet run, in order, so the DSL library is parsed
    once instead of once per file (a third of validate's evaluation of the examples). None when
    any file fails or is refused: each is then evaluated alone (:func:`evaluate`), so a
    problem names its own file. Each file is imported under the same rules as its imports."""
    jobs = config.jobs_path.absolute()
    if not paths or any(not p.absolute().is_relative_to(jobs) or outside_definitions(p, config) for p in paths):
        return None
    listing = ",".join(f"import {json.dumps(p.absolute().relative_to(jobs).as_posix())}" for p in paths)
    import _gojsonnet as _jsonnet

    importer = ConfinedImporter((config.jobs_path, config.library_path), config.root)
    try:
        text = _jsonnet.evaluate_snippet(str(jobs / "<definitions>"), f"[{listing}]",
                                         jpathdir=[str(config.library_path)], import_callback=importer)
    except RuntimeError:
        return None
    return None if importer.refusals else json.loads(text)


def outside_definitions(path: Path, config: Roots) -> str | None:
    """Why ``path`` may not be read as a definition, or None. A definition is a regular file
    that resolves inside jobs/ and the repository: a pull request can add a symbolic link named
    ``x.jsonnet`` to a file of the CI machine (credentials, ``/dev/zero``), whose text Jsonnet
    would read and the problems would quote, as the import rules below keep imports from doing."""
    real = resolved(path)
    if real is None:
        return LOOP
    jobs = config.jobs_path.resolve()
    if not (real.is_relative_to(jobs) and real.is_relative_to(config.root.resolve())):
        return f"refused: it leads outside {rel_to(jobs, config.root)}/ (a symbolic link?); a definition is a file under it"
    if not real.is_file():
        return "refused: not a regular file"
    return None


class ImportRefused(Exception):
    def __init__(self, refusals: list[str]):
        super().__init__("; ".join(refusals))
        self.refusals = refusals


class ConfinedImporter:
    """Jsonnet's import callback: only files under the allowed roots (jobs/ and the DSL library).

    Absolute paths are refused outright; a relative path is looked up beside the importing file,
    then in the library, and must *resolve* (``..`` and symlinks followed) to a regular file
    inside a root.

    A refusal is recorded and the import answered with an empty file, never raised: gojsonnet
    0.22.0 reads an exception's message from the callback past its end (garbage, or a
    UnicodeDecodeError), so nothing may cross that boundary as an error.
    """

    def __init__(self, roots: tuple[Path, ...], repo_root: Path):
        self.roots = tuple(r.resolve() for r in roots)
        self.repo_root = repo_root.resolve()
        self.library = self.roots[-1]
        self.refusals: list[str] = []
        # a path already found allowed -> its bytes: one evaluation of every definition imports
        # the library once per definition; it is checked and read once (nothing a definition
        # does changes the files during an evaluation)
        self.read: dict[str, bytes] = {}

    def _refuse(self, message: str) -> tuple[str, bytes]:
        self.refusals.append(message)
        return f"<refused import {len(self.refusals)}>", b""

    def _inside(self, path: Path) -> bool:
        return any(path == root or root in path.parents for root in self.roots)

    def __call__(self, base: str, rel: str) -> tuple[str, bytes]:
        # the names in a refusal are worked out only for a refusal: resolving them on every
        # import was most of an import's cost, and every definition imports the library
        def importing() -> str:
            return rel_to(Path(base), self.repo_root)

        def allowed() -> str:
            return " or ".join(rel_to(r, self.repo_root) + "/" for r in self.roots)

        if Path(rel).is_absolute():
            return self._refuse(f"import {quoted(rel)} from {importing()}/ refused: absolute paths are not allowed; "
                                f"import files under {allowed()} by relative path")
        for candidate in (Path(base) / rel, self.library / rel):
            if not os.path.lexists(candidate):
                continue
            found = str(candidate)
            if found in self.read:  # checked and read once per evaluation (below)
                return found, self.read[found]
            real = resolved(candidate)
            if real is None:
                return self._refuse(f"import {quoted(rel)} from {importing()}/ refused: {LOOP.removeprefix('refused: ')}")
            if not self._inside(real):
                return self._refuse(f"import {quoted(rel)} from {importing()}/ refused: it leads outside {allowed()}")
            if not real.is_file():
                return self._refuse(f"import {quoted(rel)} from {importing()}/ refused: not a regular file")
            self.read[found] = real.read_bytes()
            return found, self.read[found]
        return self._refuse(f"import {quoted(rel)} from {importing()}/: no such file (looked beside it and in "
                            f"{rel_to(self.library, self.repo_root)}/)")


def rel_to(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root)) or "."
    except ValueError:
        return str(path)
