"""Session history: one row per user message, tool step and reply, per session."""

from __future__ import annotations

import sqlite3
from typing import Any, ClassVar

from events import RecordedEvent

__all__ = ["SessionHistory", "SessionHistoryReader"]

_INSERT = "INSERT INTO session_history VALUES (?, ?, ?, ?, ?, ?, ?)"


class SessionHistory:
    name: ClassVar[str] = "session_history"
    version: ClassVar[int] = 1
    table_names = ("session_history",)
    tables = (
        """CREATE TABLE IF NOT EXISTS session_history (
        position INTEGER PRIMARY KEY, stream TEXT NOT NULL, turn_id TEXT, kind TEXT NOT NULL,
        who TEXT NOT NULL, text TEXT NOT NULL, recorded_at REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS session_history_stream ON session_history (stream)",
    )
    types: ClassVar[tuple[str, ...]] = (
        "session.turn_started",
        "session.turn_completed",
        "session.turn_failed",
        "session.turn_cancelled",
        "tool.call_completed",
        "tool.call_failed",
        "tool.call_refused",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        row = self._row(recorded)
        if row is not None:
            conn.execute(_INSERT, row)

    def handle_batch(self, conn: sqlite3.Connection, events: list[RecordedEvent]) -> None:
        """The same rows as ``handle``, written with one executemany."""
        conn.executemany(_INSERT, [r for r in map(self._row, events) if r is not None])

    @staticmethod
    def _row(recorded: RecordedEvent) -> tuple[Any, ...] | None:
        if not recorded.stream.startswith(("session/", "subagent/")):
            return None
        event: Any = recorded.event
        match recorded.type:
            case "session.turn_started":
                row = ("user", event.sender, event.text)
            case "session.turn_completed":
                row = ("reply", recorded.stream.split("/")[1], event.reply)
            case "session.turn_failed":
                row = ("failed", "clawlog", f"{event.reason}: {event.message}")
            case "session.turn_cancelled":
                row = ("cancelled", event.by, "")
            case "tool.call_completed":
                row = ("tool", event.tool, event.for_llm[:2000])
            case "tool.call_failed":
                row = ("tool_failed", event.tool, event.message[:2000])
            case _:
                row = ("tool_refused", event.tool, f"{event.step}: {event.reason}")
        return (
            recorded.position,
            recorded.stream,
            recorded.correlation_id,
            *row,
            recorded.recorded_at,
        )


class SessionHistoryReader:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def page(
        self, stream: str, *, after: int = 0, limit: int = 100, kinds: tuple[str, ...] | None = None
    ) -> list[tuple[Any, ...]]:
        """Rows of ``stream`` after position ``after`` (pagination), optionally by kind."""
        sql = (
            "SELECT position, turn_id, kind, who, text FROM session_history "
            "WHERE stream = ? AND position > ?"
        )
        params: list[Any] = [stream, after]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        sql += " ORDER BY position LIMIT ?"
        params.append(limit)
        return list(self._conn.execute(sql, params))
