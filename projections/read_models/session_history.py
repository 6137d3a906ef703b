"""Session history: one row per user message, tool request, tool outcome, approval and
reply, per session (what ``clawlog history`` shows).

What was done to the conversation the model is sent shows too: a compaction
(``compacted``: how many turns were summarized and by which model, how many tool results
pruned, the log positions of what it replaced, the estimated prompt before and after), a
summary that could not be written (``compaction_failed``) and a clear (``cleared``). The
log keeps every message either way: these lines say where the model stopped seeing them
whole.

So does what a restart did with a tool call it found in flight (``resume_decided``): run
again with the same idempotency key, or interrupted (the model is told).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import msgspec

from clawlog.events import RecordedEvent
from clawlog.events.domain.session import ImagePart, TextPart

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
    "compacted",
    "compaction_failed",
    "cleared",
    "resume_decided",
]

_INSERT = "INSERT INTO session_history"


class SessionHistory:
    name: ClassVar[str] = "session_history"
    #: 2: tool requests (``tool_calls``) and approvals are lines of their own.
    #: 3: compactions and clears (``compacted``, ``compaction_failed``, ``cleared``).
    #: 4: what a restart did with each call in flight (``resume_decided``).
    #: 5: a user line names the parts its message brought; a compaction line, the log
    #: positions it replaced.
    version: ClassVar[int] = 5
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
        "session.compacted",
        "session.compaction_failed",
        "session.cleared",
        "tool.approval_requested",
        "tool.approval_decided",
        "tool.call_completed",
        "tool.call_failed",
        "tool.call_refused",
        "tool.call_resume_decided",
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
    "session.turn_started": lambda e, stream: ("user", e.sender, user_text(e)),
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
    "session.compacted": lambda e, stream: ("compacted", "clawlog", compacted_text(e)),
    "session.compaction_failed": lambda e, stream: (
        "compaction_failed",
        "clawlog",
        compaction_failed_text(e),
    ),
    "session.cleared": lambda e, stream: ("cleared", e.by, cleared_text(e)),
    "tool.call_resume_decided": lambda e, stream: ("resume_decided", e.tool, resumed_text(e)),
}

#: How a compaction came about, as a history line says it.
_TRIGGERS = {"threshold": "the context was near its window", "manual": "asked for"}


#: Positions of pruned results a history line lists before it says how many more.
_PRUNED_SHOWN = 8


def user_text(event: Any) -> str:
    """The user's message: its text, then each part it brought (``[image: image/png]``,
    ``[document: report.pdf]``, a text part's text)."""
    shown = [event.text]
    for part in event.parts:
        if isinstance(part, TextPart):
            shown.append(part.text)
        else:
            kind = "image" if isinstance(part, ImagePart) else "document"
            name = getattr(part, "filename", "") or part.url or part.media_type
            shown.append(f"[{kind}: {name[:200]}]")
    return " ".join(shown)


def compacted_text(event: Any) -> str:
    """``context compacted: 3 turns summarized by m (900 tokens, $0.0010; positions
    12-340), 2 tool results pruned (positions 40, 52); ~9,000 -> ~4,000 tokens of 16,000
    (the context was near its window)``."""
    done: list[str] = []
    if event.summarized_turns:
        turns = len(event.summarized_turns)
        by = f" by {event.model}" if event.model else ""
        cost = f", ${event.cost_usd:.4f}" if event.cost_usd is not None else ""
        used = event.usage.input_tokens + event.usage.output_tokens
        first, last = event.replaced_from_position, event.replaced_to_position
        where = f"; positions {first}-{last}" if first else ""
        done.append(f"{_count(turns, 'turn')} summarized{by} ({used:,} tokens{cost}{where})")
    if event.pruned:
        done.append(f"{_count(len(event.pruned), 'tool result')} pruned{_pruned_at(event)}")
    window = f" of {event.context_window:,}" if event.context_window else ""
    why = _TRIGGERS.get(event.trigger, event.trigger)
    return (
        f"context compacted: {', '.join(done) or 'nothing changed'}; "
        f"~{event.tokens_before:,} -> ~{event.tokens_after:,} tokens{window} ({why})"
    )


def _pruned_at(event: Any) -> str:
    """`` (positions 40, 52)``: where the pruned results are in the log (those known)."""
    known = [str(entry.position) for entry in event.pruned if entry.position]
    if not known:
        return ""
    more = len(known) - _PRUNED_SHOWN
    shown = ", ".join(known[:_PRUNED_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return f" (position{'s' if len(known) > 1 else ''} {shown})"


def compaction_failed_text(event: Any) -> str:
    """``summary not written by m (server_error: ...); 2 tool results pruned``."""
    by = f" by {event.model}" if event.model else ""
    pruned = f"; {_count(event.pruned, 'tool result')} pruned" if event.pruned else ""
    return f"summary not written{by} ({event.kind}: {event.message[:500]}){pruned}"


def cleared_text(event: Any) -> str:
    return (
        f"context cleared: {_count(event.messages, 'earlier message')} no longer sent to "
        "the model (the log keeps them)"
    )


def resumed_text(event: Any) -> str:
    """``after a restart: run again with the same key (idempotent side effects, re-run
    1)``, or ``after a restart: interrupted (external side effects): why``."""
    effects = f"{event.side_effects} side effects"
    if event.decision == "rerun":
        return f"after a restart: run again with the same key ({effects}, re-run {event.attempt})"
    return f"after a restart: interrupted ({effects}): {event.reason[:500]}"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


class HistoryEntry(msgspec.Struct, frozen=True):
    """One line of a session's history. ``who``: the sender, the agent (reply,
    tool_calls), the tool (tool lines, resume_decided), ``clawlog`` (compacted,
    compaction_failed) or who cleared."""

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
