"""SQLite files: reopened whole, foreign files refused, corrupt rows isolated, one writer."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import msgspec
import pytest

from events import (
    ANY,
    NO_STREAM,
    CorruptEvent,
    EventMetadata,
    EventRegistry,
    NotAClawlogDatabase,
    SqliteBackend,
    StoreLocked,
    open_store,
)
from tests.contracts.sample_events import Counted, Noted


def registry() -> EventRegistry:
    return EventRegistry([Noted, Counted])


class State(msgspec.Struct):
    total: int


async def test_a_closed_file_reopens_whole(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    store = await open_store(SqliteBackend(path), registry=registry())
    meta = EventMetadata(correlation_id="c", causation_id="k", actor="a", idempotency_key="once")
    written = await store.append("s/1", [Noted(text="a", n=1), Counted(amount=2)], NO_STREAM, meta)
    await store.append("s/2", [Noted(text="b")], NO_STREAM)
    await store.save_snapshot("s/1", 2, State(total=3))
    await store.close()
    store = await open_store(SqliteBackend(path), registry=registry())
    try:
        assert await store.read_stream("s/1") == written
        assert [e.position for e in await store.read_all()] == [1, 2, 3]
        snapshot = await store.load_snapshot("s/1", State)
        assert snapshot is not None and snapshot.state == State(total=3)
        again = await store.append(
            "s/1", [Noted(text="a", n=1), Counted(amount=2)], NO_STREAM, meta
        )
        assert again == written and await store.head_position() == 3
        assert (await store.append("s/2", [Noted(text="c")], 1))[0].position == 4
    finally:
        await store.close()


async def test_foreign_files_are_refused_and_left_untouched(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_bytes(b"hello, not a database at all" * 10)
    with pytest.raises(NotAClawlogDatabase, match="is not a clawlog event log"):
        await open_store(SqliteBackend(text), registry=registry())
    assert text.read_bytes() == b"hello, not a database at all" * 10
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(NotAClawlogDatabase, match="SQLite database but not a clawlog event log"):
        await open_store(SqliteBackend(other), registry=registry())
    conn = sqlite3.connect(other)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["customers"]
    conn.close()


async def test_a_corrupt_row_names_its_position_and_the_rest_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    store = await open_store(SqliteBackend(path), registry=registry())
    for i in range(5):
        await store.append(f"s/{i % 2}", [Noted(text=f"t{i}", n=i)], ANY)
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET payload = x'c1ffee' WHERE position = 3")
    conn.commit()
    conn.close()
    store = await open_store(SqliteBackend(path), registry=registry())
    try:
        with pytest.raises(CorruptEvent, match="corrupt event at position 3") as info:
            await store.read_all()
        assert info.value.position == 3 and info.value.stream == "s/0"
        assert [e.position for e in await store.read_stream("s/1")] == [2, 4]
        assert [e.position for e in await store.read_all(4)] == [4, 5]
        assert [e.position for e in await store.read_all(1, 2)] == [1, 2]
    finally:
        await store.close()


async def test_one_writer_per_file_and_read_only_followers(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    writer = await open_store(SqliteBackend(path), registry=registry())
    try:
        with pytest.raises(StoreLocked, match="already open for writing"):
            await open_store(SqliteBackend(path), registry=registry())
        follower = await open_store(
            SqliteBackend(path, read_only=True, poll_interval=0.01), registry=registry()
        )
        try:
            async with follower.subscribe(1) as events:
                await writer.append("s/x", [Noted(text="live")], ANY)
                seen = await asyncio.wait_for(anext(events), 10)
                assert seen.event == Noted(text="live")
            with pytest.raises(Exception, match="read-only"):
                await follower.append("s/x", [Noted(text="no")], ANY)
        finally:
            await follower.close()
    finally:
        await writer.close()
