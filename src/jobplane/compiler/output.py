"""Compile every job and write the output directory all at once, or not at all.

The compiler owns ``*.tf.json``, ``catalog.json`` and ``asl/`` in the output directory. Anything
else there (``.terraform/``, a lock file, ``terraform.tfvars``) belongs to whoever runs
Terraform and is left untouched.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jobplane.compiler import asl, catalog, terraform
from jobplane.compiler.validate import LoadedJob, load_jobs
from jobplane.contract.catalog import CATALOG_FILE, Catalog
from jobplane.contract.config import PlatformConfig

ROOT_FILE = "main.tf.json"
ASL_DIR = "asl"


@dataclass(frozen=True)
class CompiledOutput:
    """Every output file, path relative to the output directory -> content."""

    files: dict[str, str]
    jobs: list[LoadedJob]

    @property
    def catalog(self) -> Catalog:
        return Catalog.model_validate_json(self.files[CATALOG_FILE])


def is_generated(relpath: str) -> bool:
    return relpath.endswith(".tf.json") or relpath == CATALOG_FILE or relpath.split("/")[0] == ASL_DIR


def compile_all(config: PlatformConfig, jobs: list[LoadedJob] | None = None) -> CompiledOutput:
    jobs = load_jobs(config) if jobs is None else jobs
    files: dict[str, str] = {ROOT_FILE: terraform.render(terraform.root_module(config))}
    counts: dict[str, int] = {}
    for lj in jobs:
        definition = asl.build_definition(lj.job, config.name_prefix)
        counts[lj.job.name] = count_states(definition)
        asl_text = asl.render(definition)
        files[f"{ASL_DIR}/{lj.job.name}.asl.json"] = asl_text
        files[f"{lj.job.name}.tf.json"] = terraform.render(terraform.job_module(lj.job, asl_text, config))
    files[CATALOG_FILE] = catalog.build_catalog(jobs, config, counts).render()
    return CompiledOutput(files=dict(sorted(files.items())), jobs=jobs)


def count_states(definition: dict) -> int:
    total = 0
    for state in definition["States"].values():
        total += 1
        for branch in state.get("Branches", []):
            total += count_states(branch)
    return total


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


def write_output(compiled: CompiledOutput, directory: Path) -> list[str]:
    """Bring ``directory`` to exactly the compiled files; returns the paths that changed.

    Everything was compiled and validated in memory first, so invalid input never reaches this
    point; each file is replaced atomically and stale generated files are removed last.
    """
    old = read_output(directory)
    mode = _file_mode()
    changed = sorted(p for p in set(old) | set(compiled.files) if old.get(p) != compiled.files.get(p))
    for rel in changed:
        target = directory / rel
        if rel not in compiled.files:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "w") as f:
            f.write(compiled.files[rel])
        os.chmod(tmp, mode)  # mkstemp makes 0600; a generated file is as readable as any other
        os.replace(tmp, target)
    for rel in changed:
        if rel not in compiled.files:
            (directory / rel).unlink()
    asl_dir = directory / ASL_DIR
    if asl_dir.is_dir() and not any(asl_dir.iterdir()):
        asl_dir.rmdir()
    return changed


def _file_mode() -> int:
    """0666 less the process umask: what an ordinary open() would create."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
