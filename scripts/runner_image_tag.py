"""Print the runner image's tag: a name for what the image is built from, not for the commit.

Why not the commit: a job's definition digest includes the runner image (contract/
definition_digest.py, issue 69 part 1), so a tag that changed with every merge would make every
job's digest, and so every team root, change with every merge, a one-line edit of one job
included. The image is a function of its inputs: the files the Dockerfile copies, the Dockerfile
itself, and the application image it is built FROM. This tag is the SHA-256 of those, so it
moves exactly when the image's content would:

- each file or folder a ``COPY`` line of the Dockerfile names, by its git object id at HEAD
  (``git rev-parse HEAD:<path>``: a tree's id covers every file under it, names and modes
  included; what is committed, not a working tree's stray files);
- the Dockerfile's own object id;
- the application image's digest (``sha256:...``), not its tag: a tag such as ``myapp:latest``
  moves without its name changing. The pipeline resolves it (``docker buildx imagetools
  inspect``) and builds FROM that digest, so the image holds what the tag says.

ECR's tags are immutable in the base module's repository, so a tag names one push for as long as
it is kept; a merge that changes only job definitions finds its tag pushed and builds nothing
(deploy/github-actions/jobplane.yml). The COPY sources are read from the Dockerfile, so a source
added there is covered without an edit here (tests/test_runner_image_tag.py holds the two
together).

    python scripts/runner_image_tag.py --app-image-digest sha256:<64 hex>
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

DOCKERFILE = "src/jobplane/runner/Dockerfile"
#: The tag's own format: a change to what is hashed gets a new prefix, never a reused tag.
PREFIX = "c1-"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def copy_sources(dockerfile_text: str) -> list[str]:
    """The build-context paths the Dockerfile's COPY lines read (``--from`` copies read another
    stage, not the context, and are skipped; flags such as ``--chown`` are dropped)."""
    sources: list[str] = []
    for line in _instructions(dockerfile_text):
        words = shlex.split(line)
        if not words or words[0].upper() != "COPY":
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        if any(w.startswith("--from") for w in words[1:]) or len(args) < 2:
            continue
        sources.extend(a.rstrip("/") or "." for a in args[:-1])
    return sources


def _instructions(text: str) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    out: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append(current + line)
        current = ""
    if current:
        out.append(current)
    return out


def object_id(repo: Path, path: str, ref: str = "HEAD") -> str:
    done = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "--end-of-options",
                           f"{ref}:{path}"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"runner_image_tag: {path} (copied by {DOCKERFILE}) is not committed at {ref}")
    return done.stdout.strip()


def tag(repo: Path, app_image_digest: str, ref: str = "HEAD") -> str:
    if not DIGEST.fullmatch(app_image_digest):
        raise SystemExit(f"runner_image_tag: --app-image-digest must be sha256:<64 hex digits>, "
                         f"not {app_image_digest[:80]!r}")
    shown = subprocess.run(["git", "-C", str(repo), "show", f"{object_id(repo, DOCKERFILE, ref)}"],
                           capture_output=True, text=True, check=True)
    dockerfile = shown.stdout
    lines = [f"dockerfile {object_id(repo, DOCKERFILE, ref)}", f"app-image {app_image_digest}"]
    lines += [f"copy {path} {object_id(repo, path, ref)}" for path in copy_sources(dockerfile)]
    return PREFIX + hashlib.sha256("\n".join(lines).encode()).hexdigest()[:40]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app-image-digest", required=True,
                        help="the application image's digest (sha256:...), the image the runner is built FROM")
    parser.add_argument("--repo", type=Path, default=Path("."), help="the repository (default: here)")
    parser.add_argument("--ref", default="HEAD", help="the commit whose files the image is built from")
    args = parser.parse_args(argv)
    print(tag(args.repo, args.app_image_digest, args.ref))
    return 0


if __name__ == "__main__":
    sys.exit(main())
