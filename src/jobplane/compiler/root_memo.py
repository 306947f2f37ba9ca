"""`jobplane dev`'s memory of each team root's compiled files: a one-job edit among 5,000 jobs
compiles the edited job's root and keeps the others' files as they are (issue 66 item 5).

A team root's files (output.root_files) are a function of
- jobplane.toml and this installation's code (the validate cache's environment key:
  compiler/validate_cache.py, which digests the whole parsed configuration and every module of
  ``compiler/`` and ``contract/``);
- the runner image each definition names (`jobplane dev` gives its runner's identity);
- the root's team and name, and its jobs: each one's name and the file that defines it, whose
  result is itself a function of the file's key (its path, its bytes and every import's bytes,
  followed through the imports of the imports: validate_cache.ValidateCache.key).
The root's key is a digest of all of them, so a kept root is reused only where compiling it
again gives the same bytes: a changed job, a library one of its jobs imports, a job moved in or
out, jobplane.toml or the code each change the key. A root whose jobs include one whose file's
result is not kept (an import not written plainly, an evaluation limit) has no key and is
always compiled.

In a root compiled again, each unchanged job's grants are not shaped and measured again
either (shared_roles.share's ``known``: the shape, policy size and growth of each of its roles
that names no other of its roles, a function of its built document, so kept under its
job_key; the shapes, mostly identical across a team's jobs, kept once each).

Nor is their catalog entry built and stamped again: an entry is a function of its job_key
(the job, its state count, its root, the image and its definition's digest, itself kept under
the job_key), so each root's entries are kept under their jobs' job_keys, in a file of the root's
own (``entries/<root>.json``, ~1.6 KB a job) read only when that root is compiled again.

What is kept is each file's SHA-256, not its text (the texts are the output directory's
~300 MB): a root is reused only while every one of its files is on disk with the kept digest
(devserver/compiled_stamp.py tells that from size and time); else it is compiled again. The
memory is a JSON file in the dev data directory's cache (owner-only, like the rest of it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from jobplane.compiler import output
from jobplane.compiler.checked import Checked, LoadedJob
from jobplane.compiler.gc_pause import gc_paused
from jobplane.compiler.job_build import BuiltJobs, job_outputs
from jobplane.compiler.rendered_jobs import RenderedJob, Rendering, rendered_jobs
from jobplane.compiler.root_pool import run_roots
from jobplane.contract import layout, root_shards
from jobplane.contract.config import PlatformConfig
from jobplane.contract.types import JsonObject

FORMAT = 1
GRANTS_FORMAT = 1
ROOTS_FILE = "roots.json"
ENTRIES_DIR = "entries"  # beside ROOTS_FILE: each root's kept catalog entries


class FileKeys(BuiltJobs, Protocol):
    """What the compile's evaluation cache tells (compiler/validate_cache.py)."""

    environment: str

    def source_key(self, source: str) -> str | None: ...


def root_key(environment: str, image: str | None, team: str, name: str,
             members: list[tuple[str, str, str]]) -> str:
    """The digest of everything a root's files depend on; ``members``: (job, file, file key)."""
    h = hashlib.sha256(f"{FORMAT}\0{environment}\0{image or ''}\0{team}\0{name}\n".encode())
    for job, source, key in sorted(members):
        h.update(f"{job}\0{source}\0{key}\n".encode())
    return h.hexdigest()


def job_key(environment: str, image: str | None, team: str, name: str, job: str, source: str, key: str) -> str:
    """The digest of everything a job's catalog entry and the state machine it compiles to depend
    on, so of its definition's digest (compiler/definitions.py): its file's key, its root, the
    image, jobplane.toml and the code."""
    return hashlib.sha256(f"{FORMAT}\0{environment}\0{image or ''}\0{team}\0{name}\0{job}\0{source}\0{key}".encode()
                          ).hexdigest()


def render_key(job_key: str, definition: str, roles: dict[str, str]) -> str:
    """The digest of everything a job's compiled file depends on: its job_key (its built document,
    its catalog entry) and what its root's compile adds to that document, its definition's
    digest (stamped into its schedules' inputs) and the shared roles it runs with (by kind:
    compiler/shared_roles.py names them in its document)."""
    return hashlib.sha256(json.dumps([FORMAT, job_key, definition, sorted(roles.items())]).encode()).hexdigest()


@dataclass(frozen=True)
class PartialOutput(output.CompiledOutput):
    """The texts of the roots compiled (and the base's); ``all_roots``: every root, those kept too
    (the provider lock is copied into each)."""

    all_roots: tuple[str, ...] = ()

    @property
    def roots(self) -> list[str]:
        return layout.apply_order(set(self.all_roots))


@dataclass(frozen=True)
class RootsCompiled:
    compiled: PartialOutput
    digests: dict[str, str]  # every output file -> SHA-256, the kept roots' included
    compiled_roots: list[str]
    kept_roots: list[str]
    kept_jobs: int  # jobs of the kept roots (neither read back nor built)
    jobs: int
    rendered: int  # job files rendered (in the roots compiled, those not on disk as they would be rendered)
    #: job -> what the local deploy takes from its file, for each job file rendered (rendered_jobs.py)
    rendered_jobs: dict[str, RenderedJob]


class RootMemo:
    """Read at construction, asked with :meth:`kept`, written with :meth:`save`."""

    @gc_paused
    def __init__(self, path: Path):
        self.path = path
        self._roots: dict[str, tuple[str, dict[str, str]]] = {}
        #: job_key -> the job's definition digest, for the jobs of the roots compiled again
        self.definitions: dict[str, str] = {}
        self._definitions: dict[str, str] = {}
        #: job_key -> (render_key, the SHA-256 of the job's file)
        self.rendered: dict[str, tuple[str, str]] = {}
        self._rendered: dict[str, tuple[str, str]] = {}
        #: job_key -> its grants' (shape, policy size, growth) by per-job role id (shared_roles.GrantMemo)
        self.grants: dict[str, dict[str, tuple[str, int, int]]] = {}
        self._grants: dict[str, dict[str, tuple[str, int, int]]] = {}
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("roots"), dict):
            return
        for name, entry in data["roots"].items():
            if (isinstance(entry, dict) and isinstance(entry.get("key"), str) and isinstance(entry.get("files"), dict)
                    and all(isinstance(k, str) and isinstance(v, str) for k, v in entry["files"].items())):
                self._roots[name] = (entry["key"], entry["files"])
        definitions = data.get("definitions")
        if isinstance(definitions, dict):
            self._definitions = {k: v for k, v in definitions.items() if isinstance(k, str) and isinstance(v, str)}
        self.definitions = dict(self._definitions)
        rendered = data.get("rendered")
        if isinstance(rendered, dict):
            self._rendered = {k: (v[0], v[1]) for k, v in rendered.items() if isinstance(k, str) and isinstance(v, list)
                              and len(v) == 2 and all(isinstance(x, str) for x in v)}
        self.rendered = dict(self._rendered)
        self._grants = _read_grants(data.get("grants"))
        self.grants = dict(self._grants)

    def _entries_file(self, root: str) -> Path:
        return self.path.parent / ENTRIES_DIR / f"{hashlib.sha256(root.encode()).hexdigest()[:32]}.json"

    def entries(self, root: str) -> dict[str, JsonObject]:
        """job_key -> the stamped catalog entry kept for the root's job of that key."""
        try:
            data = json.loads(self._entries_file(root).read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("root") != root:
            return {}
        found = data.get("entries")
        return {k: v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}

    def save_entries(self, root: str, entries: dict[str, JsonObject]) -> None:
        """Keep ``entries`` (job_key -> its stamped catalog entry) as the root's whole set."""
        path = self._entries_file(root)
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_text(json.dumps({"format": FORMAT, "root": root, "entries": entries}))
            os.replace(tmp, path)
        except OSError:
            pass  # a memory that cannot be written only makes the next compile slower

    def kept(self, name: str, key: str | None, on_disk: dict[str, str]) -> dict[str, str] | None:
        """The root's file digests if it was compiled under ``key`` and each of its files is on
        disk as written then; else None."""
        entry = self._roots.get(name)
        if key is None or entry is None or entry[0] != key:
            return None
        files = entry[1]
        if not files or any(on_disk.get(rel) != digest for rel, digest in files.items()):
            return None
        return files

    @gc_paused
    def save(self, roots: dict[str, tuple[str, dict[str, str]]], definitions: dict[str, str],
             rendered: dict[str, tuple[str, str]],
             grants: dict[str, dict[str, tuple[str, int, int]]] | None = None) -> None:
        """Keep ``roots`` (root -> (key, its files' digests)), ``definitions`` (job_key -> its
        definition's digest) and ``rendered`` (job_key -> (render_key, its file's digest)) as the
        whole memory."""
        grants = self._grants if grants is None else grants
        if (roots == self._roots and definitions == self._definitions and rendered == self._rendered
                and grants == self._grants):
            return
        self._roots, self._definitions, self._rendered = dict(roots), dict(definitions), dict(rendered)
        self._grants = dict(grants)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            tmp.write_text(json.dumps({"format": FORMAT, "roots": {n: {"key": k, "files": f} for n, (k, f) in roots.items()},
                                       "definitions": definitions, "rendered": rendered,
                                       "grants": _written_grants(grants)}))
            os.replace(tmp, self.path)
            # the kept entries of roots gone (a team removed, or split into other roots)
            entries_dir = self.path.parent / ENTRIES_DIR
            wanted = {self._entries_file(name).name for name in roots}
            for found in os.listdir(entries_dir) if entries_dir.is_dir() else []:
                if found.endswith(".json") and found not in wanted:
                    (entries_dir / found).unlink(missing_ok=True)
        except OSError:
            pass  # a memory that cannot be written only makes the next compile slower


def _written_grants(grants: dict[str, dict[str, tuple[str, int, int]]]) -> dict[str, object]:
    """The grants as kept: each shape once, each grant naming its shape by index."""
    shapes: dict[str, int] = {}
    jobs = {k: {rid: [shapes.setdefault(shape, len(shapes)), alone, grow] for rid, (shape, alone, grow) in g.items()}
            for k, g in grants.items()}
    return {"format": GRANTS_FORMAT, "shapes": list(shapes), "jobs": jobs}


def _read_grants(data: object) -> dict[str, dict[str, tuple[str, int, int]]]:
    """What :func:`_written_grants` wrote (empty when it is not that)."""
    if not isinstance(data, dict) or data.get("format") != GRANTS_FORMAT:
        return {}
    shapes, jobs = data.get("shapes"), data.get("jobs")
    if not isinstance(shapes, list) or not all(isinstance(x, str) for x in shapes) or not isinstance(jobs, dict):
        return {}
    out: dict[str, dict[str, tuple[str, int, int]]] = {}
    for k, g in jobs.items():
        if not isinstance(g, dict):
            continue
        entry = {}
        for rid, v in g.items():
            if (isinstance(v, list) and len(v) == 3 and all(type(x) is int for x in v)
                    and 0 <= v[0] < len(shapes)):
                entry[rid] = (shapes[v[0]], v[1], v[2])
        if len(entry) == len(g):
            out[k] = entry
    return out


@gc_paused
def compile_roots(config: PlatformConfig, checked: Checked, cache: FileKeys, memo: RootMemo,
                  on_disk: dict[str, str], runner_image: str | None
                  ) -> tuple[RootsCompiled, tuple[dict[str, tuple[str, dict[str, str]]], dict[str, str],
                                                  dict[str, tuple[str, str]], dict[str, dict[str, tuple[str, int, int]]]]]:
    """output.compile_all of ``checked``'s jobs (without problems), each root whose key and
    files are unchanged kept as it is (its jobs neither read back nor built), and in the roots
    compiled each unchanged job's definition digest kept; returns the output and what
    :meth:`RootMemo.save` keeps once it is written."""
    # which root each job is in (output.compile_all's grouping), from the names each file's
    # result lists: a kept root's jobs are never read back
    members: dict[tuple[str, str], list[tuple[str, str, str | None]]] = {
        (team, name): [] for team, t in config.teams.items() for name in root_shards.root_names(team, t.roots)}
    by_file: dict[str, list[str]] = {}
    for f in checked.files:
        key = cache.source_key(f.source)
        for job, team, _ in f.jobs:
            declared = config.teams.get(team)
            name = root_shards.job_root_name(team, job, declared.roots if declared else 1)
            members.setdefault((team, name), []).append((job, f.source, key))
            by_file.setdefault(f.source, []).append(job)
    files = output.base_files(config)
    digests: dict[str, str] = {}
    keys: dict[str, str | None] = {}
    todo: list[tuple[str, str]] = []
    memory: dict[str, tuple[str, dict[str, str]]] = {}
    kept_roots: list[str] = []
    kept_jobs = 0
    # each job's key (job_key): its definition's digest is kept under it, also while its root is
    job_keys: dict[tuple[str, str], dict[str, str]] = {}
    definitions: dict[str, str] = {}
    rendered: dict[str, tuple[str, str]] = {}
    grants: dict[str, dict[str, tuple[str, int, int]]] = {}
    for (team, name), jobs in members.items():
        known = [(j, s, k) for j, s, k in jobs if k is not None]
        key = keys[name] = root_key(cache.environment, runner_image, team, name, known) if len(known) == len(jobs) else None
        job_keys[(team, name)] = {j: job_key(cache.environment, runner_image, team, name, j, s, k) for j, s, k in known}
        definitions.update((k, memo.definitions[k]) for k in job_keys[(team, name)].values() if k in memo.definitions)
        rendered.update((k, memo.rendered[k]) for k in job_keys[(team, name)].values() if k in memo.rendered)
        grants.update((k, memo.grants[k]) for k in job_keys[(team, name)].values() if k in memo.grants)
        kept = memo.kept(name, key, on_disk)
        if kept is None:
            todo.append((team, name))
            continue
        digests.update(kept)
        assert key is not None
        memory[name] = (key, kept)
        kept_roots.append(name)
        kept_jobs += len(jobs)
    # the jobs of the roots compiled, read back from their files' results, in name order
    wanted = {job for team, name in todo for job, _, _ in members[(team, name)]}
    loaded: list[LoadedJob] = sorted((lj for f in checked.files if any(j in wanted for j in by_file.get(f.source, ()))
                                      for lj in f.loaded if lj.job.name in wanted), key=lambda lj: lj.job.name)
    built = dict(zip((lj.job.name for lj in loaded), job_outputs(loaded, config, cache)))
    by_root: dict[tuple[str, str], list[LoadedJob]] = {root: [] for root in todo}
    for lj in loaded:
        declared = config.teams.get(lj.job.team)
        by_root[(lj.job.team, root_shards.job_root_name(lj.job.team, lj.job.name, declared.roots if declared else 1))
                ].append(lj)
    roots = sorted(by_root.items(), key=lambda kv: kv[0][1])
    made = run_roots([functools.partial(_compile_root, config, team, name, team_jobs, built, runner_image,
                                        job_keys[(team, name)], definitions, grants, memo, on_disk)
                      for (team, name), team_jobs in roots], [len(team_jobs) for _, team_jobs in roots])
    # in workers when many (root_pool.py), taken in the roots' order
    handed: dict[str, RenderedJob] = {}
    for ((team, name), _), (root_texts, root_digests, stamped, known_grants, render_keys, of_files) in zip(roots, made):
        of_root = job_keys[(team, name)]
        grants.update((k, known_grants[job]) for job, k in of_root.items() if job in known_grants)
        definitions.update((k, stamped[job]) for job, k in of_root.items() if job in stamped)
        rendered.update((of_root[job], (rk, root_digests[layout.job_file(name, job)])) for job, rk in render_keys.items())
        files.update(root_texts)
        digests.update(root_digests)
        handed.update(of_files)
        key = keys[name]
        if key is not None:
            memory[name] = (key, root_digests)
    # the base's files, always compiled (a function of jobplane.toml alone, two small files)
    digests.update({rel: hashlib.sha256(files[rel].encode()).hexdigest() for rel in files if rel not in digests})
    lock = config.root / output.PROVIDER_LOCK
    all_roots = tuple(sorted({r for r in map(layout.root_of, digests) if r}))
    compiled = PartialOutput(files=dict(sorted(files.items())), jobs=loaded,
                             provider_lock=lock.read_text() if lock.is_file() else None, all_roots=all_roots)
    return RootsCompiled(compiled, dict(sorted(digests.items())), sorted(n for _, n in todo), sorted(kept_roots),
                         kept_jobs, sum(len(j) for j in members.values()),
                         sum(1 for rel in files if rel.endswith(layout.JOB_SUFFIX)), handed), (memory, definitions, rendered, grants)


def _compile_root(config: PlatformConfig, team: str, name: str, team_jobs: list[LoadedJob],
                  built: dict[str, tuple[int, JsonObject]], runner_image: str | None, of_root: dict[str, str],
                  definitions: dict[str, str], grants: dict[str, dict[str, tuple[str, int, int]]],
                  memo: RootMemo, on_disk: dict[str, str]
                  ) -> tuple[dict[str, str], dict[str, str], dict[str, str],
                             dict[str, dict[str, tuple[str, int, int]]], dict[str, str], dict[str, RenderedJob]]:
    """One root of :func:`compile_roots` (``of_root``: its jobs' job_keys; ``definitions`` and
    ``grants`` as kept, read only): its files' texts (those on disk as they would be rendered
    left out), every one of its files' digests, and by job its definition's digest, its
    grants, its render_key and, for each job file rendered, what the local deploy takes from it
    (rendered_jobs.py: made here, in the root's worker, not by the deploy in the parent). Reads
    nothing another root's compile writes (its kept entries are its own file), so the roots can
    be compiled in any process and order (root_pool.py)."""
    stamped = {job: definitions[k] for job, k in of_root.items() if k in definitions}
    render_keys: dict[str, str] = {}
    known_files: dict[str, str] = {}

    def kept_file(job: str, definition: str, roles: dict[str, str]) -> bool:
        """A job whose file is on disk as this compile renders it (its render_key unchanged)."""
        if job not in of_root:
            return False
        rk = render_keys[job] = render_key(of_root[job], definition, roles)
        rel, kept = layout.job_file(name, job), memo.rendered.get(of_root[job])
        if kept is None or kept[0] != rk or on_disk.get(rel) != kept[1]:
            return False
        known_files[rel] = kept[1]
        return True

    # each job's grants as kept under its job_key (its built document's); only those jobs'
    known_grants = {job: dict(grants[k]) for job, k in of_root.items() if k in grants}
    # each job's stamped catalog entry as kept under its job_key; only those jobs'
    kept_entries = memo.entries(name)
    known_entries = {job: kept_entries[k] for job, k in of_root.items() if k in kept_entries}
    rendering = Rendering()
    root_texts = output.root_files(config, team, name, team_jobs, built, runner_image, stamped, kept_file,
                                   known_grants, known_entries, rendering)
    entries_now = {k: known_entries[job] for job, k in of_root.items() if job in known_entries}
    if entries_now != kept_entries:
        memo.save_entries(name, entries_now)
    root_digests = {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in root_texts.items()}
    root_digests.update(known_files)
    return (root_texts, root_digests, stamped, known_grants, render_keys,
            rendered_jobs(name, rendering, root_texts, root_digests))
