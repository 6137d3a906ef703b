"""mypy checks every module of ours with the same rules: no override switches a check off for
them (issue 23: the override that accepted mixins' ``self: Host`` annotations is gone)."""

from __future__ import annotations

import tomllib
from typing import Any

from tests.structure.source_tree import ROOT

#: Override keys that only say how to find third-party code, not what to check in ours.
_HARMLESS = {"module", "ignore_missing_imports", "follow_untyped_imports"}


def weakening_overrides(pyproject: dict[str, Any]) -> list[str]:
    """The mypy overrides of ``pyproject`` that weaken checks for a ``clawlog`` module."""
    found = []
    for override in pyproject.get("tool", {}).get("mypy", {}).get("overrides", []):
        names = override.get("module", [])
        names = [names] if isinstance(names, str) else names
        ours = [n for n in names if n == "clawlog" or n.startswith(("clawlog.", "clawlog*"))]
        settings = {k: v for k, v in override.items() if k not in _HARMLESS}
        if ours and settings:
            found.append(f"{ours}: {settings}")
    return found


def test_no_mypy_self_type_override() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        found = weakening_overrides(tomllib.load(file))
    assert not found, "mypy overrides for our modules:\n" + "\n".join(found)


def test_an_override_that_disables_a_check_is_found() -> None:
    pyproject = tomllib.loads(
        "[[tool.mypy.overrides]]\n"
        'module = ["clawlog.actors.agents.session", "clawlog.actors.system"]\n'
        'disable_error_code = ["misc"]\n'
        "[[tool.mypy.overrides]]\n"
        'module = "docker.*"\n'
        "ignore_errors = true\n"
        "[[tool.mypy.overrides]]\n"
        'module = "clawlog.tools.sandbox"\n'
        "ignore_missing_imports = true\n"
    )
    assert weakening_overrides(pyproject) == [
        "['clawlog.actors.agents.session', 'clawlog.actors.system']: {'disable_error_code': ['misc']}"
    ]
