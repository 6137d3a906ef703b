"""``clawlog`` is the embedder's front door: a sorted ``__all__`` whose names are the very
objects of the packages behind it, loaded on first use so ``import clawlog`` stays light."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import clawlog

ROOT = Path(__file__).parents[2]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff RUF022: CONSTANTS, then Classes, then functions, each alphabetical.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_names_what_it_exports() -> None:
    names = [name for name in clawlog.__all__ if name != "__version__"]
    assert clawlog.__all__ == sorted(clawlog.__all__, key=_isort_key)
    assert set(names) == set(clawlog._EXPORTS)


@pytest.mark.parametrize("name", sorted(clawlog._EXPORTS))
def test_each_name_is_the_object_of_its_package(name: str) -> None:
    package = importlib.import_module(clawlog._EXPORTS[name])
    assert name in package.__all__
    assert getattr(clawlog, name) is getattr(package, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Sytem'"):
        clawlog.Sytem  # noqa: B018


def test_the_version_is_the_installed_distribution() -> None:
    from importlib.metadata import version

    assert clawlog.__version__ == version("clawlog")


def test_importing_clawlog_loads_no_runtime() -> None:
    code = (
        "import sys, clawlog\n"
        "heavy = ('pykka', 'msgspec', 'structlog', 'mcp', 'docker', 'httpx', 'rich',\n"
        "         'clawlog.actors', 'clawlog.events', 'clawlog.tools', 'clawlog.projections')\n"
        "print(','.join(sorted(m for m in heavy if m in sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == ""


def test_only_clawlog_is_importable_at_top_level_from_the_install() -> None:
    # The repository's top-level folders are not packages of the installed distribution:
    # run from elsewhere, ``actors`` must not resolve (an app's own ``actors`` would win).
    code = (
        "import importlib.util as u\n"
        "print([n for n in ('actors', 'events', 'projections', 'tools') if u.find_spec(n)])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True
    )
    assert result.stdout.strip() == "[]"
