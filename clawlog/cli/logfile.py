"""Opening a log file for the CLI, with clear messages for the usual mistakes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from clawlog.events import (
    EventStore,
    EventStoreError,
    NotAClawlogDatabase,
    SqliteBackend,
    open_store,
)

__all__ = ["CliError", "open_log"]


class CliError(Exception):
    """A problem to report in one line, with exit status 2."""


@contextlib.asynccontextmanager
async def open_log(path: str | Path, *, read_only: bool = True) -> AsyncIterator[EventStore]:
    """Open an existing clawlog log (read-only by default, so a running writer is fine)."""
    location = Path(path)
    if str(path).startswith(("postgresql://", "postgres://")):
        store = await open_store(str(path))
    else:
        if not location.exists():
            raise CliError(f"{location}: no such file (run `clawlog demo` to create one)")
        if location.is_dir():
            raise CliError(f"{location} is a directory, not a clawlog log file")
        try:
            store = await open_store(SqliteBackend(location, read_only=read_only))
        except NotAClawlogDatabase as exc:
            raise CliError(str(exc)) from exc
        except EventStoreError as exc:
            raise CliError(f"{location}: {exc}") from exc
    try:
        yield store
    finally:
        await store.close()
