"""A runner made with ``skip_corrupt`` leaves undecodable rows out, says so and lists them;
without it a corrupt row fails the projections that read it; a damaged page propagates.

The damage is real: bad bytes written into an SQLite log's payload column with sqlite3
(as a buggy writer or a flipped sector would leave them), and whole pages overwritten.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import StoreDamaged, open_store
from clawlog.projections import (
    ProjectionRunner,
    RebuildFailed,
    SessionHistory,
    StreamCatalog,
    rebuild,
)
from clawlog.projections.testing import write_mixed_log
from tests.cli.damage import leaf_pages
from tests.projections.support import TurnTexts, rows, write_corrupt_turn, write_turns

#: Not MessagePack (0xc1 is the one byte the format never uses): no class decodes it.
BAD_PAYLOAD = b"\xc1\xc1\xc1"


def corrupt_payload(log: Path, position: int) -> None:
    """Overwrite the payload of the row at ``position`` in the (closed) log."""
    conn = sqlite3.connect(log)
    try:
        with conn:
            changed = conn.execute(
                "UPDATE events SET payload = ? WHERE position = ?", (BAD_PAYLOAD, position)
            ).rowcount
    finally:
        conn.close()
    assert changed == 1


async def write_texts(log: Path, texts: list[str]) -> list[int]:
    """One turn per text (``session.turn_started`` then ``session.turn_completed``);
    returns the positions of the turn_started rows."""
    store = await open_store(log)
    try:
        written = await write_turns(store, "session/a/u", texts)
    finally:
        await store.close()
    return [e.position for e in written if e.type == "session.turn_started"]


def warnings(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        vars(r)
        for r in caplog.records
        if r.name.startswith("clawlog.") and r.levelname == "WARNING"
    ]


async def test_without_skip_corrupt_a_corrupt_row_fails_its_readers_naming_it(
    tmp_path: Path,
) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "views.db"
    started = await write_texts(log, ["one", "two", "three"])
    corrupt_payload(log, started[1])
    projections = [TurnTexts(), StreamCatalog()]
    async with (
        await open_store(log) as store,
        ProjectionRunner(store, views, projections) as runner,
    ):
        assert await runner.catch_up() == 6  # the catalog went on to the head
        statuses = {s.name: s for s in runner.statuses()}
        assert runner.skipped == []
    failed = statuses["turn_texts"]
    assert (failed.status, failed.failed_at, failed.position) == ("failed", started[1], 2)
    assert f"corrupt event at position {started[1]}" in (failed.error or "")
    assert "'session.turn_started'" in (failed.error or "")
    assert rows(views, "SELECT text FROM turn_texts") == [("one",)]


async def test_skip_corrupt_leaves_the_row_out_of_every_reader_and_lists_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "views.db"
    started = await write_texts(log, ["one", "two", "three", "four"])
    corrupt_payload(log, started[1])
    corrupt_payload(log, started[3])
    projections = [TurnTexts(), SessionHistory(), StreamCatalog()]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="clawlog"):
        async with (
            await open_store(log) as store,
            ProjectionRunner(store, views, projections, skip_corrupt=True) as runner,
        ):
            assert await runner.catch_up() == 8
            assert {(s.name, s.status, s.position) for s in runner.statuses()} == {
                ("turn_texts", "ok", 8),
                ("session_history", "ok", 8),
                ("stream_catalog", "ok", 8),
            }
            assert runner.skipped == [started[1], started[3]]
    assert rows(views, "SELECT text FROM turn_texts ORDER BY position") == [("one",), ("three",)]
    history = rows(views, "SELECT text FROM session_history ORDER BY position")
    assert history == [
        ("one",),
        ("re: one",),
        ("re: two",),
        ("three",),
        ("re: three",),
        ("re: four",),
    ]
    # Envelope-only: the corrupt rows' envelopes are whole, so the catalog counts them.
    assert rows(views, "SELECT event_count FROM stream_catalog") == [(8,)]
    logged = warnings(caplog)
    assert [(w["event"], w["position"]) for w in logged] == [
        ("skipped a corrupt event", started[1]),
        ("skipped a corrupt event", started[3]),
    ]
    assert logged[0]["projections"] == ["turn_texts", "session_history"]
    assert "corrupt event at position" in logged[0]["error"]


async def test_a_row_already_passed_is_not_skipped_again(tmp_path: Path) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "views.db"
    started = await write_texts(log, ["one", "two"])
    corrupt_payload(log, started[1])
    async with await open_store(log) as store:
        async with ProjectionRunner(store, views, [TurnTexts()], skip_corrupt=True) as runner:
            await runner.catch_up()
            assert runner.skipped == [started[1]]
            assert await runner.catch_up() == 4
            assert runner.skipped == [started[1]]  # once, however often it catches up
        await write_turns(store, "session/a/u", ["five"])
        # A later run starts past it: nothing of it to skip, and a new reader of the type
        # (a projection added to the file) reads it from position 1 and skips it itself.
        projections = [TurnTexts(), SessionHistory()]
        async with ProjectionRunner(store, views, projections, skip_corrupt=True) as runner:
            assert await runner.catch_up() == 6
            assert runner.skipped == [started[1]]
        async with ProjectionRunner(store, views, projections, skip_corrupt=True) as runner:
            assert await runner.catch_up() == 6
            assert runner.skipped == []


async def test_a_corrupt_row_of_a_type_nobody_reads_is_never_counted(tmp_path: Path) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "views.db"
    started = await write_texts(log, ["one", "two"])
    corrupt_payload(log, started[1] + 1)  # a turn_completed: TurnTexts reads no such row
    async with (
        await open_store(log) as store,
        ProjectionRunner(store, views, [TurnTexts()], skip_corrupt=True) as runner,
    ):
        assert await runner.catch_up() == 4
        assert runner.skipped == []
    assert rows(views, "SELECT text FROM turn_texts ORDER BY position") == [("one",), ("two",)]


async def test_following_live_skips_a_corrupt_row_written_under_it(tmp_path: Path) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "views.db"
    async with await open_store(log) as store:
        await write_turns(store, "session/a/u", ["first"])
        async with ProjectionRunner(store, views, [TurnTexts()], skip_corrupt=True) as runner:
            runner.start()
            await runner.wait_until(2, timeout=60)
            corrupt = await write_corrupt_turn(store, "session/a/u")
            last = (await write_turns(store, "session/a/u", ["after"]))[-1].position
            await runner.wait_until(last, timeout=60)
            assert runner.skipped == [corrupt]
            assert [s.status for s in runner.statuses()] == ["ok"]
    assert rows(views, "SELECT text FROM turn_texts ORDER BY position") == [("first",), ("after",)]


async def test_a_rebuild_names_the_corrupt_row_it_failed_on(tmp_path: Path) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "views.db"
    started = await write_texts(log, ["one", "two", "three"])
    corrupt_payload(log, started[2])
    async with await open_store(log) as store:
        with pytest.raises(RebuildFailed) as info:
            await rebuild(store, views, [TurnTexts(), StreamCatalog()], show_progress=False)
    assert info.value.position == 6  # the catalog got to the head
    [failure] = info.value.failures
    assert (failure.name, failure.position) == ("turn_texts", started[2])
    assert f"corrupt event at position {started[2]}" in str(info.value)
    assert rows(views, "SELECT text FROM turn_texts ORDER BY position") == [("one",), ("two",)]


def damage_page(log: Path, pageno: int) -> None:
    conn = sqlite3.connect(log)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with log.open("r+b") as file:
        file.seek((pageno - 1) * page_size)
        file.write(b"\xa5" * page_size)


@pytest.fixture
async def damaged_log(tmp_path: Path) -> tuple[Path, int, tuple[int, int]]:
    """A mixed log with one leaf page of its events table overwritten (an intact copy
    stays beside it as ``intact.db``): (log, head, the page's first and last position)."""
    log = tmp_path / "clawlog.db"
    async with await open_store(log) as store:
        head = await write_mixed_log(store, 3000)
    shutil.copyfile(log, tmp_path / "intact.db")
    pages = leaf_pages(log)
    pageno, first, last = pages[len(pages) // 2]
    damage_page(log, pageno)
    return log, head, (first, last)


async def test_a_damaged_page_propagates_as_store_damaged_keeping_what_came_before(
    tmp_path: Path, damaged_log: tuple[Path, int, tuple[int, int]]
) -> None:
    log, head, (first, _) = damaged_log
    views = tmp_path / "views.db"
    async with (
        await open_store(log) as store,
        ProjectionRunner(store, views, [StreamCatalog()], batch_size=100) as runner,
    ):
        with pytest.raises(StoreDamaged) as info:
            await runner.catch_up()
        reached = runner.position
    assert info.value.position is not None and reached < info.value.position <= first
    assert 0 < reached < first <= head
    # What was applied before the damaged page stayed applied, exactly up to the checkpoint.
    assert rows(views, "SELECT sum(event_count) FROM stream_catalog") == [(reached,)]
    # Folded from 0 without its indexes, cut short: the next open builds them.
    assert indexes(views) == set()
    async with await open_store(log) as store, ProjectionRunner(store, views, [StreamCatalog()]):
        assert indexes(views) == CATALOG_INDEXES


async def test_skip_corrupt_steps_over_a_damaged_page_and_reads_every_other_row(
    tmp_path: Path,
    damaged_log: tuple[Path, int, tuple[int, int]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    log, head, (first, last) = damaged_log
    views, intact = tmp_path / "views.db", tmp_path / "intact.views.db"
    with caplog.at_level(logging.WARNING, logger="clawlog"):
        async with (
            await open_store(log) as store,
            ProjectionRunner(
                store, views, [StreamCatalog(), SessionHistory()], batch_size=100, skip_corrupt=True
            ) as runner,
        ):
            assert await runner.catch_up() == head
            assert runner.damaged == [(first, last)]
            assert runner.skipped == []
            assert {s.status for s in runner.statuses()} == {"ok"}
    # Every readable row was folded: the catalog counts all but the unreadable ones.
    assert rows(views, "SELECT sum(event_count) FROM stream_catalog") == [
        (head - (last - first + 1),)
    ]
    assert [
        (w["first"], w["last"]) for w in warnings(caplog) if w["event"].startswith("stepped over")
    ] == [(first, last)]
    # The history holds every line an intact log gives, but those of the unreadable rows.
    async with (
        await open_store(tmp_path / "intact.db") as store,
        ProjectionRunner(store, intact, [SessionHistory()]) as runner,
    ):
        await runner.catch_up()
    everything = rows(intact, "SELECT * FROM session_history ORDER BY position")
    expected = [row for row in everything if not first <= row[0] <= last]
    assert len(expected) < len(everything)
    assert rows(views, "SELECT * FROM session_history ORDER BY position") == expected


CATALOG_INDEXES = {"stream_catalog_kind", "stream_catalog_recent", "stream_catalog_kind_recent"}


def indexes(views: Path) -> set[str]:
    found = rows(views, "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
    return {name for (name,) in found}


async def test_a_fold_from_position_0_builds_its_indexes_once_at_the_end(tmp_path: Path) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "views.db"
    async with await open_store(log) as store:
        await write_mixed_log(store, 500)
        async with ProjectionRunner(store, views, [StreamCatalog()], batch_size=50) as runner:
            assert indexes(views) == set()
            await runner.catch_up()
            assert indexes(views) == CATALOG_INDEXES


async def test_a_corrupt_payload_next_to_a_damaged_page_is_skipped_and_listed_too(
    tmp_path: Path, damaged_log: tuple[Path, int, tuple[int, int]]
) -> None:
    log, head, (first, last) = damaged_log
    views = tmp_path / "views.db"
    corrupt_payload(log, first - 1)
    # Batches of first - 2 positions: the second, read around the damage, starts at the
    # corrupt row.
    async with (
        await open_store(log) as store,
        ProjectionRunner(
            store, views, [StreamCatalog()], batch_size=first - 2, skip_corrupt=True
        ) as runner,
    ):
        assert await runner.catch_up() == head
        assert runner.skipped == [first - 1]
        assert runner.damaged == [(first, last)]
    # Around damage every row is decoded, so the corrupt one is left out of the catalog.
    assert rows(views, "SELECT sum(event_count) FROM stream_catalog") == [
        (head - (last - first + 1) - 1,)
    ]
