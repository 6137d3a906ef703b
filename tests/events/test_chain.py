"""The hash chain on a real SQLite log: every way of tampering with it is found at the
right position and named, an untouched log of 100,000 events verifies, a log from
before the chain is upgraded in place by its first writer, and checkpoints anchor it."""

from __future__ import annotations

import asyncio
import sqlite3
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from clawlog.events import ANY, EventMetadata, NewRecord, default_registry, open_store
from clawlog.events.backends.sqlite_chain import upgrade
from clawlog.events.backends.sqlite_schema import SCHEMA_VERSION
from clawlog.events.chain import GENESIS, link, row_link
from clawlog.events.domain.actor import ActorStarted, ActorStopped
from clawlog.events.errors import NoHashChain, StoreDamaged
from clawlog.events.verify import (
    ChainReport,
    chain_head,
    check_signature,
    new_key_pair,
    sign_checkpoint,
    verify_chain,
)
from tests.events.chain_logs import ChainLog, SqliteChainLog, write_events

EVENTS = 120
Tampering = Callable[[ChainLog], Awaitable[None]]

#: Each tampering, and the position and kind verify must name.
TAMPERINGS: dict[str, tuple[Tampering, int, str]] = {
    "payload byte edited": (lambda log: log.edit_payload_byte(40), 40, "edited"),
    "first row edited": (lambda log: log.edit_payload_byte(1), 1, "edited"),
    "last row edited": (lambda log: log.edit_payload_byte(EVENTS), EVENTS, "edited"),
    "row deleted": (lambda log: log.delete(57), 57, "deleted"),
    "first row deleted": (lambda log: log.delete(1), 1, "deleted"),
    "rows swapped": (lambda log: log.swap(30, 75), 30, "reordered"),
    "neighbours swapped": (lambda log: log.swap(64, 65), 64, "reordered"),
    "row inserted": (lambda log: log.insert_at(33), 33, "inserted"),
    "row inserted past the head": (
        lambda log: log.insert_past_head(EVENTS),
        EVENTS + 1,
        "inserted",
    ),
    "row appended past the head with a fitting hash": (
        lambda log: log.append_fitting(EVENTS),
        EVENTS + 1,
        "inserted",
    ),
    "recorded head moved back": (lambda log: log.move_head_back(100), 100, "edited"),
    "absent actor made empty": (lambda log: log.set_empty_actor(2), 2, "edited"),
    "tail truncated": (lambda log: log.truncate_after(90), 91, "deleted"),
    "chain restarted": (lambda log: log.restart_at(50), 50, "restarted"),
}


@pytest.fixture
async def log(tmp_path: Path) -> SqliteChainLog:
    chain_log = SqliteChainLog(tmp_path / "app.db")
    store = await chain_log.open(writer=True)
    try:
        await write_events(store, EVENTS)
    finally:
        await store.close()
    return chain_log


async def verified(log: ChainLog, **options: object) -> ChainReport:
    store = await log.open()
    try:
        return await verify_chain(store, **options)  # type: ignore[arg-type]
    finally:
        await store.close()


async def test_an_untouched_log_is_intact(log: SqliteChainLog) -> None:
    report = await verified(log)
    assert report.intact, report.broken
    assert (report.checked, report.last_position, report.head_position) == (EVENTS, EVENTS, EVENTS)
    assert report.head_hash == (await log.row(EVENTS))[11].hex()


async def test_every_hash_is_the_documented_encoding(log: SqliteChainLog) -> None:
    """Recomputed here from the stored columns with chain.link, field by field."""
    prev = GENESIS
    for row in await log.rows(1, EVENTS):
        position, stream, version, type_, schema, payload, at, corr, caus, actor, key, stored = row
        prev = link(prev, position, stream, version, type_, schema, payload, at, corr, caus,
                    actor, key)  # fmt: skip
        assert stored == prev, position
    # And link itself is the documented bytes: fixed fields, then length-prefixed ones.
    expected = (
        GENESIS
        + struct.pack(">QQQdI", 7, 2, 1, 1.5, 3)
        + b"abc"
        + struct.pack(">I", 1)
        + b"t"
        + struct.pack(">I", 1)
        + b"s"
        + b"\x00\x01"
        + struct.pack(">I", 2)
        + b"ca"
        + b"\x00\x00"
    )
    import hashlib

    assert link(GENESIS, 7, "s", 2, "t", 1, b"abc", 1.5, None, "ca") == (
        hashlib.sha256(expected).digest()
    )


@pytest.mark.parametrize("python_hashing", [False, True], ids=["compiled", "python"])
async def test_one_batch_of_every_kind_of_append_hashes_as_documented(
    tmp_path: Path, python_hashing: bool
) -> None:
    """Appends that land in one group commit: plain single and multi-event ones, several
    types in one append, metadata, a repeated idempotency key, non-ASCII text, a schema
    version above 1. The writer's hashes (computed with cached parts of the encoding, by
    the compiled loop or the Python one) are chain.link's, row after row."""
    log = SqliteChainLog(tmp_path / "batch.db", python_hashing=python_hashing)
    store = await log.open(writer=True)
    started, stopped = ActorStarted(path="p", kind="w"), ActorStopped(path="p", reason="done")
    meta = EventMetadata(correlation_id="turn", causation_id="c", actor="a/b")
    key = EventMetadata(idempotency_key="k1", actor="a/b")
    raw = NewRecord(type="test.raw", schema_version=3, payload=b"\x00\xffraw")
    try:
        await store.append("agent/first", [started], ANY)  # the head the batch links to
        await asyncio.gather(
            store.append("agent/a", [started], ANY),
            store.append("agent/a", [started, stopped, started], ANY),
            store.append("agent/c", [stopped], ANY),
            store.append("session/s", [started, stopped], ANY, meta),
            store.append("agent/a", [started], ANY),
            store.append("agent/k", [started], ANY, key),
            store.append("agent/k", [started], ANY, key),  # a repeat: writes nothing
            # Below the store (which allows only ASCII stream names): text of every width.
            store.backend.append("agent/é/ü", [raw], ANY, EventMetadata(correlation_id="tür😀")),
            store.append("agent/b", [stopped, stopped], ANY, EventMetadata(actor="x")),
        )
    finally:
        await store.close()
    rows = await log.rows(1, 100)
    assert len(rows) == 13
    assert {row[4] for row in rows} == {1, 3}
    batches: dict[float, set[str]] = {}
    for row in rows:
        batches.setdefault(row[6], set()).add(row[1])  # one recorded_at per group commit
    assert max(len(streams) for streams in batches.values()) > 1
    prev = GENESIS
    for row in rows:
        prev = link(prev, *row[:11])
        assert row[11] == prev, row[0]
    report = await verified(log)
    assert report.intact and report.head_hash == prev.hex()


def test_no_two_different_rows_encode_alike() -> None:
    """Absent is not empty, and no text can spill into its neighbour."""
    base = (GENESIS, 1, "s", 1, "t", 1, b"p", 1.0)
    variants = [
        link(*base),
        link(*base, ""),
        link(*base, None, ""),
        link(*base, None, None, ""),
        link(*base, None, None, None, ""),
        link(*base, "", ""),
        link(*base, "ab", "c"),
        link(*base, "a", "bc"),
        link(GENESIS, 1, "st", 1, "", 1, b"p", 1.0),
        link(GENESIS, 1, "s", 1, "t", 1, b"pt", 1.0),
    ]
    assert len(set(variants)) == len(variants)


async def test_a_row_edited_with_its_hash_is_named_beside_the_next_one(
    log: SqliteChainLog,
) -> None:
    """The next row no longer links: both it and the re-hashed row are named."""
    await log.edit_with_its_hash(60)
    report = await verified(log)
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (61, "edited")
    assert "the row before it (position 60) was changed along with its hash" in (
        report.broken.detail
    )


@pytest.mark.parametrize("name", list(TAMPERINGS))
async def test_a_tampered_log_names_the_first_changed_position(
    log: SqliteChainLog, name: str
) -> None:
    tamper, position, kind = TAMPERINGS[name]
    await tamper(log)
    report = await verified(log)
    assert report.broken is not None, name
    assert (report.broken.position, report.broken.kind) == (position, kind), report.broken
    assert report.last_position == position - 1


async def test_a_cut_tail_stays_visible_after_new_appends(log: SqliteChainLog) -> None:
    await log.truncate_after(90)
    store = await log.open(writer=True)
    try:
        appended = await store.append("agent/new", [ActorStarted(path="n", kind="w")] * 5, ANY)
    finally:
        await store.close()
    # The writer resumes after its recorded head, so the cut is a gap, not a seamless chain.
    assert [r.position for r in appended] == list(range(EVENTS + 1, EVENTS + 6))
    report = await verified(log)
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (91, "deleted")
    assert "91-120" in report.broken.detail


async def test_appends_after_an_edit_do_not_hide_it(log: SqliteChainLog) -> None:
    await log.edit_payload_byte(12)
    store = await log.open(writer=True)
    try:
        await write_events(store, 20)
    finally:
        await store.close()
    report = await verified(log)
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (12, "edited")


#: Rows added past the recorded head, and the positions the writer's refusal names.
PAST_HEAD: dict[str, tuple[Tampering, str]] = {
    "a forged row": (lambda log: log.insert_past_head(EVENTS), f"row at position {EVENTS + 1}"),
    "two rows with fitting hashes": (
        lambda log: fitting_rows(log, 2),
        f"rows at positions {EVENTS + 1}-{EVENTS + 2}",
    ),
}


async def fitting_rows(log: ChainLog, count: int) -> None:
    for n in range(count):
        await log.append_fitting(EVENTS + n, version=n + 1)


async def count_rows(log: ChainLog) -> int:
    return len(await log.rows(1, 10**9))


@pytest.mark.parametrize("name", list(PAST_HEAD))
async def test_a_writer_refuses_rows_added_past_the_recorded_head(
    log: SqliteChainLog, name: str
) -> None:
    """Linking to such rows would leave forged rows with fitting hashes undetectable: the
    writer does not open, readers and verify still do, and verify names the first."""
    tamper, rows = PAST_HEAD[name]
    await tamper(log)
    before = await count_rows(log)
    with pytest.raises(StoreDamaged, match="clawlog verify") as refused:
        await log.open(writer=True)
    assert rows in str(refused.value)
    assert f"recorded head of the hash chain (position {EVENTS})" in str(refused.value)
    assert refused.value.position == EVENTS + 1
    assert await count_rows(log) == before
    report = await verified(log)
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (EVENTS + 1, "inserted")


async def test_a_writer_refuses_a_lost_recorded_head(log: SqliteChainLog) -> None:
    await log.run(("DELETE FROM {chain_head}", ()))
    with pytest.raises(StoreDamaged, match="chain_head table has lost its row"):
        await log.open(writer=True)
    store = await log.open()
    try:
        with pytest.raises(StoreDamaged, match="chain_head table has lost its row"):
            await verify_chain(store)
    finally:
        await store.close()


async def test_from_checks_from_a_position_on(log: SqliteChainLog) -> None:
    await log.edit_payload_byte(10)
    report = await verified(log, from_position=11)
    assert report.intact and report.checked == EVENTS - 10
    report = await verified(log, from_position=10)
    assert report.broken is not None and report.broken.position == 10
    with pytest.raises(ValueError, match="past the log's last position"):
        await verified(log, from_position=EVENTS + 2)


async def test_a_rewritten_chain_is_caught_by_a_checkpoint(log: SqliteChainLog) -> None:
    store = await log.open()
    try:
        anchor = await chain_head(store)
    finally:
        await store.close()
    await log.rewrite_from(70)
    assert (await verified(log)).intact  # every link holds: only an anchor tells
    report = await verified(log, checkpoint=anchor)
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (EVENTS, "rewritten")


async def test_a_signed_checkpoint_verifies_only_with_its_key(log: SqliteChainLog) -> None:
    private, public = new_key_pair()
    _, other_public = new_key_pair()
    store = await log.open()
    try:
        signed = sign_checkpoint(await chain_head(store), private)
        assert check_signature(signed, public)
        assert not check_signature(signed, other_public)
        forged = signed.__class__(
            position=signed.position,
            hash="00" * 32,
            signature=signed.signature,
            public_key=signed.public_key,
        )
        assert not check_signature(forged, public)
        assert (await verify_chain(store, checkpoint=signed)).intact
    finally:
        await store.close()


async def test_an_untouched_log_of_100000_events_verifies(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    store = await open_store(path)
    try:
        for n in range(10):  # big appends: the store's fastest way in
            batch = [ActorStarted(path=f"p{n}-{i}", kind="w") for i in range(10_000)]
            await store.append(f"agent/big{n}", batch, ANY)
        report = await verify_chain(store, page_size=5000)
    finally:
        await store.close()
    assert report.intact, report.broken
    assert report.checked == 100_000


# -- upgrade in place ------------------------------------------------------------------------
#: The tables of schema 1, as clawlog created them before the chain (git history).
V1_SCHEMA = """
CREATE TABLE events (
    position       INTEGER PRIMARY KEY,
    stream         TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    type           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    payload        BLOB    NOT NULL,
    recorded_at    REAL    NOT NULL,
    correlation_id TEXT,
    causation_id   TEXT,
    actor          TEXT,
    idempotency_key TEXT,
    UNIQUE (stream, version)
);
CREATE TABLE idempotency_keys (
    key            TEXT PRIMARY KEY,
    stream         TEXT    NOT NULL,
    first_position INTEGER NOT NULL,
    last_position  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE snapshots (
    stream      TEXT PRIMARY KEY,
    version     INTEGER NOT NULL,
    state_type  TEXT    NOT NULL,
    payload     BLOB    NOT NULL,
    recorded_at REAL    NOT NULL
) WITHOUT ROWID;
PRAGMA application_id = 1668047223;
PRAGMA user_version = 1;
"""


def write_v1_log(path: Path, events: int) -> None:
    """A schema 1 log, rows as the old writer stored them (metadata on some)."""
    conn = sqlite3.connect(path)
    conn.executescript("PRAGMA journal_mode=WAL;" + V1_SCHEMA)
    registry = default_registry()
    rows = []
    for n in range(1, events + 1):
        tag, schema, payload = registry.encode(ActorStarted(path=f"old{n}", kind="w"))
        actor = "session/old" if n % 3 == 0 else None
        rows.append((n, f"agent/o{n % 7}", n // 7 + 1, tag, schema, payload, 1.7e9 + n, actor))
    conn.executemany(
        "INSERT INTO events (position, stream, version, type, schema_version, payload, "
        "recorded_at, actor) VALUES (?,?,?,?,?,?,?,?)",
        rows,
    )
    conn.commit()
    conn.close()


async def test_an_old_log_reads_without_a_chain_until_a_writer_upgrades_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    write_v1_log(path, 25_001)  # three upgrade transactions of 10,000 rows
    old = SqliteChainLog(path)
    store = await old.open()
    try:
        assert len(await store.read_all(1, 10)) == 10  # read-only: still a good log
        with pytest.raises(NoHashChain, match="no hash chain yet"):
            await verify_chain(store)
    finally:
        await store.close()
    store = await old.open(writer=True)
    try:
        assert await store.head_position() == 25_001
        await write_events(store, 30)
        report = await verify_chain(store)
    finally:
        await store.close()
    assert report.intact, report.broken
    assert report.checked == 25_031
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # The old rows are hashed as the chain defines them, from the genesis value.
        first = conn.execute(
            "SELECT position, stream, version, type, schema_version, payload, recorded_at, "
            "correlation_id, causation_id, actor, idempotency_key, hash FROM events "
            "WHERE position = 1"
        ).fetchone()
        assert first[11] == row_link(GENESIS, first)
    finally:
        conn.close()


async def test_a_chained_log_set_back_to_schema_1_keeps_its_hashes(
    log: SqliteChainLog,
) -> None:
    """An edit, then the chain's head deleted and the schema set back to 1: the upgrade
    the next writer runs must not hash the edited row afresh (a seamless chain)."""
    await log.set_empty_actor(2)
    conn = sqlite3.connect(log.path, isolation_level=None)
    try:
        conn.execute("DELETE FROM chain_head")
        conn.execute("PRAGMA user_version = 1")
    finally:
        conn.close()
    store = await log.open(writer=True)
    try:
        report = await verify_chain(store)
    finally:
        await store.close()
    assert report.broken is not None
    assert (report.broken.position, report.broken.kind) == (2, "edited")


async def test_an_interrupted_upgrade_resumes_where_it_stopped(tmp_path: Path) -> None:
    """The upgrade's first transactions done (column, table, 10,000 rows hashed) and the
    schema still 1, as a kill would leave it: the next writer finishes the chain."""
    path = tmp_path / "old.db"
    write_v1_log(path, 15_000)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        upgrade(conn, str(path), batch=10_000)  # the whole upgrade ...
        # ... then undone back to the state after its first batch.
        conn.execute("UPDATE events SET hash = NULL WHERE position > 10000")
        (hash_10000,) = conn.execute("SELECT hash FROM events WHERE position = 10000").fetchone()
        conn.execute("UPDATE chain_head SET position = 10000, hash = ?", (hash_10000,))
        conn.execute("PRAGMA user_version = 1")
    finally:
        conn.close()
    old = SqliteChainLog(path)
    store = await old.open()
    try:
        with pytest.raises(NoHashChain):
            await verify_chain(store)  # still schema 1: read as such
    finally:
        await store.close()
    store = await old.open(writer=True)
    try:
        report = await verify_chain(store)
    finally:
        await store.close()
    assert report.intact and report.checked == 15_000
