"""The SQLite file layout, its identification and the single-writer lock.

Opening a file answers one of four ways, so that a user is told what to do:

- a clawlog log: our ``application_id``, a schema version we know, and the three tables
  with every column of :data:`_SCHEMA` (compared with ``PRAGMA table_xinfo``; extra
  columns are tolerated);
- :class:`NotAClawlogDatabase`: not SQLite at all, or SQLite with another application id;
- :class:`StoreDamaged`: a clawlog log (our application id, in the file or in its raw
  header) that SQLite cannot read, that is shorter than its header says (truncated), or
  whose tables or columns are missing;
- :class:`StoreUnavailable`: the file cannot be read at all: permissions, an I/O error, a
  full disk, a read-only mount where SQLite cannot create the ``-shm`` file of a WAL log.

A good log on a read-only mount (or in a directory this user cannot write) is still read:
see :func:`may_open_immutable` for when, and why only then.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import struct
from pathlib import Path
from urllib.parse import quote

import filelock

from ..chain import GENESIS
from ..errors import (
    EventStoreError,
    NotAClawlogDatabase,
    StoreDamaged,
    StoreLocked,
    StoreUnavailable,
)

__all__ = [
    "APPLICATION_ID",
    "CHAIN_HEAD_DDL",
    "SCHEMA_VERSION",
    "WriterLock",
    "check_or_create_schema",
    "check_schema",
    "identify",
    "may_open_immutable",
    "read_only_uri",
    "schema_problems",
    "schema_version",
    "unreadable_because",
]

#: ``PRAGMA application_id`` of every clawlog file: "claw" in ASCII.
APPLICATION_ID = 0x636C6177
#: 2: the hash chain (``events.hash``, ``chain_head``); 1: before it (read, and upgraded
#: in place by the first writer).
SCHEMA_VERSION = 2
#: The first 16 bytes of every SQLite file.
_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100
#: Primary SQLite result codes that mean the file's content cannot be read as a database.
#: Primary SQLite result codes of a file whose content cannot be read: damaged (ours), or
#: not a database at all. The store's reads use the same set (sqlite.py).
DAMAGED_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
#: Primary codes of a read-only open refused because SQLite cannot create its ``-shm``.
_READ_ONLY_CODES = frozenset({sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY})

#: The tables of schema 1 (before the hash chain): an old log is checked against these,
#: and upgraded in place by its first writer (:mod:`.sqlite_chain`).
_SCHEMA_V1 = """
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
#: The current tables (schema 2): ``events.hash`` and ``chain_head`` (see :mod:`..chain`).
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
    hash           BLOB,
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

#: The writer's recorded head: the position and hash of the last event it committed.
CHAIN_HEAD_DDL = """
CREATE TABLE IF NOT EXISTS chain_head (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    position INTEGER NOT NULL,
    hash     BLOB    NOT NULL
);
"""
_SCHEMA += CHAIN_HEAD_DDL
_TABLES_V1 = ("events", "idempotency_keys", "snapshots")
_TABLES = (*_TABLES_V1, "chain_head")


def check_schema(conn: sqlite3.Connection, path: str) -> bool:
    """True if the file holds a clawlog log, False if it is empty; raise
    :class:`NotAClawlogDatabase`, :class:`StoreDamaged` or :class:`StoreUnavailable`
    (see the module's docstring) otherwise."""
    if not identify(conn, path):
        return False
    try:
        problems = schema_problems(conn)
    except sqlite3.DatabaseError as exc:
        raise read_failure(exc, path) from exc
    if problems:
        raise StoreDamaged(path, None, "; ".join(problems))
    return True


def identify(conn: sqlite3.Connection, path: str) -> bool:
    """True if the file is a clawlog log (its tables not yet checked), False if it is an
    empty file; raise if it is foreign, from a newer clawlog, damaged or unreadable."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise read_failure(exc, path) from exc
    if app_id == APPLICATION_ID:
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


def schema_problems(conn: sqlite3.Connection) -> list[str]:
    """What is missing or different in the file's tables, compared with :data:`_SCHEMA`
    (empty if nothing is). Raises ``sqlite3.DatabaseError`` if the schema cannot be read."""
    problems = []
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for table, expected in _expected_columns(min(version, SCHEMA_VERSION)).items():
        found = {row[1]: row[2:6] for row in conn.execute(f"PRAGMA table_xinfo({table})")}
        if not found:
            problems.append(f"the {table} table is missing")
            continue
        missing = [name for name in expected if name not in found]
        if missing:
            problems.append(f"the {table} table has no column {', '.join(missing)}")
        problems.extend(
            f"the {table} table's column {name} is {_shape(found[name])}, "
            f"not {_shape(shape)} as clawlog makes it"
            for name, shape in expected.items()
            if name in found and found[name] != shape
        )
    return problems


def _shape(column: tuple[object, ...]) -> str:
    """A column's ``(type, notnull, default, pk)`` as SQL: ``BLOB NOT NULL``."""
    type_, notnull, default, pk = column
    return " ".join(
        str(part)
        for part in (
            type_ or "untyped",
            "NOT NULL" if notnull else "",
            f"DEFAULT {default}" if default is not None else "",
            "PRIMARY KEY" if pk else "",
        )
        if part
    )


@functools.cache
def _expected_columns(version: int) -> dict[str, dict[str, tuple[object, ...]]]:
    """Each table's columns as schema ``version`` makes them: name -> (type, notnull,
    default, pk), read back from an in-memory database, so the comparison can never drift
    from the schema that is created. A schema 1 log (not yet upgraded) is held to schema 1."""
    schema, tables = (_SCHEMA, _TABLES) if version >= 2 else (_SCHEMA_V1, _TABLES_V1)
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(schema)
        return {
            table: {row[1]: row[2:6] for row in conn.execute(f"PRAGMA table_xinfo({table})")}
            for table in tables
        }
    finally:
        conn.close()


def check_or_create_schema(conn: sqlite3.Connection, path: str) -> None:
    """Create the schema in an empty file; refuse a foreign or damaged one. A schema 1
    log is left as it is: its writer upgrades it (:func:`.sqlite_chain.upgrade`)."""
    if check_schema(conn, path):
        return
    conn.executescript(
        f"BEGIN IMMEDIATE;{_SCHEMA}"
        f"INSERT INTO chain_head VALUES (1, 0, x'{GENESIS.hex()}');"
        f"PRAGMA application_id = {APPLICATION_ID};"
        f"PRAGMA user_version = {SCHEMA_VERSION};COMMIT;"
    )


def schema_version(conn: sqlite3.Connection) -> int:
    """The file's schema version (``PRAGMA user_version``)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


# -- why a read failed ---------------------------------------------------------------------
def read_failure(exc: sqlite3.DatabaseError, path: str) -> EventStoreError:
    """The store error for SQLite's refusal to read ``path``: a corrupt or unrecognised
    file is judged by its raw header (ours: damaged; another's: not a clawlog log); any
    other failure (permissions, I/O, a full disk, a read-only mount) is unavailability,
    which says nothing about what the file is."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None or code & 0xFF in DAMAGED_CODES:
        return _judge_by_header(Path(path), exc)
    return StoreUnavailable(f"cannot read {path}: {unreadable_because(Path(path), exc)}")


def _judge_by_header(path: Path, exc: sqlite3.DatabaseError) -> EventStoreError:
    try:
        with path.open("rb") as file:
            header = file.read(_HEADER_SIZE)
        size = path.stat().st_size
    except OSError as os_exc:
        return StoreUnavailable(f"cannot read {path}: {os_exc.strerror or os_exc} ({exc})")
    if not header.startswith(_SQLITE_MAGIC):
        return NotAClawlogDatabase(f"{path} is not a clawlog event log: not an SQLite file ({exc})")
    if len(header) < _HEADER_SIZE:
        return StoreDamaged(
            str(path), None, f"truncated: {size} bytes, shorter than SQLite's 100-byte header"
        )
    (app_id,) = struct.unpack(">I", header[68:72])
    if app_id != APPLICATION_ID:
        return NotAClawlogDatabase(
            f"{path} is an SQLite file (application_id {app_id:#x}) that SQLite cannot "
            f"read, not a clawlog event log ({exc})"
        )
    return StoreDamaged(str(path), None, _truncation(header, size) or f"SQLite: {exc}")


def _truncation(header: bytes, size: int) -> str | None:
    """A "truncated: ..." reason if the file is shorter than the pages its header counts. The
    count is valid only when the header's change counter matches its "version valid
    for" field (SQLite's own rule; an older writer may leave it stale)."""
    (page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if page_size == 1 else page_size
    changes, pages, valid_for = (struct.unpack(">I", header[o : o + 4])[0] for o in (24, 28, 92))
    if changes != valid_for or size >= pages * page_size:
        return None
    return (
        f"truncated: the file is {size} bytes, but its header counts {pages} pages of "
        f"{page_size} bytes ({pages * page_size} bytes)"
    )


def unreadable_because(path: Path, exc: sqlite3.Error) -> str:
    """SQLite's words, with the cause SQLite does not name when it can be seen."""
    if not os.access(path, os.R_OK):
        return f"permission denied: this user cannot read the file ({exc})"
    read_only_mount = _on_read_only_mount(path)
    if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in _READ_ONLY_CODES and (
        read_only_mount or not os.access(path.parent, os.W_OK)
    ):
        where = "a read-only mount" if read_only_mount else "a read-only directory"
        return (
            f"read-only mount/permissions: the log is in {where}, so SQLite cannot create "
            f"its {path.name}-shm file, and its {path.name}-wal file may hold events not "
            f"yet in the main file; read it where it is writable ({exc})"
        )
    disk = _disk_of(path)
    if disk is not None and disk.f_bavail == 0:
        return (
            f"the disk is full: SQLite needs room for {path.name}-shm to read a WAL "
            f"log; free some space ({exc})"
        )
    return str(exc)


# -- reading a log where SQLite cannot write -----------------------------------------------
def read_only_uri(path: Path, *, immutable: bool = False) -> str:
    """The URI of a read-only connection to ``path`` (quoted: a path may hold ``?``)."""
    return f"file:{quote(str(path))}?mode=ro" + ("&immutable=1" if immutable else "")


def may_open_immutable(path: Path, failure: BaseException | None) -> bool:
    """Whether a read-only open of ``path`` refused with ``failure`` may be retried with
    ``immutable=1``: SQLite then reads the main file alone, with no ``-shm`` and no locks,
    and never sees a ``-wal`` file, so it reads stale data if anything writes the log.

    The rule: only when the plain ``mode=ro`` open failed with SQLITE_CANTOPEN or
    SQLITE_READONLY (SQLite could not create the ``-shm`` it needs to read a WAL log), and

    - the log is on a read-only mount and its ``-wal`` file is absent or empty: nothing
      can write there, and every committed event is in the main file; or
    - the log's directory is not writable by this user and there is no ``-wal`` file at
      all: SQLite keeps a ``-wal`` while any connection has the log open in WAL mode, so
      no writer has it open, and none can start without creating one (a writer could
      append to an existing, empty ``-wal`` without writing the directory).

    A store opened this way reads the log as it was: it does not follow later appends
    (the directory could be made writable and a writer started meanwhile)."""
    code = getattr(failure, "sqlite_errorcode", None)
    if code is None or code & 0xFF not in _READ_ONLY_CODES or not os.access(path, os.R_OK):
        return False
    wal = path.with_name(path.name + "-wal")
    try:
        wal_size = wal.stat().st_size
    except FileNotFoundError:
        wal_size = None
    except OSError:
        return False
    if _on_read_only_mount(path):
        return not wal_size
    return wal_size is None and not os.access(path.parent, os.W_OK)


def _on_read_only_mount(path: Path) -> bool:
    disk = _disk_of(path)
    return disk is not None and bool(disk.f_flag & os.ST_RDONLY)


def _disk_of(path: Path) -> os.statvfs_result | None:
    """The file system holding ``path`` (None where POSIX's statvfs is not: Windows)."""
    statvfs = getattr(os, "statvfs", None)
    if statvfs is None:
        return None
    try:
        return statvfs(path.parent)
    except OSError:
        return None


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
