"""The read-model SQLite file: where it lives, how it is identified and opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiosqlite

from clawlog.events.backends.aiosqlite_calls import call_on_thread

from .errors import ReadModelsUnavailable

__all__ = [
    "CHECKPOINTS_DDL",
    "VIEWS_APPLICATION_ID",
    "connect_views",
    "on_thread",
    "prepare_views",
    "views_path_for",
]

_T = TypeVar("_T")
#: ``PRAGMA application_id`` of a read-model file: "clvw" (the event log is "claw").
VIEWS_APPLICATION_ID = 0x636C7677
_LOG_APPLICATION_ID = 0x636C6177
CHECKPOINTS_DDL = """CREATE TABLE IF NOT EXISTS projection_checkpoints (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    position INTEGER NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    failed_at INTEGER)"""
Mode = Literal["write", "build", "read"]


def views_path_for(log_path: str | Path) -> Path:
    """The default read-model file of an SQLite log: ``clawlog.db`` → ``clawlog.views.db``."""
    path = Path(log_path)
    return path.with_name(path.stem + ".views.db")


async def connect_views(path: Path, mode: Mode) -> aiosqlite.Connection:
    """Open the read-model file.

    ``write``: the runner's connection (WAL, so readers never block it). ``build``: a
    throwaway file for a rebuild (no fsync; the journal is kept in memory, so savepoints
    still roll back). ``read``: a reader; the file must exist and is never written."""
    if mode == "read" and not path.exists():
        raise ReadModelsUnavailable(f"{path} does not exist: run the projections first")
    try:
        if mode == "read":
            conn = await aiosqlite.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise ReadModelsUnavailable(f"cannot open {path}: {exc}") from exc
    try:
        await on_thread(conn, prepare_views, str(path), mode)
    except BaseException:
        await conn.close()
        raise
    return conn


def prepare_views(conn: sqlite3.Connection, path: str, mode: Mode) -> None:
    """Identify (or stamp) the file and set its pragmas; refuse an event log or a foreign
    database, so a misconfigured path can never write into the log."""
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise ReadModelsUnavailable(f"{path} is not a read-model database ({exc})") from exc
    if app_id == _LOG_APPLICATION_ID:
        raise ReadModelsUnavailable(
            f"{path} is a clawlog event log; read models live in their own file "
            "(e.g. clawlog.views.db next to clawlog.db)"
        )
    if app_id == 0 and objects and _has_checkpoints(conn):
        app_id = _adopt_unstamped(conn, mode)  # written before files were stamped
    if app_id != VIEWS_APPLICATION_ID and (app_id != 0 or objects != 0):
        raise ReadModelsUnavailable(f"{path} is an SQLite database but not clawlog read models")
    if mode == "read":
        if app_id != VIEWS_APPLICATION_ID:
            raise ReadModelsUnavailable(f"{path} holds no read models yet")
        conn.execute("PRAGMA query_only=1")
        return
    if mode == "build":
        conn.execute("PRAGMA journal_mode=MEMORY")
        conn.execute("PRAGMA synchronous=OFF")
    else:
        conn.execute("PRAGMA journal_mode=WAL")
        # A crash loses at most the last commits, rows and checkpoint together.
        conn.execute("PRAGMA synchronous=NORMAL")
    if app_id == 0:
        conn.execute(f"PRAGMA application_id={VIEWS_APPLICATION_ID}")
    conn.execute(CHECKPOINTS_DDL)


def _has_checkpoints(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'projection_checkpoints'"
    )
    return found.fetchone() is not None


def _adopt_unstamped(conn: sqlite3.Connection, mode: Mode) -> int:
    """Stamp a read-model file of an earlier clawlog and give its checkpoints the column
    they lack; its projections are then checked by version as usual."""
    if mode == "read":
        return VIEWS_APPLICATION_ID
    columns = [row[1] for row in conn.execute("PRAGMA table_info(projection_checkpoints)")]
    if "failed_at" not in columns:
        conn.execute("ALTER TABLE projection_checkpoints ADD COLUMN failed_at INTEGER")
    conn.execute(f"PRAGMA application_id={VIEWS_APPLICATION_ID}")
    return VIEWS_APPLICATION_ID


async def on_thread(conn: aiosqlite.Connection, fn: Callable[..., _T], *args: Any) -> _T:
    """Run ``fn(sqlite3_connection, *args)`` as ONE call on the connection's own thread
    (:func:`events.backends.aiosqlite_calls.call_on_thread`), a closed connection
    reported as :class:`ReadModelsUnavailable`."""
    try:
        return await call_on_thread(conn, fn, *args)
    except ValueError as exc:
        if str(exc) == "Connection closed":
            raise ReadModelsUnavailable("the read-model connection is closed") from exc
        raise
