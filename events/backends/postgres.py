"""The scale-out backend: PostgreSQL via asyncpg, shared by several processes.

Positions are assigned inside the append transaction under ``LOCK TABLE events IN
EXCLUSIVE MODE`` (as the ``eventsourcing`` library does), so they are gapless and become
visible to readers in order: a reader can never see position n+1 before n. Concurrent
appends of this process are batched into one such transaction (group commit, one round
trip: :mod:`.postgres_writer`), each with its own result or :class:`VersionConflict`.
``wait_for_append`` listens on a channel notified by every append, with polling as the
fallback after a lost connection.

The append functions also extend the log's hash chain under that lock
(:mod:`.postgres_sql`), and refuse to extend one damaged outside clawlog (rows past its
recorded head, a lost ``chain_head`` row: :mod:`.chain_damage`) with
:class:`StoreDamaged`; such a log still opens, for readers and ``clawlog verify``.
Opening a log from before the chain (schema 1) for writing upgrades it in place: its rows
are hashed :data:`UPGRADE_BATCH` per transaction (each holds the append lock that long;
tens of seconds per million events), while other processes keep appending (an append
meanwhile first hashes what is left).

Leases (:class:`~.base.LeaseBackend`) say which process writes a stream; each change of
holder raises the lease's epoch, and an append that carries a :class:`~.base.LeaseToken`
is refused with :class:`Fenced` by the server-side append function once the stream's
lease has moved on, under the same lock that assigns positions (:mod:`.postgres_sql`).
Lease times are the server's clock, so processes need not agree on theirs.

``read_only=True`` opens an existing log without changing anything: no DDL, no upgrade,
no writer (appends, snapshots and leases are refused). ``clawlog verify`` and every CLI
reader open it so: looking at a log, an old one included, never changes it; its
``chain_state`` is None until someone upgrades it (``clawlog verify --upgrade``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from typing import Any

import asyncpg

from ..chain import ChainedRow, ChainState
from ..envelope import EventMetadata, NewRecord, StoredRecord
from ..errors import (
    EventStoreError,
    NotAClawlogDatabase,
    StoreClosed,
    StoreDamaged,
    StoreUnavailable,
)
from ..logging import get_logger
from .base import Lease, LeaseToken, SnapshotRecord
from .chain_damage import LOST_HEAD_ADVICE, READ_LOST_HEAD_REASON
from .postgres_sql import (
    CHAIN_SCHEMA,
    SCHEMA_VERSION,
    UPGRADE_BATCH,
    acquire_leases_sql,
    chain_upgrade_sql,
    ddl,
)
from .postgres_writer import UNAVAILABLE as _UNAVAILABLE
from .postgres_writer import PostgresWriter

__all__ = ["PostgresBackend"]

_log = get_logger(__name__)
_COLUMNS = (
    "position, stream, version, type, schema_version, payload, recorded_at, "
    "correlation_id, causation_id, actor, idempotency_key"
)
_LEASE_COLUMNS = "stream, owner, epoch, expires_at"
#: The server's clock in seconds since the Unix epoch: every lease time is in it.
_NOW = "extract(epoch FROM clock_timestamp())"
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: SQLSTATEs of a read whose table, column or schema is gone: the log is damaged.
_MISSING_SCHEMA = frozenset({"42P01", "42703", "3F000"})


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
        append_timeout: float = 30.0,
        read_only: bool = False,
    ) -> None:
        if _IDENTIFIER.fullmatch(schema) is None:
            raise ValueError(f"invalid schema name {schema!r}")
        self.url, self.schema = url, schema
        if append_timeout <= 0:
            raise ValueError("append_timeout must be positive")
        self._pool_size, self._max_batch, self._poll = pool_size, max_batch, poll_interval
        #: Seconds a batch may take (connect included) before its appends fail with
        #: StoreUnavailable: a frozen server or a half-open link never blocks appends.
        self._append_timeout = append_timeout
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self._writer: PostgresWriter | None = None
        self._appended = asyncio.Event()
        #: The highest position a notification announced (appends notify the new head)
        #: while the listener is up; 0 while it is not (readers ask the server then).
        self._notified_head = 0
        self._channel = f"clawlog_{schema}"
        self._state = "unopened"
        #: Only read an existing log: no DDL, no upgrade, no writer.
        self.read_only = read_only

    # -- lifecycle ----------------------------------------------------------------------
    async def open(self) -> None:
        try:
            self._pool = await asyncpg.create_pool(self.url, min_size=1, max_size=self._pool_size)
            async with self._pool.acquire() as conn:
                if self.read_only:
                    await self._check_existing(conn)
                else:
                    await self._check_or_create(conn)
            await self._listen()
        except BaseException as exc:
            await self._close_pool()
            if isinstance(exc, _UNAVAILABLE):
                raise StoreUnavailable(f"cannot reach PostgreSQL: {exc}") from exc
            raise
        self._state = "open"
        if self.read_only:
            return
        self._writer = PostgresWriter(
            self.url,
            self.schema,
            self._channel,
            self._max_batch,
            self._span,
            timeout=self._append_timeout,
        )

    async def _log_version(self, conn: asyncpg.Connection) -> int | None:
        """The schema version of the log in ``schema`` (None: there is none); refuse
        one that is foreign or newer."""
        events = await conn.fetchval("SELECT to_regclass($1)", f"{self.schema}.events")
        meta = await conn.fetchval("SELECT to_regclass($1)", f"{self.schema}.clawlog_meta")
        if events is not None and meta is None:
            raise NotAClawlogDatabase(
                f"schema {self.schema!r} has an events table that is not a clawlog log"
            )
        if meta is None:
            return None
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
        return version

    async def _check_existing(self, conn: asyncpg.Connection) -> None:
        """A read-only open: the log must be there; nothing is created or upgraded."""
        if await self._log_version(conn) is None:
            raise EventStoreError(f"PostgreSQL schema {self.schema!r} holds no clawlog log yet")

    async def _check_or_create(self, conn: asyncpg.Connection) -> None:
        """Create or migrate the schema; refuse one that is foreign or newer."""
        await self._log_version(conn)
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", self.schema)
            await conn.execute(ddl(self.schema))
        await self._upgrade_chain(conn)
        head = await conn.fetchval(f"SELECT count(*) FROM {self.schema}.chain_head")
        if not head:  # opened all the same: readers and `clawlog verify` need the log
            _log.warning(
                "the log's recorded chain head is lost: appends are refused",
                schema=self.schema,
                advice=LOST_HEAD_ADVICE,
            )

    async def _upgrade_chain(self, conn: asyncpg.Connection) -> None:
        """Hash the rows of a log from before the chain, :data:`UPGRADE_BATCH` per
        transaction (each holds the append lock that long); nothing to do on a current
        log. Appends of other processes meanwhile hash what is left first."""
        sql = chain_upgrade_sql(self.schema)
        while not await conn.fetchval(sql, UPGRADE_BATCH):
            _log.info("hashing the log's rows into a chain", schema=self.schema)

    async def _listen(self) -> None:
        self._listener = await asyncpg.connect(self.url)
        await self._listener.add_listener(self._channel, self._notified)
        self._listener.add_termination_listener(lambda _: self._listen_again())

    def _notified(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        with contextlib.suppress(ValueError):
            self._notified_head = max(self._notified_head, int(payload))
        self._notify()

    def _listen_again(self) -> None:
        """The LISTEN connection died (a restart): reconnect in the background; readers
        poll meanwhile, so nothing is missed."""
        self._notified_head = 0  # notifications may be missed until it listens again
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
            await self._writer.close()
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
    def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
        *,
        lease: LeaseToken | None = None,
    ) -> asyncio.Future[list[StoredRecord]]:
        """Queue the append for the writer's next batch; the future holds its result
        (:class:`Fenced` when ``lease`` is no longer the stream's)."""
        self._check_writable()
        assert self._writer is not None
        return self._writer.submit(stream, records, expected_version, metadata, lease)

    async def _span(self, first: int, last: int) -> list[StoredRecord]:
        """The rows an earlier append wrote (a repeated idempotency key). The writer calls
        it also while ``close()`` drains the queue, so it needs the pool, not "open"."""
        if self._pool is None:
            raise StoreClosed(f"the PostgreSQL store is {self._state}")
        try:
            rows = await self._pool.fetch(
                f"SELECT {_COLUMNS} FROM {self.schema}.events WHERE position "
                "BETWEEN $1 AND $2 ORDER BY position",
                first,
                last,
            )
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(f"PostgreSQL is unreachable: {exc}") from exc
        return [StoredRecord(*row) for row in rows]

    async def save_snapshot(self, snapshot: SnapshotRecord) -> None:
        self._check_writable()
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
        rows = await self._fetch(sql, *params, position=from_position)
        return [StoredRecord(*row) for row in rows]

    async def stream_version(self, stream: str) -> int:
        rows = await self._fetch(
            f"SELECT coalesce(max(version), 0) FROM {self.schema}.events WHERE stream = $1", stream
        )
        return int(rows[0][0])

    async def head_position(self) -> int:
        rows = await self._fetch(f"SELECT coalesce(max(position), 0) FROM {self.schema}.events")
        return int(rows[0][0])

    def notified_head(self) -> int:
        """The highest position a notification announced (0: none since the listener
        connected): committed and visible, possibly behind the head."""
        return self._notified_head

    async def wait_for_append(self, after_position: int, timeout: float) -> None:
        self._check_open()
        event = self._appended
        # A notification since the caller read says so without a round trip; without one,
        # the server is asked (an append may have committed before its notification came).
        if self._notified_head > after_position:
            return
        if not self._notified_head and await self.head_position() > after_position:
            return
        with contextlib.suppress(TimeoutError):  # asyncio.timeout: see memory.py
            async with asyncio.timeout(min(timeout, self._poll)):
                await event.wait()

    async def load_snapshot(self, stream: str) -> SnapshotRecord | None:
        rows = await self._fetch(
            f"SELECT stream, version, state_type, payload, recorded_at "
            f"FROM {self.schema}.snapshots WHERE stream = $1",
            stream,
        )
        return SnapshotRecord(*rows[0]) if rows else None

    # -- the hash chain (read by clawlog.events.verify) ------------------------------------
    async def chain_state(self) -> ChainState | None:
        """The writer's recorded head and the last position, in one statement (one
        snapshot); None for a log from before the chain (opened read-only: nobody has
        upgraded it) and while the rows of an old log are still being hashed."""
        s = self.schema
        (found,) = await self._fetch(
            f"SELECT to_regclass($1), (SELECT m.value::int FROM {s}.clawlog_meta m "
            "WHERE m.key = 'schema_version')",
            f"{s}.chain_head",
        )
        if found[0] is None and (found[1] or 1) < CHAIN_SCHEMA:
            return None  # a log from before the chain, that no writer has opened since
        rows = await self._fetch(
            f"SELECT (SELECT coalesce(max(position), 0) FROM {s}.events), h.position, h.hash, "
            f"h.complete, coalesce((SELECT m.value::int FROM {s}.clawlog_meta m "
            "WHERE m.key = 'schema_version'), 1) "
            f"FROM (SELECT 1) one LEFT JOIN {s}.chain_head h ON h.id = 1"
        )
        last, recorded, recorded_hash, complete, version = rows[0]
        if recorded is None and version >= CHAIN_SCHEMA:
            # Never re-created on a chained log (postgres_sql.ddl): it would hide a cut tail.
            log = f"in PostgreSQL schema {s}"
            raise StoreDamaged(log, None, READ_LOST_HEAD_REASON, advice=LOST_HEAD_ADVICE)
        if recorded is None or not complete:
            return None
        return ChainState(int(recorded), bytes(recorded_hash), int(last))

    async def read_chain(self, from_position: int, limit: int) -> list[ChainedRow]:
        """Up to ``limit`` rows from ``from_position`` on, with their hashes, as stored."""
        rows = await self._fetch(
            f"SELECT {_COLUMNS}, hash FROM {self.schema}.events WHERE position >= $1 "
            "ORDER BY position LIMIT $2",
            from_position,
            limit,
            position=from_position,
        )
        return [tuple(row) for row in rows]

    # -- leases (one owner process per stream) --------------------------------------------
    async def acquire_leases(
        self, streams: Sequence[str], owner: str, ttl_s: float
    ) -> dict[str, Lease]:
        self._check_writable()
        # Sorted: two processes taking overlapping sets lock their rows in one order.
        wanted = sorted(set(streams))
        rows = await self._fetch(acquire_leases_sql(self.schema), wanted, owner, ttl_s)
        return {row[0]: Lease(*row) for row in rows}

    async def renew_leases(self, owner: str, ttl_s: float) -> list[str]:
        self._check_writable()
        rows = await self._fetch(
            f"UPDATE {self.schema}.stream_leases SET expires_at = {_NOW} + $2 "
            "WHERE owner = $1 AND NOT released RETURNING stream",
            owner,
            ttl_s,
        )
        return [row[0] for row in rows]

    async def release_leases(self, streams: Sequence[str] | None, owner: str) -> None:
        self._check_writable()
        # Expired and marked, never deleted: the next holder's epoch continues from it.
        sql = (
            f"UPDATE {self.schema}.stream_leases SET released = true, "
            f"expires_at = least(expires_at, {_NOW}) WHERE owner = $1"
        )
        if streams is None:
            await self._execute(sql, owner)
        else:
            await self._execute(sql + " AND stream = any($2::text[])", owner, list(streams))

    async def leases(self, streams: Sequence[str]) -> dict[str, Lease]:
        self._check_writable()
        rows = await self._fetch(
            f"SELECT {_LEASE_COLUMNS} FROM {self.schema}.stream_leases "
            "WHERE stream = any($1::text[])",
            list(streams),
        )
        return {row[0]: Lease(*row) for row in rows}

    async def expired_leases(self, prefix: str, limit: int = 1000) -> list[Lease]:
        self._check_writable()
        rows = await self._fetch(
            f"SELECT {_LEASE_COLUMNS} FROM {self.schema}.stream_leases "
            f"WHERE NOT released AND expires_at <= {_NOW} "
            "AND left(stream, length($1)) = $1 ORDER BY expires_at, stream LIMIT $2",
            prefix,
            limit,
        )
        return [Lease(*row) for row in rows]

    # -- helpers ------------------------------------------------------------------------
    async def _fetch(self, sql: str, *params: Any, position: int | None = None) -> list[Any]:
        pool = self._check_open()
        try:
            return list(await pool.fetch(sql, *params))
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(f"PostgreSQL is unreachable: {exc}") from exc
        except asyncpg.PostgresError as exc:
            raise self._read_failure(exc, position) from exc

    def _read_failure(self, exc: asyncpg.PostgresError, position: int | None) -> EventStoreError:
        """:class:`StoreDamaged` for what the server reports as damage (SQLSTATE class XX:
        data or index corrupted) or a table or column of the log that is gone (every read
        fails then, wherever it starts: no position); any other refusal of a read
        (permissions, a full disk, a cancelled query) is :class:`StoreUnavailable`."""
        state = str(getattr(exc, "sqlstate", "") or "")
        log = f"in PostgreSQL schema {self.schema}"
        if state in _MISSING_SCHEMA:
            return StoreDamaged(log, None, str(exc))
        if state.startswith("XX"):
            return StoreDamaged(log, position, str(exc), exact=False)  # where the read began
        return StoreUnavailable(f"PostgreSQL refused a read of schema {self.schema}: {exc}")

    async def _execute(self, sql: str, *params: Any) -> Any:
        pool = self._check_open()
        try:
            return await pool.execute(sql, *params)
        except _UNAVAILABLE as exc:
            raise StoreUnavailable(f"PostgreSQL is unreachable: {exc}") from exc

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise EventStoreError(f"PostgreSQL schema {self.schema!r} was opened read-only")

    def _check_open(self) -> asyncpg.Pool:
        if self._state != "open" or self._pool is None:
            raise StoreClosed(f"the PostgreSQL store is {self._state}")
        return self._pool
