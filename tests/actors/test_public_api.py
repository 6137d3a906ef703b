"""The actors packages show a sorted public API whose names resolve, one error root, and
the layering of DESIGN.md: ``events`` imports nothing of ours, ``tools`` and
``projections`` never import ``actors``."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from clawlog import actors
from clawlog.actors import errors

ROOT = Path(__file__).parents[2]
PACKAGES = [
    "clawlog.actors",
    "clawlog.actors.agents",
    "clawlog.actors.delegation",
    "clawlog.actors.providers",
    "clawlog.actors.replay",
    "clawlog.actors.teams",
]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff RUF022: CONSTANTS, then Classes, then functions, each alphabetical.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_every_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert names == sorted(names, key=_isort_key)
    assert len(set(names)) == len(names)
    assert [name for name in names if not hasattr(module, name)] == []


def test_every_error_of_the_package_derives_from_the_one_root() -> None:
    # Runtime, providers, re-run and MCP errors: one module, one root.
    raised = [getattr(errors, name) for name in errors.__all__]
    assert all(issubclass(cls, errors.ActorError) for cls in raised)
    assert {"ModelError", "ReplayError", "McpError", "SubagentLimitError"} <= set(errors.__all__)
    # ...and the package exports every one of them: one place to import an error from.
    assert set(errors.__all__) <= set(actors.__all__)


def _importers(package: str, forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in (ROOT / package).rglob("*.py"):
        for line in path.read_text().splitlines():
            words = line.split()
            if (
                words[:1] in (["import"], ["from"])
                and words[1].removeprefix("clawlog.").split(".")[0] in forbidden
            ):
                found.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("events", ("actors", "tools", "projections")),
        ("tools", ("actors", "projections")),
        ("projections", ("actors", "tools")),
    ],
)
def test_dependencies_point_one_way(package: str, forbidden: tuple[str, ...]) -> None:
    assert _importers(package, forbidden) == []
