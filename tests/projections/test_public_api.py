"""The package shows a sorted public API and keeps to its side of the layering."""

from __future__ import annotations

import subprocess
import sys

from clawlog import projections
from clawlog.projections import errors
from tests.projections.support import ROOT


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = list(projections.__all__)
    # isort style (ruff RUF022): CONSTANTS, then Classes, then functions, each alphabetical.
    assert names == sorted(
        names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    assert all(hasattr(projections, name) for name in names)


def test_every_error_derives_from_the_one_root() -> None:
    raised = [getattr(errors, name) for name in errors.__all__]
    assert all(issubclass(cls, errors.ProjectionError) for cls in raised)
    assert {cls.__name__ for cls in raised} <= set(projections.__all__)


def test_projections_import_events_only_never_actors_or_tools() -> None:
    code = (
        "import sys, clawlog.projections, clawlog.projections.testing, clawlog.projections.replay\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[:2] in (['clawlog', 'actors'], ['clawlog', 'tools']))\n"
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert result.stdout.strip() == ""
