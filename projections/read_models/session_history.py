"""Session history: one row per user message, tool request, tool outcome, approval and
reply, per session (what ``clawlog history`` shows)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import msgspec

from clawlog.events import RecordedEvent

from .._sql import insert_rows
from ..readers import Reader, check_page, log_order, where

__all__ = ["HistoryEntry", "HistoryKind", "SessionHistory", "SessionHistoryReader"]

#: The event a history line comes from.
HistoryKind = Literal[
    "user",
    "tool_calls",
    "approval_requested",
    "approval_decided",
    "tool",
    "tool_failed",
    "tool_refused",
    "reply",
    "failed",
    "cancelled",
]

_INSERT = "INSERT INTO session_history"


class SessionHistory:
    name: ClassVar[str] = "session_history"
    #: 2: tool requests (``tool_calls``) and approvals are lines of their own.
    version: ClassVar[int] = 2
    table_names = ("session_history",)
    tables = (
        """CREATE TABLE IF NOT EXISTS session_history (
        position INTEGER PRIMARY KEY, stream TEXT NOT NULL, turn_id TEXT, kind TEXT NOT NULL,
        who TEXT NOT NULL, text TEXT NOT NULL, recorded_at REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS session_history_stream ON session_history (stream)",
        # ``since``: where in the log a moment falls (see readers.log_order).
        "CREATE INDEX IF NOT EXISTS session_history_recorded ON session_history (recorded_at)",
    )
    types: ClassVar[tuple[str, ...]] = (
        "session.turn_started",
        "session.turn_completed",
        "session.turn_failed",
        "session.turn_cancelled",
        "session.model_replied",
        "tool.approval_requested",
        "tool.approval_decided",
        "tool.call_completed",
        "tool.call_failed",
        "tool.call_refused",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        self.handle_batch(conn, [recorded])

    def handle_batch(self, conn: sqlite3.Connection, events: list[RecordedEvent]) -> None:
        """The same rows as ``handle``, written with multi-row INSERTs."""
        rows: list[tuple[Any, ...]] = []
        append = rows.append
        for r in events:
            if r.stream.startswith(_SESSION_STREAMS):
                if r.type == "session.model_replied" and not r.event.tool_calls:  # type: ignore[union-attr]
                    continue  # a plain reply shows as the turn's completion
                kind, who, text = _LINES[r.type](r.event, r.stream)
                append((r.position, r.stream, r.correlation_id, kind, who, text, r.recorded_at))
        insert_rows(conn, _INSERT, rows)


_SESSION_STREAMS = ("session/", "subagent/")
#: (kind, who, text) of a history line, per event tag.
_LINES: dict[str, Callable[[Any, str], tuple[HistoryKind, str, str]]] = {
    "session.turn_started": lambda e, stream: ("user", e.sender, e.text),
    "session.turn_completed": lambda e, stream: ("reply", stream.split("/")[1], e.reply),
    "session.turn_failed": lambda e, stream: ("failed", "clawlog", f"{e.reason}: {e.message}"),
    "session.turn_cancelled": lambda e, stream: ("cancelled", e.by, ""),
    "session.model_replied": lambda e, stream: (
        "tool_calls",
        stream.split("/")[1],
        ", ".join(f"{c.name}({c.arguments[:80]})" for c in e.tool_calls),
    ),
    "tool.approval_requested": lambda e, stream: ("approval_requested", e.tool, e.reason),
    "tool.approval_decided": lambda e, stream: (
        "approval_decided",
        e.tool,
        f"{e.decision} by {e.by or '?'}",
    ),
    "tool.call_completed": lambda e, stream: ("tool", e.tool, e.for_llm[:2000]),
    "tool.call_failed": lambda e, stream: ("tool_failed", e.tool, e.message[:2000]),
    "tool.call_refused": lambda e, stream: ("tool_refused", e.tool, f"{e.step}: {e.reason}"),
}


class HistoryEntry(msgspec.Struct, frozen=True):
    """One line of a session's history. ``who``: the sender, the agent (reply,
    tool_calls) or the tool."""

    position: int
    stream: str
    turn_id: str | None
    kind: HistoryKind
    who: str
    text: str
    recorded_at: float


class SessionHistoryReader(Reader):
    projection: ClassVar[str] = "session_history"

    async def page(
        self,
        stream: str,
        *,
        after: int = 0,
        limit: int = 100,
        kinds: Sequence[HistoryKind] | None = None,
        since: float | None = None,
    ) -> list[HistoryEntry]:
        """Entries of ``stream`` after position ``after`` (pagination), optionally by kind
        and recorded at or after ``since`` (epoch seconds); ``limit=-1`` for all."""
        check_page(after, limit, since)
        clauses, params = log_order("session_history", "recorded_at", after, since)
        clauses.append("stream = ?")
        params.append(stream)
        if kinds:
            clauses.append(f"kind IN ({','.join('?' * len(kinds))})")
            params.extend(kinds)
        rows = await self.models.query(
            f"SELECT * FROM session_history{where(clauses)} ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [HistoryEntry(*row) for row in rows]
