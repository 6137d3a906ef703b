"""Group commit on SQLite: shared transactions, mixed batches, cancellation, close."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clawlog.events import (
    ANY,
    NO_STREAM,
    EventMetadata,
    EventRegistry,
    EventStore,
    SqliteBackend,
    StoreClosed,
    StoreUnavailable,
    VersionConflict,
    open_store,
)
from clawlog.events.testing import Counted, Noted


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EventStore]:
    opened = await open_store(SqliteBackend(tmp_path / "log.db"), registry=registry())
    try:
        yield opened
    finally:
        await opened.close()


def registry() -> EventRegistry:
    return EventRegistry([Noted, Counted])


async def test_concurrent_appends_share_a_transaction(store: EventStore) -> None:
    results = await asyncio.gather(
        *(store.append(f"s/{k}", [Noted(text=str(k))], NO_STREAM) for k in range(50))
    )
    # The writer thread takes everything queued while it waited for the GIL: one or two
    # transactions (one commit time each), never one per append.
    commits = sorted({recorded.recorded_at for [recorded] in results})
    assert len(commits) <= 2
    assert [recorded.position for [recorded] in results] == list(range(1, 51))


async def test_a_batch_mixing_metadata_and_plain_appends_keeps_both(store: EventStore) -> None:
    def meta(k: int) -> EventMetadata | None:
        if k % 3 == 0:
            return None
        return EventMetadata(correlation_id=f"turn-{k}", actor=f"a/{k}", idempotency_key=f"op-{k}")

    written = await asyncio.gather(
        *(
            store.append(
                f"s/{k % 4}", [Noted(text=f"{k}.{j}", n=k) for j in range(k % 3 + 1)], ANY, meta(k)
            )
            for k in range(30)
        )
    )
    everything = await store.read_all(1, 1000)
    assert everything == [recorded for append in written for recorded in append]
    assert [e.position for e in everything] == list(range(1, len(everything) + 1))
    for k, append in enumerate(written):
        expected = meta(k) or EventMetadata()
        assert {(e.correlation_id, e.actor, e.idempotency_key) for e in append} == {
            (expected.correlation_id, expected.actor, expected.idempotency_key)
        }


async def test_a_conflict_and_a_repeat_in_one_batch_leave_no_gap(store: EventStore) -> None:
    first = await store.append(
        "s/k", [Noted(text="once")], NO_STREAM, EventMetadata(idempotency_key="k")
    )
    results = await asyncio.gather(
        store.append("s/a", [Noted(text="a")], NO_STREAM),
        store.append("s/k", [Noted(text="once")], NO_STREAM, EventMetadata(idempotency_key="k")),
        store.append("s/a", [Noted(text="late")], NO_STREAM),  # conflicts with the first
        store.append("s/b", [Counted(amount=1), Counted(amount=2)], NO_STREAM),
        return_exceptions=True,
    )
    assert isinstance(results[2], VersionConflict)
    assert results[1] == first
    assert [e.position for e in results[0] + results[3]] == [2, 3, 4]  # type: ignore[operator]
    assert await store.head_position() == 4


async def test_a_cancelled_append_still_lands_and_the_writer_goes_on(store: EventStore) -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0):  # cancels the caller while its batch commits
            await store.append("s/c", [Noted(text="cancelled")], ANY)
    [after] = await store.append("s/c", [Noted(text="after")], ANY)
    assert after.version == 2
    assert [e.event for e in await store.read_stream("s/c")] == [
        Noted(text="cancelled"),
        Noted(text="after"),
    ]


async def test_close_commits_every_append_accepted_before_it(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    store = await open_store(SqliteBackend(path), registry=registry())
    appends = [
        asyncio.create_task(store.append(f"s/{k}", [Noted(text=str(k))], NO_STREAM))
        for k in range(20)
    ]
    closing = asyncio.create_task(store.close())  # runs after every append has queued
    results = await asyncio.gather(*appends)
    await closing
    assert sorted(recorded.position for [recorded] in results) == list(range(1, 21))
    with pytest.raises(StoreClosed):
        await store.append("s/late", [Noted(text="late")], ANY)
    async with await open_store(SqliteBackend(path, read_only=True), registry=registry()) as reader:
        assert [e.position for e in await reader.read_all()] == list(range(1, 21))


async def test_a_failed_commit_answers_every_caller_and_writes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "log.db"
    async with await open_store(SqliteBackend(path), registry=registry()) as store:
        await store.append("s/ok", [Noted(text="before")], NO_STREAM)
        # A trigger that makes SQLite itself refuse the write of stream "s/boom".
        other = sqlite3.connect(path)
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON events WHEN NEW.stream = 's/boom' "
            "BEGIN SELECT json('{not json'); END"
        )
        [first] = await store.append("s/ok", [Noted(text="first")], 1)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="clawlog"):
            # Queued in one go, so the writer thread takes both as one batch.
            failures = await asyncio.gather(
                store.append("s/boom", [Noted(text="refused")], NO_STREAM),
                store.append("s/ok", [Noted(text="same batch")], 2),
                return_exceptions=True,
            )
        logs = [vars(r) for r in caplog.records if r.name.startswith("clawlog.")]
        assert [(log["event"], log["batch"]) for log in logs] == [("sqlite batch commit failed", 2)]
        assert first.position == 2
        assert all(isinstance(f, StoreUnavailable) for f in failures)
        assert failures[0] is not failures[1]
        assert all(isinstance(f.__cause__, sqlite3.OperationalError) for f in failures)  # type: ignore[union-attr]
        assert await store.head_position() == 2
        other.execute("DROP TRIGGER refuse")
        other.close()
        [after] = await store.append("s/ok", [Noted(text="after")], 2)  # versions did not move
        assert (after.position, after.version) == (3, 3)
        assert [e.position for e in await store.read_all()] == [1, 2, 3]
