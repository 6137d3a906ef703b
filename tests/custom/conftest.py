"""Fixtures of the custom tool tests: a key in the environment, a real SQLite log, and a
program that prints the arguments it received as JSON (what "one literal word each" is
checked against)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clawlog.events import EventStore, open_store
from clawlog.tools.custom import SECRET_KEY_ENV, generate_secret_key


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh CLAWLOG_SECRET_KEY, set in this process's environment."""
    key = generate_secret_key()
    monkeypatch.setenv(SECRET_KEY_ENV, key)
    return key


@pytest.fixture
def no_secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_KEY_ENV, raising=False)


@pytest.fixture
def argv_program(tmp_path: Path) -> str:
    """The command prefix of a program printing ``json.dumps(sys.argv[1:])``."""
    script = tmp_path / "argv.py"
    script.write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    return f"{sys.executable} {script}"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EventStore]:
    async with await open_store(tmp_path / "log.db") as opened:
        yield opened
