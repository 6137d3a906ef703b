"""Lease epochs and fenced appends on a real PostgreSQL server: what the store contract
cannot show with one connection. A takeover waits for an append in flight (and then
reads it), while extending one's own leases never waits; a log of schema 2 (its leases
without epochs, its append functions of the old signatures) is upgraded in place, and
no unfenced function is left behind for an older writer to call.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import asyncpg
import pytest

from clawlog.events import (
    ANY,
    NO_STREAM,
    EventRegistry,
    EventStore,
    EventStoreError,
    Fenced,
    LeaseToken,
    open_store,
)
from clawlog.events.backends.postgres import PostgresBackend
from clawlog.events.backends.postgres_sql import APPEND_KINDS, SCHEMA_VERSION, append_sql
from clawlog.events.testing import Noted
from clawlog.events.verify import verify_chain
from tests.events.chain_logs import postgres_tables
from tests.events_pg import schema_v2

pytestmark = pytest.mark.postgres
_REGISTRY = EventRegistry([Noted])


def schema() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


async def open_pg(url: str, name: str, *, read_only: bool = False) -> EventStore:
    return await open_store(
        PostgresBackend(url, schema=name, read_only=read_only), registry=_REGISTRY
    )


def _event_columns(stream: str, texts: list[str]) -> list[list[Any]]:
    """The per-event arrays of the append functions: type, schema, payload, stream,
    correlation, causation, actor, idempotency key."""
    encoded = [_REGISTRY.encode(Noted(text=text)) for text in texts]
    n = len(texts)
    return [
        [tag for tag, _, _ in encoded],
        [version for _, version, _ in encoded],
        [payload for _, _, payload in encoded],
        [stream] * n,
        *([[None] * n] * 4),
    ]


async def _append_raw(conn: asyncpg.Connection, name: str, stream: str, token: LeaseToken) -> Any:
    """One fenced request through the current ``append_batch``, as the writer sends it."""
    [row] = await conn.fetch(
        append_sql(name),
        [stream],
        [ANY],
        [1],
        [None],
        [token.owner],
        [token.epoch],
        *_event_columns(stream, ["in flight"]),
        time.time(),
        f"clawlog_{name}",
    )
    return row


async def _functions(conn: asyncpg.Connection, name: str) -> list[tuple[str, str]]:
    rows = await conn.fetch(
        "SELECT p.proname, pg_get_function_identity_arguments(p.oid) FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 "
        "AND p.proname IN ('append_batch', 'append_known') ORDER BY 1, 2",
        name,
    )
    return [(row[0], row[1]) for row in rows]


async def test_a_takeover_waits_for_an_append_in_flight_and_then_reads_it(pg_url: str) -> None:
    name = schema()
    store = await open_pg(pg_url, name)
    leases: PostgresBackend = store.backend  # type: ignore[assignment]
    zombie = await asyncpg.connect(pg_url)
    try:
        await leases.acquire_leases(["s/t"], "proc-a", 0)  # expired: a takeover is due
        await leases.acquire_leases(["s/held"], "proc-a", 30)
        in_flight = zombie.transaction()
        await in_flight.start()
        # proc-a's append has passed its fence under the lock and is not committed yet.
        row = await _append_raw(zombie, name, "s/t", LeaseToken("proc-a", 1))
        assert row["kind"] == APPEND_KINDS["appended"]
        takeover = asyncio.create_task(leases.acquire_leases(["s/t"], "proc-b", 30))
        async with asyncio.timeout(10):
            while not await zombie.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%acquire_leases%' AND pid <> pg_backend_pid()"
            ):
                assert not takeover.done()
            # no takeover: extending one's own lease, taking a new one, being refused
            own = await leases.acquire_leases(["s/held", "s/new"], "proc-a", 30)
            refused = await leases.acquire_leases(["s/held"], "proc-b", 30)
        assert {s: x.owner for s, x in own.items()} == {"s/held": "proc-a", "s/new": "proc-a"}
        assert refused["s/held"].owner == "proc-a"
        assert not takeover.done()
        await in_flight.commit()
        taken = (await takeover)["s/t"]
        assert (taken.owner, taken.epoch) == ("proc-b", 2)
        # the new holder reads what the old one wrote before it took over ...
        assert [e.event for e in await store.read_stream("s/t")] == [Noted(text="in flight")]
        # ... and the old holder's next append is refused
        late = await _append_raw(zombie, name, "s/t", LeaseToken("proc-a", 1))
        assert (late["kind"], late["a"], late["detail"]) == (APPEND_KINDS["fenced"], 2, "proc-b")
        assert await store.head_position() == 1
    finally:
        await zombie.close()
        await store.close()


async def _write_schema_2_log(url: str, name: str) -> None:
    """A log as clawlog left it at schema 2: three events written by its own append
    function, a lease row without an epoch."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(schema_v2.ddl(name))
        [row] = await conn.fetch(
            schema_v2.append_sql(name),
            ["s/old"],
            [NO_STREAM],
            [3],
            [None],
            *_event_columns("s/old", ["one", "two", "three"]),
            time.time(),
            f"clawlog_{name}",
        )
        assert row["kind"] == APPEND_KINDS["appended"]
        await conn.execute(
            f"INSERT INTO {name}.stream_leases VALUES ('s/old', 'proc-a', "
            "extract(epoch FROM clock_timestamp()) + 3600)"
        )
    finally:
        await conn.close()


async def test_a_schema_2_log_is_upgraded_in_place_and_no_unfenced_append_remains(
    pg_url: str,
) -> None:
    name = schema()
    await _write_schema_2_log(pg_url, name)
    conn = await asyncpg.connect(pg_url)
    try:
        old_functions = await _functions(conn, name)
        tables = await postgres_tables(pg_url, name)
        assert "epoch" not in tables["stream_leases"] and len(old_functions) == 2
        reader = await open_pg(pg_url, name, read_only=True)  # a reader never migrates
        try:
            assert [e.version for e in await reader.read_stream("s/old")] == [1, 2, 3]
            with pytest.raises(EventStoreError, match="read-only"):
                await reader.backend.acquire_leases(["s/old"], "proc-a", 30)  # type: ignore[attr-defined]
        finally:
            await reader.close()
        assert await postgres_tables(pg_url, name) == tables
        assert await _functions(conn, name) == old_functions

        for _ in range(2):  # the second open finds it current and changes nothing
            store = await open_pg(pg_url, name)
            await store.close()
        version = await conn.fetchval(
            f"SELECT value FROM {name}.clawlog_meta WHERE key = 'schema_version'"
        )
        assert int(version) == SCHEMA_VERSION == 3
        columns = (await postgres_tables(pg_url, name))["stream_leases"]
        assert columns == ["stream", "owner", "expires_at", "epoch", "released"]
        functions = await _functions(conn, name)
        assert [f for f, _ in functions] == ["append_batch", "append_known"]
        assert "r_owner" in functions[0][1] and "f_owner" in functions[1][1]
        # a writer of the old version can no longer append: its function is gone
        with pytest.raises(asyncpg.UndefinedFunctionError):
            await conn.fetch(
                schema_v2.append_sql(name),
                ["s/old"],
                [ANY],
                [1],
                [None],
                *_event_columns("s/old", ["unfenced"]),
                time.time(),
                f"clawlog_{name}",
            )
    finally:
        await conn.close()

    store = await open_pg(pg_url, name)
    leases: PostgresBackend = store.backend  # type: ignore[assignment]
    try:
        kept = (await leases.leases(["s/old"]))["s/old"]
        assert (kept.owner, kept.epoch) == ("proc-a", 1)  # the old lease starts at epoch 1
        token = LeaseToken("proc-a", 1)
        [fourth] = await store.append("s/old", [Noted(text="four")], 3, lease=token)
        assert (fourth.position, fourth.version) == (4, 4)
        await leases.acquire_leases(["s/old"], "proc-a", 0)
        taken = (await leases.acquire_leases(["s/old"], "proc-b", 30))["s/old"]
        assert (taken.owner, taken.epoch) == ("proc-b", 2)
        with pytest.raises(Fenced):
            await store.append("s/old", [Noted(text="late")], 4, lease=token)
        report = await verify_chain(store)
        assert report.intact and report.checked == 4  # the chain runs on across the upgrade
    finally:
        await store.close()
