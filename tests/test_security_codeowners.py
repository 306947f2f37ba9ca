"""What runs with the apply role is reviewed by the platform team (issue 64, item 1).

The apply job holds the apply role's keys while it runs code from the merged checkout: `pip
install` of requirements/ and pyproject.toml, src/, scripts/build_lambda.py, the runner
Dockerfile, the base module and the provider lock that `jobplane compile` writes into every root.
A pull request that changes only one of them, approved by one reviewer of another team, would get
CI's credentials on the next apply. These tests derive every path the apply job executes from the
workflow itself (its `run:` scripts, what they install, build and compile) and check each tracked
file under them against deploy/CODEOWNERS with GitHub's rule, the last matching pattern wins
(https://docs.github.com/en/repositories/managing-your-repositorys-settings-and-features/customizing-your-repository/about-code-owners#codeowners-syntax).
The same paths must be in the workflow's `paths` filter, so a change to them is planned and seen.
"""

from __future__ import annotations

import posixpath
import functools
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import yaml

from conftest import ROOT
from jobplane.compiler.output import PROVIDER_LOCK
from jobplane.contract.config import load_config

WORKFLOW = ROOT / "deploy" / "github-actions" / "jobplane.yml"
TEMPLATE = ROOT / "deploy" / "CODEOWNERS"

#: the template docs/deploy.md recommended before issue 64: no catch-all
OLD_TEMPLATE = """\
/jobs/billing/                  @acme/billing
/jobs/growth/                   @acme/growth
/jobs/platform/                 @acme/platform
/jobs/lib/                      @acme/platform
/jobplane.toml                  @acme/platform
/terraform/platform/            @acme/platform
/.github/                       @acme/platform
"""


# -- CODEOWNERS, as GitHub reads it ------------------------------------------------------------

def _glob(pattern: str) -> str:
    """gitignore-style glob to regex: `**` crosses directories, `*` and `?` do not."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return out


def codeowners_matches(pattern: str, path: str) -> bool:
    """Does a CODEOWNERS pattern own ``path`` (a file, relative to the repository root)? A
    pattern with a slash at its start or middle is anchored at the root; one without matches at
    any depth; a match of a directory owns everything beneath it (gitignore's rules, which
    CODEOWNERS follows)."""
    body = pattern.strip("/")
    anchored = pattern.startswith("/") or "/" in body
    tail = "/.*" if pattern.endswith("/") else "(/.*)?"
    head = "^" if anchored else "^(.*/)?"
    return re.match(head + _glob(body) + tail + "$", path) is not None


def parse_codeowners(text: str) -> list[tuple[str, list[str]]]:
    rules = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            pattern, *owners = line.split()
            rules.append((pattern, owners))
    return rules


def owners_of(rules: list[tuple[str, list[str]]], path: str) -> list[str]:
    """The owners of ``path``: the last matching line's (none when no line matches)."""
    found: list[str] = []
    for pattern, owners in rules:
        if codeowners_matches(pattern, path):
            found = owners
    return found


# -- what the apply job executes, derived from the workflow --------------------------------------

def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _exists(rel: str) -> bool:
    """A path of the repository as the workflow's checkout holds it: tracked by git (a file, or a
    directory holding one), not whatever lies in this working tree (an ignored ``build/``)."""
    if not rel or rel.startswith(("/", "-", "$")) or rel in (".", ".."):
        return False
    rel = rel.rstrip("/")
    tracked = _tracked()
    return rel in tracked or any(t.startswith(rel + "/") for t in tracked)


@functools.lru_cache(maxsize=1)
def _tracked() -> frozenset[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True, check=True).stdout
    return frozenset(p for p in out.split("\0") if p)


def _requirements(rel: str, seen: set[str]) -> None:
    """A requirements file and those it includes (`-r`, `-c`): pip reads each."""
    if rel in seen:
        return
    seen.add(rel)
    for line in (ROOT / rel).read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and words[0] in ("-r", "-c", "--requirement", "--constraint"):
            _requirements(posixpath.normpath(posixpath.join(posixpath.dirname(rel), words[1])), seen)


def _project() -> set[str]:
    """`pip install .`: setuptools runs pyproject.toml's build and packages what it finds."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    where = meta.get("tool", {}).get("setuptools", {}).get("packages", {}).get("find", {}).get("where", ["."])
    out = {"pyproject.toml", *where}
    readme = meta.get("project", {}).get("readme")
    if isinstance(readme, str):
        out.add(readme)
    return out


def _dockerfile(rel: str) -> set[str]:
    """What a Dockerfile copies from the build context into the image it builds."""
    out = {rel}
    for line in (ROOT / rel).read_text().splitlines():
        words = line.split()
        if words and words[0].upper() in ("COPY", "ADD"):
            srcs = [w for w in words[1:-1] if not w.startswith("--")]
            out |= {s.rstrip("/") for s in srcs if _exists(s.rstrip("/"))}
    return out


def _python_script(rel: str) -> set[str]:
    """A repository script and the repository paths it names as ``ROOT / "a" / "b"``."""
    out = {rel}
    for m in re.finditer(r'ROOT((?:\s*/\s*"[^"]+")+)', (ROOT / rel).read_text()):
        path = "/".join(re.findall(r'"([^"]+)"', m.group(1)))
        if _exists(path):
            out.add(path)
    return out


def _compile() -> set[str]:
    """`jobplane compile` then `terraform apply` of every root: the settings, the base module
    each root calls and the provider lock compile copies into each root. (The definitions under
    jobs/<team>/ are their team's by design: the sandbox evaluates them, and what they may
    produce is bounded by the compiler, docs/deploy.md "What a pull request can do".)"""
    config = load_config(ROOT)
    module = posixpath.normpath(posixpath.join(config.output_dir, config.platform_module))
    return {"jobplane.toml", module, PROVIDER_LOCK}


def apply_paths() -> dict[str, str]:
    """Every repository path (file or directory) the apply job executes or feeds to what it
    executes, with the line that made it one."""
    doc = _workflow()
    found: dict[str, str] = {}
    header = re.search(r"copy to ([\w./-]*\w)", WORKFLOW.read_text())
    assert header, "the workflow's header says where it is copied to"
    found[header.group(1)] = "the workflow itself"
    for step in doc["jobs"]["apply"]["steps"]:
        for line in step.get("run", "").replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            try:
                words = shlex.split(line)
            except ValueError:
                words = line.split()
            for i, word in enumerate(words):
                nxt = words[i + 1] if i + 1 < len(words) else ""
                if _exists(word):
                    found.setdefault(word, line)
                if word in ("-r", "--requirement", "-c", "--constraint") and _exists(nxt):
                    reqs: set[str] = set()
                    _requirements(nxt, reqs)
                    found.update({r: line for r in reqs})
                if word == "-f" and _exists(nxt) and "docker" in words:
                    found.update({p: line for p in _dockerfile(nxt)})
                if word == "python" and nxt.endswith(".py") and _exists(nxt):
                    found.update({p: line for p in _python_script(nxt)})
            if "pip" in words and "install" in words and words[-1] == ".":
                found.update({p: line for p in _project()})
            if words[:2] == ["jobplane", "compile"]:
                found.update({p: line for p in _compile()})
    return found


def tracked_files(paths: set[str]) -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--", *sorted(paths)],
                         capture_output=True, text=True, check=True).stdout
    return [p for p in out.split("\0") if p]


def not_platform_owned(template: str) -> list[str]:
    """The files the apply job executes whose owner under ``template`` is not its catch-all's
    (the platform team), each with its owners."""
    rules = parse_codeowners(template)
    catch_all = next((owners for pattern, owners in rules if pattern in ("*", "/**", "**")), None)
    platform = catch_all or ["@acme/platform"]
    paths = set(apply_paths())
    # each tracked file under them, and each path itself (the workflow's copy, a provider lock not
    # committed yet: a file added there later is owned by the same line)
    files = sorted(set(tracked_files(paths)) | {p + "/any-new-file" if (ROOT / p).is_dir() else p for p in paths})
    return [f"{f} -> {owners_of(rules, f) or 'nobody'}" for f in files if owners_of(rules, f) != platform]


# -- the tests ----------------------------------------------------------------------------------

def test_the_derivation_finds_what_the_apply_job_runs() -> None:
    paths = apply_paths()
    for expected in ("scripts/build_lambda.py", "requirements/runtime.txt", "pyproject.toml", "src",
                     "src/jobplane/runner/Dockerfile", "requirements/lambda.txt", "terraform/platform",
                     PROVIDER_LOCK, "jobplane.toml", ".github/workflows/jobplane.yml"):
        assert expected in paths, (expected, sorted(paths))


def test_every_path_the_apply_job_executes_is_owned_by_the_platform_team() -> None:
    template = TEMPLATE.read_text()
    rules = parse_codeowners(template)
    assert rules[0] == ("*", ["@acme/platform"]), "the template starts with the platform team's catch-all"
    assert not_platform_owned(template) == []


def test_the_old_template_left_the_apply_jobs_code_to_anyone() -> None:
    """The check itself: the template docs/deploy.md showed before issue 64 owned neither the
    Lambda build script nor the installed package."""
    missing = not_platform_owned(OLD_TEMPLATE)
    assert "scripts/build_lambda.py -> nobody" in missing
    assert any(m.startswith("src/jobplane/") for m in missing)
    assert "requirements/runtime.txt -> nobody" in missing


def test_a_team_line_after_the_catch_all_that_claims_the_apply_jobs_code_is_caught() -> None:
    attack = TEMPLATE.read_text() + "/scripts/   @acme/growth\nsrc/jobplane/runner/   @acme/growth\n"
    missing = not_platform_owned(attack)
    assert "scripts/build_lambda.py -> ['@acme/growth']" in missing
    assert "src/jobplane/runner/Dockerfile -> ['@acme/growth']" in missing


def test_the_team_lines_still_own_their_definitions() -> None:
    rules = parse_codeowners(TEMPLATE.read_text())
    assert owners_of(rules, "jobs/billing/month-end.jsonnet") == ["@acme/billing"]
    assert owners_of(rules, "jobs/growth/x/y.jsonnet") == ["@acme/growth"]
    assert owners_of(rules, "jobs/lib/jobplane.libsonnet") == ["@acme/platform"]


def _filter_matches(pattern: str, path: str) -> bool:
    """GitHub's `paths` filter glob: `**` crosses directories, `*` does not
    (https://docs.github.com/en/actions/writing-workflows/workflow-syntax-for-github-actions#filter-pattern-cheat-sheet)."""
    return re.match("^" + _glob(pattern) + "$", path) is not None


def test_the_workflow_plans_and_applies_on_a_change_to_any_of_it() -> None:
    doc = _workflow()
    on = doc.get("on", doc.get(True))
    for event in ("pull_request", "push"):
        patterns = on[event]["paths"]
        for rel in apply_paths():
            probe = rel + "/any/file.py" if (ROOT / rel).is_dir() else rel
            assert any(_filter_matches(p, probe) for p in patterns), (event, rel, patterns)


def test_docs_point_at_the_one_template() -> None:
    """One source: docs/deploy.md points at deploy/CODEOWNERS and keeps no copy of its own."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    assert "deploy/CODEOWNERS" in text
    assert "/jobs/billing/                  @acme/billing" not in text
