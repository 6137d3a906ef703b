"""The tools package shows its public API in a sorted ``__all__`` whose names resolve."""

from __future__ import annotations

import importlib

import pytest


def _isort_key(name: str) -> tuple[int, str]:
    # ruff RUF022: CONSTANTS, then Classes, then functions, each alphabetical.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize(
    "package",
    [
        "clawlog.tools",
        "clawlog.tools.builtins",
        "clawlog.tools.custom",
        "clawlog.tools.exec",
        "clawlog.tools.sandbox",
        "clawlog.tools.web",
        "clawlog.tools.workspace",
    ],
)
def test_all_is_sorted_and_every_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names = list(module.__all__)
    assert names == sorted(names, key=_isort_key)
    assert len(set(names)) == len(names)
    missing = [name for name in names if not hasattr(module, name)]
    assert missing == []


def test_the_tool_events_are_registered_in_the_default_registry() -> None:
    from clawlog.events import default_registry
    from clawlog.events.domain.tool import TOOL_EVENTS

    tags = default_registry().tags()
    assert {cls.__struct_config__.tag for cls in TOOL_EVENTS} <= tags


def test_tools_never_imports_actors() -> None:
    import pathlib

    root = pathlib.Path(importlib.import_module("clawlog.tools").__file__).parent  # type: ignore[arg-type]
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "clawlog.actors" in path.read_text() or "from actors" in path.read_text()
    ]
    assert offenders == []


def test_every_error_of_the_tool_system_derives_from_the_root() -> None:
    # Pipeline, registry, exec, sandbox and workspace errors: one module, one root. The
    # package exports the root and what a tool author raises (the ToolCallError kinds);
    # the errors our own tools raise stay in clawlog.tools.errors.
    from clawlog import tools
    from clawlog.tools import errors

    raised = [getattr(errors, name) for name in errors.__all__]
    assert all(issubclass(cls, errors.ToolError) for cls in raised)
    kinds = [cls for cls in raised if errors.ToolCallError in cls.__bases__]
    assert {cls.__name__ for cls in kinds} - {"ExecError", "WebError", "WorkspaceError"} <= set(
        tools.__all__
    )
