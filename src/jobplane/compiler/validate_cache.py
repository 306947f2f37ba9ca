"""`jobplane validate`'s memory of unchanged files: a pull request's feedback loop in a repository
of thousands of jobs evaluates and checks only the files whose result can differ.

A file's own checks (validate.FileChecked: its problems, its jobs, the names it derives) are a
function of
- its bytes, its path and where it resolves (``outside_definitions``, the problems' file name);
- the bytes Jsonnet's import callback answers for each of its imports, and for theirs in turn
  (Jsonnet is hermetic: no clock, environment or file read but through that callback, and no
  external variables or native functions are given);
- jobplane.toml (the whole parsed ``PlatformConfig``: teams, channels, prefix, limits, paths);
- this installation's code (every module of ``compiler/`` and ``contract/``, by content, and
  Python's, go-jsonnet's, the time zone data's and the holidays package's versions).
The key of a file is a digest of all of them, so a kept result is reused only where evaluating
and checking again would produce the same one. The imports are found by reading the file's text
(:func:`imports_of`): an import's path is a string literal by the language's grammar ("computed
imports are not allowed"), so every ``import``, ``importstr`` and ``importbin`` followed by a
plain quoted string is one the file may make. A word "import" anywhere else (in a comment, a
string) only adds a file to the key, never hides one; a keyword followed by anything this does
not read exactly (a comment, a verbatim or text-block string, an escape) makes the file one that
is always evaluated afresh. Each import is resolved as ``ConfinedImporter`` resolves it (beside
the importing file, then in the library): the key holds, for each candidate up to the first
that exists, whether it exists, where it leads and that file's bytes, so a new file shadowing
the library's, or a link moved, changes the key too.

jobplane.toml's own problems that only the holidays package can tell (a calendar's unknown
country: compiler/calendars.py) are a function of the environment alone, so they are kept too:
reading the package's country list imports every country's module (~100 ms, more than the rest
of a run with nothing changed).

A compile (``jobplane dev``'s) also keeps each job's built Terraform document beside its file's
result, under the same key (:meth:`ValidateCache.built`): a job's document is a function of the
job and the configuration alone (compiler/job_build.py), so it is reused exactly where building
again would give the same bytes. Those are ~60 KB a job (the state machine's definition), so
each file's are kept apart from the results, as one blob of a pack (compiler/blob_pack.py:
``built-<repository>.index`` and the pack it names), read only when a root that holds its jobs
is compiled again and written only when they changed: in the one cache file they were ~300 MB
read and written again at each one-job edit at 5,000 jobs (issue 66 item 5); in a file each,
5,001 files were written at a first start of 5,000 jobs.

What crosses files (a job name used twice, derived AWS names colliding, ``after`` and its
cycles) is checked afresh over every file's kept or new result at each run. A result stopped by
an evaluation limit depends on the machine's load and is never kept.

The memory is a file per repository in the user's cache directory (``$JOBPLANE_CACHE_DIR``, else
``$XDG_CACHE_HOME/jobplane``, else ``~/.cache/jobplane``), never in the repository: a pull
request cannot bring results of its own. It is a pickle (reading a kept job back is 30 times
faster than building it), so it is read only from a file owned by this user and writable by no
one else, in a directory likewise; anything else is ignored and rewritten. Restore it in CI
only from runs of trusted branches.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import re
import sys
import zoneinfo
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, overload

import jobplane
from jobplane.compiler.blob_pack import BlobPack, owner_only as _private, write_owner_only as _write_private
from jobplane.compiler.problems import Problem
from jobplane.compiler.checked import FileChecked, LoadedJob
from jobplane.compiler.file_table import FileTable
from jobplane.compiler.gc_pause import gc_paused
from jobplane.compiler.kind_pickle import dumps as _dumps
from jobplane.contract import cache_home
from jobplane.contract.config import PlatformConfig
from jobplane.contract.types import JsonObject

CACHE_ENV = cache_home.CACHE_ENV
FORMAT = 3  # 2: the built documents in files of their own; 3: in one pack
_CODE = (Path(jobplane.__file__).parent / "compiler", Path(jobplane.__file__).parent / "contract")
_IMPORT = re.compile(rb"(?<![A-Za-z0-9_])import(?:str|bin)?(?![A-Za-z0-9_])")
_PLAIN = re.compile(rb"""[ \t\r\n]*(?:'([^'\\\n]*)'|"([^"\\\n]*)")""")
_UNREAD = re.compile(rb"[ \t\r\n]*(?:/\*|//|#|@|\|\|\||'|\")")  # a literal or comment not read exactly


def cache_dir() -> Path:
    return Path(cache_home.cache_dir())


def imports_of(text: bytes) -> list[str] | None:
    """The paths a Jsonnet text may import, or None when one is not written as a plain quoted
    string right after its keyword (the file is then always evaluated afresh)."""
    found = []
    for m in _IMPORT.finditer(text):
        plain = _PLAIN.match(text, m.end())
        if plain:
            found.append((plain.group(1) if plain.group(1) is not None else plain.group(2)).decode("utf-8", "replace"))
        elif _UNREAD.match(text, m.end()):
            return None
        # else not an import (the word in prose: "import invoices"); Jsonnet would not parse it as one
    return found


def environment_key(config: PlatformConfig) -> str:
    """What every file's result depends on besides its own inputs: the code and the settings."""
    # the time zone database decides which ``timezone`` values are valid (zoneinfo: the tzdata
    # package, else the system's directories); the holidays package, a calendar job's fires
    # (compiler/calendars.py: a calendar without a business day in its years is a problem)
    h = hashlib.sha256(f"{FORMAT} {sys.version} jobplane {jobplane.__version__} gojsonnet {_version('gojsonnet')} "
                       f"tzdata {_version('tzdata')} {zoneinfo.TZPATH} holidays {_version('holidays')}\n"
                       f"{config!r}\n".encode())
    for root in _CODE:
        for path in sorted(root.rglob("*.py")):
            data = path.read_bytes()
            h.update(f"{path.relative_to(root.parent).as_posix()} {len(data)}\n".encode())
            h.update(data)
    return h.hexdigest()


def _version(name: str) -> str:
    """The installed version of distribution ``name``, as its ``.dist-info`` directory's name
    says (``holidays-0.108.dist-info``), or "?". importlib.metadata reads the same directories,
    but importing it (email, zipfile, csv) cost more than the rest of a run whose results are
    all kept (issue 66 item 1); every installer names the directory so (the packaging
    specification's "Recording installed projects")."""
    wanted = re.sub(r"[-_.]+", "_", name).lower()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for found in names:
            if found.endswith(".dist-info"):
                project, _, version = found[:-len(".dist-info")].partition("-")
                if re.sub(r"[-_.]+", "_", project).lower() == wanted:
                    return version
    return "?"


class KeptJobs(Sequence[LoadedJob]):
    """A kept file's jobs, read back when first asked for: `jobplane validate` never asks (the
    checks across files read FileChecked.jobs), a compile does."""

    def __init__(self, blob: bytes):
        self._blob = blob
        self._jobs: tuple[LoadedJob, ...] | None = None

    def _all(self) -> tuple[LoadedJob, ...]:
        if self._jobs is None:
            jobs = pickle.loads(self._blob)
            if not isinstance(jobs, tuple) or not all(isinstance(j, LoadedJob) for j in jobs):
                raise TypeError("a kept result holds something other than jobs")
            self._jobs = jobs
        return self._jobs

    @overload
    def __getitem__(self, index: int) -> LoadedJob: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[LoadedJob]: ...

    def __getitem__(self, index: int | slice) -> LoadedJob | Sequence[LoadedJob]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())


class ValidateCache:
    """validate.FileCache kept in the user's cache directory; ``save()`` after the run."""

    @gc_paused
    def __init__(self, config: PlatformConfig, directory: Path | None = None):
        """Each file's digest comes from a table of stats (compiler/file_table.py), which reads
        only the files whose stat changed."""
        self.config = config
        self.directory = directory or cache_dir()
        root = str(config.root.resolve())
        self.path = self.directory / f"validate-{hashlib.sha256(root.encode()).hexdigest()[:16]}.pickle"
        self._built_stem = f"built-{hashlib.sha256(root.encode()).hexdigest()[:16]}"
        self._pack: BlobPack | None = None  # the built documents' pack, read once a compile asks (:meth:`_built_jobs`)
        self.environment = environment_key(config)
        self.library = config.library_path
        self._dirs: dict[str, str] = {}  # directory -> its real path
        self._real: dict[str, str] = {}  # path -> its real path
        self._deps: dict[tuple[str, str], bytes | None] = {}  # (found path, import) -> its part of the key
        self._keys: dict[Path, str | None] = {}
        self._imports: dict[str, list[str] | None] = {}  # real path -> imports_of its text
        # each file's digest (and imports) from its stat while it is unchanged (file_table.py)
        self.files = FileTable(self.directory / f"files-{hashlib.sha256(root.encode()).hexdigest()[:16]}.json")
        # path -> (key, its result without its jobs, its jobs), each pickled
        self._kept: dict[str, tuple[str, bytes, bytes]] = self._read()
        self._entries: dict[str, tuple[str, bytes, bytes]] = {}
        self._config_problems: bytes | None = self._kept_config  # set by _read
        # a compile's memory (job_build.BuiltJobs), a blob per definition file (:meth:`_built_jobs`)
        self._built_read: dict[str, dict[str, tuple[int, JsonObject]]] = {}  # path -> its jobs read back or built
        self._built_changed: set[str] = set()
        self._paths: dict[str, str] = {}  # a file as its jobs name it (LoadedJob.source) -> its path
        self.hits = 0
        self.misses = 0
        self.built_hits = 0

    # -- validate.FileCache ------------------------------------------------------------------------
    def lookup(self, paths: list[Path]) -> dict[Path, FileChecked]:
        found: dict[Path, FileChecked] = {}
        for path in paths:
            key = self.key(path)
            kept = self._kept.get(str(path))
            if key is not None and kept is not None and kept[0] == key:
                try:
                    result = pickle.loads(kept[1])
                except Exception:  # noqa: BLE001 - a kept result that no longer reads is evaluated again
                    continue
                if isinstance(result, FileChecked):
                    found[path] = dataclasses.replace(result, loaded=KeptJobs(kept[2]))
                    self._entries[str(path)] = kept
                    self._paths[result.source] = str(path)
        self.hits, self.misses = len(found), len(paths) - len(found)
        return found

    def store(self, checked: dict[Path, FileChecked]) -> None:
        for path, result in checked.items():
            key = self.key(path)
            if key is not None and not result.evaluation_limit:
                self._entries[str(path)] = (key, _dumps(dataclasses.replace(result, loaded=())),
                                            _dumps(tuple(result.loaded)))
                self._paths[result.source] = str(path)

    def source_key(self, source: str) -> str | None:
        """The key of the file whose jobs name it ``source`` (LoadedJob.source), when its result
        is kept or stored in this run; else None (compiler/root_memo.py keys a root by them)."""
        path = self._paths.get(source)
        entry = self._entries.get(path) if path is not None else None
        return entry[0] if entry is not None else None

    # -- a compile's memory (job_build.BuiltJobs) --------------------------------------------------
    # A job's Terraform document and state count are a function of the job and the configuration
    # alone (compiler/job_build.py), so of its file's key and this environment: kept beside the
    # file's result, under the same key, they are reused exactly where building again would give
    # the same bytes (a one-job edit among 5,000 builds one job: issue 66 item 5).
    def built(self, lj: LoadedJob) -> tuple[int, JsonObject] | None:
        """The job's kept (states, document), or None when its file changed or was never built."""
        path = self._paths.get(lj.source)
        if path is None or path not in self._entries:
            return None
        jobs = self._built_jobs(path)
        found = jobs.get(lj.job.name) if jobs is not None else None
        if found is not None:
            self.built_hits += 1
        return found

    def keep_built(self, lj: LoadedJob, value: tuple[int, JsonObject]) -> None:
        """Keep what was just built for ``lj`` (only for a file whose result is kept)."""
        path = self._paths.get(lj.source)
        if path is None or path not in self._entries:
            return
        jobs = self._built_jobs(path)
        if jobs is None:
            jobs = self._built_read[path] = {}
        jobs[lj.job.name] = value
        self._built_changed.add(path)

    def _built_pack(self) -> BlobPack:
        if self._pack is None:
            self._pack = BlobPack(self.directory, self._built_stem)
        return self._pack

    def _built_jobs(self, path: str) -> dict[str, tuple[int, JsonObject]] | None:
        if path in self._built_read:
            return self._built_read[path]
        blob = self._built_pack().get(path)
        try:
            kept = pickle.loads(blob) if blob is not None else None
        except Exception:  # noqa: BLE001 - a kept blob that no longer reads is built again
            kept = None
        # (format, environment, the definition file, its key, {job: (states, document)})
        if (not isinstance(kept, tuple) or len(kept) != 5
                or kept[:4] != (FORMAT, self.environment, path, self._entries[path][0]) or not isinstance(kept[4], dict)):
            return None
        jobs: dict[str, tuple[int, JsonObject]] = kept[4]
        self._built_read[path] = jobs
        return jobs

    def config_problems(self, compute: Callable[[], list[Problem]]) -> list[Problem]:
        if self._config_problems is not None:
            try:
                kept = pickle.loads(self._config_problems)
            except Exception:  # noqa: BLE001 - a kept result that no longer reads is computed again
                kept = None
            if isinstance(kept, list) and all(isinstance(p, Problem) for p in kept):
                return kept
        problems = compute()
        self._config_problems = _dumps(problems)
        return problems

    @gc_paused
    def save(self) -> None:
        """Keep this run's results (the files of this run only: a removed file's go). A run that
        found every result kept, and no other, writes nothing: the file already holds them."""
        self.files.save()
        changed = sorted(path for path in self._built_changed if path in self._entries)
        self._built_changed.clear()
        # the built documents of files gone (or renamed) dropped too, looked for only when the
        # files changed
        if changed or (self._entries.keys() != self._kept.keys() and self._built_pack().names()):
            pack = self._built_pack()
            for path in changed:
                pack.put(path, _dumps((FORMAT, self.environment, path, self._entries[path][0], self._built_read[path])))
            try:
                pack.save(self._entries)
                legacy = self.directory / self._built_stem  # format 2's file per definition file
                if legacy.is_dir():
                    import shutil

                    shutil.rmtree(legacy, ignore_errors=True)
            except OSError:
                pass  # a cache that cannot be written only makes the next run slower
        if self._pack is not None:
            self._pack.close()
        if self._entries == self._kept and self._config_problems == self._kept_config:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            _write_private(self.path, _dumps({"format": FORMAT, "environment": self.environment, "entries": self._entries,
                                              "config_problems": self._config_problems}))
        except OSError:
            pass  # a cache that cannot be written only makes the next run slower

    # -- keys --------------------------------------------------------------------------------------
    def key(self, path: Path) -> str | None:
        """The digest of everything the file's result depends on besides the environment, or
        None when it cannot be known (an import not written plainly, an unreadable file)."""
        if path not in self._keys:
            self._keys[path] = self._key(path)
        return self._keys[path]

    def _key(self, path: Path) -> str | None:
        real = self._realpath(str(path))
        digest = self._digest(real)
        if digest is None:
            return None
        h = hashlib.sha256(f"{path}\0{real}\0{digest}\n".encode())
        seen: set[str] = set()
        pending = [str(path)]
        while pending:
            found_path = pending.pop()
            imports = self._imports_of(found_path)
            if imports is None:
                return None
            base = os.path.dirname(found_path)
            for rel in imports:
                part = self._dependency(base, rel)
                if part is None:
                    return None
                h.update(part)
                kind, _, rest = part.partition(b"\0")
                candidate = rest.partition(b"\0")[0].decode()
                if kind == b"file" and candidate not in seen:
                    seen.add(candidate)
                    if self._digest(self._realpath(candidate)) is not None:
                        pending.append(candidate)
        return h.hexdigest()

    def _dependency(self, base: str, rel: str) -> bytes | None:
        """What ConfinedImporter would answer for ``rel`` imported from ``base``, as facts: the
        first candidate that exists ("file\\0<found path>\\0<real path> <digest>"), or that none
        does."""
        memo = (base, rel)
        if memo in self._deps:
            return self._deps[memo]
        out: bytes | None
        if os.path.isabs(rel):
            out = f"absolute\0{rel}\n".encode()
        else:
            out = f"missing\0{base}\0{rel}\n".encode()
            for candidate in (os.path.join(base, rel), os.path.join(str(self.library), rel)):
                if not os.path.lexists(candidate):
                    continue
                real = self._realpath(candidate)
                digest = self._digest(real) or "not-a-file"
                out = f"file\0{candidate}\0{real} {digest}\n".encode()
                break
        self._deps[memo] = out
        return out

    def _realpath(self, path: str) -> str:
        """os.path.realpath, once a path a run, its directories resolved once a run (thousands
        of files share few)."""
        real = self._real.get(path)
        if real is None:
            if os.path.islink(path):
                real = os.path.realpath(path)
            else:
                directory, name = os.path.split(path)
                if directory not in self._dirs:
                    self._dirs[directory] = os.path.realpath(directory)
                real = os.path.join(self._dirs[directory], name)
            self._real[path] = real
        return real

    def _imports_of(self, found_path: str) -> list[str] | None:
        real = self._realpath(found_path)
        if real not in self._imports:
            found = self.files.derived(real, "imports", imports_of)
            self._imports[real] = [str(x) for x in found] if isinstance(found, list) else None
        return self._imports[real]

    def _digest(self, real: str) -> str | None:
        """The file's SHA-256, from the table of stats (compiler/file_table.py: the file is read
        only when its stat changed)."""
        return self.files.digest(real)

    # -- the file ----------------------------------------------------------------------------------
    def _read(self) -> dict[str, tuple[str, bytes, bytes]]:
        """The kept results, if the file is this user's alone and of this environment (and the
        kept problems of jobplane.toml in ``_kept_config``)."""
        self._kept_config: bytes | None = None
        data = _read_private(self.path, self.directory)
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("environment") != self.environment:
            return {}
        kept_config = data.get("config_problems")
        self._kept_config = kept_config if isinstance(kept_config, bytes) else None
        entries = data.get("entries")
        return entries if isinstance(entries, dict) else {}


def _read_private(path: Path, directory: Path) -> Any:
    """The pickle in ``path`` if it and ``directory`` are this user's alone, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            if not (_private(os.fstat(f.fileno())) and _private(os.stat(directory))):
                return None
            return pickle.load(f)
        except Exception:  # noqa: BLE001 - a damaged or foreign file is only a cold start
            return None


