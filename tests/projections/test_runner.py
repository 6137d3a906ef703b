"""The projection runner: exactly-once checkpoints, resume, failure isolation, rebuild."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, ClassVar

import pytest

from events import ANY, EventStore, open_store
from events.domain.session import TurnCompleted, TurnStarted
from projections import NotCaughtUp, ProjectionRunner, SessionHistory, SessionHistoryReader


class Exploding:
    """Fails on the third turn it sees."""

    name: ClassVar[str] = "exploding"
    version: ClassVar[int] = 1
    table_names = ("exploding_rows",)
    tables = ("CREATE TABLE IF NOT EXISTS exploding_rows (position INTEGER PRIMARY KEY)",)
    types: ClassVar[tuple[str, ...]] = ("session.turn_started",)

    def handle(self, conn: sqlite3.Connection, event: Any) -> None:
        if event.event.text == "third":
            raise ValueError("cannot fold this one")
        conn.execute("INSERT INTO exploding_rows VALUES (?)", (event.position,))


async def write_turns(store: EventStore, stream: str, texts: list[str]) -> None:
    for i, text in enumerate(texts):
        await store.append(stream, [TurnStarted(turn_id=f"t{i}", text=text),
                                    TurnCompleted(turn_id=f"t{i}", reply=f"re: {text}",
                                                  iterations=1)], ANY)


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


async def test_resumes_from_its_checkpoint_without_duplicates(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "log.db")
    views = tmp_path / "views.db"
    try:
        await write_turns(store, "session/a/u", ["one", "two"])
        runner = ProjectionRunner(store, views, [SessionHistory()])
        await runner.catch_up()
        await runner.stop()
        await write_turns(store, "session/a/u", ["three"])
        runner = ProjectionRunner(store, views, [SessionHistory()])
        await runner.catch_up()
        reader = SessionHistoryReader(runner._db)
        page = reader.page("session/a/u")
        assert [(r[2], r[4]) for r in page] == [
            ("user", "one"), ("reply", "re: one"), ("user", "two"), ("reply", "re: two"),
            ("user", "three"), ("reply", "re: three")]
        assert [r[0] for r in reader.page("session/a/u", after=page[1][0], limit=2)] == [
            page[2][0], page[3][0]]
        assert reader.page("session/a/u", kinds=("reply",))[0][4] == "re: one"
        await runner.stop()
    finally:
        await store.close()


async def test_a_failing_projection_stops_at_its_position_and_the_others_go_on(
    tmp_path: Path,
) -> None:
    store = await open_store(tmp_path / "log.db")
    try:
        await write_turns(store, "session/a/u", ["first", "second", "third", "fourth"])
        runner = ProjectionRunner(store, tmp_path / "views.db", [Exploding(), SessionHistory()])
        await runner.catch_up()
        statuses = {s[0]: s for s in runner.statuses()}
        assert statuses["exploding"][3] == "failed" and statuses["exploding"][2] == 4
        assert "cannot fold this one" in (statuses["exploding"][4] or "")
        assert statuses["session_history"][3] == "ok" and statuses["session_history"][2] == 8
        assert rows(tmp_path / "views.db", "SELECT count(*) FROM exploding_rows") == [(2,)]
        await runner.stop()
    finally:
        await store.close()


async def test_live_following_and_wait_until_read_your_writes(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "log.db")
    try:
        runner = ProjectionRunner(store, tmp_path / "views.db", [SessionHistory()])
        runner.start()
        await write_turns(store, "session/a/u", ["live"])
        head = await store.head_position()
        await runner.wait_until(head)
        assert [r[4] for r in SessionHistoryReader(runner._db).page("session/a/u")] == [
            "live", "re: live"]
        with pytest.raises(NotCaughtUp):
            await runner.wait_until(head + 50, timeout=0.1)
        await runner.stop()
    finally:
        await store.close()


async def test_a_rebuild_gives_exactly_the_live_read_model(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "log.db")
    try:
        live = ProjectionRunner(store, tmp_path / "live.db", [SessionHistory()], batch_size=7)
        live.start()
        for k in range(20):
            await write_turns(store, f"session/a/u{k % 4}", [f"m{k}-{i}" for i in range(5)])
        await live.wait_until(await store.head_position())
        await live.stop()
        rebuilt = ProjectionRunner(store, tmp_path / "rebuilt.db", [SessionHistory()])
        await rebuilt.catch_up()
        await rebuilt.stop()
        query = "SELECT * FROM session_history ORDER BY position"
        assert rows(tmp_path / "live.db", query) == rows(tmp_path / "rebuilt.db", query)
        assert len(rows(tmp_path / "live.db", query)) == 200
    finally:
        await store.close()
