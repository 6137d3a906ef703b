"""Handoff routes: which agent answers each (channel, chat_id), folded from handoff events,
and their reader.

routes = await HandoffRouteReader(views).routes(channel="cli")
route = await HandoffRouteReader(views).route("cli", "chat-1")
"""

from __future__ import annotations

import sqlite3
from typing import Any, ClassVar

import msgspec

from clawlog.events import RecordedEvent

from ..readers import Reader, check_page, log_order, where

__all__ = ["HandoffRoute", "HandoffRouteReader", "HandoffRoutes"]


class HandoffRoutes:
    name: ClassVar[str] = "handoff_routes"
    #: 2: ``recorded_at``, and the listing in log order by index.
    version: ClassVar[int] = 2
    table_names = ("handoff_routes",)
    tables = (
        """CREATE TABLE IF NOT EXISTS handoff_routes (
        channel TEXT NOT NULL, chat_id TEXT NOT NULL, agent TEXT NOT NULL, from_agent TEXT,
        reason TEXT, position INTEGER NOT NULL, recorded_at REAL NOT NULL,
        PRIMARY KEY (channel, chat_id))""",
        "CREATE INDEX IF NOT EXISTS handoff_routes_position ON handoff_routes (position)",
        "CREATE INDEX IF NOT EXISTS handoff_routes_channel ON handoff_routes (channel, position)",
        "CREATE INDEX IF NOT EXISTS handoff_routes_agent ON handoff_routes (agent, position)",
        "CREATE INDEX IF NOT EXISTS handoff_routes_recorded ON handoff_routes (recorded_at)",
    )
    types: ClassVar[tuple[str, ...]] = ("handoff.routed", "handoff.cleared")

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        if recorded.type == "handoff.routed":
            conn.execute(
                "INSERT OR REPLACE INTO handoff_routes VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    event.channel,
                    event.chat_id,
                    event.to_agent,
                    event.from_agent,
                    event.reason,
                    recorded.position,
                    recorded.recorded_at,
                ),
            )
        else:
            conn.execute(
                "DELETE FROM handoff_routes WHERE channel = ? AND chat_id = ?",
                (event.channel, event.chat_id),
            )


class HandoffRoute(msgspec.Struct, frozen=True):
    """Messages on (channel, chat_id) go to ``agent``, since ``position`` (recorded at
    ``recorded_at``)."""

    channel: str
    chat_id: str
    agent: str
    from_agent: str | None
    reason: str | None
    position: int
    recorded_at: float


class HandoffRouteReader(Reader):
    projection: ClassVar[str] = "handoff_routes"

    async def routes(
        self,
        *,
        channel: str | None = None,
        agent: str | None = None,
        since: float | None = None,
        after: int = 0,
        limit: int = -1,
    ) -> list[HandoffRoute]:
        """The routes in force, oldest first (by the position that set them); page with
        ``after`` = the last row's ``position``; ``since``: set at or after it."""
        check_page(after, limit, since)
        clauses, params = log_order("handoff_routes", "recorded_at", after, since)
        for column, value in (("channel", channel), ("agent", agent)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        rows = await self.models.query(
            f"SELECT * FROM handoff_routes{where(clauses)} ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [HandoffRoute(*row) for row in rows]

    async def route(self, channel: str, chat_id: str) -> HandoffRoute | None:
        rows = await self.models.query(
            "SELECT * FROM handoff_routes WHERE channel = ? AND chat_id = ?", (channel, chat_id)
        )
        return HandoffRoute(*rows[0]) if rows else None
