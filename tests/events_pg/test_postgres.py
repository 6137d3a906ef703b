"""PostgreSQL specifics: two processes, ordered visibility, restarts, lost connections, leases."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from clawlog.actors import System
from clawlog.actors.errors import StreamOwnedElsewhere
from clawlog.events import (
    ANY,
    NO_STREAM,
    EventMetadata,
    EventRegistry,
    StoreUnavailable,
    VersionConflict,
    open_store,
)
from clawlog.events.backends.postgres import PostgresBackend
from clawlog.events.backends.postgres_sql import append_sql
from clawlog.events.testing import Noted
from tests.actors.sample import Add, Added, Counter
from tests.support.postgres import pg_ctl

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.postgres


def schema() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


async def open_pg(url: str, name: str) -> object:
    return await open_store(PostgresBackend(url, schema=name), registry=EventRegistry([Noted]))


async def append_when_back(store: Any, stream: str, text: str, meta: Any = None) -> Any:
    """Append after a restart. ``pg_ctl -w`` returned once the server took connections, so
    only the writer's connection from before the restart can fail the first try; the
    writer reconnects for the next batch, and the retry needs no pause."""
    for _ in range(2):
        with contextlib.suppress(StoreUnavailable):
            return await store.append(stream, [Noted(text=text)], ANY, meta)
    return await store.append(stream, [Noted(text=text)], ANY, meta)


async def test_two_processes_writing_one_stream_exactly_one_wins_each_version(pg_url: str) -> None:
    name = schema()
    store = await open_pg(pg_url, name)  # creates the schema before the race
    await store.close()  # type: ignore[attr-defined]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.events_pg.pg_writer", pg_url, name, who, "40"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for who in ("a", "b")
    ]
    wins = [int(p.communicate(timeout=120)[0]) for p in procs]
    assert sum(wins) == 40
    store = await open_pg(pg_url, name)
    try:
        events = await store.read_stream("race/one")  # type: ignore[attr-defined]
        assert [e.version for e in events] == list(range(1, 41))
        assert [e.position for e in events] == list(range(1, 41))
    finally:
        await store.close()  # type: ignore[attr-defined]


async def test_a_slow_transaction_never_lets_a_reader_skip_its_position(pg_url: str) -> None:
    name = schema()
    store = await open_pg(pg_url, name)
    slow = await asyncpg.connect(pg_url)
    try:
        await store.append("s/a", [Noted(text="first")], NO_STREAM)  # type: ignore[attr-defined]
        transaction = slow.transaction()
        await transaction.start()
        await slow.execute(f"LOCK TABLE {name}.events IN EXCLUSIVE MODE")
        # Another clawlog process's append, through the log's own function (a row inserted
        # by hand would lie past the hash chain's recorded head: refused as tampering).
        payload = await slow.fetchval(f"SELECT payload FROM {name}.events WHERE position = 1")
        [(kind, first, _, _)] = await slow.fetch(
            append_sql(name),
            ["s/slow"],
            [NO_STREAM],
            [1],
            [None],
            [None],  # no lease token (owner, epoch)
            [None],
            ["test.noted"],
            [1],
            [payload],
            ["s/slow"],
            [None],
            [None],
            [None],
            [None],
            0.0,
            f"clawlog_{name}",  # the channel every append notifies
        )
        assert (kind, first) == (0, 2)
        fast = asyncio.ensure_future(store.append("s/b", [Noted(text="fast")], NO_STREAM))  # type: ignore[attr-defined]
        # Wait until the fast append is queued behind the slow one's table lock: only the
        # server knows, so ask it (bounded: a lock that never comes fails the test).
        async with asyncio.timeout(10):
            while not await slow.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"):
                await asyncio.sleep(0.01)
        assert not fast.done()
        assert [e.position for e in await store.read_all()] == [1]  # type: ignore[attr-defined]
        await transaction.commit()
        [recorded] = await asyncio.wait_for(fast, 10)
        assert recorded.position == 3
        assert [e.position for e in await store.read_all()] == [1, 2, 3]  # type: ignore[attr-defined]
    finally:
        await slow.close()
        await store.close()  # type: ignore[attr-defined]


async def test_a_subscription_survives_a_server_restart(pg_url: str) -> None:
    store = await open_pg(pg_url, schema())
    seen: list[int] = []
    try:
        for i in range(3):
            await store.append("s/r", [Noted(text=f"before {i}")], ANY)  # type: ignore[attr-defined]

        async def follow() -> None:
            async with store.subscribe(1) as events:  # type: ignore[attr-defined]
                async for recorded in events:
                    seen.append(recorded.position)
                    if len(seen) == 6:
                        return

        follower = asyncio.ensure_future(follow())
        pg_ctl("restart")
        for i in range(3):
            await append_when_back(store, "s/r", f"after {i}")
        await asyncio.wait_for(follower, 60)
        assert seen == [1, 2, 3, 4, 5, 6]
    finally:
        await store.close()  # type: ignore[attr-defined]


async def test_a_lost_connection_fails_clearly_and_a_keyed_retry_writes_once(pg_url: str) -> None:
    store = await open_pg(pg_url, schema())
    try:
        meta = EventMetadata(idempotency_key="job-7")
        pg_ctl("stop-fast")
        try:
            with pytest.raises(StoreUnavailable, match="retry with the same idempotency key"):
                await store.append("s/k", [Noted(text="x")], ANY, meta)  # type: ignore[attr-defined]
        finally:
            pg_ctl("start-again")
        first = await append_when_back(store, "s/k", "x", meta)
        again = await store.append("s/k", [Noted(text="x")], ANY, meta)  # type: ignore[attr-defined]
        assert [e.position for e in again] == [e.position for e in first]
        assert len(await store.read_stream("s/k")) == 1  # type: ignore[attr-defined]
    finally:
        await store.close()  # type: ignore[attr-defined]


async def test_one_owner_process_per_stream(pg_url: str) -> None:
    url = f"{pg_url}"
    name = schema()
    first = await System.open(PostgresBackend(url, schema=name), event_types=[Added])
    second = await System.open(PostgresBackend(url, schema=name), event_types=[Added])
    try:
        counter = await first.spawn(Counter, "counter/shared")
        assert await counter.ask(Add(amount=2)) == 2
        with pytest.raises(StreamOwnedElsewhere, match="owned by another process"):
            await second.spawn(Counter, "counter/shared")
        other = await second.spawn(Counter, "counter/other")  # disjoint streams are fine
        assert await other.ask(Add(amount=5)) == 5
        counter.stop()
        again = await second.spawn(Counter, "counter/shared")  # released at stop
        assert await again.ask(Add(amount=1)) == 3
    finally:
        await second.close()
        await first.close()


async def test_a_writer_whose_known_versions_went_stale_falls_back_to_the_full_check(
    pg_url: str,
) -> None:
    name = schema()
    first, second = await open_pg(pg_url, name), await open_pg(pg_url, name)
    try:
        await first.append("s/shared", [Noted(text="a1")], ANY)  # type: ignore[attr-defined]
        await second.append("s/shared", [Noted(text="b1"), Noted(text="b2")], ANY)  # type: ignore[attr-defined]
        keyed = EventMetadata(idempotency_key="once")
        original = await second.append("s/keyed", [Noted(text="k")], ANY, keyed)  # type: ignore[attr-defined]
        await first.append("s/keyed", [Noted(text="other")], ANY)  # type: ignore[attr-defined]
        # `first` last saw s/shared at version 1 and s/keyed at 2: both guesses collide.
        [recorded] = await first.append("s/shared", [Noted(text="a2")], ANY)  # type: ignore[attr-defined]
        assert (recorded.version, recorded.position) == (4, 6)
        with pytest.raises(VersionConflict, match="at version 4"):
            await first.append("s/shared", [Noted(text="late")], 1)  # type: ignore[attr-defined]
        again = await first.append("s/keyed", [Noted(text="k")], ANY, keyed)  # type: ignore[attr-defined]
        assert [e.position for e in again] == [e.position for e in original]
        assert [e.version for e in await first.read_stream("s/shared")] == [1, 2, 3, 4]  # type: ignore[attr-defined]
        assert await first.head_position() == 6  # type: ignore[attr-defined]
    finally:
        await first.close()  # type: ignore[attr-defined]
        await second.close()  # type: ignore[attr-defined]


async def test_an_append_the_server_does_not_answer_fails_in_time_and_a_keyed_retry_writes_once(
    pg_url: str,
) -> None:
    name = schema()
    # 2 s: the appends around the blocked one must fit in it on a busy machine too.
    backend = PostgresBackend(pg_url, schema=name, append_timeout=2.0)
    store = await open_store(backend, registry=EventRegistry([Noted]))
    blocker = await asyncpg.connect(pg_url)
    try:
        await store.append("s/k", [Noted(text="first")], NO_STREAM)
        meta = EventMetadata(idempotency_key="job-9")
        blocking = blocker.transaction()
        await blocking.start()
        await blocker.execute(f"LOCK TABLE {name}.events IN ACCESS EXCLUSIVE MODE")
        try:
            async with asyncio.timeout(30):  # the deadline, not this, must end the wait
                with pytest.raises(StoreUnavailable, match="did not answer the append within"):
                    await store.append("s/k", [Noted(text="x")], ANY, meta)
        finally:
            await blocking.rollback()
        # The abandoned statement may still commit once the lock is gone: the key decides.
        again = await store.append("s/k", [Noted(text="x")], ANY, meta)
        assert await store.append("s/k", [Noted(text="x")], ANY, meta) == again
        assert [e.event for e in await store.read_stream("s/k")] == [
            Noted(text="first"),
            Noted(text="x"),
        ]
    finally:
        await blocker.close()
        await store.close()
