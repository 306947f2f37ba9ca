"""The docs name files and make targets that exist: a module renamed or a target dropped must take
its mentions along (docs/state-machine.md named a `runner_contract.py` long after it became
`contract/runner.py`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _tracked() -> list[str]:
    """The repository's files (git's list; the tree without the virtualenv outside a checkout)."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        out = ""
    return out.splitlines() or [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if ".venv" not in p.parts]


def test_every_python_file_the_docs_name_exists() -> None:
    files = _tracked()
    missing = []
    for page in PAGES:
        for name in sorted(set(re.findall(r"`([\w./-]+\.py)`", page.read_text()))):
            if not any(f == name or f.endswith("/" + name) for f in files):
                missing.append(f"{page.relative_to(ROOT)}: {name}")
    assert files and not missing, missing


def test_every_make_target_the_docs_name_exists() -> None:
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    named = {(page.relative_to(ROOT), t) for page in PAGES for t in re.findall(r"`make ([a-z][\w-]*)", page.read_text())}
    assert named and not [f"{page}: make {t}" for page, t in sorted(named) if t not in targets]


def test_every_cli_command_the_docs_name_exists() -> None:
    import click

    from jobplane.cli.app import main

    commands = set(main.list_commands(click.Context(main)))
    named = {(page.relative_to(ROOT), c) for page in PAGES for c in re.findall(r"`jobplane ([a-z][\w-]*)", page.read_text())}
    assert named and not [f"{page}: jobplane {c}" for page, c in sorted(named) if c not in commands]
