"""Every package shows its public API in a sorted ``__all__`` whose names resolve."""

from __future__ import annotations

import importlib
import inspect
import sys

import pytest

import clawlog.events.errors  # noqa: F401
from clawlog import events


def isort_order(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize(
    "package",
    [
        "clawlog.events",
        "clawlog.events.domain",
        "clawlog.events.errors",
        "clawlog.events.store",
        "clawlog.events.streams",
        "clawlog.events.testing",
        "clawlog.actors",
        "clawlog.actors.agents",
        "clawlog.actors.teams",
        "clawlog.actors.delegation",
        "clawlog.actors.providers",
        "clawlog.projections",
    ],
)
def test_all_is_sorted_and_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert names == sorted(names, key=isort_order)
    assert len(set(names)) == len(names)
    assert [name for name in names if not hasattr(module, name)] == []


def test_events_exports_what_its_modules_declare_public() -> None:
    exported = {name: getattr(events, name) for name in events.__all__}  # loads lazy ones
    declared = {
        name
        for module_name, module in sys.modules.items()
        if module_name.startswith("clawlog.events.")
        for name in getattr(module, "__all__", ())
    }
    assert set(events.__all__) <= declared
    # Public objects are the ones the submodules define, not copies.
    for name, obj in exported.items():
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__.startswith("clawlog.events."), name


def test_every_error_is_exported_and_has_one_root() -> None:
    for name in events.errors.__all__:
        error = getattr(events.errors, name)
        assert name in events.__all__
        assert issubclass(error, events.EventStoreError)
