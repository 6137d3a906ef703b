"""Importing the log loads no database driver: backends load when opened or named."""

from __future__ import annotations

import subprocess
import sys

import pytest

DRIVERS = ("aiosqlite", "asyncpg", "clawlog.events.backends.sqlite_writer")


def loaded_after(statement: str) -> list[str]:
    """The driver modules a fresh interpreter holds after running ``statement``."""
    probe = f"import sys\n{statement}\nprint(' '.join(m for m in {DRIVERS!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.split()


@pytest.mark.parametrize(
    "statement",
    [
        "import clawlog.events",
        "import clawlog.events.domain",
        "from clawlog.events import Event, EventStore, open_store",
        "from clawlog.events import EventRegistry, MissingDependency, Subscription",
    ],
)
def test_importing_the_log_loads_no_backend(statement: str) -> None:
    assert loaded_after(statement) == []


def test_naming_a_backend_loads_it() -> None:
    loaded = loaded_after("from clawlog.events import SqliteBackend")
    assert "aiosqlite" in loaded and "asyncpg" not in loaded


def test_the_postgres_backend_without_asyncpg_is_a_missing_dependency() -> None:
    # sys.modules[name] = None is how Python spells "this package is not installed".
    code = (
        "import sys; sys.modules['asyncpg'] = None\n"
        "from clawlog.events import MissingDependency\n"
        "try:\n"
        "    from clawlog.events import PostgresBackend\n"
        "except MissingDependency as exc:\n"
        "    print('missing:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "missing: PostgresBackend needs asyncpg: pip install 'clawlog[postgres]'" in done.stdout
