"""Timers: every durable timer's latest state (one row per owner stream and timer id),
folded from the ``timer.*`` events (``events.domain.timer``), and their reader.

    pending = await TimerReader(views).timers()                 # due soonest first
    everything = await TimerReader(views).timers(state=None)    # fired, skipped, cancelled too

A schedule's timer keeps its id from one occurrence to the next, so its row shows the
occurrence pending now (or the last one); each firing is in the log (``clawlog replay
--type 'timer.*'``).
"""

from __future__ import annotations

import sqlite3
from typing import Any, ClassVar

import msgspec

from clawlog.events import RecordedEvent
from clawlog.events.domain.timer import (
    TimerCancelled,
    TimerFired,
    TimerMoved,
    TimerSet,
    TimerSkipped,
)

from ..readers import Reader, check_page, where

__all__ = ["TimerReader", "TimerRow", "Timers"]

_ENDED = {"timer.fired": "fired", "timer.skipped": "skipped", "timer.cancelled": "cancelled"}


class Timers:
    name: ClassVar[str] = "timers"
    version: ClassVar[int] = 1
    table_names = ("timers",)
    tables = (
        """CREATE TABLE IF NOT EXISTS timers (
        stream TEXT NOT NULL, timer_id TEXT NOT NULL, kind TEXT NOT NULL, subject TEXT NOT NULL,
        due_at REAL NOT NULL, misfire TEXT NOT NULL, grace_s REAL NOT NULL,
        state TEXT NOT NULL, set_position INTEGER NOT NULL, position INTEGER NOT NULL,
        ended_at REAL, late_s REAL, reason TEXT,
        PRIMARY KEY (stream, timer_id))""",
        "CREATE INDEX IF NOT EXISTS timers_due ON timers (state, due_at)",
        "CREATE INDEX IF NOT EXISTS timers_position ON timers (position)",
    )
    types: ClassVar[tuple[str, ...]] = (
        "timer.set",
        "timer.fired",
        "timer.skipped",
        "timer.cancelled",
        "timer.moved",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        key = (recorded.stream, event.timer_id)
        if isinstance(event, TimerSet):
            conn.execute(
                "INSERT OR REPLACE INTO timers VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?,"
                " NULL, NULL, NULL)",
                (
                    *key,
                    event.kind,
                    event.subject,
                    event.due_at,
                    event.misfire,
                    event.grace_s,
                    recorded.position,
                    recorded.position,
                ),
            )
        elif isinstance(event, TimerMoved):
            conn.execute(
                "UPDATE timers SET due_at = ?, position = ? WHERE stream = ? AND timer_id = ?"
                " AND state = 'pending'",
                (event.due_at, recorded.position, *key),
            )
        elif isinstance(event, TimerFired | TimerSkipped | TimerCancelled):
            ended_at = (
                event.fired_at
                if isinstance(event, TimerFired)
                else event.skipped_at
                if isinstance(event, TimerSkipped)
                else recorded.recorded_at
            )
            conn.execute(
                "UPDATE timers SET state = ?, position = ?, ended_at = ?, late_s = ?, reason = ?"
                " WHERE stream = ? AND timer_id = ?",
                (
                    _ENDED[recorded.type],
                    recorded.position,
                    ended_at,
                    getattr(event, "late_s", None),
                    getattr(event, "reason", None),
                    *key,
                ),
            )


class TimerRow(msgspec.Struct, frozen=True):
    """A timer of ``stream`` (its owner), as its last event left it."""

    stream: str
    timer_id: str
    #: approval, delegation_deadline, cron, heartbeat, routine, ...
    kind: str
    #: What it waits on: the call, the delegation, the routine.
    subject: str
    due_at: float
    misfire: str
    grace_s: float
    #: pending, fired, skipped or cancelled.
    state: str
    #: Where it was set, and its last event.
    set_position: int
    position: int
    #: When it fired or was skipped (on the System's clock) or cancelled; how late.
    ended_at: float | None
    late_s: float | None
    #: A cancellation's reason.
    reason: str | None


class TimerReader(Reader):
    projection: ClassVar[str] = "timers"

    async def timers(
        self,
        *,
        state: str | None = "pending",
        stream_prefix: str | None = None,
        kind: str | None = None,
        after: int = 0,
        limit: int = -1,
    ) -> list[TimerRow]:
        """Timers in ``state`` (None: any), pending ones due soonest first, the others in
        log order of their last event; page with ``after`` = the last row's ``position``
        (in log order only: ``state=None`` or an ended state)."""
        check_page(after, limit)
        clauses: list[str] = []
        params: list[Any] = []
        if state is not None:
            clauses.append("state = ?")
            params.append(state)
        if stream_prefix:
            clauses.append("substr(stream, 1, ?) = ?")
            params += [len(stream_prefix), stream_prefix]
        if kind is not None:
            clauses.append("kind = ?")
            params.append(kind)
        if after:
            clauses.append("position > ?")
            params.append(after)
        order = "due_at, stream, timer_id" if state == "pending" else "position"
        rows = await self.models.query(
            f"SELECT * FROM timers{where(clauses)} ORDER BY {order} LIMIT ?", [*params, limit]
        )
        return [TimerRow(*row) for row in rows]
