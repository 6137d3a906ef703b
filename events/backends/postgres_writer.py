"""Group commit for the PostgreSQL backend: one writer task, one connection, one round trip
per batch.

Concurrent appends queue up; the writer takes everything queued (up to ``max_batch``
requests) and sends it as ONE autocommit statement (see :mod:`.postgres_sql`) that locks
the table, inserts and notifies. Each caller gets its own result or its own error; while
a batch is on the wire the next one gathers.

The fast path, ``append_known``, sends versions this writer computed from the versions it
saw committed (a stream it never saw counts as new when the append accepts a new stream).
Such a guess can only lag the truth, so a wrong one collides with UNIQUE (stream, version)
(or an idempotency key's primary key), the statement fails whole, and the batch goes again
through ``append_batch``, which checks every expected version and key under the lock.

Requests may carry a lease token (fencing): the fast path passes the batch's tokens and
fails whole on a stale one (like a wrong guess), and ``append_batch`` refuses just that
request with :class:`Fenced`.

A lost connection fails the batch in flight with :class:`StoreUnavailable` (the outcome
is unknown: retry with the same idempotency key) and the next batch reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg

from ..envelope import EventMetadata, NewRecord, StoredRecord
from ..errors import (
    EventStoreError,
    Fenced,
    IdempotencyKeyReused,
    StoreDamaged,
    StoreUnavailable,
    VersionConflict,
)
from ..logging import get_logger
from ..telemetry import METRIC_BACKEND, instruments, metrics_enabled
from .base import ANY, NO_STREAM, LeaseToken
from .chain_damage import CHAIN_ADVICE, LOST_HEAD_REASON, past_head_reason
from .postgres_sql import (
    APPEND_KINDS,
    FENCED_SQLSTATE,
    LOST_HEAD_SQLSTATE,
    PAST_HEAD_SQLSTATE,
    append_known_sql,
    append_sql,
)

__all__ = ["UNAVAILABLE", "PostgresWriter", "chain_refusal"]

UNAVAILABLE = (
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    OSError,
    asyncpg.CannotConnectNowError,
    # What a fetch raises on a link the server has just dropped (a restart).
    asyncpg.InternalClientError,
)
_APPENDED, _DUPLICATE, _CONFLICT, _KEY_REUSED, _FENCED = (
    APPEND_KINDS[k] for k in ("appended", "duplicate", "conflict", "key_reused", "fenced")
)
_log = get_logger(__name__)
_METRIC_ATTRIBUTES = {METRIC_BACKEND: "postgres"}
_MAX_KNOWN = 100_000
ReadSpan = Callable[[int, int], Awaitable[list[StoredRecord]]]


class _Request:
    __slots__ = ("expected", "future", "lease", "metadata", "records", "stream")

    def __init__(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected: int,
        metadata: EventMetadata,
        future: asyncio.Future[list[StoredRecord]],
        lease: LeaseToken | None,
    ) -> None:
        self.stream, self.records, self.expected = stream, records, expected
        self.metadata, self.future, self.lease = metadata, future, lease


class PostgresWriter:
    """Owns the write connection of one backend; ``read_span`` reads back duplicates."""

    def __init__(
        self,
        url: str,
        schema: str,
        channel: str,
        max_batch: int,
        read_span: ReadSpan,
        *,
        timeout: float = 30.0,
    ) -> None:
        self._url, self._channel, self._max_batch = url, channel, max_batch
        self._timeout = timeout
        self._sql, self._known_sql = append_sql(schema), append_known_sql(schema)
        self._log_name = f"in PostgreSQL schema {schema}"
        #: Stream versions this process knows are committed (the fast path's guesses).
        self._versions: dict[str, int] = {}
        self._read_span = read_span
        self._conn: asyncpg.Connection | None = None
        self._queue: list[_Request] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._task = asyncio.create_task(self._run(), name="clawlog-pg-writer")

    def submit(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected: int,
        metadata: EventMetadata,
        lease: LeaseToken | None = None,
    ) -> asyncio.Future[list[StoredRecord]]:
        future: asyncio.Future[list[StoredRecord]] = asyncio.get_running_loop().create_future()
        self._queue.append(_Request(stream, records, expected, metadata, future, lease))
        self._wake.set()
        return future

    async def close(self) -> None:
        """Write what is queued, then close the connection."""
        self._closing = True
        self._wake.set()
        await asyncio.shield(self._task)
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                # Everything queued while the previous batch was on the wire goes next.
                batch = self._queue[: self._max_batch]
                del self._queue[: self._max_batch]
                await self._commit(batch)
            if self._closing:
                return

    async def _commit(self, batch: list[_Request]) -> None:
        conn, self._conn = self._conn, None
        try:
            async with asyncio.timeout(self._timeout):
                if conn is None or conn.is_closed():
                    conn = await asyncpg.connect(self._url)
                outcomes = await self._write(conn, batch)
        except Exception as exc:  # never leave a caller waiting; the link may be broken
            self._forget(batch)
            if conn is not None and not _refused_by_server(exc):
                conn.terminate()
                conn = None
            outcomes = [self._failure(exc, len(batch))] * len(batch)
        finally:
            self._conn = conn
        for request, outcome in zip(batch, outcomes, strict=True):
            if request.future.done():
                continue
            if isinstance(outcome, BaseException):
                request.future.set_exception(outcome)
            else:
                request.future.set_result(outcome)

    def _failure(self, exc: Exception, requests: int) -> EventStoreError:
        """What every caller of a failed batch gets: its outcome is unknown unless the
        server refused the statement."""
        if isinstance(exc, TimeoutError):
            return StoreUnavailable(
                f"PostgreSQL did not answer the append within {self._timeout} s (it may "
                "have been written); retry with the same idempotency key"
            )
        if isinstance(exc, UNAVAILABLE):
            return StoreUnavailable(
                f"PostgreSQL connection lost during append: {exc}; "
                "retry with the same idempotency key"
            )
        if isinstance(exc, asyncpg.PostgresError):
            return chain_refusal(exc, self._log_name) or EventStoreError(f"append failed: {exc}")
        _log.warning("append batch failed", error=repr(exc), requests=requests)
        return EventStoreError(f"append failed: {exc!r}")

    async def _write(self, conn: asyncpg.Connection, batch: list[_Request]) -> list[Any]:
        now, columns, fenced = time.time(), _columns(batch), _tokens(batch)
        guess = self._guess_versions(batch)
        if guess is not None:
            try:
                return await self._write_known(conn, batch, columns, fenced, guess, now)
            except asyncpg.UniqueViolationError:
                pass  # another process wrote one of these streams, or a key exists
            except asyncpg.PostgresError as exc:
                if getattr(exc, "sqlstate", None) != FENCED_SQLSTATE:
                    raise  # else a token is stale: append_batch refuses that request only
        owners = epochs = None
        if fenced is not None:
            owners = [None if r.lease is None else r.lease.owner for r in batch]
            epochs = [None if r.lease is None else r.lease.epoch for r in batch]
        rows = await conn.fetch(
            self._sql,
            [r.stream for r in batch],
            [r.expected for r in batch],
            [len(r.records) for r in batch],
            [r.metadata.idempotency_key for r in batch],
            owners,
            epochs,
            *columns,
            now,
            self._channel,
        )
        self._learn(batch, rows)
        return [await self._outcome(r, row, now) for r, row in zip(batch, rows, strict=True)]

    def _guess_versions(self, batch: list[_Request]) -> tuple[list[int], dict[str, int]] | None:
        """Each request's first version, guessed from the versions this writer saw
        committed (a stream it never saw is guessed new when the append accepts a new
        stream), or None to send the batch through the full check.

        A guess can only be behind the truth (versions are gapless and only grow), and a
        guess that is behind collides with an existing (stream, version): never a gap."""
        firsts: list[int] = []
        after: dict[str, int] = {}
        for request in batch:
            current = after.get(request.stream)
            if current is None and (current := self._versions.get(request.stream)) is None:
                if request.expected not in (ANY, NO_STREAM):
                    return None
                current = 0
            if request.expected != ANY and request.expected != current:
                return None
            firsts.append(current + 1)
            after[request.stream] = current + len(request.records)
        return firsts, after

    async def _write_known(
        self,
        conn: asyncpg.Connection,
        batch: list[_Request],
        columns: list[list[Any]],
        fenced: list[list[Any]] | None,
        guess: tuple[list[int], dict[str, int]],
        now: float,
    ) -> list[Any]:
        firsts, after = guess
        e_type, e_schema, e_payload, e_stream, e_corr, e_caus, e_actor, e_key = columns
        versions: list[int] = []
        offsets: list[int] = []
        keys: tuple[list[Any], ...] = ([], [], [], [])  # key, stream, first, last offset
        for request, first in zip(batch, firsts, strict=True):
            n = len(request.records)
            offsets.append(len(versions))
            if (key := request.metadata.idempotency_key) is not None:
                for column, value in zip(
                    keys, (key, request.stream, len(versions) + 1, len(versions) + n), strict=True
                ):
                    column.append(value)
            versions += range(first, first + n)
        head = await conn.fetchval(
            self._known_sql,
            e_stream,
            versions,
            e_type,
            e_schema,
            e_payload,
            e_corr,
            e_caus,
            e_actor,
            e_key,
            *keys,
            *(fenced or (None, None, None)),
            now,
            self._channel,
        )
        self._remember(after)
        _measure_batch(len(versions))
        return [
            self._stored(request, head + offset + 1, first, now)
            for request, first, offset in zip(batch, firsts, offsets, strict=True)
        ]

    def _learn(self, batch: list[_Request], rows: list[Any]) -> None:
        after: dict[str, int] = {}
        appended = 0
        for request, (kind, _, b, _) in zip(batch, rows, strict=True):
            if kind == _APPENDED:
                after[request.stream] = b + len(request.records) - 1
                appended += len(request.records)
            elif kind == _CONFLICT:
                after[request.stream] = b
        self._remember(after)
        _measure_batch(appended)

    def _remember(self, versions: dict[str, int]) -> None:
        if len(self._versions) > _MAX_KNOWN:
            self._versions.clear()
        self._versions.update(versions)

    def _forget(self, batch: list[_Request]) -> None:
        """The outcome is unknown (a lost connection): stop guessing these streams."""
        for request in batch:
            self._versions.pop(request.stream, None)

    @staticmethod
    def _stored(request: _Request, position: int, version: int, now: float) -> list[StoredRecord]:
        meta = request.metadata
        return [
            StoredRecord(
                position + i,
                request.stream,
                version + i,
                r.type,
                r.schema_version,
                r.payload,
                now,
                meta.correlation_id,
                meta.causation_id,
                meta.actor,
                meta.idempotency_key,
            )
            for i, r in enumerate(request.records)
        ]

    async def _outcome(self, request: _Request, row: Any, now: float) -> Any:
        kind, a, b, detail = row
        if kind == _APPENDED:
            return self._stored(request, a, b, now)
        if kind == _CONFLICT:
            return VersionConflict(request.stream, request.expected, b)
        if kind == _FENCED:
            assert request.lease is not None
            return Fenced(request.stream, detail, a, request.lease)
        if kind == _KEY_REUSED:
            key = request.metadata.idempotency_key
            return IdempotencyKeyReused(f"idempotency key {key!r} was used for stream {detail!r}")
        assert kind == _DUPLICATE, kind
        try:
            return await self._read_span(a, b)
        except EventStoreError as exc:
            return exc


def _measure_batch(events: int) -> None:
    """Records the events one statement committed: what group commit achieved."""
    if events and metrics_enabled():
        meters = instruments()
        meters.record(meters.append_batch_size, events, _METRIC_ATTRIBUTES)


def chain_refusal(exc: asyncpg.PostgresError, log: str) -> StoreDamaged | None:
    """:class:`StoreDamaged` for an append the server refused because of the hash chain
    (:mod:`.chain_damage`), else None."""
    state = getattr(exc, "sqlstate", None)
    if state == LOST_HEAD_SQLSTATE:
        return StoreDamaged(log, None, LOST_HEAD_REASON, advice=CHAIN_ADVICE)
    if state != PAST_HEAD_SQLSTATE:
        return None
    recorded, first, last = (int(n) for n in str(getattr(exc, "detail", "")).split())
    return StoreDamaged(log, first, past_head_reason(recorded, first, last), advice=CHAIN_ADVICE)


def _refused_by_server(exc: Exception) -> bool:
    """The server answered with an error: the connection is still good."""
    return isinstance(exc, asyncpg.PostgresError) and not isinstance(exc, UNAVAILABLE)


def _columns(batch: list[_Request]) -> list[list[Any]]:
    """The per-event columns: type, schema, payload, stream, correlation, causation,
    actor, idempotency key (requests' events in request order)."""
    columns: list[list[Any]] = [[] for _ in range(8)]
    e_type, e_schema, e_payload, e_stream, e_corr, e_caus, e_actor, e_key = columns
    for request in batch:
        meta, n = request.metadata, len(request.records)
        for record in request.records:
            e_type.append(record.type)
            e_schema.append(record.schema_version)
            e_payload.append(record.payload)
        e_stream += [request.stream] * n
        e_corr += [meta.correlation_id] * n
        e_caus += [meta.causation_id] * n
        e_actor += [meta.actor] * n
        e_key += [meta.idempotency_key] * n
    return columns


def _tokens(batch: list[_Request]) -> list[list[Any]] | None:
    """The batch's lease tokens as columns (stream, owner, epoch), or None without any."""
    tokens = [(r.stream, r.lease) for r in batch if r.lease is not None]
    if not tokens:
        return None
    return [[s for s, _ in tokens], [t.owner for _, t in tokens], [t.epoch for _, t in tokens]]
