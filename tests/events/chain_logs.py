"""Real logs to tamper with, for the hash chain's tests: an SQLite file and a PostgreSQL
schema, written by the store, then changed with SQL as someone with database access
would: a payload byte edited, rows deleted, swapped, inserted, the tail cut.

Each tampering is written once (``?`` placeholders, ``{events}`` for the table) and run
on either backend by its :class:`ChainLog`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clawlog.events import ANY, EventMetadata, EventStore, SqliteBackend, open_store
from clawlog.events.backends.sqlite_writer import BatchWriter
from clawlog.events.chain import GENESIS, row_link
from clawlog.events.domain.actor import ActorStarted

_COLUMNS = (
    "position, stream, version, type, schema_version, payload, recorded_at, "
    "correlation_id, causation_id, actor, idempotency_key, hash"
)
Statement = tuple[str, Sequence[Any]]


async def write_events(store: EventStore, count: int, *, first: int = 0) -> None:
    """``count`` events: single appends, appends of three with metadata, an idempotent
    one: every kind of row the writer makes."""
    n = first
    while n < first + count:
        if n % 10 == 3 and first + count - n >= 3:
            meta = EventMetadata(correlation_id=f"turn-{n}", causation_id=f"c{n}", actor="a/b")
            events = [ActorStarted(path=f"p{n + i}", kind="many") for i in range(3)]
            await store.append(f"session/s{n % 4}", events, ANY, meta)
            n += 3
            continue
        meta = EventMetadata(idempotency_key=f"k{n}") if n % 10 == 7 else None
        await store.append(f"agent/a{n % 5}", [ActorStarted(path=f"p{n}", kind="w")], ANY, meta)
        n += 1


class ChainLog:
    """One log and the SQL that tampers with it."""

    async def open(self, *, writer: bool = False) -> EventStore:
        raise NotImplementedError

    async def run(self, *statements: Statement) -> None:
        """Run ``statements`` in one transaction."""
        raise NotImplementedError

    async def rows(self, first: int, last: int) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def row(self, position: int) -> tuple[Any, ...]:
        (found,) = await self.rows(position, position)
        return found

    # -- the tamperings ----------------------------------------------------------------
    async def edit_payload_byte(self, position: int) -> None:
        payload = bytearray((await self.row(position))[5])
        payload[-1] ^= 0x01
        await self.run(
            ("UPDATE {events} SET payload = ? WHERE position = ?", (bytes(payload), position))
        )

    async def delete(self, position: int) -> None:
        await self.run(("DELETE FROM {events} WHERE position = ?", (position,)))

    async def swap(self, first: int, second: int) -> None:
        await self.run(
            ("UPDATE {events} SET position = -1 WHERE position = ?", (first,)),
            ("UPDATE {events} SET position = ? WHERE position = ?", (first, second)),
            ("UPDATE {events} SET position = ? WHERE position = -1", (second,)),
        )

    async def insert_at(self, position: int) -> None:
        """Move every row from ``position`` on up by one and put a forged row there."""
        await self.run(
            ("UPDATE {events} SET position = -position WHERE position >= ?", (position,)),
            ("UPDATE {events} SET position = 1 - position WHERE position < 0", ()),
            self._forged(position),
        )

    async def insert_past_head(self, head: int) -> None:
        await self.run(self._forged(head + 1))

    async def append_fitting(self, head: int, *, version: int = 1) -> None:
        """Add a row past the head with the hash that fits the chain (``chain_head`` left
        alone): what someone who knows the encoding, but not the recorded head, would do.
        ``version`` is the row's in stream ``agent/forged``."""
        last = await self.row(head)
        row = (head + 1, "agent/forged", version, *last[3:11])
        await self.run(
            (
                "INSERT INTO {events} (position, stream, version, type, schema_version, "
                "payload, recorded_at, correlation_id, causation_id, actor, idempotency_key, "
                "hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*row, row_link(last[11], row)),
            )
        )

    async def edit_with_its_hash(self, position: int) -> None:
        """Edit a payload byte at ``position`` and give the row the hash that fits it (the
        rows after it left alone)."""
        await self.edit_payload_byte(position)
        prev = (await self.row(position - 1))[11]
        linked = row_link(prev, await self.row(position))
        await self.run(("UPDATE {events} SET hash = ? WHERE position = ?", (linked, position)))

    async def move_head_back(self, position: int) -> None:
        """Set the recorded head's position back, its hash left as it was."""
        await self.run(("UPDATE {chain_head} SET position = ?", (position,)))

    async def set_empty_actor(self, position: int) -> None:
        """An absent (NULL) actor made the empty string: a different value."""
        await self.run(
            ("UPDATE {events} SET actor = '' WHERE position = ? AND actor IS NULL", (position,))
        )

    async def truncate_after(self, position: int) -> None:
        await self.run(("DELETE FROM {events} WHERE position > ?", (position,)))

    async def restart_at(self, position: int) -> None:
        """Give the row at ``position`` the hash it would have as the first of a chain."""
        linked = row_link(GENESIS, await self.row(position))
        await self.run(("UPDATE {events} SET hash = ? WHERE position = ?", (linked, position)))

    async def rewrite_from(self, position: int) -> None:
        """Edit a payload byte at ``position`` and recompute every hash after it, and the
        recorded head: what someone who knows the encoding would do."""
        await self.edit_payload_byte(position)
        prev = (await self.row(position - 1))[11]
        statements: list[Statement] = []
        for row in await self.rows(position, 10**9):
            prev = row_link(prev, row)
            statements.append(("UPDATE {events} SET hash = ? WHERE position = ?", (prev, row[0])))
        statements.append(("UPDATE {chain_head} SET hash = ?", (prev,)))
        await self.run(*statements)

    @staticmethod
    def _forged(position: int) -> Statement:
        payload = ActorStarted(path="forged", kind="w")
        from clawlog.events import default_registry

        tag, version, data = default_registry().encode(payload)
        return (
            "INSERT INTO {events} (position, stream, version, type, schema_version, payload, "
            "recorded_at, hash) VALUES (?, 'agent/forged', 1, ?, ?, ?, 1.0, ?)",
            (position, tag, version, data, os.urandom(32)),
        )


class PythonHashingBackend(SqliteBackend):
    """The SQLite backend whose writer hashes in Python, as where the compiled loop
    (events/_chain_seal.c) could not be built: the writer's seam for it."""

    def _batch_writer(self) -> BatchWriter:
        return BatchWriter(self._max_batch, seal=None)


class SqliteChainLog(ChainLog):
    def __init__(self, path: Path, *, python_hashing: bool = False) -> None:
        self.path = path
        self.python_hashing = python_hashing

    async def open(self, *, writer: bool = False) -> EventStore:
        kind = PythonHashingBackend if self.python_hashing else SqliteBackend
        return await open_store(kind(self.path, read_only=not writer))

    async def run(self, *statements: Statement) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            for sql, params in statements:
                conn.execute(sql.format(events="events", chain_head="chain_head"), params)
            conn.execute("COMMIT")
        finally:
            conn.close()

    async def rows(self, first: int, last: int) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.path)
        try:
            return conn.execute(
                f"SELECT {_COLUMNS} FROM events WHERE position BETWEEN ? AND ? ORDER BY position",
                (first, last),
            ).fetchall()
        finally:
            conn.close()


class PostgresChainLog(ChainLog):
    def __init__(self, url: str, schema: str) -> None:
        self.url, self.schema = url, schema

    async def open(self, *, writer: bool = False) -> EventStore:
        from clawlog.events.backends.postgres import PostgresBackend

        backend = PostgresBackend(self.url, schema=self.schema, pool_size=2, read_only=not writer)
        return await open_store(backend)

    async def run(self, *statements: Statement) -> None:
        import asyncpg

        conn = await asyncpg.connect(self.url)
        try:
            async with conn.transaction():
                for sql, params in statements:
                    await conn.execute(self._sql(sql), *params)
        finally:
            await conn.close()

    async def rows(self, first: int, last: int) -> list[tuple[Any, ...]]:
        import asyncpg

        conn = await asyncpg.connect(self.url)
        try:
            found = await conn.fetch(
                f"SELECT {_COLUMNS} FROM {self.schema}.events "
                "WHERE position BETWEEN $1 AND $2 ORDER BY position",
                first,
                last,
            )
        finally:
            await conn.close()
        return [tuple(row) for row in found]

    async def rows_of(self, table: str) -> list[tuple[Any, ...]]:
        """Every row of one of the log's tables."""
        import asyncpg

        conn = await asyncpg.connect(self.url)
        try:
            return [tuple(row) for row in await conn.fetch(f"SELECT * FROM {self.schema}.{table}")]
        finally:
            await conn.close()

    def _sql(self, sql: str) -> str:
        sql = sql.format(events=f"{self.schema}.events", chain_head=f"{self.schema}.chain_head")
        parts = sql.split("?")
        return "".join(
            part + (f"${i}" if i < len(parts) else "") for i, part in enumerate(parts, 1)
        )


def v1_postgres_ddl(schema: str) -> str:
    """The tables of schema 1, as clawlog created them before the chain (git history)."""
    return f"""
    CREATE SCHEMA {schema};
    CREATE TABLE {schema}.clawlog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE {schema}.events (
        position BIGINT PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
        type TEXT NOT NULL, schema_version INTEGER NOT NULL, payload BYTEA NOT NULL,
        recorded_at DOUBLE PRECISION NOT NULL, correlation_id TEXT, causation_id TEXT,
        actor TEXT, idempotency_key TEXT, UNIQUE (stream, version));
    CREATE TABLE {schema}.idempotency_keys (
        key TEXT PRIMARY KEY, stream TEXT NOT NULL, first_position BIGINT NOT NULL,
        last_position BIGINT NOT NULL);
    CREATE TABLE {schema}.snapshots (
        stream TEXT PRIMARY KEY, version INTEGER NOT NULL, state_type TEXT NOT NULL,
        payload BYTEA NOT NULL, recorded_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE {schema}.stream_leases (
        stream TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL);
    INSERT INTO {schema}.clawlog_meta VALUES ('schema_version', '1');
    """


async def write_v1_postgres_log(url: str, schema: str, events: int) -> None:
    """A schema 1 log in ``schema``, rows as the old writer stored them (an actor on some)."""
    import asyncpg

    from clawlog.events import default_registry

    registry = default_registry()
    rows = []
    for n in range(1, events + 1):
        tag, version, payload = registry.encode(ActorStarted(path=f"old{n}", kind="w"))
        actor = "session/old" if n % 3 == 0 else None
        rows.append((n, f"agent/o{n % 7}", n // 7 + 1, tag, version, payload, 1.7e9 + n, actor))
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(v1_postgres_ddl(schema))
        await conn.copy_records_to_table(
            "events",
            schema_name=schema,
            records=rows,
            columns=[
                "position", "stream", "version", "type", "schema_version", "payload",
                "recorded_at", "actor",
            ],
        )  # fmt: skip
    finally:
        await conn.close()


async def postgres_tables(url: str, schema: str) -> dict[str, list[str]]:
    """The tables of ``schema`` and their columns (to show that nothing was changed)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = $1 ORDER BY table_name, ordinal_position",
            schema,
        )
    finally:
        await conn.close()
    tables: dict[str, list[str]] = {}
    for row in rows:
        tables.setdefault(row["table_name"], []).append(row["column_name"])
    return tables
