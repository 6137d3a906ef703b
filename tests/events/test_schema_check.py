"""Opening an SQLite file tells "not a clawlog log", "a damaged clawlog log" and "cannot
read it" apart, for the writer and a read-only follower alike, and leaves nothing locked.

Every file here is real: a log written by the store, then damaged as a disk, a copy or a
hand would (a dropped table or column, a truncated file, a header cut short), or a file
that was never a log (random bytes, another application's SQLite database).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from clawlog.events import (
    ANY,
    EventStoreError,
    NotAClawlogDatabase,
    SqliteBackend,
    StoreDamaged,
    StoreLocked,
    open_store,
)
from clawlog.events.backends.sqlite_schema import SCHEMA_VERSION, schema_problems
from clawlog.events.domain.actor import ActorStarted

MODES = {"writer": False, "read-only": True}


async def write_log(path: Path, events: int = 200) -> None:
    store = await open_store(path)
    try:
        for n in range(events):
            await store.append(f"agent/a{n % 5}", [ActorStarted(path=f"a{n}", kind="w")], ANY)
    finally:
        await store.close()


@pytest.fixture
async def log(tmp_path: Path) -> Path:
    path = tmp_path / "app.db"
    await write_log(path)
    return path


def alter(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


async def open_fails(path: Path, read_only: bool) -> EventStoreError:
    with pytest.raises(EventStoreError) as failure:
        await SqliteBackend(path, read_only=read_only).open()
    return failure.value


async def assert_unlocked(path: Path) -> None:
    """No lock left behind: a writer's open gets past the lock (and fails as before)."""
    with pytest.raises(EventStoreError) as again:
        await SqliteBackend(path).open()
    assert not isinstance(again.value, StoreLocked), again.value


@pytest.mark.parametrize("read_only", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize("table", ["events", "idempotency_keys", "snapshots"])
async def test_a_log_with_a_dropped_table_is_damaged_and_names_the_table(
    log: Path, table: str, read_only: bool
) -> None:
    alter(log, f"DROP TABLE {table}")

    error = await open_fails(log, read_only)

    assert isinstance(error, StoreDamaged), error
    assert f"the {table} table is missing" in error.reason
    assert str(log) in str(error) and "clawlog doctor" in str(error)
    assert error.position is None
    await assert_unlocked(log)


@pytest.mark.parametrize("read_only", MODES.values(), ids=MODES.keys())
async def test_a_log_missing_a_column_is_damaged_and_names_the_column(
    log: Path, read_only: bool
) -> None:
    alter(log, "ALTER TABLE events DROP COLUMN actor")

    error = await open_fails(log, read_only)

    assert isinstance(error, StoreDamaged), error
    assert "the events table has no column actor" in error.reason


async def test_a_column_of_another_type_is_damaged(log: Path) -> None:
    alter(
        log,
        "DROP TABLE snapshots",
        "CREATE TABLE snapshots (stream TEXT PRIMARY KEY, version INTEGER NOT NULL, "
        "state_type TEXT NOT NULL, payload TEXT NOT NULL, recorded_at REAL NOT NULL) "
        "WITHOUT ROWID",
    )

    error = await open_fails(log, read_only=True)

    assert isinstance(error, StoreDamaged), error
    assert error.reason == (
        "the snapshots table's column payload is TEXT NOT NULL, not BLOB NOT NULL as "
        "clawlog makes it"
    )


async def test_an_extra_column_is_tolerated(log: Path) -> None:
    alter(log, "ALTER TABLE events ADD COLUMN note TEXT")

    store = await open_store(SqliteBackend(log, read_only=True))
    try:
        assert await store.head_position() == 200
    finally:
        await store.close()


@pytest.mark.parametrize("read_only", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize("keep", ["half the pages", "a page and a half", "the first page"])
async def test_a_truncated_log_is_damaged_and_says_how_short_it_is(
    log: Path, keep: str, read_only: bool
) -> None:
    size = log.stat().st_size
    page = 4096
    cut = {"half the pages": size // page // 2 * page, "a page and a half": page * 3 // 2}
    os.truncate(log, cut.get(keep, page))

    error = await open_fails(log, read_only)

    assert isinstance(error, StoreDamaged), error
    assert f"truncated: the file is {log.stat().st_size} bytes" in error.reason
    assert f"{size // page} pages of {page} bytes" in error.reason
    await assert_unlocked(log)


@pytest.mark.parametrize("read_only", MODES.values(), ids=MODES.keys())
async def test_a_header_cut_short_is_damaged(log: Path, read_only: bool) -> None:
    os.truncate(log, 60)

    error = await open_fails(log, read_only)

    assert isinstance(error, StoreDamaged), error
    assert "shorter than SQLite's 100-byte header" in error.reason


def random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


def other_application(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript("PRAGMA application_id = 42; CREATE TABLE notes (body TEXT);")
    conn.close()


def other_application_truncated(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        "PRAGMA application_id = 42; PRAGMA journal_mode = WAL; CREATE TABLE notes (body TEXT);"
    )
    with conn:
        conn.executemany("INSERT INTO notes VALUES (?)", [("x" * 1000,) for _ in range(100)])
    conn.close()
    os.truncate(path, 4096 * 2)


def foreign_tables_without_id(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE events (id INTEGER PRIMARY KEY, what TEXT);")
    conn.close()


@pytest.mark.parametrize("read_only", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize(
    ("make", "words"),
    [
        (random_bytes, "not an SQLite file"),
        (other_application, "application_id 0x2a"),
        (other_application_truncated, "application_id 0x2a"),
        (foreign_tables_without_id, "not a clawlog event log"),
    ],
    ids=["random bytes", "another app", "another app truncated", "foreign tables"],
)
async def test_a_file_that_is_not_a_log_is_named_so_and_left_untouched(
    tmp_path: Path, make: Callable[[Path], None], words: str, read_only: bool
) -> None:
    path = tmp_path / "other.db"
    make(path)
    before = path.read_bytes()

    error = await open_fails(path, read_only)

    assert isinstance(error, NotAClawlogDatabase), error
    assert words in str(error) and str(path) in str(error)
    assert path.read_bytes() == before
    assert not path.with_name("other.db.lock").exists()


async def test_a_log_from_a_newer_clawlog_is_refused_as_such(log: Path) -> None:
    alter(log, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")

    error = await open_fails(log, read_only=True)

    assert isinstance(error, NotAClawlogDatabase)
    assert "newer clawlog" in str(error)


async def test_an_empty_file_becomes_a_log_for_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()

    await write_log(path, events=3)

    conn = sqlite3.connect(path)
    try:
        assert schema_problems(conn) == []
    finally:
        conn.close()


async def test_a_good_log_has_no_schema_problems(log: Path) -> None:
    conn = sqlite3.connect(log)
    try:
        assert schema_problems(conn) == []
    finally:
        conn.close()
