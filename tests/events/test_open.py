"""Opening a store by location: what each location means, and a clear error for the rest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clawlog.events import MemoryBackend, SqliteBackend, backend_for

ROOT = Path(__file__).parents[2]


def test_each_location_names_its_backend(tmp_path: Path) -> None:
    assert isinstance(backend_for("memory:"), MemoryBackend)
    assert isinstance(backend_for(tmp_path / "app.db"), SqliteBackend)


@pytest.mark.parametrize("location", ["", "https://example.invalid/log"])
def test_something_that_is_no_location_is_a_value_error(location: str) -> None:
    with pytest.raises(ValueError, match="not a store location"):
        backend_for(location)


def test_a_postgresql_url_without_asyncpg_names_the_extra_to_install() -> None:
    # A process where asyncpg cannot be imported, as on an install without the extra.
    code = (
        "import sys; sys.modules['asyncpg'] = None\n"
        "from clawlog.events import EventStoreError, MissingDependency, backend_for\n"
        "try:\n"
        "    backend_for('postgresql://u@127.0.0.1/x')\n"
        "except MissingDependency as exc:\n"
        "    assert isinstance(exc, ImportError) and isinstance(exc, EventStoreError)\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "PostgreSQL logs need asyncpg: pip install 'clawlog[postgres]'"
