"""Damaged SQLite logs: reads raise typed, positioned errors and lose no readable row.

The damage is real: a log is written and closed, then whole pages of its events table are
overwritten in the file (found with SQLite's ``dbstat`` table), as a bad disk sector or a
partial copy would leave them.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from clawlog.events import (
    ANY,
    CorruptEvent,
    EventRegistry,
    EventStore,
    LogPages,
    SqliteBackend,
    StoreDamaged,
    StoreUnavailable,
    open_store,
)
from clawlog.events.backends.sqlite import _read_failure
from clawlog.events.testing import Counted, Noted
from tests.cli.damage import leaf_pages

EVENTS = 600
STREAMS = 3


async def write_log(path: Path) -> None:
    """``EVENTS`` events over ``STREAMS`` streams: position p is in stream
    ``d/{p % STREAMS}``, a ``test.counted`` event when p is a multiple of 5."""
    store = await open_store(SqliteBackend(path), registry=EventRegistry([Noted, Counted]))
    async with store:
        for p in range(1, EVENTS + 1):
            event = Counted(amount=p) if p % 5 == 0 else Noted(text="x" * 60, n=p)
            await store.append(f"d/{p % STREAMS}", [event], ANY)


def damage(path: Path, pageno: int) -> None:
    """Overwrite one whole page of the file: its header no longer says what it is."""
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with path.open("r+b") as file:
        file.seek((pageno - 1) * page_size)
        file.write(b"\xa5" * page_size)


async def open_read_only(path: Path, *, read_only: bool = True) -> EventStore:
    return await open_store(
        SqliteBackend(path, read_only=read_only), registry=EventRegistry([Noted, Counted])
    )


async def positions(pages: LogPages) -> list[int]:
    return [e.position for page in [p async for p in pages] for e in page]


@pytest.fixture
async def log(tmp_path: Path) -> Path:
    path = tmp_path / "log.db"
    await write_log(path)
    return path


async def test_a_damaged_page_is_store_damaged_at_its_first_position(log: Path) -> None:
    pageno, first, last = leaf_pages(log)[10]
    damage(log, pageno)
    async with await open_read_only(log) as store:
        with pytest.raises(StoreDamaged) as info:
            await store.read_all(1, EVENTS)
        assert info.value.position == first
        assert "malformed" in info.value.reason
        assert str(log) in str(info.value) and "clawlog doctor" in str(info.value)
        with pytest.raises(StoreDamaged) as inside:
            await store.read_all(last, 1)
        assert inside.value.position == last
        before = await store.read_all(1, first - 1)
        assert [e.position for e in before] == list(range(1, first))
        after = await store.read_all(last + 1, EVENTS)
        assert [e.position for e in after] == list(range(last + 1, EVENTS + 1))
        with pytest.raises(StoreDamaged, match="reading stream 'd/1'") as by_stream:
            await store.read_stream("d/1")
        assert by_stream.value.position is None


async def test_a_filtered_read_names_where_it_failed_after_its_last_row(log: Path) -> None:
    pageno, first, _ = leaf_pages(log)[10]
    damage(log, pageno)
    async with await open_read_only(log) as store:
        with pytest.raises(StoreDamaged) as info:
            await store.read_all(1, EVENTS, types=["test.counted"])
        # the last counted row it returned is the multiple of 5 just before the page
        assert info.value.position == (first - 1) // 5 * 5 + 1


async def test_log_pages_hand_over_every_row_before_the_damage_then_raise(log: Path) -> None:
    pageno, first, _ = leaf_pages(log)[10]
    damage(log, pageno)
    async with await open_read_only(log) as store:
        seen: list[int] = []
        with pytest.raises(StoreDamaged) as info:
            async for page in LogPages(store, page_size=64):
                assert len(page) <= 64
                seen.extend(e.position for e in page)
        assert (seen, info.value.position) == (list(range(1, first)), first)
        counted: list[int] = []
        with pytest.raises(StoreDamaged):
            async for page in LogPages(store, types=["test.counted"]):
                counted.extend(e.position for e in page)
        assert counted == list(range(5, first, 5))
        # damage past stop, met by a filtered read looking further: not an error
        before = LogPages(store, stop=first - 1, types=["test.counted"], page_size=1000)
        assert await positions(before) == list(range(5, first, 5))


@pytest.mark.parametrize("read_only", [True, False], ids=["reader", "writer"])
async def test_log_pages_step_over_damaged_pages_and_read_every_other_row(
    log: Path, read_only: bool
) -> None:
    pages = leaf_pages(log)
    damaged = [pages[3], pages[4], pages[12]]  # two neighbours, then one alone
    for pageno, _, _ in damaged:
        damage(log, pageno)
    ranges = [(pages[3][1], pages[4][2]), (pages[12][1], pages[12][2])]
    lost = {p for first, last in ranges for p in range(first, last + 1)}
    good = [p for p in range(1, EVENTS + 1) if p not in lost]
    async with await open_read_only(log, read_only=read_only) as store:
        for page_size in (1, 7, 1000):
            walk = LogPages(store, page_size=page_size, skip_corrupt=True)
            assert await positions(walk) == good
            assert (walk.damaged, walk.skipped) == (ranges, [])
        streams = LogPages(store, stream_prefix="d/2", types=["test.noted"], skip_corrupt=True)
        assert await positions(streams) == [p for p in good if p % 3 == 2 and p % 5]
        assert streams.damaged == ranges
        middle = LogPages(store, pages[4][1], stop=pages[12][1] + 1, skip_corrupt=True)
        assert await positions(middle) == list(range(pages[4][2] + 1, pages[12][1]))
        assert middle.damaged == [(pages[4][1], pages[4][2]), (pages[12][1], pages[12][1] + 1)]


async def test_corrupt_payloads_and_damaged_pages_are_both_stepped_over(log: Path) -> None:
    pageno, first, last = leaf_pages(log)[8]
    conn = sqlite3.connect(log)
    conn.execute(
        "UPDATE events SET payload = x'c1' WHERE position IN (?, ?)", (first - 1, last + 2)
    )
    conn.commit()
    conn.close()
    damage(log, pageno)
    async with await open_read_only(log) as store:
        walk = LogPages(store, page_size=50, skip_corrupt=True)
        expected = [p for p in range(1, EVENTS + 1) if not first - 1 <= p <= last and p != last + 2]
        assert await positions(walk) == expected
        assert (walk.skipped, walk.damaged) == ([first - 1, last + 2], [(first, last)])
        with pytest.raises(CorruptEvent) as info:
            await positions(LogPages(store))
        assert info.value.position == first - 1


async def test_a_damaged_last_page_leaves_the_head_readable_from_the_index(log: Path) -> None:
    pageno, first, last = leaf_pages(log)[-1]
    assert last == EVENTS
    damage(log, pageno)
    async with await open_read_only(log) as store:
        assert await store.head_position() == EVENTS
        walk = LogPages(store, skip_corrupt=True)
        assert await positions(walk) == list(range(1, first))
        assert walk.damaged == [(first, EVENTS)]


async def test_a_head_that_cannot_be_read_at_all_is_raised(log: Path) -> None:
    _, first, _ = leaf_pages(log)[5]
    async with await open_read_only(log) as store:
        conn = sqlite3.connect(log)
        conn.execute("DROP TABLE events")  # from another connection: the store is open
        conn.commit()
        conn.close()
        with pytest.raises(StoreDamaged, match="no such table: events") as info:
            await store.read_all(first)
        assert info.value.position is None  # every read fails, wherever it starts
        with pytest.raises(StoreDamaged, match="no such table"):
            await store.head_position()
        with pytest.raises(StoreDamaged, match="no such table"):
            await positions(LogPages(store, skip_corrupt=True))
        with pytest.raises(StoreDamaged, match="no such table"):
            await store.stream_version("d/1")


async def test_a_subscription_raises_store_damaged_instead_of_waiting(log: Path) -> None:
    pageno, first, _ = leaf_pages(log)[2]
    damage(log, pageno)
    async with await open_read_only(log) as store, store.subscribe(first) as subscription:
        with pytest.raises(StoreDamaged) as info:
            await asyncio.wait_for(anext(subscription), 60)
        assert info.value.position == first
        with pytest.raises(StoreDamaged):  # not retried as an outage: again, at once
            await asyncio.wait_for(subscription.next_batch(), 60)


@pytest.mark.parametrize(
    ("code", "message", "kind", "position"),
    [
        (sqlite3.SQLITE_CORRUPT, "database disk image is malformed", StoreDamaged, 7),
        (sqlite3.SQLITE_NOTADB, "file is not a database", StoreDamaged, 7),
        (sqlite3.SQLITE_ERROR, "no such column: payload", StoreDamaged, None),
        (sqlite3.SQLITE_IOERR_READ, "disk I/O error", StoreUnavailable, None),
        (sqlite3.SQLITE_FULL, "database or disk is full", StoreUnavailable, None),
        (sqlite3.SQLITE_CANTOPEN, "unable to open database file", StoreUnavailable, None),
        (sqlite3.SQLITE_PERM, "access permission denied", StoreUnavailable, None),
        (sqlite3.SQLITE_READONLY, "attempt to write a readonly database", StoreUnavailable, None),
        (sqlite3.SQLITE_BUSY, "database is locked", StoreUnavailable, None),
    ],
)
def test_sqlite_read_errors_map_to_the_store_errors(
    code: int, message: str, kind: type[Exception], position: int | None
) -> None:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code  # what SQLite sets on the errors it raises
    failure = _read_failure(error, "/logs/a.db", 7, "reading events from position 7")
    assert type(failure) is kind
    assert message in str(failure) and "/logs/a.db" in str(failure)
    if isinstance(failure, StoreDamaged):
        assert failure.position == position
