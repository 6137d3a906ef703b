"""Test projections and log writers shared by the projection tests."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any, ClassVar

from events import ANY, EventMetadata, EventStore, RecordedEvent
from events.domain.session import TurnCompleted, TurnStarted

ROOT = Path(__file__).parents[2]


class PositionLog:
    """One row per event it sees, with no key: an event applied twice shows up twice.

    ``stop_at``: on that position, print a line and block (the crash tests kill the
    process there, inside the batch's open transaction). ``fail_at``: raise there."""

    name: ClassVar[str] = "position_log"
    version: ClassVar[int] = 1
    table_names: ClassVar[tuple[str, ...]] = ("position_log",)
    tables: ClassVar[tuple[str, ...]] = (
        "CREATE TABLE IF NOT EXISTS position_log (position INTEGER NOT NULL, type TEXT)",
    )
    types: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, *, stop_at: int | None = None, fail_at: int | None = None) -> None:
        self.stop_at, self.fail_at = stop_at, fail_at

    def handle(self, conn: sqlite3.Connection, event: RecordedEvent) -> None:
        if event.position == self.fail_at:
            raise ValueError(f"cannot fold position {event.position}")
        if event.position == self.stop_at:
            sys.stdout.write(f"blocked at {event.position}\n")
            sys.stdout.flush()
            sys.stdin.readline()  # the test kills us while we wait here
        conn.execute("INSERT INTO position_log VALUES (?, ?)", (event.position, event.type))


class TurnTexts:
    """Folds user turns only; fails on a turn whose text is ``"poison"``."""

    name: ClassVar[str] = "turn_texts"
    version: ClassVar[int] = 1
    table_names: ClassVar[tuple[str, ...]] = ("turn_texts",)
    tables: ClassVar[tuple[str, ...]] = (
        "CREATE TABLE IF NOT EXISTS turn_texts (position INTEGER PRIMARY KEY, text TEXT)",
    )
    types: ClassVar[tuple[str, ...]] = ("session.turn_started",)

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        if event.text == "poison":
            raise ValueError("cannot fold this one")
        conn.execute("INSERT INTO turn_texts VALUES (?, ?)", (recorded.position, event.text))


async def write_turns(store: EventStore, stream: str, texts: list[str]) -> list[RecordedEvent]:
    """One append per turn (started + completed); returns every recorded event."""
    recorded: list[RecordedEvent] = []
    for text in texts:
        turn = f"turn-{text}"
        recorded += await store.append(
            stream,
            [
                TurnStarted(turn_id=turn, text=text),
                TurnCompleted(turn_id=turn, reply=f"re: {text}", iterations=1),
            ],
            ANY,
            EventMetadata(correlation_id=turn, actor=stream),
        )
    return recorded


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()
