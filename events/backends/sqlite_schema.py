"""The SQLite file layout, its identification and the single-writer lock."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

import filelock

from ..errors import NotAClawlogDatabase, StoreLocked, StoreUnavailable

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
#: Primary SQLite result codes that mean the file itself is not a usable database.
_FOREIGN_FILE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})

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
        code = getattr(exc, "sqlite_errorcode", None)
        if code is None or code & 0xFF in _FOREIGN_FILE_CODES:
            raise NotAClawlogDatabase(f"{path} is not a clawlog event log ({exc})") from exc
        # A full disk or an I/O error says nothing about what the file is.
        raise StoreUnavailable(f"cannot read {path}: {exc}") from exc
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
    """An exclusive lock on ``<file>.lock`` (``filelock``: ``flock`` on POSIX, ``LockFileEx``
    on Windows): one writing store per SQLite log, in this process or any other. The holder
    writes its pid into the file, so a refused open can say who holds it."""

    def __init__(self, db_path: Path) -> None:
        self.path = db_path.with_name(db_path.name + ".lock")
        # A new FileLock per store: filelock is re-entrant per instance, and a second store
        # of this process must be refused like another process. Not thread-local: a store
        # may be closed from another thread than the one that opened it.
        self._lock = filelock.FileLock(
            self.path, thread_local=False, blocking=False, on_acquired=_write_pid
        )
        self._created = False

    def acquire(self) -> None:
        """Take the lock or raise :class:`StoreLocked`; any other failure (the pid cannot be
        written to a full disk, the directory is read-only) leaves it released and raises
        :class:`StoreUnavailable`."""
        created = not self.path.exists()
        try:
            self._lock.acquire()
        except filelock.Timeout as exc:
            raise StoreLocked(
                f"{self.path.with_suffix('')} is already open for writing by another "
                f"store (pid {self._holder()}); open it read-only or close the other one first"
            ) from exc
        except BaseException as exc:
            self._created = created
            self.release(discard=True)  # filelock may not roll back a failed on_acquired hook
            if isinstance(exc, OSError):
                raise StoreUnavailable(f"cannot lock {self.path}: {exc.strerror or exc}") from exc
            raise
        self._created = created

    def _holder(self) -> str:
        try:
            return self.path.read_text(errors="replace").strip() or "unknown"
        except OSError:  # Windows: the holder's lock covers reading too
            return "unknown"

    def release(self, *, discard: bool = False) -> None:
        """Unlock. ``discard`` also removes a lock file this lock created (the open failed,
        for instance on a file that is not a clawlog log): still locked while removed,
        so no other process can be holding it."""
        if self._lock.is_locked:
            if discard and self._created:
                with contextlib.suppress(OSError):  # Windows cannot remove an open file
                    self.path.unlink()
            self._lock.release()


def _write_pid(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, str(os.getpid()).encode())
