"""The checks of `jobplane validate` that cross files, and what each file's own checks yield
(:class:`FileChecked`): light on imports, so that a run where every file's result is kept
(compiler/validate_cache.py) loads neither pydantic nor the model nor Jsonnet. The files whose
result is not kept are checked by :func:`jobplane.compiler.validate.check_files`, imported then."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from jobplane.compiler import dir_scan
from jobplane.compiler.jsonnet_eval import resolved
from jobplane.compiler.gc_pause import gc_paused
from jobplane.compiler.problems import DefinitionError, Problem, rel
from jobplane.contract.config import PlatformConfig
from jobplane.contract.quoting import did_you_mean, quoted

if TYPE_CHECKING:
    from jobplane.compiler.model import Job


@dataclass(frozen=True)
class LoadedJob:
    job: Job
    source: str  # path relative to the repository root
    params_budget: int  # room for params in its largest ECS override (measured once, at validation)


def definition_files(config: PlatformConfig) -> list[Path]:
    inside = str(config.library_path.resolve()).rstrip("/") + "/"  # a path strictly under the library
    # each directory resolved once (a file that is not a link resolves to its name in its
    # directory's real path): resolving each of 5,000 files walked every component of each path
    # again (issue 66 item 5: ~0.5 s of a one-job edit's compile)
    directories: dict[tuple[str, ...], tuple[Path, str | None]] = {}
    out = []
    for parts, link in _jsonnet_files(str(config.jobs_path)):
        where = parts[:-1]
        if where not in directories:
            directory = config.jobs_path.joinpath(*where)
            resolved_dir = resolved(directory)
            directories[where] = (directory, None if resolved_dir is None else str(resolved_dir).rstrip("/") + "/")
        directory, real_dir = directories[where]
        f = directory / parts[-1]
        real: str | None
        if link:
            found = resolved(f)
            real = None if found is None else str(found)
        else:
            real = None if real_dir is None else real_dir + parts[-1]
        # a link loop stays in the list: its evaluation refuses it, naming it (jsonnet_eval.LOOP)
        if real is None or not real.startswith(inside):
            out.append(f)
    return out


def _jsonnet_files(top: str) -> list[tuple[tuple[str, ...], bool]]:
    """What ``Path(top).rglob("*.jsonnet")`` lists (every entry so named, in ``top`` and the
    directories under it that are not links), each as its parts under ``top`` with whether it
    is a link, sorted as those paths sort (by parts), from one scan of each directory: rglob,
    sorting 5,000 paths and a stat per file to tell a link were ~0.9 s of a one-job edit's
    compile at 5,000 jobs (issue 66 item 5)."""
    found: list[tuple[tuple[str, ...], bool]] = []
    for parts, entry in dir_scan.entries(top):
        if entry.name.endswith(".jsonnet"):
            try:
                found.append((parts, entry.is_symlink()))
            except OSError:
                continue
    return sorted(found)


@dataclass(frozen=True)
class FileChecked:
    """What one definition file yields on its own: its problems, its valid jobs, and each item's
    name with the AWS names it derives (raw_derived_names), for the checks across files. A
    function of the file's path, its Jsonnet value, jobplane.toml and this code alone, so it can
    be kept for an unchanged file (compiler/validate_cache.py)."""

    problems: tuple[Problem, ...]
    loaded: Sequence[LoadedJob]  # a kept file's are read back only when asked for (validate needs ``jobs``)
    names: tuple[tuple[str | None, tuple[tuple[str, str], ...]], ...]  # per item: its name (a string), derived
    source: str = ""  # the file as problems name it
    evaluation_limit: bool = False  # stopped on a limit: depends on the machine's load, never kept
    jobs: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # each loaded job's name, team and ``after`` jobs
    #: lines `jobplane validate` prints without failing (compiler/credential_checks.py), kept
    #: with the file's result so an unchanged file's jobs are not read back to find them again
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Checked:
    """Every file's own checks and the problems of all, across files too."""

    problems: list[Problem]
    files: list[FileChecked]


#: validate.check_files: each file's own checks (the model, pydantic, Jsonnet), called only for
#: the files whose result is not kept (passed in: this module must not import validate.py)
CheckFiles = Callable[[list[Path], PlatformConfig], "dict[Path, FileChecked]"]


class FileCache(Protocol):
    """Earlier results of unchanged files (compiler/validate_cache.py)."""

    def lookup(self, paths: list[Path]) -> dict[Path, FileChecked]: ...

    def store(self, checked: dict[Path, FileChecked]) -> None: ...

    def config_problems(self, compute: Callable[[], list[Problem]]) -> list[Problem]:
        """jobplane.toml's own problems (``compute``), or the last run's when they cannot differ."""


@gc_paused
def check_definitions(config: PlatformConfig, check_files: CheckFiles, files: list[Path] | None = None,
                      cache: FileCache | None = None) -> Checked:
    """:func:`load_jobs`'s checks, without raising (nor reading kept jobs back: `jobplane
    validate` needs only their names, teams and ``after``). Raises DefinitionError only when
    jobs/ or the library leads outside the repository."""
    for directory in (config.jobs_path, config.library_path):  # what the import rules trust
        if directory.exists() and not directory.resolve().is_relative_to(config.root.resolve()):
            raise DefinitionError([Problem(rel(directory, config.root) + "/", None, None,
                                           "refused: it leads outside the repository (a symbolic link?)")])
    paths = list(files) if files is not None else definition_files(config)
    kept = cache.lookup(paths) if cache is not None else {}
    todo = [p for p in paths if p not in kept]
    fresh = check_files(todo, config) if todo else {}
    if cache is not None:
        cache.store(fresh)
    checked = kept | fresh
    problems: list[Problem] = []
    first_seen: dict[str, str] = {}
    derived_seen: dict[str, tuple[str, str]] = {}  # AWS name -> (file, job) that derives it first
    for path in paths:
        result = checked[path]
        problems.extend(result.problems)
        source = result.source
        for name, derived in result.names:
            if name is None:
                continue
            if name in first_seen:
                problems.append(Problem(source, name, "name", f"job name is already used in {first_seen[name]}"))
            else:
                first_seen[name] = source
            problems.extend(_derived_collisions(source, name, derived, derived_seen))
    edges = [(checked[p].source, name, after) for p in paths for name, _, after in checked[p].jobs]
    # files that yielded no job (their evaluation failed): an upstream named as one of them is
    # most likely there, and "did you mean" another job would send the reader the wrong way
    unread = {Path(checked[p].source).stem: checked[p].source for p in paths
              if not checked[p].names and checked[p].problems}
    problems.extend(_after_problems(edges, set(first_seen), complete=files is None, unread=unread))
    # the holidays package's country list (~100 ms of imports) is read only when jobplane.toml,
    # the package's version or this code changed since the cache's last run
    problems.extend(cache.config_problems(lambda: _calendar_config_problems(config)) if cache is not None
                    else _calendar_config_problems(config))
    return Checked(list(set(problems)), [checked[p] for p in paths])


def _derived_collisions(source: str, name: str, derived: tuple[tuple[str, str], ...],
                        seen: dict[str, tuple[str, str]]) -> list[Problem]:
    """Two jobs deriving one AWS name: ``nightly`` with two schedules makes ``<prefix>-nightly-2``,
    the schedule name a job called ``nightly-2`` makes too. Validation passed and the apply
    failed half way; now the second job in file order is told which job and file it collides
    with (a job name used twice is told once, by the name check). ``derived``: the job's
    raw_derived_names, none for a name that is not valid."""
    problems = []
    for kind, derived_name in derived:  # AWS names are unique per kind of resource, not across kinds
        first = seen.setdefault(f"{kind}\0{derived_name}", (source, name))
        if first[1] != name:
            problems.append(Problem(source, name, "name", f"its {kind} name {derived_name!r} is also one that job "
                                                          f"{quoted(first[1])} ({first[0]}) derives; rename one of them"))
    return problems


def after_problems(loaded: list[LoadedJob], known: set[str], complete: bool = True) -> list[Problem]:
    """``after`` across jobs: every upstream job exists (only when every file was read:
    ``complete``), and no job waits, through others, for itself (each cycle named once)."""
    return _after_problems([(lj.source, lj.job.name, tuple(a.job for a in lj.job.after)) for lj in loaded],
                           known, complete)


def _after_problems(edges: list[tuple[str, str, tuple[str, ...]]], known: set[str],
                    complete: bool = True, unread: dict[str, str] | None = None) -> list[Problem]:
    """after_problems over (file, job, its ``after`` jobs in order). ``unread``: the files that
    could not be read, by their name without .jsonnet (an upstream of that name is said to be there)."""
    problems: list[Problem] = []
    graph = {name: list(after) for _, name, after in edges}
    where = {name: (source, after) for source, name, after in edges}
    for source, name, after in edges:
        for i, upstream in enumerate(after):
            if complete and upstream not in known:
                there = (unread or {}).get(upstream)
                problems.append(Problem(source, name, f"after[{i}].job", f"no job named {quoted(upstream)}" + (
                    f": {there} may define it, but it could not be read (its problem is listed)" if there
                    else did_you_mean(upstream, sorted(known)))))
    seen_cycles: set[tuple[str, ...]] = set()
    for start in sorted(graph):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in graph.get(node, []):
                if nxt == start:
                    cycle = path + [start]
                    key = tuple(sorted(path))
                    if key not in seen_cycles:
                        seen_cycles.add(key)
                        i = list(where[start][1]).index(path[1] if len(path) > 1 else start)
                        problems.append(Problem(where[start][0], start, f"after[{i}].job",
                                                "a cycle: " + " -> ".join(cycle) + " (a job cannot wait for itself)"))
                elif nxt in graph and nxt not in path:
                    stack.append((nxt, path + [nxt]))
    return problems


def _calendar_config_problems(config: PlatformConfig) -> list[Problem]:
    from jobplane.compiler.calendars import config_problems  # the holidays package, when not kept

    return config_problems(config)
