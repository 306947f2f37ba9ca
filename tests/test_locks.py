"""What CI, the images and the Lambda package install is pinned exactly (issue 40, item 12): the
pipeline's actions by commit, Python dependencies by version and hash from the locks that
`make lock` writes (requirements/), and the locks agree with pyproject.toml and with each other."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from conftest import ROOT

DEV_LOCK = ROOT / "requirements" / "dev.txt"
RUNTIME_LOCK = ROOT / "requirements" / "runtime.txt"
WORKFLOW = ROOT / "deploy" / "github-actions" / "jobplane.yml"


def key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(lock: Path) -> dict[str, tuple[str, list[str], str]]:
    """distribution -> (version, its hashes, its environment marker)."""
    out = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", lock.read_text()):
        head = block.split(" \\", 1)[0].strip()
        if "==" not in head:
            continue
        requirement, _, marker = head.partition(";")
        name, version = requirement.strip().split("==")
        out[key(name)] = (version, re.findall(r"--hash=sha256:([0-9a-f]{64})", block), marker.strip())
    return out


def test_every_locked_package_has_its_hashes() -> None:
    for lock in (DEV_LOCK, RUNTIME_LOCK):
        locked = entries(lock)
        assert len(locked) > 20, lock
        assert not [name for name, (_, hashes, _) in locked.items() if not hashes], lock
        assert "make lock" in lock.read_text().split("\n", 2)[1], "the lock says how it is refreshed"


def test_the_locks_satisfy_pyproject_and_agree() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dev, runtime = entries(DEV_LOCK), entries(RUNTIME_LOCK)
    for text in project["dependencies"]:
        requirement = Requirement(text)
        version = runtime[key(requirement.name)][0]
        assert requirement.specifier.contains(version, prereleases=True), (text, version)
    for text in [*project["optional-dependencies"]["test"], *project["optional-dependencies"]["local"]]:
        requirement = Requirement(text)
        if key(requirement.name) != "jobplane":
            assert requirement.specifier.contains(dev[key(requirement.name)][0], prereleases=True), text
    # what ships (runtime) is what the tests ran (dev): one version of each shared package
    assert {n: v[0] for n, v in runtime.items()} == {n: dev[n][0] for n in runtime}
    assert not set(runtime) - set(dev)


def test_the_test_environment_is_the_lock() -> None:
    """make test installs requirements/dev.txt with --require-hashes: each package here is the
    locked version (so a stale environment or lock shows as a failure, not as drift)."""
    from packaging.markers import Marker

    installed = {key(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    for name, (version, _, marker) in entries(DEV_LOCK).items():
        if marker and not Marker(marker).evaluate():
            continue
        assert installed.get(name) == version, (name, installed.get(name), version, sys.prefix)


def test_what_ci_and_the_images_install_is_checked_against_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes -r requirements/dev.txt" in makefile
    portal = (ROOT / "src/jobplane/portal/Dockerfile").read_text()
    assert "--require-hashes -r /tmp/jobplane/requirements/runtime.txt" in portal
    assert re.search(r"pip install --no-cache-dir --no-deps /tmp/jobplane", portal)
    workflow = WORKFLOW.read_text()
    installs = re.findall(r"pip install[^\n]*", workflow)
    assert installs and all("--require-hashes -r requirements/runtime.txt" in i or "--no-deps" in i for i in installs), installs
    assert "--require-hashes" in (ROOT / "scripts/build_lambda.py").read_text()


def test_every_action_is_pinned_to_a_commit_with_its_version_beside_it() -> None:
    uses = re.findall(r"uses:\s*(\S+)(.*)", WORKFLOW.read_text())
    assert len(uses) >= 6
    for ref, rest in uses:
        action, _, commit = ref.partition("@")
        assert re.fullmatch(r"[0-9a-f]{40}", commit), f"{action} is not pinned to a commit: {ref}"
        assert re.fullmatch(r"\s*# v\d+\.\d+\.\d+", rest), f"{action}: say the version it is ({rest!r})"
