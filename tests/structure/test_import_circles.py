"""No module imports another that imports it back inside one package (issue 23), counting
imports under ``if TYPE_CHECKING:`` and imports inside functions, except through a seam
documented here.
"""

from __future__ import annotations

from pathlib import Path

from tests.structure.source_tree import (
    Edge,
    Module,
    circles,
    circles_inside_packages,
    describe,
    import_edges,
    package_loads,
)

#: Import circles allowed inside a package, each with why it is a seam. A circle is allowed
#: only as it is listed: one that grows (another module joins it) fails again.
DOCUMENTED_SEAMS: dict[frozenset[str], str] = {}


def test_no_import_circles_inside_a_package() -> None:
    edges = import_edges()
    found = [c for c in circles_inside_packages(edges) if c not in DOCUMENTED_SEAMS]
    report = "\n".join(describe(circle, edges) for circle in sorted(found, key=sorted))
    assert not found, f"{len(found)} import circle(s) inside a package:\n{report}"


def test_no_import_circles_through_a_package_init() -> None:
    """Importing ``a.b.c`` runs ``a/b/__init__.py`` first: an ``__init__`` that imports a
    module which imports a sibling of that ``__init__``'s package closes a circle too."""
    edges = import_edges()
    edges += package_loads(edges)
    found = [c for c in circles_inside_packages(edges) if c not in DOCUMENTED_SEAMS]
    report = "\n".join(describe(circle, edges) for circle in sorted(found, key=sorted))
    assert not found, f"{len(found)} import circle(s) inside a package:\n{report}"


def test_every_documented_seam_is_still_a_circle() -> None:
    edges = import_edges()
    current = {
        *circles_inside_packages(edges),
        *circles_inside_packages(edges + package_loads(edges)),
    }
    stale = [sorted(seam) for seam in DOCUMENTED_SEAMS if seam not in current]
    assert not stale, f"documented seams that are no longer circles: {stale}"


def test_circle_finder_on_a_small_graph() -> None:
    graph = {
        "a": {"b"},
        "b": {"c"},
        "c": {"a", "d"},  # a -> b -> c -> a
        "d": {"e"},
        "e": {"d"},  # d <-> e
        "f": {"a"},  # leads into a circle, is in none
        "g": set(),
    }
    assert sorted(map(sorted, circles(graph))) == [["a", "b", "c"], ["d", "e"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_circles_count_only_inside_one_package() -> None:
    def edge(importer: str, imported: str) -> Edge:
        return Edge(importer, imported, 1, "at module level")

    across = [
        edge("clawlog.actors.x", "clawlog.tools.y"),
        edge("clawlog.tools.y", "clawlog.actors.x"),
    ]
    inside = [
        edge("clawlog.actors.x", "clawlog.actors.agents.z"),
        edge("clawlog.actors.agents.z", "clawlog.actors.x"),
    ]
    assert circles_inside_packages(across) == []
    assert circles_inside_packages(inside) == [
        frozenset({"clawlog.actors.x", "clawlog.actors.agents.z"})
    ]


def test_imports_under_type_checking_and_in_functions_are_edges(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import A\n")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\nclass A: ...\n"
    )
    (package / "b.py").write_text("def make():\n    from . import c\n    return c\n")
    (package / "c.py").write_text("from pkg.a import A\nfrom .. import pkg\n")
    known = {
        name: Module(name, package / file)
        for name, file in [
            ("pkg", "__init__.py"),
            ("pkg.a", "a.py"),
            ("pkg.b", "b.py"),
            ("pkg.c", "c.py"),
        ]
    }
    found = {(e.importer, e.imported, e.where) for e in import_edges(known)}
    assert found == {
        ("pkg", "pkg.a", "at module level"),
        ("pkg.a", "pkg.b", "under TYPE_CHECKING"),
        ("pkg.b", "pkg.c", "inside make()"),
        ("pkg.c", "pkg.a", "at module level"),
    }
    assert circles({e.importer: {e.imported} for e in import_edges(known)}) == [
        frozenset({"pkg.a", "pkg.b", "pkg.c"})
    ]


def test_importing_a_submodule_loads_its_packages() -> None:
    known = {
        name: Module(name, Path(name))
        for name in ["pkg", "pkg.sub", "pkg.sub.x", "pkg.sub.y", "pkg.other"]
    }
    edges = [
        Edge("pkg.other", "pkg.sub.x", 1, "at module level"),
        Edge("pkg.sub.y", "pkg.sub.x", 1, "at module level"),
    ]
    assert {(e.importer, e.imported) for e in package_loads(edges, known)} == {
        ("pkg.other", "pkg.sub")  # pkg is loaded already, and pkg.sub.y's packages too
    }
