"""Rebuilds: from position 1 into fresh tables, equal to the live read models row for row,
swapped in atomically, with a progress bar; a live runner survives a swap."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from clawlog.events import ANY, EventMetadata, open_store
from clawlog.events.domain.team import TeamTaskCreated
from clawlog.projections import ALL_PROJECTIONS, ProjectionRunner, ReadModels, rebuild
from clawlog.projections.read_models.task_boards import TaskBoards
from clawlog.projections.testing import dump_tables, write_mixed_log
from tests.projections.statement_folds import StatementActorLifecycle, StatementTaskBoards
from tests.projections.support import TurnTexts, rows, write_state_changes, write_turns


def everything() -> list:  # type: ignore[type-arg]
    return [p() for p in ALL_PROJECTIONS]


async def test_a_rebuild_gives_exactly_the_live_read_models(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "clawlog.db")
    live, rebuilt = tmp_path / "live.views.db", tmp_path / "rebuilt.views.db"
    try:
        async with ProjectionRunner(store, live, everything(), batch_size=37) as runner:
            runner.start()  # follows while the log is written, in small uneven batches
            for _ in range(3):
                head = await write_mixed_log(store, 2000, concurrency=16)
            await runner.wait_until(head, timeout=60)
            await runner.stop()
        output = io.StringIO()
        console = Console(file=output, force_terminal=True, width=120)
        position = await rebuild(store, rebuilt, everything(), console=console)
    finally:
        await store.close()
    assert position == head >= 6000
    live_tables, rebuilt_tables = dump_tables(live), dump_tables(rebuilt)
    assert live_tables == rebuilt_tables
    assert all(live_tables.values()), [t for t, r in live_tables.items() if not r]
    assert sorted(live_tables) == sorted(
        ["projection_checkpoints", *(t for p in ALL_PROJECTIONS for t in p.table_names)]
    )
    assert "rebuilding read models" in output.getvalue()
    assert f"{head}/{head}" in output.getvalue()
    indexes = rows(
        rebuilt, "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    )
    assert ("tool_audit_tool",) in indexes and ("session_history_stream",) in indexes


@pytest.mark.parametrize("batch_size", [1, 3, 1000])
async def test_folding_in_memory_gives_the_rows_of_a_statement_per_event(
    tmp_path: Path, batch_size: int
) -> None:
    # The folds keep rows in memory for a batch: a row changed again and again, across
    # batch boundaries or within one batch, ends up as the old UPDATE per event left it.
    store = await open_store(tmp_path / "clawlog.db")
    folded, rebuilt = tmp_path / "folded.views.db", tmp_path / "rebuilt.views.db"
    spec = tmp_path / "statements.views.db"
    try:
        head = await write_state_changes(store, 600)
        async with ProjectionRunner(store, folded, everything(), batch_size=batch_size) as runner:
            assert await runner.catch_up() == head
            assert {s.status for s in runner.statuses()} == {"ok"}
        statements = [StatementActorLifecycle(), StatementTaskBoards()]
        async with ProjectionRunner(store, spec, statements, batch_size=batch_size) as runner:
            assert await runner.catch_up() == head
        await rebuild(store, rebuilt, everything(), show_progress=False)
    finally:
        await store.close()
    tables, expected = dump_tables(folded), dump_tables(spec)
    assert tables == dump_tables(rebuilt)
    for table in ("actor_lifecycle", "actor_incidents", "task_boards", "teams"):
        assert tables[table] == expected[table], table
    assert {row[4] for row in tables["task_boards"]} == {
        "pending",
        "blocked",
        "claimed",
        "completed",
    }
    assert {row[2] for row in tables["actor_lifecycle"]} >= {"running", "failed", "stopped"}


async def test_a_task_created_twice_fails_the_boards_with_sqlites_own_error(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path / "clawlog.db")
    try:
        await store.append(
            "team/x", [TeamTaskCreated(task_id="t1", subject="a")], ANY, EventMetadata()
        )
        again = await store.append(
            "team/x",
            [
                TeamTaskCreated(task_id="t2", subject="b"),
                TeamTaskCreated(task_id="t1", subject="c"),
            ],
            ANY,
            EventMetadata(),
        )
        async with ProjectionRunner(store, tmp_path / "v.db", [TaskBoards()]) as runner:
            await runner.catch_up()
            [status] = runner.statuses()
    finally:
        await store.close()
    assert (status.status, status.failed_at, status.position) == ("failed", 3, 2)
    assert status.error == (
        "IntegrityError: UNIQUE constraint failed: task_boards.team, task_boards.task_id"
    )
    assert again[0].position == 2  # the task before it on the same batch was applied
    assert rows(tmp_path / "v.db", "SELECT task_id, subject FROM task_boards ORDER BY 1") == [
        ("t1", "a"),
        ("t2", "b"),
    ]


async def test_a_rebuild_swaps_into_the_live_file_in_one_transaction(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "clawlog.db")
    views = tmp_path / "clawlog.views.db"
    try:
        await write_turns(store, "session/a/u", ["one", "poison", "three"])
        async with ProjectionRunner(store, views, [TurnTexts(), *everything()]) as runner:
            await runner.catch_up()
        assert rows(
            views, "SELECT status FROM projection_checkpoints WHERE name = 'turn_texts'"
        ) == [("failed",)]
        before = dump_tables(views)

        class FixedTurnTexts(TurnTexts):
            def handle(self, conn, recorded):  # type: ignore[no-untyped-def]
                conn.execute(
                    "INSERT INTO turn_texts VALUES (?, ?)", (recorded.position, recorded.event.text)
                )

        async with ReadModels(views) as reader:  # open across the swap
            position = await rebuild(store, views, [FixedTurnTexts()], show_progress=False)
            texts = await reader.query("SELECT text FROM turn_texts ORDER BY position")
            statuses = await reader.statuses()
    finally:
        await store.close()
    assert position == 6
    assert texts == [("one",), ("poison",), ("three",)]
    assert (statuses["turn_texts"].status, statuses["turn_texts"].position) == ("ok", 6)
    after = dump_tables(views)
    del before["turn_texts"], after["turn_texts"]
    before["projection_checkpoints"] = [
        r for r in before["projection_checkpoints"] if r[0] != "turn_texts"
    ]
    after["projection_checkpoints"] = [
        r for r in after["projection_checkpoints"] if r[0] != "turn_texts"
    ]
    assert before == after  # the other read models were left alone
    assert not (tmp_path / "clawlog.views.db.rebuilding").exists()


async def test_a_live_runner_carries_on_after_a_swap_moved_its_checkpoint_back(
    tmp_path: Path,
) -> None:
    log, views = tmp_path / "clawlog.db", tmp_path / "clawlog.views.db"
    store = await open_store(log)
    try:
        await write_mixed_log(store, 1500)
        snapshot = tmp_path / "snapshot.db"
        source, target = sqlite3.connect(log), sqlite3.connect(snapshot)
        source.backup(target)
        source.close()
        target.close()
        async with ProjectionRunner(store, views, everything(), batch_size=100) as runner:
            runner.start()
            head = await write_mixed_log(store, 1000)
            await runner.wait_until(head, timeout=60)
            # A rebuild from an older copy of the log moves every checkpoint back.
            old = await open_store(snapshot)
            try:
                old_head = await rebuild(old, views, everything(), show_progress=False)
            finally:
                await old.close()
            assert old_head < head
            head = await write_mixed_log(store, 500)
            await runner.wait_until(head, timeout=60)
            await runner.stop()
        fresh = tmp_path / "fresh.db"
        await rebuild(store, fresh, everything(), show_progress=False)
    finally:
        await store.close()
    assert dump_tables(views) == dump_tables(fresh)


async def test_rebuilding_an_empty_log(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "clawlog.db")
    try:
        assert await rebuild(store, tmp_path / "v.db", everything(), show_progress=False) == 0
        async with ReadModels(tmp_path / "v.db") as models:
            assert {s.position for s in (await models.statuses()).values()} == {0}
    finally:
        await store.close()
