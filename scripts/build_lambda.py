"""Build the Lambda package the base module deploys (``var.lambda_package``).

    .venv/bin/python scripts/build_lambda.py [--out build/jobplane-lambda.zip]

What goes in: the runtime half of jobplane (``jobplane/contract``, ``jobplane/platform`` without
the embedded local AWS) and its third-party dependencies as wheels for the runtime and
architecture every function of ``terraform/platform`` declares (the runtime must be
``jobplane.contract.lambda_runtimes.CURRENT_RUNTIME``, the one table of runtimes and their dates), at the very versions installed in this
environment (the ones the tests ran), each checked against the hashes in requirements/runtime.txt. boto3 is not packaged: the Lambda Python runtime provides
it (https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html, "Runtime-included SDK").

Reproducible: two builds from the same sources and versions give the same bytes (entries sorted,
every timestamp 1980-01-01, fixed permissions, no bytecode), so Terraform's
``filebase64sha256`` changes only when the code does. Prints the path, size and SHA-256.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "terraform" / "platform"
LOCK = ROOT / "requirements" / "runtime.txt"  # versions and hashes (make lock)
#: Third-party packages the handlers import (besides boto3 and the stdlib), by distribution name.
DEPENDENCIES = ("pydantic", "pydantic-core", "typing-extensions", "annotated-types", "typing-inspection",
                "tzdata", "slack_sdk")
#: The parts of jobplane the handlers need; the local AWS (moto) stays out.
SOURCES = ("jobplane/__init__.py", "jobplane/contract", "jobplane/platform")
EXCLUDED = ("jobplane/platform/local",)
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
PLATFORMS = {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}


def module_text() -> str:
    return "\n".join(p.read_text() for p in sorted(MODULE.glob("*.tf")))


def declared_runtime(text: str) -> tuple[str, str]:
    """(python version, architecture) the module declares for its functions; all must agree,
    and the runtime must be the current one of jobplane.contract.lambda_runtimes."""
    from jobplane.contract.lambda_runtimes import CURRENT

    runtimes = set(re.findall(r'runtime\s*=\s*"python(\d+\.\d+)"', text))
    arches = set(re.findall(r'architectures\s*=\s*\["(x86_64|arm64)"\]', text))
    if len(runtimes) != 1 or len(arches) != 1:
        raise SystemExit(f"{MODULE}: expected one python runtime and one architecture for every function, "
                         f"found runtimes {sorted(runtimes)} and architectures {sorted(arches)}")
    if runtimes != {CURRENT.python}:
        raise SystemExit(f"{MODULE}: its functions declare python{runtimes.pop()}, but "
                         f"jobplane.contract.lambda_runtimes.CURRENT_RUNTIME is {CURRENT.identifier}")
    return runtimes.pop(), arches.pop()


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(lock_text: str) -> dict[str, str]:
    """distribution -> its entry in the lock (``name==version`` and every ``--hash``)."""
    entries: dict[str, str] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", lock_text):
        first = block.split(" ", 1)[0].split(";", 1)[0]
        if "==" in first:
            lines = [line.strip().rstrip("\\").strip() for line in block.splitlines()]
            entries[_key(first.split("==")[0])] = " ".join(line for line in lines if line and not line.startswith("#"))
    return entries


def pinned() -> list[str]:
    """The handlers' dependencies as the runtime lock has them, hashes included; each must be
    the version installed here (the one the tests ran), or the lock is stale."""
    entries = locked(LOCK.read_text())
    out = []
    for name in DEPENDENCIES:
        entry = entries.get(_key(name))
        installed = importlib.metadata.version(name)
        if entry is None or not entry.startswith(f"{entry.split('==')[0]}=={installed}"):
            raise SystemExit(f"{LOCK}: {name} is {'missing' if entry is None else entry.split(' ')[0]}, but the tests "
                             f"ran {installed}: refresh the environment (make test) or the lock (make lock)")
        out.append(entry)
    return out


def install_dependencies(target: Path, python_version: str, arch: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as requirements:
        requirements.write("\n".join(pinned()) + "\n")
        requirements.flush()
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--no-deps",
                        "--require-hashes", "--only-binary=:all:", "--platform", PLATFORMS[arch],
                        "--python-version", python_version, "--implementation", "cp", "--target", str(target),
                        "-r", requirements.name], check=True)


def copy_sources(target: Path) -> None:
    src = ROOT / "src"
    for rel in SOURCES:
        path = src / rel
        if path.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / rel)
            continue
        for file in path.rglob("*.py"):
            relative = file.relative_to(src).as_posix()
            if any(relative.startswith(e + "/") for e in EXCLUDED):
                continue
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target / relative)


def write_zip(tree: Path, out: Path) -> None:
    files = sorted((p for p in tree.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                    and p.suffix not in (".pyc", ".pyo")), key=lambda p: p.relative_to(tree).as_posix())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for path in files:
            info = zipfile.ZipInfo(path.relative_to(tree).as_posix(), FIXED_TIME)
            info.external_attr = (0o100755 if path.stat().st_mode & 0o111 else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever builds it
            z.writestr(info, path.read_bytes(), compresslevel=9)
    tmp.replace(out)


def build(out: Path) -> Path:
    python_version, arch = declared_runtime(module_text())
    with tempfile.TemporaryDirectory(prefix="jobplane-lambda-") as tmp:
        tree = Path(tmp) / "package"
        install_dependencies(tree, python_version, arch)
        copy_sources(tree)
        for junk in tree.glob("*.dist-info/RECORD"):  # lists install-time paths; not needed to import
            junk.unlink()
        for junk in tree.glob("*.dist-info/INSTALLER"):
            junk.unlink()
        write_zip(tree, out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "jobplane-lambda.zip")
    args = ap.parse_args()
    out = build(args.out)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    python_version, arch = declared_runtime(module_text())
    print(f"{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: {out.stat().st_size / 1e6:.2f} MB "
          f"(python{python_version}, {arch}), sha256 {digest}")


if __name__ == "__main__":
    main()
