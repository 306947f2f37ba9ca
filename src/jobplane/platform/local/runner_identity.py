"""The identity of `jobplane dev`'s runner, as its "image" (issue 69 part 1).

On AWS a job's steps run in the runner image the pipeline built (its reference is part of each
job's definition when the compile is told it: contract/definition_digest.py). Locally the runner
is this installation's ``jobplane-runner`` run as a process, so its identity is what makes it
behave as it does: jobplane's version and a hash of the runner's code and of the contract
modules it imports. A changed runner is then a new definition of every job, as a new image is.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import jobplane

#: What the local task definition names (engine.py): the repository part of the identity.
LOCAL_RUNNER_REPOSITORY = "jobplane-runner"


def identity(package: Path) -> str:
    """``jobplane-runner:local@<version>+<12 hex digits>``: the hash over ``package``'s runner/
    and contract/ Python files (relative path and bytes, in path order)."""
    h = hashlib.sha256()
    for part in ("runner", "contract"):
        root = package / part
        for path in sorted(root.rglob("*.py")):
            h.update(f"{path.relative_to(package).as_posix()} {path.stat().st_size}\n".encode())
            h.update(path.read_bytes())
    return f"{LOCAL_RUNNER_REPOSITORY}:local@{jobplane.__version__}+{h.hexdigest()[:12]}"


@functools.cache
def local_runner_image() -> str:
    """This installation's runner identity (computed once per process: the code does not
    change under a running `jobplane dev`; a restart computes it again)."""
    return identity(Path(jobplane.__file__).parent)
