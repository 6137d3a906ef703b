"""The source tree as the structure tests see it: its modules, parsed with ``ast`` (nothing of
ours is imported), the import graph between them, and a finder of import circles.

The four top-level folders install as ``clawlog.actors``, ``clawlog.events``, ... through the
symlinks in ``clawlog/``; the tree is read from the folders themselves, and ``clawlog/`` adds
the front door and the CLI.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).parents[2]
#: The packages whose import circles count, by their installed name.
PACKAGES = (
    "clawlog.actors",
    "clawlog.events",
    "clawlog.projections",
    "clawlog.tools",
    "clawlog.cli",
)
#: The top-level folders installed under ``clawlog``.
FOLDERS = ("actors", "events", "projections", "tools")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def relative(self) -> str:
        return str(self.path.relative_to(ROOT))

    def tree(self) -> ast.Module:
        return _parse(self.path)


@dataclass(frozen=True)
class Edge:
    """``importer`` imports ``imported`` at ``line``; ``where`` tells how (for messages)."""

    importer: str
    imported: str
    line: int
    where: str


@cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _name(path: Path, under: Path, prefix: tuple[str, ...]) -> str:
    parts = [*prefix, *path.relative_to(under).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Module]:
    """Every module of the installed ``clawlog`` package, by its dotted name."""
    found: dict[str, Module] = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found[_name(path, ROOT, ("clawlog",))] = Module(_name(path, ROOT, ("clawlog",)), path)
    front = ROOT / "clawlog"
    for path in [*sorted(front.glob("*.py")), *sorted((front / "cli").rglob("*.py"))]:
        name = _name(path, ROOT, ())
        found[name] = Module(name, path)
    return found


def package_of(name: str) -> str:
    """The package of :data:`PACKAGES` a module belongs to (``clawlog`` for the front door)."""
    for package in PACKAGES:
        if name == package or name.startswith(package + "."):
            return package
    return "clawlog"


def _base(module: Module, node: ast.ImportFrom) -> str | None:
    if not node.level:
        return node.module
    parts = module.name.split(".")
    if not module.is_package:
        parts.pop()
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def _imported(module: Module, node: ast.Import | ast.ImportFrom, known: Mapping[str, Module]):
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in known:
                yield alias.name
        return
    base = _base(module, node)
    if base is None:
        return
    for alias in node.names:
        if f"{base}.{alias.name}" in known:
            yield f"{base}.{alias.name}"  # a submodule: ``from . import session``
        elif base in known:
            yield base  # a name defined in ``base``


def _contexts(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of ``tree``, wherever it is, with where it is."""

    def walk(node: ast.AST, where: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, where
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(child, f"inside {child.name}()")
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from walk(child, "under TYPE_CHECKING")
            else:
                yield from walk(child, where)

    yield from walk(tree, "at module level")


def import_edges(known: Mapping[str, Module] | None = None) -> list[Edge]:
    """Every import between modules of ``known`` (default: the whole tree), counting those
    under ``if TYPE_CHECKING:`` and those inside functions. A package's ``__init__`` imported
    only because a submodule of it is (``from .agents.session import Session``) is not an
    edge: only the module named is."""
    known = modules() if known is None else known
    edges: list[Edge] = []
    for module in known.values():
        for node, where in _contexts(module.tree()):
            for imported in _imported(module, node, known):
                if imported != module.name:
                    edges.append(Edge(module.name, imported, node.lineno, where))
    return edges


def package_loads(edges: Iterable[Edge], known: Mapping[str, Module] | None = None) -> list[Edge]:
    """The ``__init__`` modules that ``edges`` load besides the module they name: importing
    ``clawlog.tools.exec.analysis`` from ``clawlog.tools.approvals`` runs
    ``clawlog/tools/exec/__init__.py`` first (the importer's own packages are loaded already)."""
    known = modules() if known is None else known
    loads: list[Edge] = []
    for edge in edges:
        parts = edge.imported.split(".")
        for end in range(1, len(parts)):
            package = ".".join(parts[:end])
            inside = edge.importer == package or edge.importer.startswith(package + ".")
            if package in known and not inside:
                where = f"{edge.where}, loads {package} to import {edge.imported}"
                loads.append(Edge(edge.importer, package, edge.line, where))
    return loads


def graph_of(edges: Iterable[Edge]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, set()).add(edge.imported)
        graph.setdefault(edge.imported, set())
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, without
    recursion): each is a set of modules every one of which imports, through the others,
    every other one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    nodes = set(graph) | {w for targets in graph.values() for w in targets}
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def circles_inside_packages(edges: Iterable[Edge]) -> list[frozenset[str]]:
    """The import circles whose modules all belong to one package: per package, the circles
    of the graph of imports between its own modules."""
    by_package: dict[str, list[Edge]] = {}
    for edge in edges:
        if package_of(edge.importer) == package_of(edge.imported):
            by_package.setdefault(package_of(edge.importer), []).append(edge)
    return [circle for inner in by_package.values() for circle in circles(graph_of(inner))]


def describe(circle: frozenset[str], edges: Iterable[Edge]) -> str:
    """The circle's modules and every import between them, with file, line and context."""
    lines = [" <-> ".join(sorted(circle))]
    for edge in sorted(set(edges), key=lambda e: (e.importer, e.line, e.imported)):
        if edge.importer in circle and edge.imported in circle:
            path = modules()[edge.importer].relative if edge.importer in modules() else "?"
            lines.append(
                f"    {edge.importer} -> {edge.imported}  ({path}:{edge.line}, {edge.where})"
            )
    return "\n".join(lines)
