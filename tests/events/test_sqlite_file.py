"""SQLite files: reopened whole, foreign files refused, corrupt rows isolated, one writer."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from clawlog.events import (
    ANY,
    NO_STREAM,
    CorruptEvent,
    EventMetadata,
    EventRegistry,
    EventStore,
    EventStoreError,
    NotAClawlogDatabase,
    SqliteBackend,
    StoreLocked,
    VersionConflict,
    open_store,
)
from clawlog.events.testing import Counted, Noted

ROOT = Path(__file__).parents[2]


def registry() -> EventRegistry:
    return EventRegistry([Noted, Counted])


async def open_file(path: Path, **options: object) -> EventStore:
    return await open_store(SqliteBackend(path, **options), registry=registry())  # type: ignore[arg-type]


class State(msgspec.Struct):
    total: int
    names: list[str]


# -- closed and reopened ------------------------------------------------------------------
async def test_a_closed_file_reopens_whole(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    store = await open_file(path)
    meta = EventMetadata(correlation_id="turn-1", causation_id="msg-9", actor="a/1")
    keyed = EventMetadata(actor="a/2", idempotency_key="op-1")
    written = await store.append("s/1", [Noted(text="a", n=1), Counted(amount=2)], NO_STREAM, meta)
    written += await store.append("s/2", [Noted(text="b" * 5000)], NO_STREAM, keyed)
    written += await store.append("s/1", [Counted(amount=-7)], 2)
    await store.save_snapshot("s/1", 3, State(total=3, names=["x"]))
    await store.close()

    store = await open_file(path)
    try:
        assert await store.read_all() == written  # positions, versions, payloads, metadata
        assert await store.read_stream("s/1", 2) == [written[1], written[3]]
        assert [await store.stream_version(s) for s in ("s/1", "s/2", "s/3")] == [3, 1, 0]
        assert await store.head_position() == 4
        snapshot = await store.load_snapshot("s/1", State)
        assert snapshot is not None and (snapshot.version, snapshot.state) == (3, State(3, ["x"]))
        # The idempotency key is still honoured: the repeat returns the original, writes nothing.
        again = await store.append("s/2", [Noted(text="b" * 5000)], NO_STREAM, keyed)
        assert again == [written[2]] and await store.head_position() == 4
        # Versions and positions carry on where they stopped.
        with pytest.raises(VersionConflict):
            await store.append("s/1", [Noted(text="late")], 2)
        [next_one] = await store.append("s/1", [Noted(text="next")], 3)
        assert (next_one.position, next_one.version) == (5, 4)
    finally:
        await store.close()


async def test_reopening_many_times_keeps_positions_gapless(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    for round_ in range(5):
        async with await open_file(path) as store:
            await asyncio.gather(
                *(store.append(f"s/{k}", [Noted(text=f"{round_}-{k}")], ANY) for k in range(20))
            )
    async with await open_file(path, read_only=True) as store:
        everything = await store.read_all(1, 1000)
        assert [e.position for e in everything] == list(range(1, 101))
        assert [e.version for e in await store.read_stream("s/7")] == [1, 2, 3, 4, 5]


# -- files that are not clawlog logs ------------------------------------------------------
async def test_a_text_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    content = b"hello, not a database at all\n" * 200
    text.write_bytes(content)
    for read_only in (False, True):
        with pytest.raises(NotAClawlogDatabase, match=r"notes\.txt is not a clawlog event log"):
            await open_file(text, read_only=read_only)
    assert text.read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]  # no lock file left behind


async def test_a_foreign_sqlite_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    other = tmp_path / "shop.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    for read_only in (False, True):
        with pytest.raises(
            NotAClawlogDatabase, match=r"shop\.db is an SQLite database but not a clawlog event log"
        ):
            await open_file(other, read_only=read_only)
    assert other.read_bytes() == before  # no schema, no pragma, no journal-mode change
    assert [p.name for p in tmp_path.iterdir()] == ["shop.db"]


async def test_a_log_from_a_newer_clawlog_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with await open_file(path) as store:
        await store.append("s/1", [Noted(text="a")], ANY)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(NotAClawlogDatabase, match="newer clawlog"):
        await open_file(path)


# -- corrupt rows ---------------------------------------------------------------------------
async def test_a_corrupt_row_names_its_position_and_the_rest_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with await open_file(path) as store:
        for i in range(7):
            await store.append(f"s/{i % 2}", [Noted(text=f"t{i}", n=i)], ANY)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET payload = x'c1ffee00' WHERE position = 3")
    conn.commit()
    conn.close()

    async with await open_file(path) as store:
        with pytest.raises(CorruptEvent, match="corrupt event at position 3") as info:
            await store.read_all()
        assert (info.value.position, info.value.stream, info.value.type) == (3, "s/0", "test.noted")
        with pytest.raises(CorruptEvent, match="position 3"):
            await store.read_stream("s/0")
        assert [e.position for e in await store.read_all(1, 2)] == [1, 2]
        assert [e.position for e in await store.read_all(4)] == [4, 5, 6, 7]
        assert [e.position for e in await store.read_stream("s/1")] == [2, 4, 6]
        assert [e.version for e in await store.read_stream("s/0", 3)] == [3, 4]
        # The stream stays writable: its version is known even though one row is unreadable.
        [appended] = await store.append("s/0", [Noted(text="after")], 4)
        assert appended.position == 8


async def test_a_payload_of_the_wrong_event_shape_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with await open_file(path) as store:
        await store.append("s/1", [Noted(text="a")], ANY)
        await store.append("s/1", [Noted(text="b")], ANY)
    conn = sqlite3.connect(path)
    bad = msgspec.msgpack.encode({"type": "test.noted", "text": 42})
    conn.execute("UPDATE events SET payload = ? WHERE position = 2", (bad,))
    conn.commit()
    conn.close()
    async with await open_file(path) as store:
        with pytest.raises(CorruptEvent, match="position 2") as info:
            await store.read_all()
        assert info.value.stream == "s/1"
        assert [e.position for e in await store.read_all(1, 1)] == [1]


# -- one writer per file ------------------------------------------------------------------
async def test_a_second_writer_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with await open_file(path) as writer:
        with pytest.raises(StoreLocked, match="already open for writing"):
            await open_file(path)
        await writer.append("s/x", [Noted(text="still writable")], ANY)
    async with await open_file(path) as writer:  # released on close
        assert await writer.head_position() == 1


@pytest.fixture
async def writer_process(tmp_path: Path) -> AsyncIterator[WriterProcess]:
    process = WriterProcess(tmp_path / "log.db")
    await process.start()
    try:
        yield process
    finally:
        await process.stop()


class WriterProcess:
    """tests/events/writer_child.py: another process holding the log open for writing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.child: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.events.writer_child",
            str(self.path),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=ROOT,
        )
        assert await self._line() == "ready"

    async def append(self, stream: str, text: str) -> int:
        assert self.child is not None and self.child.stdin is not None
        self.child.stdin.write(f"{stream} {text}\n".encode())
        await self.child.stdin.drain()
        word, position = (await self._line()).split()
        assert word == "ok"
        return int(position)

    async def _line(self) -> str:
        assert self.child is not None and self.child.stdout is not None
        async with asyncio.timeout(30):
            return (await self.child.stdout.readline()).decode().strip()

    async def stop(self) -> None:
        assert self.child is not None and self.child.stdin is not None
        self.child.stdin.close()
        async with asyncio.timeout(30):
            assert await self.child.wait() == 0


async def test_a_writer_in_another_process_locks_the_file(writer_process: WriterProcess) -> None:
    await writer_process.append("s/x", "first")
    assert writer_process.child is not None
    with pytest.raises(StoreLocked, match=f"pid {writer_process.child.pid}"):
        await open_file(writer_process.path)
    assert await writer_process.append("s/x", "second") == 2  # the refused open changed nothing


async def test_a_read_only_follower_follows_another_process_live(
    writer_process: WriterProcess,
) -> None:
    for i in range(3):
        await writer_process.append(f"s/{i}", f"before-{i}")
    follower = await open_file(writer_process.path, read_only=True, poll_interval=0.005)
    try:
        seen: list[tuple[int, str]] = []
        async with follower.subscribe(1) as events, asyncio.timeout(30):
            for i in range(10):
                if i >= 3:  # live: the other process appends while we follow
                    assert await writer_process.append(f"s/{i % 4}", f"live-{i}") == i + 1
                recorded = await anext(events)
                assert isinstance(recorded.event, Noted)
                seen.append((recorded.position, recorded.event.text))
        assert seen == [(i + 1, f"before-{i}" if i < 3 else f"live-{i}") for i in range(10)]
        with pytest.raises(EventStoreError, match="read-only"):
            await follower.append("s/x", [Noted(text="no")], ANY)
        assert await follower.head_position() == 10
    finally:
        await follower.close()
