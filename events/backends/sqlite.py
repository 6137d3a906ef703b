"""The embedded default backend: one SQLite file in WAL mode, on aiosqlite.

Group commit: appends queue on the event loop, and whenever the writer thread is idle
everything queued goes to it as one batch, committed in one transaction, each append
with its own result or its own :class:`VersionConflict`. A whole batch runs as one call on
aiosqlite's thread, which answers the callers itself: one thread hop each way per batch.
Reads use their own connection. ``synchronous=FULL`` by default, so an acknowledged
append is on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiosqlite
import structlog

from ..envelope import EventMetadata, NewRecord, StoredRecord
from ..errors import EventStoreError, StoreClosed, StoreUnavailable
from .base import SnapshotRecord
from .sqlite_schema import WriterLock, check_or_create_schema, check_schema
from .sqlite_writer import AppendRequest, BatchWriter, Outcome, SnapshotRequest

__all__ = ["SqliteBackend"]

_T = TypeVar("_T")
_log = structlog.get_logger("clawlog.events.sqlite")
_COLUMNS = (
    "position, stream, version, type, schema_version, payload, recorded_at, "
    "correlation_id, causation_id, actor, idempotency_key"
)
Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]


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
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._batch: BatchWriter | None = None
        self._queue: list[AppendRequest | SnapshotRequest] = []
        self._writing = False  # a batch is on the writer thread
        self._flush_scheduled = False
        self._drained = asyncio.Event()
        self._drained.set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._head = 0
        self._head_changed: asyncio.Event | None = None  # made only when someone waits
        self._state: Literal["unopened", "open", "closed"] = "unopened"

    # -- lifecycle ----------------------------------------------------------------------
    async def open(self) -> None:
        if self._state != "unopened":
            raise EventStoreError(f"this SqliteBackend is {self._state}; create a new one")
        if self.read_only:
            if not self.path.exists():
                raise EventStoreError(f"{self.path} does not exist")
            try:
                await self._open_reader(f"file:{self.path}?mode=ro")
            except BaseException:
                await self._close_connections()
                raise
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
            try:
                await self._open_writer()
                await self._open_reader(str(self.path))
            except BaseException:
                await self._close_connections()
                self._lock.release(discard=True)
                raise
        self._state = "open"

    async def _open_writer(self) -> None:
        self._writer = await _connect(str(self.path))
        # Identify the file before any pragma: a foreign database must stay untouched.
        await _on_thread(self._writer, check_schema, str(self.path))
        await self._writer.execute("PRAGMA journal_mode=WAL")
        await self._writer.execute(f"PRAGMA synchronous={self.synchronous}")
        await self._writer.execute("PRAGMA busy_timeout=5000")
        await _on_thread(self._writer, check_or_create_schema, str(self.path))
        self._batch = BatchWriter(self._max_batch)
        self._head = await _on_thread(self._writer, self._batch.load_head)
        self._loop = asyncio.get_running_loop()

    async def _open_reader(self, uri: str) -> None:
        self._reader = await _connect(uri, uri=uri.startswith("file:"))
        await self._reader.execute("PRAGMA busy_timeout=5000")
        await self._reader.execute("PRAGMA query_only=1")
        if await _on_thread(self._reader, check_schema, str(self.path)) is False:
            raise EventStoreError(f"{self.path} holds no clawlog log yet")
        if self.read_only:
            self._head = await self.head_position_from_disk()

    async def close(self) -> None:
        if self._state == "closed":
            return
        was_open = self._state == "open"
        self._state = "closed"
        await asyncio.shield(self._drained.wait())  # appends already accepted still land
        await self._close_connections()
        if was_open and not self.read_only:
            self._lock.release()
        if self._head_changed is not None:
            self._head_changed.set()

    async def _close_connections(self) -> None:
        for conn in (self._writer, self._reader):
            if conn is not None:
                await conn.close()

    # -- writing ------------------------------------------------------------------------
    async def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
    ) -> list[StoredRecord]:
        if self._state != "open" or self.read_only:
            self._check_writable()
        request = AppendRequest(stream, records, expected_version, metadata)
        return await self._enqueue(request)  # type: ignore[no-any-return]

    async def save_snapshot(self, snapshot: SnapshotRecord) -> None:
        self._check_writable()
        await self._enqueue(SnapshotRequest(snapshot))

    def _enqueue(self, request: AppendRequest | SnapshotRequest) -> asyncio.Future[Any]:
        assert self._loop is not None
        request.future = future = self._loop.create_future()
        self._queue.append(request)
        if not self._writing and not self._flush_scheduled:
            self._flush()  # the writer is idle: no reason to wait for company
        return future

    def _flush(self) -> None:
        """Hand everything queued to the writer thread as one batch (one transaction).

        One batch at a time: while it commits, new requests queue up and form the next
        one. (A second batch in flight measured slower: the loop and the writer thread
        take turns on the GIL, so the thread mostly waits for the loop instead of
        overlapping with it.)
        """
        self._flush_scheduled = False
        if self._writing:
            return
        if not self._queue:
            self._drained.set()
            return
        batch = self._queue[: self._max_batch]
        del self._queue[: self._max_batch]
        self._writing = True
        self._drained.clear()
        assert self._writer is not None
        _post(self._writer, self._commit_on_thread, batch)

    def _commit_on_thread(
        self, conn: sqlite3.Connection, batch: list[AppendRequest | SnapshotRequest]
    ) -> None:
        assert self._batch is not None and self._loop is not None
        outcomes: list[Outcome] | BaseException
        try:
            outcomes = self._batch.commit(conn, batch)
        except Exception as exc:  # every caller must get an answer, whatever went wrong
            outcomes = exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
            self._loop.call_soon_threadsafe(self._resolve, batch, outcomes, self._batch.head)

    def _resolve(
        self,
        batch: list[AppendRequest | SnapshotRequest],
        outcomes: list[Outcome] | BaseException,
        head: int,
    ) -> None:
        """Answer each caller of one committed batch (on the loop)."""
        self._writing = False
        if isinstance(outcomes, BaseException):
            _log.error("sqlite batch commit failed", error=repr(outcomes), batch=len(batch))
            outcomes = [self._unavailable(outcomes) for _ in batch]
        for request, outcome in zip(batch, outcomes, strict=True):
            future = request.future
            assert future is not None
            if future.done():  # the caller was cancelled; the append still happened
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        if head > self._head:
            self._head = head
            if self._head_changed is not None:
                self._head_changed.set()
                self._head_changed = None
        if not self._flush_scheduled:  # after the callers just answered have appended again
            self._flush_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._flush)

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
        return await self._fetch(sql, params)

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
        return await self._fetch(sql, params)

    async def _fetch(self, sql: str, params: Sequence[Any]) -> list[StoredRecord]:
        reader = self._check_readable()
        rows = await _on_thread(reader, _fetch_records, sql, params)
        return rows

    async def stream_version(self, stream: str) -> int:
        reader = self._check_readable()
        if self._batch is not None:
            cached = self._batch.versions.get(stream)
            if cached is not None:
                return cached
        rows = await reader.execute_fetchall(
            "SELECT max(version) FROM events WHERE stream = ?", (stream,)
        )
        return int(next(iter(rows))[0] or 0)

    async def head_position(self) -> int:
        self._check_readable()
        if self.read_only:
            return await self.head_position_from_disk()
        return self._head

    async def head_position_from_disk(self) -> int:
        assert self._reader is not None
        rows = await self._reader.execute_fetchall("SELECT max(position) FROM events")
        return int(next(iter(rows))[0] or 0)

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
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout)

    async def load_snapshot(self, stream: str) -> SnapshotRecord | None:
        reader = self._check_readable()
        rows = list(
            await reader.execute_fetchall(
                "SELECT stream, version, state_type, payload, recorded_at "
                "FROM snapshots WHERE stream = ?",
                (stream,),
            )
        )
        return SnapshotRecord(*rows[0]) if rows else None

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


async def _connect(database: str, *, uri: bool = False) -> aiosqlite.Connection:
    try:
        return await aiosqlite.connect(database, uri=uri, isolation_level=None)
    except sqlite3.Error as exc:
        raise EventStoreError(f"cannot open {database}: {exc}") from exc


async def _on_thread(conn: aiosqlite.Connection, fn: Callable[..., _T], *args: Any) -> _T:
    """Run ``fn(sqlite3_connection, *args)`` as ONE call on the connection's own thread.

    aiosqlite has no public API for this; ``_execute`` is what its own methods use
    (pinned to aiosqlite < 0.23 in pyproject.toml).
    """
    return await conn._execute(lambda: fn(conn._conn, *args))  # type: ignore[no-any-return]


def _post(conn: aiosqlite.Connection, fn: Callable[..., None], *args: Any) -> None:
    """Queue ``fn(sqlite3_connection, *args)`` on the connection's thread without awaiting.

    ``fn`` reports back itself (``call_soon_threadsafe``): one thread hop each way per
    batch, and no task per batch. Like ``_on_thread``, this uses aiosqlite's queue.
    """
    conn._tx.put_nowait((None, lambda: fn(conn._conn, *args)))


def _fetch_records(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[StoredRecord]:
    return [StoredRecord(*row) for row in conn.execute(sql, params)]
