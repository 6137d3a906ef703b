"""The SQLite file layout, its identification and the single-writer lock."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

from ..errors import NotAClawlogDatabase, StoreLocked

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "WriterLock",
    "check_or_create_schema",
    "check_schema",
]

#: ``PRAGMA application_id`` of every clawlog file: "claw" in ASCII.
APPLICATION_ID = 0x636C6177
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    position       INTEGER PRIMARY KEY,
    stream         TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    type           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    payload        BLOB    NOT NULL,
    recorded_at    REAL    NOT NULL,
    correlation_id TEXT,
    causation_id   TEXT,
    actor          TEXT,
    idempotency_key TEXT,
    UNIQUE (stream, version)
);
CREATE TABLE IF NOT EXISTS idempotency_keys (
    key            TEXT PRIMARY KEY,
    stream         TEXT    NOT NULL,
    first_position INTEGER NOT NULL,
    last_position  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    stream      TEXT PRIMARY KEY,
    version     INTEGER NOT NULL,
    state_type  TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    recorded_at REAL    NOT NULL
) WITHOUT ROWID;
"""


def check_schema(conn: sqlite3.Connection, path: str) -> bool:
    """True if the file holds a clawlog log, False if it is empty; raise if it is foreign."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise NotAClawlogDatabase(f"{path} is not a clawlog event log ({exc})") from exc
    if app_id == APPLICATION_ID:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise NotAClawlogDatabase(
                f"{path} was written by a newer clawlog (schema {version} > {SCHEMA_VERSION})"
            )
        return True
    if app_id == 0 and tables == 0:
        return False
    raise NotAClawlogDatabase(
        f"{path} is an SQLite database but not a clawlog event log "
        f"(application_id {app_id:#x}, {tables} schema objects)"
    )


def check_or_create_schema(conn: sqlite3.Connection, path: str) -> None:
    """Create the schema in an empty file; refuse a foreign one."""
    if check_schema(conn, path):
        return
    conn.executescript(
        f"BEGIN IMMEDIATE;{_SCHEMA}"
        f"PRAGMA application_id = {APPLICATION_ID};"
        f"PRAGMA user_version = {SCHEMA_VERSION};COMMIT;"
    )


class WriterLock:
    """An exclusive ``flock`` on ``<file>.lock``: one writing process per SQLite log."""

    def __init__(self, db_path: Path) -> None:
        self.path = db_path.with_name(db_path.name + ".lock")
        self._fd: int | None = None
        self._created = False

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            self._created = True
        except FileExistsError:
            fd = os.open(self.path, os.O_RDWR)
            self._created = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreLocked(
                f"{self.path.with_suffix('')} is already open for writing by another "
                f"store (pid {holder}); open it read-only or close the other one first"
            ) from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self, *, discard: bool = False) -> None:
        """Unlock. ``discard`` also removes a lock file this lock created (the open failed,
        for instance on a file that is not a clawlog log): still locked while removed,
        so no other process can be holding it."""
        if self._fd is not None:
            if discard and self._created:
                self.path.unlink(missing_ok=True)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
