"""The embedded default backend: one SQLite file in WAL mode.

Group commit: appends queue for the writer's own thread (see :mod:`.sqlite_thread`),
which takes everything queued as one batch, commits it in one transaction and answers
every caller of the batch with one hop back to the loop, each append with its own result
or its own :class:`VersionConflict`. While one batch commits, the next one queues. Reads
use their own aiosqlite connection. ``synchronous=FULL`` by default, so an acknowledged
append is on disk.
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

from ..envelope import EventMetadata, NewRecord, StoredRecord
from ..errors import EventStoreError, StoreClosed, StoreUnavailable
from ..logging import get_logger
from .aiosqlite_calls import call_on_thread
from .base import SnapshotRecord
from .sqlite_schema import WriterLock, check_schema
from .sqlite_thread import WriterThread
from .sqlite_writer import AppendRequest, BatchWriter, Outcome, SnapshotRequest

__all__ = ["SqliteBackend"]

_log = get_logger(__name__)
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
                await self._open_reader(f"file:{self.path}?mode=ro")
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

    async def _open_writer(self) -> None:
        self._batch = BatchWriter(self._max_batch)
        self._new_future = asyncio.get_running_loop().create_future
        self._thread = WriterThread(str(self.path), self.synchronous, self._batch, self._resolve)
        self._submit = self._thread.submit
        self._head = await self._thread.start()

    async def _open_reader(self, uri: str) -> None:
        self._reader = await _connect(uri, uri=uri.startswith("file:"))
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
        return await call_on_thread(self._check_readable(), _fetch_records, sql, params)

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


def _cause(exc: OSError | sqlite3.Error) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc)


def _not_open(*_: object) -> Any:
    """Stands in for the writer's submit and future factory until the store is open."""
    raise StoreClosed("the store is not open for writing")


def _fetch_records(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[StoredRecord]:
    return [StoredRecord(*row) for row in conn.execute(sql, params)]
