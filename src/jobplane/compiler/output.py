"""Compile every job and write the output directory all at once, or not at all.

The output holds one Terraform root for the base module and one per team (contract/layout.py).
The compiler owns ``*.tf.json`` and ``catalog.json`` there (and removes the ``asl/`` copies of
the single-root layout before it). Anything else (``.terraform/``, lock files,
``terraform.tfvars``) belongs to whoever runs Terraform and is left untouched, but for one: a
repository that commits ``terraform/providers.lock.hcl`` (the provider lock file, docs/deploy.md)
gets it copied into every root as ``.terraform.lock.hcl``, the name ``terraform init`` reads, so
every root is planned and applied with the provider versions and checksums reviewed in git
(https://developer.hashicorp.com/terraform/language/files/dependency-lock: "You should include
this file in your version control repository"; the pipeline inits with -lockfile=readonly).
The copy is not a compiled file: it changes no root's plan, and a root's own lock (a local
`terraform init` without a committed one) is never removed.
"""

from __future__ import annotations

import functools
import locale
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jobplane.compiler import catalog, definitions, shared_roles, terraform
from jobplane.compiler.gc_pause import gc_paused
from jobplane.compiler.job_build import BuiltJobs, count_states, job_outputs  # noqa: F401 (count_states: output's name)
from jobplane.compiler.rendered_jobs import Rendering
from jobplane.compiler.root_pool import run_roots
from jobplane.compiler.validate import LoadedJob, load_jobs
from jobplane.contract import layout, root_shards
from jobplane.contract.catalog import CATALOG_FILE, Catalog
from jobplane.contract.config import PlatformConfig
from jobplane.contract.types import JsonObject

#: The committed provider lock file (relative to the repository root), and its name in a root.
PROVIDER_LOCK = "terraform/providers.lock.hcl"
ROOT_LOCK = ".terraform.lock.hcl"

@dataclass(frozen=True)
class CompiledOutput:
    """Every output file, path relative to the output directory -> content."""

    files: dict[str, str]
    jobs: list[LoadedJob]
    provider_lock: str | None = None  # terraform/providers.lock.hcl, when the repository commits one

    @property
    def catalog(self) -> Catalog:
        """Every team's part, merged (what the readers of a deployment see)."""
        return Catalog.merge(catalog_parts(self.files))

    @property
    def roots(self) -> list[str]:
        return layout.apply_order({r for r in map(layout.root_of, self.files) if r})


def catalog_parts(files: dict[str, str]) -> list[Catalog]:
    """The teams' catalogs among a compiler output's files."""
    return [Catalog.model_validate_json(text) for rel, text in files.items()
            if rel.endswith("/" + CATALOG_FILE) and layout.root_of(rel)]


def is_generated(relpath: str) -> bool:
    """The compiler's files, including those of the single-root layout before per-team roots
    (main.tf.json, asl/ and catalog.json at the top), so that a compile removes them."""
    parts = relpath.split("/")
    return (relpath.endswith(".tf.json") or parts[-1] in (CATALOG_FILE, layout.BASE_TFVARS, CHECKOV_CONFIG)
            or layout.ASL_DIR in parts[:-1])


@gc_paused  # most of a compile's time went to the cyclic collector (gc_pause.py)
def compile_all(config: PlatformConfig, jobs: list[LoadedJob] | None = None,
                kept: BuiltJobs | None = None, runner_image: str | None = None) -> CompiledOutput:
    """Every output file of ``jobs`` (else every job under jobs/); each job's own document taken
    from ``kept`` where it knows it (job_build.job_outputs). ``runner_image``: the image the
    jobs' runs use, part of each definition (default: JOBPLANE_RUNNER_IMAGE, compiler/definitions.py)."""
    runner_image = runner_image or definitions.runner_image_from_environment()
    jobs = load_jobs(config) if jobs is None else jobs
    files = base_files(config)
    # every declared team has a root, also without jobs: removing a team's last job then
    # destroys its resources in that root instead of leaving them in a state nobody plans; a
    # team that splits its jobs into several roots has each of them (contract/root_shards.py)
    by_root: dict[tuple[str, str], list[LoadedJob]] = {
        (team, name): [] for team, t in config.teams.items() for name in root_shards.root_names(team, t.roots)}
    for lj in jobs:
        declared = config.teams.get(lj.job.team)
        name = root_shards.job_root_name(lj.job.team, lj.job.name, declared.roots if declared else 1)
        by_root.setdefault((lj.job.team, name), []).append(lj)
    built = dict(zip((lj.job.name for lj in jobs), job_outputs(jobs, config, kept)))  # in workers when many (job_build.py)
    roots = sorted(by_root.items(), key=lambda kv: kv[0][1])
    made = run_roots([functools.partial(root_files, config, team, name, team_jobs, built, runner_image)
                      for (team, name), team_jobs in roots], [len(team_jobs) for _, team_jobs in roots])
    for texts in made:  # in workers when many (root_pool.py), taken in the roots' order
        files.update(texts)
    lock = config.root / PROVIDER_LOCK
    return CompiledOutput(files=dict(sorted(files.items())), jobs=jobs,
                          provider_lock=lock.read_text() if lock.is_file() else None)


def base_files(config: PlatformConfig) -> dict[str, str]:
    """The base root's files (a function of jobplane.toml alone)."""
    return {f"{layout.BASE_ROOT}/{layout.ROOT_FILE}": terraform.render(terraform.base_root(config)),
            f"{layout.BASE_ROOT}/{layout.BASE_TFVARS}": terraform.render(terraform.base_tfvars(config))}


def root_files(config: PlatformConfig, team: str, name: str, team_jobs: list[LoadedJob],
               built: dict[str, tuple[int, JsonObject]], runner_image: str | None,
               digests: dict[str, str] | None = None,
               known: Callable[[str, str, dict[str, str]], bool] | None = None,
               grants: shared_roles.GrantMemo | None = None,
               entries: dict[str, JsonObject] | None = None,
               rendered: Rendering | None = None) -> dict[str, str]:
    """One team root's files: a function of jobplane.toml, the runner image, this code and its
    jobs (``team_jobs``, by name; ``built``: each one's state count and document) alone, which
    is what lets `jobplane dev` keep an unchanged root's files (compiler/root_memo.py).
    ``digests``: job -> its definition's digest where the caller knows it (definitions.stamp);
    each job's digest is set there on return. ``known(job, its digest, its shared roles by kind)``:
    True when the caller has the job's file as this compile would render it (its document is a
    function of those and of the job: compiler/root_memo.py), which is then left out.
    ``grants``: shared_roles.share's ``known`` (the caller lists a job there only under its
    document's key), filled in for the others. ``entries``: job -> its stamped catalog entry (as
    ``model_dump(mode="json", exclude_unset=True)`` gives it) where the caller knows it (a
    function of the job, its state count, its root, the image and its definition's digest: the
    caller lists it only under the key of all of those, compiler/root_memo.py); those are not
    built and stamped again, and the others' are added. ``rendered``: filled in with the
    document each job file returned was rendered from, the ASLs taken out of them on the way, and
    the definition documents whose digests were computed (compiler/rendered_jobs.py)."""
    files: dict[str, str] = {}
    root = layout.team_root(name)
    files[f"{root}/{layout.ROOT_FILE}"] = terraform.render(terraform.team_root(config, name))
    counts: dict[str, int] = {}
    docs: dict[str, JsonObject] = {}
    for lj in team_jobs:
        counts[lj.job.name], docs[lj.job.name] = built[lj.job.name]
    # the root's jobs run with roles shared by the jobs whose grants are identical
    shared = shared_roles.share(team, config.name_prefix, docs, {lj.job.name: lj.source for lj in team_jobs},
                                root=name, known=grants)
    # each job stamped with the digest of its definition (catalog entry, schedules' inputs)
    kept_entries = {} if entries is None else {lj.job.name: entries[lj.job.name] for lj in team_jobs
                                                if lj.job.name in entries}
    fresh = [lj for lj in team_jobs if lj.job.name not in kept_entries]
    part, stamped = definitions.stamp(catalog.build_catalog(fresh, config, counts, team=team, root=name),
                                      {lj.job.name: shared.jobs[lj.job.name] for lj in fresh}, runner_image, digests,
                                      None if rendered is None else rendered.asls,
                                      None if rendered is None else rendered.definitions)
    made = {entry.name: entry.model_dump(mode="json", exclude_unset=True) for entry in part.jobs} if entries is not None else {}
    if entries is not None:
        entries.update(made)
    # the catalog's entries in the jobs' order, as from nothing (the kept ones as kept: not validated again)
    dumped = [made[lj.job.name] if lj.job.name in made else kept_entries[lj.job.name] for lj in team_jobs] if kept_entries else None
    every = {str(e["name"]): (str(e["definition"]), e.get("params", {})) for e in dumped} if dumped is not None else {
        entry.name: (str(entry.definition), entry.params) for entry in part.jobs}
    if digests is not None:
        digests.update((job, d) for job, (d, _) in every.items())
    definition = {job: d for job, (d, _) in every.items()} if known is not None else {}
    for job_name in [lj.job.name for lj in team_jobs]:
        if known is not None and known(job_name, definition.get(job_name, ""), shared.membership.get(job_name, {})):
            continue
        doc = stamped[job_name] if job_name in stamped else definitions.stamp_document(
            shared.jobs[job_name], every[job_name][1], every[job_name][0])
        files[layout.job_file(name, job_name)] = terraform.render_job(doc)
        if rendered is not None:
            rendered.documents[job_name] = doc
    if shared.roles is not None:
        files[f"{root}/{shared_roles.ROLES_FILE}"] = terraform.render(shared.roles)
    files[f"{root}/{CATALOG_FILE}"] = part.render(dumped)
    if skips := checkov_skips(team_jobs):
        files[f"{root}/{CHECKOV_CONFIG}"] = skips
    return files


#: checkov's configuration file, read from the directory it checks (a team root)
CHECKOV_CONFIG = ".checkov.yaml"


def checkov_skips(jobs: list[LoadedJob]) -> str:
    """The checkov findings the team's executors cannot fix, each with its reason (the
    executors' ``checkov_skips``), as checkov's configuration file; empty when there are none."""
    skips: dict[str, str] = {}
    for lj in jobs:
        for executor, _ in terraform.executors_of(lj.job):
            skips.update(getattr(executor, "checkov_skips", {}))
    if not skips:
        return ""
    lines = ["# Generated by jobplane compile: checkov findings this root's resources cannot fix, and why.",
             "skip-check:"]
    for check, why in sorted(skips.items()):
        lines += [f"  # {check}: {why}", f"  - {check}"]
    return "\n".join(lines) + "\n"


def job_files(files: dict[str, str]) -> dict[str, str]:
    """job name -> its Terraform file, for every job of a compiler output."""
    return {rel.rsplit("/", 1)[1].removesuffix(layout.JOB_SUFFIX): rel for rel in files
            if rel.endswith(layout.JOB_SUFFIX) and layout.root_of(rel) not in (None, layout.BASE_ROOT)}


def image_roots(files: dict[str, str]) -> set[str]:
    """The roots whose resources carry the runner image: the base (the shared task definition)
    and the teams with a job that has its own task definition (steps with secrets) or a runner
    function (Lambda steps: its image_uri). A new image is applied there; every other job runs
    the family's latest revision and needs nothing."""
    roots = {layout.BASE_ROOT}
    for rel in job_files(files).values():
        if '"aws_ecs_task_definition"' in files[rel] or '"aws_lambda_function"' in files[rel]:
            roots.add(rel.rsplit("/", 1)[0])  # job_files lists team roots' files only
    return roots


def changed_roots(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """The roots whose files differ between two compiles, in apply order. A root that is gone
    is listed too: its state still holds resources (docs/deploy.md, "Removing a team")."""
    roots = {layout.root_of(rel) for rel in set(old) | set(new) if old.get(rel) != new.get(rel)}
    return layout.apply_order({r for r in roots if r})


def read_output(directory: Path) -> dict[str, str]:
    """The generated files of an earlier compile (empty if there is none)."""
    out: dict[str, str] = {}
    if not directory.is_dir():
        return out
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_file() and is_generated(rel) and ".terraform" not in path.parts:
            out[rel] = path.read_text()
    return out


@gc_paused
def write_output(compiled: CompiledOutput, directory: Path,
                 digests: tuple[dict[str, str], dict[str, str]] | None = None) -> list[str]:
    """Bring ``directory`` to exactly the compiled files; returns the paths that changed.

    Everything was compiled and validated in memory first, so invalid input never reaches this
    point; each file is replaced atomically and stale generated files are removed last.

    ``digests``: (the SHA-256 of each generated file in ``directory`` now, of each compiled
    file), when the caller knows them (`jobplane dev`'s stamp of its output, devserver/
    compiled_stamp.py): the files are then compared by digest instead of reading the whole
    directory (~300 MB at 5,000 jobs, ~1-2 s of a one-job edit's compile).
    """
    writer = _Writer(_file_mode())
    if digests is None:
        old = read_output(directory)
        changed = sorted(p for p in set(old) | set(compiled.files) if old.get(p) != compiled.files.get(p))
    else:
        on_disk, wanted = digests
        changed = sorted(p for p in set(on_disk) | set(compiled.files) if on_disk.get(p) != wanted.get(p))
    base = str(directory)
    for rel in changed:
        if rel in compiled.files:
            writer.write(os.path.join(base, rel), compiled.files[rel])
    removed = [rel for rel in changed if rel not in compiled.files]
    for rel in removed:
        (directory / rel).unlink()
    # directories a removed file leaves empty (an old asl/, a team's root), each looked at once:
    # a listing per changed file read a team's directory once per job (5,000 listings of
    # ~1,700 entries, most of write_output at 5,000 jobs; a written file's directory is never empty)
    for parent in sorted({(directory / rel).parent for rel in removed}):
        while parent != directory and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    if compiled.provider_lock is not None:
        for root in compiled.roots:
            lock = directory / root / ROOT_LOCK
            if not lock.is_file() or lock.read_text() != compiled.provider_lock:
                writer.write(str(lock), compiled.provider_lock)
                changed.append(f"{root}/{ROOT_LOCK}")
    return changed


class _Writer:
    """Replaces each file atomically: written in full under a name of its own beside it, then
    renamed over it, so a reader sees the old file or the new one, never a part.

    Each file was written through tempfile.mkstemp, a text-mode file object and a chmod by
    path, its directory made again each time: at 5,000 jobs, 5,029 files were ~1 s of
    `jobplane dev`'s first start, in the parent while a core idled (issue 66 item 5); a
    file's encoding was ~1% of that. The bytes are the same (the encoding and line ends
    ``open(path, "w")`` gives), as is the mode (0666 less the umask, set on the open file); the
    temporary name is this process's (``.<name>.<pid>.tmp``, created exclusively), mkstemp's
    random one only when that is taken.
    """

    def __init__(self, mode: int):
        self.mode = mode
        self.encoding = locale.getpreferredencoding(False)  # what a text-mode open() encodes with
        self.suffix = f".{os.getpid()}.tmp"
        self.made: set[str] = set()  # directories known to exist

    def write(self, target: str, text: str) -> None:
        parent, name = os.path.split(target)
        if parent not in self.made:
            os.makedirs(parent, exist_ok=True)
            self.made.add(parent)
        tmp = os.path.join(parent, f".{name}{self.suffix}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=parent)
        try:
            if os.linesep != "\n":
                text = text.replace("\n", os.linesep)
            view = memoryview(text.encode(self.encoding))
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, self.mode)  # made 0600; a generated file is as readable as any other
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        os.replace(tmp, target)


def _file_mode() -> int:
    """0666 less the process umask: what an ordinary open() would create."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
