"""The hash chain on a real PostgreSQL log: the server-side functions hash every append
(both of them: the fast path and the checked one) exactly as clawlog.events.chain
defines it, several processes extend one chain, every tampering is found at the right
position, a log from before the chain is upgraded in place by a writer, and a
read-only open (what `clawlog verify` uses) changes nothing.

Run with ``CI=true bash scripts/test.sh tests/events/test_chain_postgres.py``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import pytest

from clawlog.events import (
    ANY,
    NO_STREAM,
    EventMetadata,
    EventStoreError,
    NoHashChain,
    StoreDamaged,
    VersionConflict,
)
from clawlog.events.backends.postgres_sql import SCHEMA_VERSION
from clawlog.events.chain import GENESIS, link
from clawlog.events.domain.actor import ActorStarted
from clawlog.events.verify import chain_head, verify_chain
from tests.events.chain_logs import (
    PostgresChainLog,
    postgres_tables,
    write_events,
    write_v1_postgres_log,
)
from tests.events.test_chain import EVENTS, PAST_HEAD, TAMPERINGS
from tests.support.postgres import database_url

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).parents[2]


@pytest.fixture
async def log() -> PostgresChainLog:
    chain_log = PostgresChainLog(database_url(), f"t_{uuid.uuid4().hex[:16]}")
    store = await chain_log.open(writer=True)
    try:
        await write_events(store, EVENTS)
    finally:
        await store.close()
    return chain_log


async def verified(log: PostgresChainLog) -> object:
    store = await log.open()
    try:
        return await verify_chain(store)
    finally:
        await store.close()


async def test_the_server_hashes_as_the_chain_defines(log: PostgresChainLog) -> None:
    prev = GENESIS
    for row in await log.rows(1, EVENTS):
        position, stream, version, type_, schema, payload, at, corr, caus, actor, key, stored = row
        prev = link(prev, position, stream, version, type_, schema, payload, at, corr, caus,
                    actor, key)  # fmt: skip
        assert stored == prev, position
    store = await log.open()
    try:
        report = await verify_chain(store)
        head = await chain_head(store)
    finally:
        await store.close()
    assert report.intact and report.checked == EVENTS
    assert head.hash == prev.hex()


#: Values where an encoding goes wrong: absent vs empty, multi-byte UTF-8, an empty
#: payload, big integers, a negative zero and a subnormal time, a field ending in a
#: length-like byte.
EDGE_ROWS = [
    (1, "s", 1, "t", 1, b"", 0.0, None, None, None, None),
    (2, "s", 1, "t", 1, b"", 0.0, "", None, None, None),
    (3, "s", 1, "t", 1, b"", 0.0, None, "", "", ""),
    (4, "sé/ü", 2**31 - 1, "tÿpe", 2**31 - 1, b"\x00" * 300, -0.0, "ç", "😀", "a", "b"),
    (2**62, "s\x01", 7, "t", 3, b"\x01\x02", 5e-324, None, "x", None, "k\x7f"),
    (6, "", 1, "", 1, b"abc", 1.7e9 + 0.123456789, "", "", "", ""),
]


@pytest.mark.parametrize("row", EDGE_ROWS, ids=range(len(EDGE_ROWS)))
async def test_the_server_function_computes_the_same_bytes(
    log: PostgresChainLog, row: tuple[object, ...]
) -> None:
    """chain_link in SQL against chain.link in Python, on values the demo never writes."""
    prev = bytes(range(32))
    conn = await asyncpg.connect(log.url)
    try:
        server = await conn.fetchval(
            f"SELECT {log.schema}.chain_link($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            prev,
            *row,
        )
    finally:
        await conn.close()
    assert bytes(server) == link(prev, *row)  # type: ignore[arg-type]


async def test_the_checked_path_hashes_too(log: PostgresChainLog) -> None:
    """Conflicts and repeated keys in one batch send it through append_batch."""
    store = await log.open(writer=True)
    try:
        event = ActorStarted(path="x", kind="w")
        key = EventMetadata(idempotency_key="k7")  # written by write_events: a repeat
        results = await asyncio.gather(
            store.append("agent/a0", [event], 1),  # a conflict: the stream is further on
            store.append("agent/a1", [event], ANY, key),
            store.append("agent/fresh", [event, event], NO_STREAM),
            store.append("agent/a2", [event], ANY, EventMetadata(actor="me")),
            return_exceptions=True,
        )
        assert isinstance(results[0], VersionConflict)
        report = await verify_chain(store)
    finally:
        await store.close()
    assert report.intact, report.broken
    assert report.checked == EVENTS + 3


async def test_several_processes_extend_one_chain(log: PostgresChainLog) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.events_pg.pg_writer", log.url, log.schema, who, "40"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        for who in ("p1", "p2", "p3")
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    report = await verified(log)
    assert report.intact, report.broken  # type: ignore[attr-defined]
    assert report.checked == EVENTS + 40  # type: ignore[attr-defined]  # one win per version


@pytest.mark.parametrize("name", list(TAMPERINGS))
async def test_a_tampered_log_names_the_first_changed_position(
    log: PostgresChainLog, name: str
) -> None:
    tamper, position, kind = TAMPERINGS[name]
    await tamper(log)
    report = await verified(log)
    broken = report.broken  # type: ignore[attr-defined]
    assert broken is not None, name
    assert (broken.position, broken.kind) == (position, kind), broken


async def test_a_cut_tail_stays_visible_after_new_appends(log: PostgresChainLog) -> None:
    await log.truncate_after(90)
    store = await log.open(writer=True)
    try:
        appended = await store.append("agent/new", [ActorStarted(path="n", kind="w")] * 5, ANY)
        report = await verify_chain(store)
    finally:
        await store.close()
    assert [r.position for r in appended] == list(range(EVENTS + 1, EVENTS + 6))
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (91, "deleted")


async def test_a_rewritten_chain_is_caught_by_a_checkpoint(log: PostgresChainLog) -> None:
    store = await log.open()
    try:
        anchor = await chain_head(store)
    finally:
        await store.close()
    await log.rewrite_from(70)
    store = await log.open()
    try:
        assert (await verify_chain(store)).intact
        report = await verify_chain(store, checkpoint=anchor)
    finally:
        await store.close()
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (EVENTS, "rewritten")


async def test_a_deleted_chain_head_is_damage_not_recreated(log: PostgresChainLog) -> None:
    """Re-creating the row (and hashing the rows past it) would hide a cut tail: the log
    still opens, appends are refused, and the chain's state names the lost head."""
    await log.truncate_after(90)
    await log.run(("DELETE FROM {chain_head}", ()))
    store = await log.open(writer=True)
    try:
        with pytest.raises(StoreDamaged, match="chain_head table has lost its row") as refused:
            await store.append("agent/new", [ActorStarted(path="n", kind="w")], ANY)
        assert "clawlog verify" in str(refused.value)
        with pytest.raises(StoreDamaged, match="recorded head of the hash chain") as damaged:
            await verify_chain(store)
        assert "upgrade" not in str(damaged.value)
        assert await store.head_position() == 90
    finally:
        await store.close()
    assert not await log.rows_of("chain_head")


@pytest.mark.parametrize("name", list(PAST_HEAD))
async def test_an_append_after_rows_added_past_the_recorded_head_is_refused(
    log: PostgresChainLog, name: str
) -> None:
    """Both append functions (the fast path and the checked one) refuse; nothing is
    written, and verify still names the first added row."""
    tamper, rows = PAST_HEAD[name]
    await tamper(log)
    store = await log.open(writer=True)
    try:
        before = await store.head_position()
        # ANY takes the fast path (append_known); a version this writer never saw the
        # checked one (append_batch): the refusal comes before the version check.
        for expected in (ANY, 3):
            with pytest.raises(StoreDamaged, match="clawlog verify") as refused:
                await store.append("agent/new", [ActorStarted(path="n", kind="w")], expected)
            assert rows in str(refused.value)
            assert f"recorded head of the hash chain (position {EVENTS})" in str(refused.value)
            assert refused.value.position == EVENTS + 1
        assert await store.head_position() == before
        report = await verify_chain(store)
    finally:
        await store.close()
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (EVENTS + 1, "inserted")


# -- upgrade in place ------------------------------------------------------------------------
async def test_an_old_log_is_upgraded_in_place() -> None:
    url, schema = database_url(), f"t_{uuid.uuid4().hex[:16]}"
    await write_v1_postgres_log(url, schema, 25_001)
    old = PostgresChainLog(url, schema)
    store = await old.open(writer=True)
    try:
        await write_events(store, 30)
        report = await verify_chain(store)
    finally:
        await store.close()
    assert report.intact, report.broken
    assert report.checked == 25_031
    conn = await asyncpg.connect(url)
    try:
        version = await conn.fetchval(
            f"SELECT value FROM {schema}.clawlog_meta WHERE key = 'schema_version'"
        )
    finally:
        await conn.close()
    assert int(version) == SCHEMA_VERSION


async def test_a_read_only_open_of_an_old_log_changes_nothing() -> None:
    """What `clawlog verify` and the readers open: no DDL, no upgrade; verify says which
    positions are unchained; appends are refused. A writer then upgrades it."""
    url, schema = database_url(), f"t_{uuid.uuid4().hex[:16]}"
    await write_v1_postgres_log(url, schema, 50)
    before = await postgres_tables(url, schema)
    assert "chain_head" not in before and "hash" not in before["events"]
    old = PostgresChainLog(url, schema)
    store = await old.open()
    try:
        assert [r.position for r in await store.read_all(1, 100)] == list(range(1, 51))
        with pytest.raises(NoHashChain, match="positions 1-50 are unchained") as no_chain:
            await verify_chain(store)
        assert "clawlog verify --upgrade" in str(no_chain.value)
        with pytest.raises(NoHashChain):
            await chain_head(store)
        with pytest.raises(EventStoreError, match="opened read-only"):
            await store.append("agent/new", [ActorStarted(path="n", kind="w")], ANY)
    finally:
        await store.close()
    assert await postgres_tables(url, schema) == before
    store = await old.open(writer=True)
    try:
        report = await verify_chain(store)
    finally:
        await store.close()
    assert report.intact and report.checked == 50


async def test_a_read_only_open_of_no_log_creates_nothing() -> None:
    url, schema = database_url(), f"t_{uuid.uuid4().hex[:16]}"
    with pytest.raises(EventStoreError, match=f"schema '{schema}' holds no clawlog log yet"):
        await PostgresChainLog(url, schema).open()
    assert await postgres_tables(url, schema) == {}


async def test_an_untouched_log_of_100000_events_verifies() -> None:
    chain_log = PostgresChainLog(database_url(), f"t_{uuid.uuid4().hex[:16]}")
    store = await chain_log.open(writer=True)
    try:
        for n in range(10):
            batch = [ActorStarted(path=f"p{n}-{i}", kind="w") for i in range(10_000)]
            await store.append(f"agent/big{n}", batch, ANY)
        report = await verify_chain(store, page_size=5000)
    finally:
        await store.close()
    assert report.intact, report.broken
    assert report.checked == 100_000
