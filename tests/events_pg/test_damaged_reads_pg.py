"""PostgreSQL: a read of a log whose table is gone is StoreDamaged, never a raw asyncpg error."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from clawlog.events import ANY, EventRegistry, LogPages, StoreDamaged, open_store
from clawlog.events.backends.postgres import PostgresBackend
from clawlog.events.testing import Noted

pytestmark = pytest.mark.postgres


async def test_reads_of_a_dropped_events_table_are_store_damaged(pg_url: str) -> None:
    schema = f"t_{uuid.uuid4().hex[:16]}"
    store = await open_store(
        PostgresBackend(pg_url, schema=schema), registry=EventRegistry([Noted])
    )
    async with store:
        await store.append("s/1", [Noted(text="a")], ANY)
        conn = await asyncpg.connect(pg_url)
        try:
            await conn.execute(f"DROP TABLE {schema}.events CASCADE")
        finally:
            await conn.close()
        with pytest.raises(StoreDamaged, match=f"schema {schema} is damaged: .*events") as info:
            await store.read_all(1)
        assert info.value.position is None  # no read can start anywhere
        with pytest.raises(StoreDamaged):
            await store.read_stream("s/1")
        with pytest.raises(StoreDamaged):
            await store.head_position()
        with pytest.raises(StoreDamaged):
            await anext(aiter(LogPages(store, skip_corrupt=True)))
