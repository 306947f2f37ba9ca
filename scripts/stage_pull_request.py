"""Put a pull request's definitions into a checkout of its base branch, and nothing else, so that
the pipeline's plan job compiles and plans them with the base branch's jobplane, compiler and
base module while it holds AWS credentials (issue 40, item 1).

    python TRUSTED/scripts/stage_pull_request.py TRUSTED PR

TRUSTED is the base commit's checkout (its code runs), PR the pull request's (only read as
data). Copied: PR's jobplane.toml and its definitions directory (`jobs_dir`), replacing the
base's. Refused, with the reason, when the pull request moves what decides which files
Terraform or Python would read: `jobs_dir`, `output_dir` or `platform_module` differing from the
base's (such a change is planned after it is merged, by the apply), a definitions directory that
is a symbolic link, or one that holds a symbolic link leading out of it. Everything else the pull
request changes (jobplane's own code, the base module, scripts, this workflow's other steps) is
not used by the plan: the plan shows the pull request's definitions on the base branch's platform.

Exit status 0 when staged, 1 when refused (nothing is copied then).
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from pathlib import Path

KEYS = ("jobs_dir", "output_dir", "platform_module")
DEFAULTS = {"jobs_dir": "jobs", "output_dir": "terraform/jobs", "platform_module": "../platform"}


def placement(root: Path) -> dict[str, str]:
    platform = tomllib.loads((root / "jobplane.toml").read_text()).get("platform", {})
    return {k: str(platform.get(k, DEFAULTS[k])) for k in KEYS}


def problems(trusted: Path, pr: Path) -> list[str]:
    out = []
    if not (pr / "jobplane.toml").is_file() or (pr / "jobplane.toml").is_symlink():
        return ["the pull request has no jobplane.toml as a regular file"]
    try:
        base, theirs = placement(trusted), placement(pr)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        return [f"the pull request's jobplane.toml does not parse: {e}"]
    for key in KEYS:
        if base[key] != theirs[key]:
            out.append(f"[platform] {key} changes from {base[key]!r} to {theirs[key]!r}: the plan of a pull request "
                       "uses the base branch's layout; this change is planned and applied after it is merged")
    jobs = pr / base["jobs_dir"]
    if jobs.is_symlink():
        out.append(f"{base['jobs_dir']} is a symbolic link")
    elif jobs.is_dir():
        for dirpath, dirnames, filenames in os.walk(jobs):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                if not path.is_symlink():
                    continue
                try:
                    real = path.resolve()
                except (RuntimeError, OSError):  # a loop (issue 48 item 8: it crashed the staging)
                    out.append(f"{path.relative_to(pr)} is a symbolic link loop")
                    continue
                if not real.is_relative_to(jobs.resolve()):
                    out.append(f"{path.relative_to(pr)} is a symbolic link leading out of {base['jobs_dir']}")
    return out


def stage(trusted: Path, pr: Path) -> None:
    jobs_dir = placement(trusted)["jobs_dir"]
    target = trusted / jobs_dir
    if target.exists():
        shutil.rmtree(target)
    if (pr / jobs_dir).is_dir():
        shutil.copytree(pr / jobs_dir, target, symlinks=True)
    shutil.copyfile(pr / "jobplane.toml", trusted / "jobplane.toml")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    trusted, pr = (Path(a).resolve() for a in argv)
    found = problems(trusted, pr)
    for problem in found:
        print(f"refused: {problem}", file=sys.stderr)
    if found:
        return 1
    stage(trusted, pr)
    print(f"staged the pull request's jobplane.toml and {placement(trusted)['jobs_dir']}/ into {trusted}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
