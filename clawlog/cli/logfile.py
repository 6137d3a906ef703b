"""Opening a log for the CLI, with one clear line for each usual mistake.

This is the CLI's error boundary for the log: a missing or foreign file, a PostgreSQL
server that cannot be reached or refuses us, a missing ``asyncpg``, and any store error
while a command reads become a :class:`CliError` (one line on stderr, exit status 2):
a corrupt event (:class:`~clawlog.events.CorruptEvent`) and a damaged page or table
(:class:`~clawlog.events.StoreDamaged`) name their position. A raw ``sqlite3`` error or
``OSError`` that escapes a layer below is reported the same way, never as a traceback
(a closed stdout is not the log's: ``BrokenPipeError`` passes on to ``main``).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from clawlog.events import EventStore, EventStoreError, open_store

from .errors import CliError

__all__ = ["describe", "open_log"]

POSTGRES_HINT = "PostgreSQL logs need asyncpg: pip install 'clawlog[postgres]'"


@contextlib.asynccontextmanager
async def open_log(path: str | Path, *, read_only: bool = True) -> AsyncIterator[EventStore]:
    """Open an existing clawlog log, read-only by default: a running writer is fine, and
    reading never changes the log (a PostgreSQL log from before the hash chain is not
    upgraded, nor a missing schema created; ``read_only=False`` does both)."""
    text = str(path)
    if text.startswith(("postgresql://", "postgres://")):
        store = await _open_postgres(text, read_only=read_only)
    else:
        store = await _open_sqlite(Path(path), read_only=read_only)
    try:
        yield store
    except BrokenPipeError:
        raise
    except (EventStoreError, sqlite3.Error, OSError) as exc:  # a lost server, a corrupt row
        raise CliError(describe(_redacted(text), exc)) from exc
    finally:
        await store.close()


async def _open_sqlite(location: Path, *, read_only: bool) -> EventStore:
    if not location.exists():
        raise CliError(f"{location}: no such file (run `clawlog demo` to create one)")
    if location.is_dir():
        raise CliError(f"{location} is a directory, not a clawlog log file")
    from clawlog.events.backends.sqlite import SqliteBackend  # loads aiosqlite: only now

    try:
        return await open_store(SqliteBackend(location, read_only=read_only))
    except (EventStoreError, OSError) as exc:  # not a log, no access, a newer schema
        raise CliError(describe(str(location), exc)) from exc


async def _open_postgres(url: str, *, read_only: bool) -> EventStore:
    where = _redacted(url)
    try:
        import asyncpg

        from clawlog.events.backends.postgres import PostgresBackend
    except ImportError as exc:
        raise CliError(f"{where}: {POSTGRES_HINT}") from exc
    try:
        return await open_store(PostgresBackend(url, read_only=read_only))
    # Refusals (a wrong password, no such database) are PostgresErrors the store does not
    # translate; a malformed URL is a ValueError; asyncpg's connect timeout a TimeoutError.
    except (EventStoreError, asyncpg.PostgresError, OSError, ValueError, TimeoutError) as exc:
        raise CliError(describe(where, exc)) from exc


def describe(where: str, exc: BaseException) -> str:
    """``exc`` as one line that names ``where`` (once)."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message if where in message else f"{where}: {message}"


def _redacted(url: str) -> str:
    """A URL without its passwords (in the user part or the query), fit for an error
    message."""
    if "://" not in url:  # a file path
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    userinfo, at, hostport = netloc.rpartition("@")  # the last @: a password may hold one
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:***@{hostport}"
    query = "&".join(
        f"{name}=***" if "password" in name.lower() else f"{name}={value}"
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))
