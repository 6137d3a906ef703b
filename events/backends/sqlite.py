"""The embedded default backend: one SQLite file in WAL mode.

Group commit: appends queue for the writer's own thread (see :mod:`.sqlite_thread`),
which takes everything queued as one batch, commits it in one transaction and answers
every caller of the batch with one hop back to the loop, each append with its own result
or its own :class:`VersionConflict`. While one batch commits, the next one queues. Reads
use their own aiosqlite connection. ``synchronous=FULL`` by default, so an acknowledged
append is on disk. A read never lets an ``sqlite3`` error out: a damaged file is
:class:`StoreDamaged` naming the first position the read could not get past, anything
else :class:`StoreUnavailable` (:func:`_read_failure`).

The writer hashes every event into the log's hash chain inside its group commit
(:mod:`.sqlite_writer`; a log from before the chain is upgraded when first opened for
writing: :mod:`.sqlite_chain`); ``chain_state`` and ``read_chain`` are what
:func:`clawlog.events.verify.verify_chain` reads. Plain reads never fetch the hash.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import aiosqlite

from ..chain import ChainedRow, ChainState
from ..envelope import EventMetadata, NewRecord, StoredRecord
from ..errors import EventStoreError, StoreClosed, StoreDamaged, StoreUnavailable
from ..logging import get_logger
from .aiosqlite_calls import call_on_thread
from .base import SnapshotRecord
from .chain_damage import LOST_HEAD_ADVICE, READ_LOST_HEAD_REASON
from .sqlite_chain import lenient_text
from .sqlite_schema import (
    DAMAGED_CODES,
    WriterLock,
    check_schema,
    may_open_immutable,
    read_only_uri,
    schema_version,
    unreadable_because,
)
from .sqlite_thread import WriterThread
from .sqlite_writer import AppendRequest, BatchWriter, Outcome, SnapshotRequest

__all__ = ["SqliteBackend"]

_log = get_logger(__name__)
_COLUMNS = (
    "position, stream, version, type, schema_version, payload, recorded_at, "
    "correlation_id, causation_id, actor, idempotency_key"
)
_CHAIN_ROWS = f"SELECT {_COLUMNS}, hash FROM events WHERE position >= ? ORDER BY position LIMIT ?"
#: One statement, so one snapshot: the recorded head and the table's last position agree.
_CHAIN_STATE = (
    "SELECT (SELECT coalesce(max(position), 0) FROM events), position, hash "
    "FROM chain_head WHERE id = 1"
)
Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]
#: What SQLite says (as a plain SQL error) when a table or column of the log is gone.
_MISSING_SCHEMA = ("no such table", "no such column")
#: The index of ``UNIQUE (stream, version)``: it holds every row's position too.
_INDEX = "sqlite_autoindex_events_1"


class SqliteBackend:
    """An SQLite event log. ``read_only=True`` opens a follower that never writes."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Synchronous = "FULL",
        read_only: bool = False,
        max_batch: int = 1000,
        poll_interval: float = 0.05,
    ) -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.path = Path(path)
        self.synchronous = synchronous
        self.read_only = read_only
        self._max_batch = max_batch
        self._poll_interval = poll_interval
        self._lock = WriterLock(self.path)
        self._thread: WriterThread | None = None
        self._submit: Callable[[AppendRequest | SnapshotRequest], None] = _not_open
        self._reader: aiosqlite.Connection | None = None
        self._batch: BatchWriter | None = None
        self._new_future: Callable[[], asyncio.Future[Any]] = _not_open
        self._head = 0
        self._head_changed: asyncio.Event | None = None  # made only when someone waits
        self._state: Literal["unopened", "open", "closed"] = "unopened"

    # -- lifecycle ----------------------------------------------------------------------
    async def open(self) -> None:
        if self._state != "unopened":
            raise EventStoreError(f"this SqliteBackend is {self._state}; create a new one")
        # One handler for the whole sequence: whatever fails after the lock is taken (a full
        # disk, a cancelled task, a foreign file) closes what was opened and unlocks.
        try:
            if self.read_only:
                if not self.path.exists():
                    raise EventStoreError(f"{self.path} does not exist")
                await self._open_follower()
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._lock.acquire()
                await self._open_writer()
                await self._open_reader(str(self.path))
        except BaseException as exc:
            await self._abandon_open()
            if isinstance(exc, OSError | sqlite3.Error):
                raise StoreUnavailable(f"cannot open {self.path}: {_cause(exc)}") from exc
            raise
        self._state = "open"

    async def _abandon_open(self) -> None:
        """Undo a failed open; the open's own error is the one the caller needs to see."""
        try:
            await self._close_connections()
        except Exception as exc:
            _log.warning("closing after a failed open failed", path=str(self.path), error=repr(exc))
        finally:
            self._lock.release(discard=True)

    def _batch_writer(self) -> BatchWriter:
        """The writer's group commit (scripts/bench_store.py times an unchained one here)."""
        return BatchWriter(self._max_batch)

    async def _open_writer(self) -> None:
        self._batch = self._batch_writer()
        self._new_future = asyncio.get_running_loop().create_future
        self._thread = WriterThread(str(self.path), self.synchronous, self._batch, self._resolve)
        self._submit = self._thread.submit
        self._head = await self._thread.start()

    async def _open_follower(self) -> None:
        """Open read-only; on a read-only mount or directory, where SQLite cannot create
        the ``-shm`` file of a WAL log, retry with ``immutable=1`` when the rule of
        :func:`.sqlite_schema.may_open_immutable` says that reads no stale data."""
        try:
            await self._open_reader(read_only_uri(self.path))
        except StoreUnavailable as exc:
            if not may_open_immutable(self.path, exc.__cause__):
                raise
            _log.info("reading a log on a read-only mount as immutable", path=str(self.path))
            await self._close_connections()
            self._reader = None
            await self._open_reader(read_only_uri(self.path, immutable=True))

    async def _open_reader(self, uri: str) -> None:
        self._reader = await _connect(uri, self.path, uri=uri.startswith("file:"))
        await self._reader.execute("PRAGMA busy_timeout=5000")
        await self._reader.execute("PRAGMA query_only=1")
        if await call_on_thread(self._reader, check_schema, str(self.path)) is False:
            raise EventStoreError(f"{self.path} holds no clawlog log yet")
        if self.read_only:
            self._head = await self.head_position_from_disk()

    async def close(self) -> None:
        if self._state == "closed":
            return
        was_open = self._state == "open"
        self._state = "closed"
        await self._close_connections()  # appends already accepted still land
        if was_open and not self.read_only:
            self._lock.release()
        if self._head_changed is not None:
            self._head_changed.set()

    async def _close_connections(self) -> None:
        if self._thread is not None:
            await self._thread.stop()
        if self._reader is not None:
            await self._reader.close()

    # -- writing ------------------------------------------------------------------------
    def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
    ) -> asyncio.Future[list[StoredRecord]]:
        """Queue the append for the writer thread; the future holds its records.

        A plain method returning the future, not a coroutine: one object less per append.
        """
        if self._state != "open" or self.read_only:
            self._check_writable()
        future: asyncio.Future[list[StoredRecord]] = self._new_future()
        self._submit(AppendRequest(stream, records, expected_version, metadata, future))
        return future

    async def save_snapshot(self, snapshot: SnapshotRecord) -> None:
        self._check_writable()
        future: asyncio.Future[None] = self._new_future()
        self._submit(SnapshotRequest(snapshot, future))
        await future

    def _resolve(
        self,
        batch: list[AppendRequest | SnapshotRequest],
        outcomes: list[Outcome] | BaseException,
        head: int,
    ) -> None:
        """Answer each caller of one committed batch (on the loop)."""
        if isinstance(outcomes, BaseException):
            _log.error("sqlite batch commit failed", error=repr(outcomes), batch=len(batch))
            outcomes = [self._unavailable(outcomes) for _ in batch]
        for request, outcome in zip(batch, outcomes, strict=True):
            future: Any = request.future
            if future.done():  # the caller was cancelled; the append still happened
                continue
            if type(outcome) is list or not isinstance(outcome, BaseException):
                future.set_result(outcome)
            else:
                future.set_exception(outcome)
        if head > self._head:
            self._head = head
            if self._head_changed is not None:
                self._head_changed.set()
                self._head_changed = None

    def _unavailable(self, cause: BaseException) -> StoreUnavailable:
        failure = StoreUnavailable(f"writing {self.path} failed: {cause}")
        failure.__cause__ = cause  # one instance per caller: each raise adds its traceback
        return failure

    # -- reading ------------------------------------------------------------------------
    async def read_stream(
        self, stream: str, from_version: int, limit: int | None
    ) -> list[StoredRecord]:
        sql = f"SELECT {_COLUMNS} FROM events WHERE stream = ? AND version >= ? ORDER BY version"
        params: list[Any] = [stream, from_version]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return await call_on_thread(
            self._check_readable(), _fetch_records, sql, params, str(self.path), None, stream
        )

    async def read_all(
        self,
        from_position: int,
        limit: int,
        stream_prefix: str | None,
        types: Sequence[str] | None,
    ) -> list[StoredRecord]:
        sql = f"SELECT {_COLUMNS} FROM events WHERE position >= ?"
        params: list[Any] = [from_position]
        if stream_prefix is not None:
            sql += r" AND stream LIKE ? ESCAPE '\'"
            escaped = stream_prefix.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_")
            params.append(escaped + "%")
        if types is not None:
            sql += f" AND type IN ({','.join('?' * len(types))})"
            params.extend(types)
        sql += " ORDER BY position LIMIT ?"
        params.append(limit)
        exact = stream_prefix is None and types is None  # positions are gapless: exact
        return await call_on_thread(
            self._check_readable(),
            _fetch_records,
            sql,
            params,
            str(self.path),
            from_position,
            None,
            exact,
        )

    async def stream_version(self, stream: str) -> int:
        reader = self._check_readable()
        if self._batch is not None:
            cached = self._batch.versions.get(stream)
            if cached is not None:
                return cached
        row = await call_on_thread(
            reader,
            _fetch_one,
            "SELECT max(version) FROM events WHERE stream = ?",
            (stream,),
            str(self.path),
            f"the version of stream {stream!r}",
        )
        return int(row[0] or 0)

    async def head_position(self) -> int:
        self._check_readable()
        if self.read_only:
            return await self.head_position_from_disk()
        return self._head

    async def head_position_from_disk(self) -> int:
        """The newest position in the file (see :func:`_read_head` for a damaged file)."""
        assert self._reader is not None
        return await call_on_thread(self._reader, _read_head, str(self.path))

    async def wait_for_append(self, after_position: int, timeout: float) -> None:
        self._check_readable()
        if self.read_only:  # another process writes: poll the file
            deadline = time.monotonic() + timeout
            while await self.head_position_from_disk() <= after_position:
                if self._state == "closed" or time.monotonic() >= deadline:
                    return
                await asyncio.sleep(min(self._poll_interval, timeout))
            return
        if self._head > after_position:
            return
        if self._head_changed is None:
            self._head_changed = asyncio.Event()
        changed = self._head_changed
        with contextlib.suppress(TimeoutError):  # asyncio.timeout: see memory.py
            async with asyncio.timeout(timeout):
                await changed.wait()

    async def load_snapshot(self, stream: str) -> SnapshotRecord | None:
        row = await call_on_thread(
            self._check_readable(),
            _fetch_one,
            "SELECT stream, version, state_type, payload, recorded_at "
            "FROM snapshots WHERE stream = ?",
            (stream,),
            str(self.path),
            f"the snapshot of stream {stream!r}",
        )
        return None if row is None else SnapshotRecord(*row)

    # -- the hash chain (read by clawlog.events.verify) ------------------------------------
    async def chain_state(self) -> ChainState | None:
        """The writer's recorded head and the table's last position, in one snapshot;
        None for a schema 1 log, which has no chain until a writer opens it."""
        return await call_on_thread(self._check_readable(), _read_chain_state, str(self.path))

    async def read_chain(self, from_position: int, limit: int) -> list[ChainedRow]:
        """Up to ``limit`` rows from ``from_position`` on, in position order, with their
        hashes, as stored."""
        return await call_on_thread(
            self._check_readable(),
            _fetch_chain,
            (from_position, limit),
            str(self.path),
            from_position,
        )

    # -- state checks -------------------------------------------------------------------
    def _check_writable(self) -> None:
        if self._state != "open":
            raise StoreClosed(f"the store for {self.path} is {self._state}")
        if self.read_only:
            raise EventStoreError(f"{self.path} was opened read-only")

    def _check_readable(self) -> aiosqlite.Connection:
        if self._state != "open" or self._reader is None:
            raise StoreClosed(f"the store for {self.path} is {self._state}")
        return self._reader


async def _connect(database: str, path: Path, *, uri: bool = False) -> aiosqlite.Connection:
    connection = aiosqlite.connect(database, uri=uri, isolation_level=None)
    try:
        return await connection
    except sqlite3.Error as exc:
        # aiosqlite stops its thread after a failed connect without waiting for it: wait
        # here, while the loop runs, or the thread's last reply finds the loop closed.
        worker = getattr(connection, "_thread", None)
        if worker is not None:
            await asyncio.to_thread(worker.join, 5)
        raise StoreUnavailable(f"cannot open {path}: {unreadable_because(path, exc)}") from exc


def _cause(exc: OSError | sqlite3.Error) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc)


def _read_failure(
    exc: sqlite3.Error, path: str, position: int | None, doing: str, *, exact: bool = True
) -> EventStoreError:
    """The store's error for a failed read: :class:`StoreDamaged` when the file itself is
    bad (SQLITE_CORRUPT, SQLITE_NOTADB), or a table or column is gone (SQLite says so as a
    plain SQL error; every read fails then, wherever it starts, so no position), else
    :class:`StoreUnavailable` (I/O error, full disk, permissions, a file that cannot be
    opened, busy or locked): waiting may help those."""
    code = getattr(exc, "sqlite_errorcode", None)
    reason = f"{exc} ({doing})"
    if code is not None and code & 0xFF in DAMAGED_CODES:
        return StoreDamaged(path, position, reason, exact=exact)
    if str(exc).startswith(_MISSING_SCHEMA):
        return StoreDamaged(path, None, reason)
    return StoreUnavailable(f"cannot read {path}: {reason}")


def _not_open(*_: object) -> Any:
    """Stands in for the writer's submit and future factory until the store is open."""
    raise StoreClosed("the store is not open for writing")


def _fetch_records(
    conn: sqlite3.Connection,
    sql: str,
    params: Sequence[Any],
    path: str,
    position: int | None,
    stream: str | None = None,
    exact: bool = True,
) -> list[StoredRecord]:
    """Run a read on the reader's thread. The good path is one comprehension; a failure
    reads again row by row to learn how far the read gets, then raises the store's error
    (:func:`_read_failure`) naming the first position it could not read."""
    try:
        return [StoredRecord(*row) for row in conn.execute(sql, params)]
    except sqlite3.Error as exc:
        _log.debug("read failed; reading again row by row", path=path, error=str(exc))
    records: list[StoredRecord] = []
    try:
        for row in conn.execute(sql, params):
            records.append(StoredRecord(*row))
    except sqlite3.Error as exc:
        if stream is not None:
            raise _read_failure(exc, path, None, f"reading stream {stream!r}") from exc
        assert position is not None
        doing = f"reading events from position {position}"
        position = _first_unread(conn, sql, params, records, position)
        raise _read_failure(exc, path, position, doing, exact=exact) from exc
    return records  # the first failure did not happen again (a busy or interrupted read)


def _first_unread(
    conn: sqlite3.Connection,
    sql: str,
    params: Sequence[Any],
    returned: list[StoredRecord],
    start: int,
) -> int:
    """The position after the last row a failed ``read_all`` read (``start`` if none).

    Python's sqlite3 steps one row ahead: when the step to row n + 2 fails, row n + 1 was
    read but never returned. Reading again with the limit (``read_all``'s last
    parameter) set to n + 1 stops before the failing step and returns that row too.
    """
    try:
        rows = conn.execute(sql, [*params[:-1], len(returned) + 1]).fetchall()
    except sqlite3.Error:
        rows = returned
    if len(rows) > len(returned):
        return int(rows[-1][0]) + 1
    return returned[-1].position + 1 if returned else start


def _fetch_one(
    conn: sqlite3.Connection, sql: str, params: Sequence[Any], path: str, what: str
) -> Any:
    """The first row of a one-row read (None if there is none), or the store's error."""
    try:
        return conn.execute(sql, params).fetchone()
    except sqlite3.Error as exc:
        raise _read_failure(exc, path, None, f"reading {what}") from exc


def _read_chain_state(conn: sqlite3.Connection, path: str) -> ChainState | None:
    try:
        if schema_version(conn) < 2:
            return None
        row = conn.execute(_CHAIN_STATE).fetchone()
    except sqlite3.Error as exc:
        raise _read_failure(exc, path, None, "reading the head of the hash chain") from exc
    if row is None:
        raise StoreDamaged(path, None, READ_LOST_HEAD_REASON, advice=LOST_HEAD_ADVICE)
    last, recorded, recorded_hash = row
    recorded_hash = recorded_hash if isinstance(recorded_hash, bytes) else b""
    return ChainState(int(recorded), recorded_hash, int(last))


def _fetch_chain(
    conn: sqlite3.Connection, params: tuple[int, int], path: str, position: int
) -> list[ChainedRow]:
    # A text column holding bytes that are not UTF-8 (an edit by hand) is read, not
    # refused: it cannot match its hash (chain.row_link), and verify says where it is.
    conn.text_factory = lenient_text
    try:
        return conn.execute(_CHAIN_ROWS, params).fetchall()
    except sqlite3.Error as exc:
        doing = f"reading the hash chain from position {position}"
        raise _read_failure(exc, path, position, doing, exact=False) from exc
    finally:
        conn.text_factory = str


def _read_head(conn: sqlite3.Connection, path: str) -> int:
    """The newest position in the file.

    ``max(position)`` walks the events table's right edge. When a page on it cannot be
    read, the head is the largest position in the ``UNIQUE (stream, version)`` index
    instead: the index holds every row's position in pages of its own, so it survives
    damage to the table's pages, and reading it whole (a covering-index scan: about a
    second per million events) only happens on a damaged file. If the index cannot be
    read either, the head is unknown: :class:`StoreDamaged` with no position.
    """
    try:
        return int(conn.execute("SELECT max(position) FROM events").fetchone()[0] or 0)
    except sqlite3.Error as exc:
        failure = _read_failure(exc, path, None, "reading the newest position")
        if not isinstance(failure, StoreDamaged):
            raise failure from exc
    try:
        row = conn.execute(f"SELECT max(position) FROM events INDEXED BY {_INDEX}").fetchone()
    except sqlite3.Error as exc:
        raise failure from exc
    _log.warning("head read from the index: the events table is damaged", error=str(failure))
    return int(row[0] or 0)
