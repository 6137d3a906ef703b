"""The scale-out backend: PostgreSQL via asyncpg, shared by several processes.

Positions are assigned inside the append transaction under ``LOCK TABLE events IN
EXCLUSIVE MODE`` (as the ``eventsourcing`` library does), so they are gapless and become
visible to readers in order: a reader can never see position n+1 before n. Concurrent
appends of this process are batched into one such transaction (group commit), each with
its own result or :class:`VersionConflict`. ``wait_for_append`` listens on a channel
notified by every append, with polling as the fallback after a lost connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Sequence
from typing import Any

import asyncpg
import structlog
from msgspec.structs import astuple

from ..envelope import EventMetadata, NewRecord, StoredRecord
from ..errors import (
    EventStoreError,
    IdempotencyKeyReused,
    NotAClawlogDatabase,
    StoreClosed,
    StoreUnavailable,
)
from .base import SnapshotRecord, check_expected_version

__all__ = ["PostgresBackend"]

SCHEMA_VERSION = 1
_log = structlog.get_logger("clawlog.events.postgres")
_COLUMNS = (
    "position, stream, version, type, schema_version, payload, recorded_at, "
    "correlation_id, causation_id, actor, idempotency_key"
)
_UNAVAILABLE = (
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    OSError,
    asyncpg.CannotConnectNowError,
)
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def _ddl(schema: str) -> str:
    return f"""
    CREATE SCHEMA IF NOT EXISTS {schema};
    CREATE TABLE IF NOT EXISTS {schema}.clawlog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS {schema}.events (
        position BIGINT PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
        type TEXT NOT NULL, schema_version INTEGER NOT NULL, payload BYTEA NOT NULL,
        recorded_at DOUBLE PRECISION NOT NULL, correlation_id TEXT, causation_id TEXT,
        actor TEXT, idempotency_key TEXT, UNIQUE (stream, version));
    CREATE TABLE IF NOT EXISTS {schema}.idempotency_keys (
        key TEXT PRIMARY KEY, stream TEXT NOT NULL, first_position BIGINT NOT NULL,
        last_position BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS {schema}.snapshots (
        stream TEXT PRIMARY KEY, version INTEGER NOT NULL, state_type TEXT NOT NULL,
        payload BYTEA NOT NULL, recorded_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE IF NOT EXISTS {schema}.stream_leases (
        stream TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL);
    INSERT INTO {schema}.clawlog_meta VALUES ('schema_version', '{SCHEMA_VERSION}')
        ON CONFLICT (key) DO NOTHING;
    """


class _Request:
    __slots__ = ("expected", "future", "metadata", "records", "stream")

    def __init__(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected: int,
        metadata: EventMetadata,
        future: asyncio.Future[Any],
    ) -> None:
        self.stream, self.records, self.expected = stream, records, expected
        self.metadata, self.future = metadata, future


class PostgresBackend:
    """An event log in PostgreSQL. ``schema`` isolates several logs in one database."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = "clawlog",
        pool_size: int = 10,
        max_batch: int = 500,
        poll_interval: float = 0.5,
    ) -> None:
        if _IDENTIFIER.fullmatch(schema) is None:
            raise ValueError(f"invalid schema name {schema!r}")
        self.url, self.schema = url, schema
        self._pool_size, self._max_batch, self._poll = pool_size, max_batch, poll_interval
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self._queue: list[_Request] = []
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._appended = asyncio.Event()
        self._channel = f"clawlog_{schema}"
        self._state = "unopened"

    # -- lifecycle ----------------------------------------------------------------------
    async def open(self) -> None:
        try:
            self._pool = await asyncpg.create_pool(self.url, min_size=1, max_size=self._pool_size)
            async with self._pool.acquire() as conn:
                await self._check_or_create(conn)
            await self._listen()
        except _UNAVAILABLE as exc:
            await self._close_pool()
            raise StoreUnavailable(f"cannot reach PostgreSQL: {exc}") from exc
        self._writer = asyncio.create_task(self._run_writer(), name="clawlog-pg-writer")
        self._state = "open"

    async def _check_or_create(self, conn: asyncpg.Connection) -> None:
        """Create or migrate the schema; refuse one that is foreign or newer."""
        events = await conn.fetchval("SELECT to_regclass($1)", f"{self.schema}.events")
        meta = await conn.fetchval("SELECT to_regclass($1)", f"{self.schema}.clawlog_meta")
        if events is not None and meta is None:
            raise NotAClawlogDatabase(
                f"schema {self.schema!r} has an events table that is not a clawlog log"
            )
        if meta is not None:
            version = int(
                await conn.fetchval(
                    f"SELECT value FROM {self.schema}.clawlog_meta WHERE key = 'schema_version'"
                )
            )
            if version > SCHEMA_VERSION:
                raise NotAClawlogDatabase(
                    f"schema {self.schema!r} was written by a newer "
                    f"clawlog (schema {version} > {SCHEMA_VERSION})"
                )
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", self.schema)
            await conn.execute(_ddl(self.schema))

    async def _listen(self) -> None:
        self._listener = await asyncpg.connect(self.url)
        await self._listener.add_listener(self._channel, lambda *_: self._notify())
        self._listener.add_termination_listener(lambda _: self._listen_again())

    def _listen_again(self) -> None:
        """The LISTEN connection died (a restart): reconnect in the background; readers
        poll meanwhile, so nothing is missed."""
        if self._state == "open":
            asyncio.get_running_loop().create_task(self._reconnect_listener())

    async def _reconnect_listener(self) -> None:
        delay = 0.1
        while self._state == "open":
            try:
                await self._listen()
                self._notify()  # wake readers: they catch up from their position
                return
            except _UNAVAILABLE:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _notify(self) -> None:
        self._appended.set()
        self._appended = asyncio.Event()

    async def close(self) -> None:
        if self._state == "closed":
            return
        self._state = "closed"
        if self._writer is not None:
            self._wake.set()
            await asyncio.shield(self._writer)
        self._notify()
        await self._close_pool()

    async def _close_pool(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
        if self._pool is not None:
            with contextlib.suppress(Exception):
                await self._pool.close()

    # -- writing ------------------------------------------------------------------------
    async def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
    ) -> list[StoredRecord]:
        self._check_open()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.append(_Request(stream, records, expected_version, metadata, future))
        self._wake.set()
        return await future  # type: ignore[no-any-return]

    async def _run_writer(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch = self._queue[: self._max_batch]
                del self._queue[: self._max_batch]
                await self._commit(batch)
                await asyncio.sleep(0)
            if self._state == "closed":
                return

    async def _commit(self, batch: list[_Request]) -> None:
        assert self._pool is not None
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                outcomes = await self._write(conn, batch)
        except _UNAVAILABLE as exc:
            failure = StoreUnavailable(
                f"PostgreSQL connection lost during append: {exc}; "
                "retry with the same idempotency key"
            )
            outcomes = [failure] * len(batch)
        except asyncpg.PostgresError as exc:
            outcomes = [EventStoreError(f"append failed: {exc}")] * len(batch)
        for request, outcome in zip(batch, outcomes, strict=True):
            if request.future.done():
                continue
            if isinstance(outcome, BaseException):
                request.future.set_exception(outcome)
            else:
                request.future.set_result(outcome)

    async def _write(self, conn: asyncpg.Connection, batch: list[_Request]) -> list[Any]:
        s = self.schema
        await conn.execute(f"LOCK TABLE {s}.events IN EXCLUSIVE MODE")
        head = int(await conn.fetchval(f"SELECT coalesce(max(position), 0) FROM {s}.events"))
        streams = list({r.stream for r in batch})
        versions = dict(
            await conn.fetch(
                f"SELECT stream, max(version) FROM {s}.events WHERE stream = any($1::text[]) "
                "GROUP BY stream",
                streams,
            )
        )
        keys = [r.metadata.idempotency_key for r in batch if r.metadata.idempotency_key]
        spans = (
            {
                row[0]: (row[1], row[2], row[3])
                for row in await conn.fetch(
                    f"SELECT key, stream, first_position, last_position FROM {s}.idempotency_keys "
                    "WHERE key = any($1::text[])",
                    keys,
                )
            }
            if keys
            else {}
        )
        now, rows, key_rows, outcomes = time.time(), [], [], []
        for request in batch:
            meta, key = request.metadata, request.metadata.idempotency_key
            try:
                if key is not None and key in spans:
                    stream, first, last = spans[key]
                    if stream != request.stream:
                        raise IdempotencyKeyReused(
                            f"idempotency key {key!r} was used for stream {stream!r}"
                        )
                    outcomes.append((first, last))
                    continue
                current = versions.get(request.stream, 0)
                check_expected_version(request.stream, request.expected, current)
            except EventStoreError as exc:
                outcomes.append(exc)
                continue
            records = [
                StoredRecord(
                    head + i,
                    request.stream,
                    current + i,
                    r.type,
                    r.schema_version,
                    r.payload,
                    now,
                    meta.correlation_id,
                    meta.causation_id,
                    meta.actor,
                    key,
                )
                for i, r in enumerate(request.records, start=1)
            ]
            head, versions[request.stream] = records[-1].position, records[-1].version
            rows.extend(astuple(r) for r in records)
            if key is not None:
                spans[key] = (request.stream, records[0].position, records[-1].position)
                key_rows.append((key, request.stream, records[0].position, records[-1].position))
            outcomes.append(records)
        if rows:
            # One statement for the whole batch (column arrays), notifying in the same trip.
            columns = [list(column) for column in zip(*rows, strict=True)]
            await conn.execute(
                f"WITH added AS (INSERT INTO {s}.events ({_COLUMNS}) SELECT * FROM unnest("
                "$1::bigint[], $2::text[], $3::int[], $4::text[], $5::int[], $6::bytea[], "
                "$7::float8[], $8::text[], $9::text[], $10::text[], $11::text[])) "
                "SELECT pg_notify($12, $13)",
                *columns,
                self._channel,
                str(head),
            )
        if key_rows:
            await conn.executemany(
                f"INSERT INTO {s}.idempotency_keys VALUES ($1,$2,$3,$4)", key_rows
            )
        return [await self._span(conn, o) if isinstance(o, tuple) else o for o in outcomes]

    async def _span(self, conn: asyncpg.Connection, span: tuple[int, int]) -> list[StoredRecord]:
        rows = await conn.fetch(
            f"SELECT {_COLUMNS} FROM {self.schema}.events WHERE position "
            "BETWEEN $1 AND $2 ORDER BY position",
            *span,
        )
        return [StoredRecord(*row) for row in rows]

    async def save_snapshot(self, snapshot: SnapshotRecord) -> None:
        await self._execute(
            f"INSERT INTO {self.schema}.snapshots VALUES ($1,$2,$3,$4,$5) ON CONFLICT (stream) "
            "DO UPDATE SET version = excluded.version, state_type = excluded.state_type, "
            "payload = excluded.payload, recorded_at = excluded.recorded_at "
            f"WHERE excluded.version >= {self.schema}.snapshots.version",
            snapshot.stream,
            snapshot.version,
            snapshot.state_type,
            snapshot.payload,
            snapshot.recorded_at,
        )

    # -- reading ------------------------------------------------------------------------
    async def read_stream(
        self, stream: str, from_version: int, limit: int | None
    ) -> list[StoredRecord]:
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM {self.schema}.events WHERE stream = $1 AND version >= $2 "
            "ORDER BY version LIMIT $3",
            stream,
            from_version,
            limit,
        )
        return [StoredRecord(*row) for row in rows]

    async def read_all(
        self, from_position: int, limit: int, stream_prefix: str | None, types: Sequence[str] | None
    ) -> list[StoredRecord]:
        sql = f"SELECT {_COLUMNS} FROM {self.schema}.events WHERE position >= $1"
        params: list[Any] = [from_position]
        if stream_prefix is not None:
            params.append(stream_prefix)
            sql += f" AND left(stream, length(${len(params)})) = ${len(params)}"
        if types is not None:
            params.append(list(types))
            sql += f" AND type = any(${len(params)}::text[])"
        params.append(limit)
        sql += f" ORDER BY position LIMIT ${len(params)}"
        return [StoredRecord(*row) for row in await self._fetch(sql, *params)]

    async def stream_version(self, stream: str) -> int:
        rows = await self._fetch(
            f"SELECT coalesce(max(version), 0) FROM {self.schema}.events WHERE stream = $1", stream
        )
        return int(rows[0][0])

    async def head_position(self) -> int:
        rows = await self._fetch(f"SELECT coalesce(max(position), 0) FROM {self.schema}.events")
        return int(rows[0][0])

    async def wait_for_append(self, after_position: int, timeout: float) -> None:
        self._check_open()
        event = self._appended
        if await self.head_position() > after_position:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), min(timeout, self._poll))

    async def load_snapshot(self, stream: str) -> SnapshotRecord | None:
        rows = await self._fetch(
            f"SELECT stream, version, state_type, payload, recorded_at "
            f"FROM {self.schema}.snapshots WHERE stream = $1",
            stream,
        )
        return SnapshotRecord(*rows[0]) if rows else None

    # -- leases (one owner process per stream) --------------------------------------------
    async def acquire_leases(
        self, streams: Sequence[str], owner: str, ttl_s: float
    ) -> dict[str, str]:
        refused = {}
        now = time.time()
        for stream in streams:
            rows = await self._fetch(
                f"INSERT INTO {self.schema}.stream_leases VALUES ($1, $2, $3) "
                "ON CONFLICT (stream) DO UPDATE SET owner = excluded.owner, "
                "expires_at = excluded.expires_at "
                f"WHERE {self.schema}.stream_leases.owner = excluded.owner "
                f"OR {self.schema}.stream_leases.expires_at < $4 RETURNING owner",
                stream,
                owner,
                now + ttl_s,
                now,
            )
            if not rows:
                holder = await self._fetch(
                    f"SELECT owner FROM {self.schema}.stream_leases WHERE stream = $1", stream
                )
                refused[stream] = holder[0][0] if holder else "unknown"
        return refused

    async def renew_leases(self, owner: str, ttl_s: float) -> int:
        result = await self._execute(
            f"UPDATE {self.schema}.stream_leases SET expires_at = $2 WHERE owner = $1",
            owner,
            time.time() + ttl_s,
        )
        return int(str(result).split()[-1])

    async def release_leases(self, streams: Sequence[str] | None, owner: str) -> None:
        if streams is None:
            await self._execute(f"DELETE FROM {self.schema}.stream_leases WHERE owner = $1", owner)
        else:
            await self._execute(
                f"DELETE FROM {self.schema}.stream_leases WHERE owner = $1 "
                "AND stream = any($2::text[])",
                owner,
                list(streams),
            )

    # -- helpers ------------------------------------------------------------------------
    async def _fetch(self, sql: str, *params: Any) -> list[Any]:
        pool = self._check_open()
        try:
            return list(await pool.fetch(sql, *params))
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(f"PostgreSQL is unreachable: {exc}") from exc

    async def _execute(self, sql: str, *params: Any) -> Any:
        pool = self._check_open()
        try:
            return await pool.execute(sql, *params)
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(f"PostgreSQL is unreachable: {exc}") from exc

    def _check_open(self) -> asyncpg.Pool:
        if self._state != "open" or self._pool is None:
            raise StoreClosed(f"the PostgreSQL store is {self._state}")
        return self._pool
