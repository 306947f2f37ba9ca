"""The package's import graph flows one way (docs/architecture.md): the contract at the bottom;
the compiler, the runtime and the runner on it; the portal on the runtime; the dev server and
the CLI on top. Imports inside functions count too: a lazy import is still a dependency."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: Which parts each part may import (besides itself and the package root's version).
ALLOWED = {
    "contract": set(),
    "compiler": {"contract"},
    "platform": {"contract"},
    "runner": {"contract"},
    "portal": {"contract", "platform"},
    "devserver": {"contract", "compiler", "platform", "portal"},
    "importer": {"contract", "compiler"},
    "cli": {"contract", "compiler", "platform", "portal", "devserver", "importer"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the jobplane modules it imports (anywhere in its body)."""
    modules = {_module_name(p): p for p in (SRC / "jobplane").rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                # the longest module that exists: "from jobplane.contract import names" -> jobplane.contract.names
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("jobplane") and target != name:
                    graph[name].add(target)
    return graph


def part_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_import_goes_down_the_layers() -> None:
    graph = import_graph()
    assert len(graph) > 40  # the walk really read the package
    back_edges = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if (src := part_of(module)) in ALLOWED and (dst := part_of(target)) is not None
        and dst != src and dst not in ALLOWED[src]
    )
    assert back_edges == []


def test_no_module_imports_itself_through_others() -> None:
    graph = import_graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt == "jobplane" or nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue  # the version, or a package and its own modules (an __init__ re-exporting one)
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]) if nxt in path else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_contract_imports_nothing_but_itself_and_libraries() -> None:
    graph = import_graph()
    outside = sorted(f"{m} imports {t}" for m, ts in graph.items() if part_of(m) == "contract"
                     for t in ts if part_of(t) != "contract")
    assert outside == []


def test_the_benchmarks_import_only_what_the_package_has() -> None:
    """bench/ is run by hand (`make bench`), not by the tests: a name moved in the package broke
    bench/dev_e2e.py for weeks (an import inside a function, found only when it ran). Every
    ``from jobplane... import name`` in a benchmark, at any depth, must resolve."""
    import importlib.util

    missing = []
    for path in sorted((SRC.parent / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "jobplane":
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if not hasattr(module, alias.name) and \
                            importlib.util.find_spec(f"{node.module}.{alias.name}") is None:
                        missing.append(f"{path.name}:{node.lineno}: {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "jobplane":
                        importlib.import_module(alias.name)
    assert not missing, missing
