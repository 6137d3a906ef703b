"""Every package shows its public API in a sorted ``__all__`` whose names resolve."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "package",
    [
        "events",
        "actors",
        "actors.agents",
        "actors.teams",
        "actors.delegation",
        "actors.models",
        "projections",
    ],
)
def test_all_is_sorted_and_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    # isort style (ruff RUF022): CONSTANTS, then Classes, then functions, each alphabetical.
    assert names == sorted(
        names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    assert all(hasattr(module, name) for name in names)
