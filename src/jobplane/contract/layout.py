"""Where the compiler puts each Terraform root, and which root a generated file belongs to.

One root for the base module, one per team (docs/deploy.md, "Terraform roots"): a change to one
job then plans and applies only its team's root, and each root keeps its own state. The readers
of the output (the local engine, ``jobplane plan``, the CI workflow through ``jobplane roots``)
find the roots and the team catalogs from these names alone.
"""

from __future__ import annotations

from pathlib import Path

BASE_ROOT = "base"
TEAMS_DIR = "teams"
ASL_DIR = "asl"  # the single-root layout's copies of the ASL; no longer written
CATALOG_FILE = "catalog.json"
ROOT_FILE = "main.tf.json"
# the base root's settings from jobplane.toml's [deploy] (contract/deploy_settings.py), read by
# every terraform plan and apply in that directory
BASE_TFVARS = "jobplane.auto.tfvars.json"
JOB_SUFFIX = ".job.tf.json"  # teams/<team>/<job>.job.tf.json: never main.tf.json, whatever the job's name


def team_root(team: str) -> str:
    return f"{TEAMS_DIR}/{team}"


def job_file(team: str, job: str) -> str:
    """A job's Terraform file: its resources, and the one stored copy of its ASL (its state
    machine's definition; contract/bindings.py asl_of)."""
    return f"{team_root(team)}/{job}{JOB_SUFFIX}"


def root_of(relpath: str) -> str | None:
    """The root directory (relative to the output directory) that holds a generated file."""
    parts = relpath.split("/")
    if parts[0] == BASE_ROOT and len(parts) > 1:
        return BASE_ROOT
    if parts[0] == TEAMS_DIR and len(parts) > 2:
        return team_root(parts[1])
    return None


def apply_order(roots: set[str]) -> list[str]:
    """The base first (team roots read what it publishes), then the teams by name."""
    return sorted(roots, key=lambda r: (r != BASE_ROOT, r))


def catalog_parts(output_dir: Path) -> list[Path]:
    """Every team's catalog in a compiler output directory, in team order."""
    return sorted((output_dir / TEAMS_DIR).glob(f"*/{CATALOG_FILE}"))
