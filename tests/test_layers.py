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


def import_graph(src: Path = SRC, runtime: bool = False) -> dict[str, set[str]]:
    """module -> the jobplane modules it imports (anywhere in its body: a lazy import counts).

    ``runtime``: only what importing and running the module can import, for the cycle test:
    not an ``if TYPE_CHECKING:`` block (never run: the idiom for two modules whose types name
    each other, a step and its kind); and with the packages Python runs on the way (importing
    ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``, except a package the importer is itself
    in), and ``from package import name`` depending on the package's ``__init__`` only when a
    name is not a module of it (a submodule is imported on its own)."""
    modules = {_module_name(p, src): p for p in (src / "jobplane").rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(), str(path))
        skipped = {id(n) for block in ast.walk(tree) if runtime and _type_checking_block(block)
                   for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                named = [f"{base}.{a.name}" for a in node.names]
                targets = named if runtime and all(n in modules for n in named) else [base] + named
            for target in targets:
                # the longest module that exists: "from jobplane.contract import names" -> jobplane.contract.names
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("jobplane") and target != name:
                    graph[name].add(target)
                    parts = target.split(".")
                    for i in range(2, len(parts)) if runtime else ():
                        parent = ".".join(parts[:i])
                        if parent in modules and parent != name and not name.startswith(parent + "."):
                            graph[name].add(parent)
    return graph


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, of any length: each strongly connected group of modules (Tarjan's
    algorithm, without recursion), as one cycle through it, first module repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts} - {"jobplane"})
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, set()) - {"jobplane"})))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, set()) - {"jobplane"}))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(_a_cycle(graph, set(group)))
    return groups


def _a_cycle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """One cycle through a strongly connected group: from its first module, the shortest way back."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph.get(node, set()) & group):
                if child == start:
                    return paths[node] + [start]
                if child not in paths:
                    paths[child] = paths[node] + [child]
                    nxt.append(child)
        frontier = nxt
    raise AssertionError("a strongly connected group has a cycle")


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
    """No import cycle of any length, a package's ``__init__`` and its own modules included (a
    facade that imports its modules, one of which imports the facade back, is a cycle)."""
    assert [" -> ".join(c) for c in cycles(import_graph(runtime=True))] == []


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / "jobplane" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "jobplane" / rel).write_text(text)
    return root


def test_the_cycle_finder_finds_a_long_cycle_and_one_through_a_packages_init(tmp_path: Path) -> None:
    """The cycles this test once missed (issue 63 item 4), rebuilt as files: a six-module cycle
    across packages whose first edge enters a package (model -> kinds, kinds/__init__ -> its
    module -> executors -> ... -> model), and a facade imported back by its own module; a
    type-only edge and a submodule imported from its own package are not cycles."""
    src = _package(tmp_path, {
        "__init__.py": "",
        "compiler/__init__.py": "",
        "compiler/model.py": "from jobplane.compiler import kinds\n",
        "compiler/kinds/__init__.py": "from jobplane.compiler.kinds.base import StepKind\n",
        "compiler/kinds/base.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from jobplane.compiler.model import Step\n"
                                   "class StepKind:\n    def executor(self):\n"
                                   "        from jobplane.compiler.executors.ecs import ECS\n"),
        "compiler/executors/__init__.py": "",
        "compiler/executors/ecs.py": "from jobplane.compiler.terraform_iam import statement\n",
        "compiler/terraform_iam.py": "from jobplane.compiler.secret_scope import SecretRef\n",
        "compiler/secret_scope.py": "from jobplane.compiler.model import PREFIX\n",
        "local/__init__.py": "",
        "local/patches/__init__.py": "from jobplane.local.patches import backends, other\nVERSION = 1\n",
        "local/patches/backends.py": "from jobplane.local import patches\n",
        "local/patches/other.py": "from jobplane.local.patches import backends\n",
    })
    found = cycles(import_graph(src, runtime=True))
    assert found == [
        ["jobplane.compiler.executors.ecs", "jobplane.compiler.terraform_iam", "jobplane.compiler.secret_scope",
         "jobplane.compiler.model", "jobplane.compiler.kinds", "jobplane.compiler.kinds.base",
         "jobplane.compiler.executors.ecs"],
        ["jobplane.local.patches", "jobplane.local.patches.backends", "jobplane.local.patches"],
    ]
    # the old check skipped every edge between a package and its own modules, and missed both
    graph = import_graph(src)
    assert [c for c in cycles({m: {t for t in ts if not (t.startswith(m + ".") or m.startswith(t + "."))}
                               for m, ts in graph.items()})] == []
    # broken where the codebase broke them, the finder finds nothing
    (src / "jobplane" / "compiler" / "secret_scope.py").write_text("PREFIX = 'ssm:'\n")
    (src / "jobplane" / "local" / "patches" / "backends.py").write_text("from jobplane.local.patches.other import x\n")
    (src / "jobplane" / "local" / "patches" / "other.py").write_text("x = 1\n")
    assert cycles(import_graph(src, runtime=True)) == []


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
