"""The projection runner: checkpoints, resume, failure isolation, version rebuilds,
read-your-writes, and its own file next to the log."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from clawlog.events import EventStore, open_store
from clawlog.projections import (
    InvalidProjection,
    NotCaughtUp,
    ProjectionError,
    ProjectionFailed,
    ProjectionRunner,
    ReadModels,
    ReadModelsUnavailable,
    SessionHistoryReader,
    views_path_for,
)
from clawlog.projections.read_models.session_history import SessionHistory
from clawlog.projections.read_models.stream_catalog import StreamCatalog
from tests.projections.support import (
    PositionLog,
    TurnTexts,
    rows,
    write_corrupt_turn,
    write_turns,
)


def clawlog_logs(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The fields of each clawlog record captured so far (its key-values are attributes)."""
    return [vars(r) for r in caplog.records if r.name.startswith("clawlog.")]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EventStore]:
    store = await open_store(tmp_path / "clawlog.db")
    yield store
    await store.close()


async def test_read_models_live_next_to_the_log_in_their_own_file(store: EventStore) -> None:
    await write_turns(store, "session/a/u", ["one"])
    async with ProjectionRunner(store, None, [SessionHistory()]) as runner:
        assert runner.path == views_path_for(store.backend.path)  # type: ignore[attr-defined]
        assert runner.path.name == "clawlog.views.db"
        assert await runner.catch_up() == 2
    assert rows(runner.path, "SELECT kind, text FROM session_history") == [
        ("user", "one"),
        ("reply", "re: one"),
    ]


async def test_the_event_log_is_refused_as_a_read_model_file(store: EventStore) -> None:
    log_path = store.backend.path  # type: ignore[attr-defined]
    with pytest.raises(ReadModelsUnavailable, match="is a clawlog event log"):
        await ProjectionRunner(store, log_path, [SessionHistory()]).open()


async def test_resumes_from_its_checkpoint_without_duplicates(
    store: EventStore, tmp_path: Path
) -> None:
    views = tmp_path / "views.db"
    await write_turns(store, "session/a/u", ["one", "two"])
    async with ProjectionRunner(store, views, [SessionHistory(), PositionLog()]) as runner:
        assert await runner.catch_up() == 4
    await write_turns(store, "session/a/u", ["three"])
    async with ProjectionRunner(store, views, [SessionHistory(), PositionLog()]) as runner:
        assert [s.position for s in runner.statuses()] == [4, 4]
        assert await runner.catch_up() == 6
        assert await runner.catch_up() == 6  # nothing new: nothing applied again
    assert rows(views, "SELECT position FROM position_log ORDER BY position") == [
        (p,) for p in range(1, 7)
    ]
    assert [r[0] for r in rows(views, "SELECT text FROM session_history ORDER BY position")] == [
        "one",
        "re: one",
        "two",
        "re: two",
        "three",
        "re: three",
    ]


async def test_a_failing_projection_is_marked_failed_at_its_position_while_another_goes_on(
    store: EventStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    views = tmp_path / "views.db"
    written = await write_turns(store, "session/a/u", ["first", "second", "poison", "fourth"])
    poison = written[4].position
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="clawlog"):
        async with ProjectionRunner(store, views, [TurnTexts(), SessionHistory()]) as runner:
            assert await runner.catch_up() == 8
            await write_turns(store, "session/a/u", ["fifth"])
            assert await runner.catch_up() == 10
            statuses = {s.name: s for s in runner.statuses()}
            with pytest.raises(ProjectionFailed, match="cannot fold this one") as failed:
                await runner.wait_until(poison, timeout=1)
            assert failed.value.position == poison
            await runner.wait_until(poison - 1, timeout=1)  # what came before is there
    assert statuses["turn_texts"].status == "failed"
    assert statuses["turn_texts"].failed_at == poison
    assert statuses["turn_texts"].position == poison - 1
    assert statuses["turn_texts"].error == "ValueError: cannot fold this one"
    assert (statuses["session_history"].status, statuses["session_history"].position) == ("ok", 10)
    assert rows(views, "SELECT text FROM turn_texts ORDER BY position") == [("first",), ("second",)]
    assert len(rows(views, "SELECT * FROM session_history")) == 10
    logs = clawlog_logs(caplog)
    assert [e["event"] for e in logs if e["levelname"] == "ERROR"] == ["projection failed"]
    # Restarted, it stays failed (with its error) and is not fed again.
    async with ProjectionRunner(store, views, [TurnTexts(), SessionHistory()]) as runner:
        await runner.catch_up()
        assert {s.name: s.status for s in runner.statuses()}["turn_texts"] == "failed"


async def test_a_projection_whose_version_changed_is_rebuilt(
    store: EventStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    views = tmp_path / "views.db"
    await write_turns(store, "session/a/u", ["one", "two"])
    async with ProjectionRunner(store, views, [TurnTexts(), PositionLog()]) as runner:
        await runner.catch_up()

    class TurnTextsV2(TurnTexts):
        version = 2
        tables = (
            "CREATE TABLE IF NOT EXISTS turn_texts (position INTEGER PRIMARY KEY, "
            "text TEXT, shout TEXT)",
        )

        def handle(self, conn, recorded):  # type: ignore[no-untyped-def]
            text = recorded.event.text
            conn.execute(
                "INSERT INTO turn_texts VALUES (?, ?, ?)", (recorded.position, text, text.upper())
            )

    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="clawlog"):
        async with ProjectionRunner(store, views, [TurnTextsV2(), PositionLog()]) as runner:
            assert {s.name: s.position for s in runner.statuses()} == {
                "turn_texts": 0,
                "position_log": 4,
            }
            await runner.catch_up()
    assert rows(views, "SELECT text, shout FROM turn_texts ORDER BY position") == [
        ("one", "ONE"),
        ("two", "TWO"),
    ]
    assert len(rows(views, "SELECT * FROM position_log")) == 4  # untouched
    assert [
        (e["projection"], e["old_version"])
        for e in clawlog_logs(caplog)
        if e["event"].startswith("projection version changed")
    ] == [("turn_texts", 1)]


async def test_following_live_and_reading_your_own_writes(
    store: EventStore, tmp_path: Path
) -> None:
    views = tmp_path / "views.db"
    async with ProjectionRunner(store, views, [SessionHistory()]) as runner:
        runner.start()
        async with ReadModels(views, runner=runner) as models:
            history = SessionHistoryReader(models)
            for n in range(5):
                written = await write_turns(store, "session/a/u", [f"live {n}"])
                await history.wait_until(written[-1].position)
                page = await history.page("session/a/u", after=written[0].position - 1)
                assert [e.text for e in page] == [f"live {n}", f"re: live {n}"]
            with pytest.raises(NotCaughtUp):
                await history.wait_until(written[-1].position + 1, timeout=0.05)
        await runner.stop()


async def test_wait_until_counts_events_no_projection_reads(
    store: EventStore, tmp_path: Path
) -> None:
    async with ProjectionRunner(store, tmp_path / "views.db", [TurnTexts()]) as runner:
        written = await write_turns(store, "session/a/u", ["one"])
        await runner.catch_up()
        runner.start()
        more = await write_turns(store, "session/a/u", ["two"])
        # The last event (a turn_completed) is not one TurnTexts reads: still applied.
        await runner.wait_until(more[-1].position, timeout=60)
        assert runner.position == more[-1].position > written[-1].position
        await runner.stop()


async def test_misuse_gives_clear_errors(store: EventStore, tmp_path: Path) -> None:
    runner = ProjectionRunner(store, tmp_path / "views.db", [SessionHistory()])
    with pytest.raises(ProjectionError, match="use `async with` or open"):
        await runner.catch_up()
    with pytest.raises(InvalidProjection, match="two projections are named"):
        ProjectionRunner(store, tmp_path / "views.db", [SessionHistory(), SessionHistory()])
    async with runner:
        with pytest.raises(ProjectionError, match="no projection named"):
            await runner.wait_until(1, names=["nope"])
    await runner.aclose()  # twice is fine
    with pytest.raises(ProjectionError, match="closed"):
        await runner.open()
    with pytest.raises(ReadModelsUnavailable, match="does not exist"):
        await ReadModels(tmp_path / "missing.db").open()


async def test_a_read_model_file_of_an_earlier_clawlog_is_adopted(
    store: EventStore, tmp_path: Path
) -> None:
    views = tmp_path / "views.db"
    conn = sqlite3.connect(views)  # the layout before files were stamped
    conn.execute(
        "CREATE TABLE projection_checkpoints (name TEXT PRIMARY KEY, version INTEGER NOT NULL, "
        "position INTEGER NOT NULL, status TEXT NOT NULL, error TEXT)"
    )
    conn.execute("INSERT INTO projection_checkpoints VALUES ('turn_texts', 0, 2, 'ok', NULL)")
    conn.commit()
    conn.close()
    await write_turns(store, "session/a/u", ["one"])
    async with ProjectionRunner(store, views, [TurnTexts()]) as runner:
        assert await runner.catch_up() == 2
    assert rows(views, "SELECT text FROM turn_texts") == [("one",)]  # version 0 -> 1: rebuilt
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()
    with pytest.raises(ReadModelsUnavailable, match="not clawlog read models"):
        await ProjectionRunner(store, foreign, [TurnTexts()]).open()


@pytest.mark.parametrize("live", [False, True], ids=["catching-up", "following"])
async def test_a_corrupt_row_fails_only_the_projections_that_read_it(
    store: EventStore, tmp_path: Path, live: bool
) -> None:
    views = tmp_path / "views.db"
    await write_turns(store, "session/a/u", ["first"])
    projections = [TurnTexts(), StreamCatalog()]  # the catalog reads envelopes only
    async with ProjectionRunner(store, views, projections) as runner:
        if live:
            runner.start()
            await runner.wait_until(2, timeout=60)
        corrupt = await write_corrupt_turn(store, "session/a/u")
        last = (await write_turns(store, "session/a/u", ["after"]))[-1].position
        if not live:
            await runner.catch_up()
        await runner.wait_until(last, timeout=60, names=["stream_catalog"])
        with pytest.raises(ProjectionFailed, match="corrupt event at position") as failed:
            await runner.wait_until(corrupt, timeout=60, names=["turn_texts"])
        assert failed.value.position == corrupt
    assert rows(views, "SELECT event_count FROM stream_catalog") == [(5,)]
    assert rows(views, "SELECT text FROM turn_texts") == [("first",)]
