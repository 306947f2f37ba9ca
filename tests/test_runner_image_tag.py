"""The runner image's tag names what the image is built from (scripts/runner_image_tag.py, issue
69 part 1): it moves when a file the Dockerfile copies, the Dockerfile or the application
image's digest moves, and not when a definition or anything else the image does not hold does,
so a merge of definitions keeps the image and every other job's digest."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import runner_image_tag  # noqa: E402

GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"]
APP = "sha256:" + "1" * 64


def _commit(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", "x"], check=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run([*GIT, "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, {
        "src/jobplane/runner/Dockerfile": (ROOT / runner_image_tag.DOCKERFILE).read_text(),
        "pyproject.toml": "[project]\nname='x'\n", "README.md": "x\n", "requirements/lambda.txt": "a==1\n",
        "src/jobplane/runner/main.py": "print(1)\n", "jobs/billing/a.jsonnet": "{}\n", "docs/a.md": "a\n"})
    return tmp_path


def test_the_tag_moves_with_what_the_image_holds_and_only_with_that(repo: Path) -> None:
    first = runner_image_tag.tag(repo, APP)
    assert re.fullmatch(r"c1-[0-9a-f]{40}", first)
    _commit(repo, {"jobs/billing/a.jsonnet": "{ edited: true }\n", "docs/a.md": "b\n"})
    assert runner_image_tag.tag(repo, APP) == first  # definitions and docs are not in the image
    (repo / "src/jobplane/runner/main.py").write_text("print(2)\n")  # not committed: not what CI builds
    assert runner_image_tag.tag(repo, APP) == first
    assert runner_image_tag.tag(repo, "sha256:" + "2" * 64) != first  # another application image
    seen = {first}
    for rel, text in (("src/jobplane/runner/main.py", "print(2)\n"), ("requirements/lambda.txt", "a==2\n"),
                      ("pyproject.toml", "[project]\nname='y'\n"), ("README.md", "y\n"),
                      ("src/jobplane/runner/Dockerfile", (ROOT / runner_image_tag.DOCKERFILE).read_text() + "# x\n")):
        _commit(repo, {rel: text})
        tag = runner_image_tag.tag(repo, APP)
        assert tag not in seen, rel
        seen.add(tag)


def test_a_source_the_dockerfile_comes_to_copy_is_covered_without_an_edit_of_the_script(repo: Path) -> None:
    before = runner_image_tag.tag(repo, APP)
    dockerfile = (repo / runner_image_tag.DOCKERFILE).read_text().replace(
        "COPY src /tmp/jobplane/src", "COPY src /tmp/jobplane/src\nCOPY --chown=1000 \\\n  docs /opt/docs")
    _commit(repo, {runner_image_tag.DOCKERFILE: dockerfile})
    with_docs = runner_image_tag.tag(repo, APP)
    assert with_docs != before
    _commit(repo, {"docs/a.md": "c\n"})  # now in the image: the tag moves with it
    assert runner_image_tag.tag(repo, APP) != with_docs


def test_the_shipped_dockerfiles_copy_sources_are_each_read() -> None:
    """Every build-context path of the real Dockerfile's COPY lines (read here by a plain
    match, apart from the script's parser) is hashed, and each is committed."""
    text = (ROOT / runner_image_tag.DOCKERFILE).read_text()
    expected = [w for line in re.findall(r"^COPY\s+(.+)$", text, re.M) for w in line.split()[:-1]]
    assert runner_image_tag.copy_sources(text) == expected and "src" in expected
    for rel in expected:
        assert (ROOT / rel).exists(), rel


def test_it_refuses_what_is_not_a_digest(repo: Path) -> None:
    for bad in ("", "myapp:latest", "sha256:abc", "sha256:" + "G" * 64):
        done = subprocess.run([sys.executable, str(ROOT / "scripts/runner_image_tag.py"), "--repo", str(repo),
                               "--app-image-digest", bad], capture_output=True, text=True)
        assert done.returncode != 0 and "sha256:<64 hex digits>" in done.stderr, bad
