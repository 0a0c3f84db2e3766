"""The package's import graph: arrays/ has no import circle and never reaches up.

The graph is read from the source with ``ast``: every ``import`` a module
can execute (at import time or inside a function), except those under
``if TYPE_CHECKING:``, which only a type checker runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import autopar

ROOT = Path(autopar.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in _runtime_imports(ast.Module([child], [])))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _runtime_imports(node)


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of autopar it imports (a ``from pkg import name`` names ``pkg.name``
    when that is a module, else ``pkg``)."""
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        if name != package and not name.startswith(package + "."):
            continue
        edges = graph.setdefault(name, set())
        for node in _runtime_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name.startswith("autopar"))
                continue
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
            if not base.startswith("autopar"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                edges.add(sub if sub in files else base)
        edges.discard(name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle among the graph's own modules, as a path that returns to its start, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if n not in graph:
                continue
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_arrays_has_no_import_circle() -> None:
    graph = import_graph("autopar.arrays")
    assert "autopar.arrays._dispatch" in graph and "autopar.arrays._array" in graph["autopar.arrays._dispatch"]
    cycle = find_cycle(graph)
    assert cycle is None, "import circle in autopar.arrays: " + " -> ".join(cycle or [])


def test_arrays_imports_only_downward() -> None:
    above = ("autopar.cluster", "autopar.nn", "autopar.parallel", "autopar.profiler", "autopar.cli", "autopar.datasets")
    for module, edges in import_graph("autopar.arrays").items():
        up = sorted(e for e in edges if e.startswith(above))
        assert not up, f"{module} imports {up}, a layer above the arrays (register from there instead)"


def test_engine_and_devices_never_import_arrays() -> None:
    for package in ("autopar.engine", "autopar.devices"):
        for module, edges in import_graph(package).items():
            up = sorted(e for e in edges if e.startswith(("autopar.arrays", "autopar.cluster")))
            assert not up, f"{module} imports {up}"
