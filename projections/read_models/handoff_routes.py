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

from ..readers import Reader, where

__all__ = ["HandoffRoute", "HandoffRouteReader", "HandoffRoutes"]


class HandoffRoutes:
    name: ClassVar[str] = "handoff_routes"
    version: ClassVar[int] = 1
    table_names = ("handoff_routes",)
    tables = (
        """CREATE TABLE IF NOT EXISTS handoff_routes (
        channel TEXT NOT NULL, chat_id TEXT NOT NULL, agent TEXT NOT NULL, from_agent TEXT,
        reason TEXT, position INTEGER, PRIMARY KEY (channel, chat_id))""",
    )
    types: ClassVar[tuple[str, ...]] = ("handoff.routed", "handoff.cleared")

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        if recorded.type == "handoff.routed":
            conn.execute(
                "INSERT OR REPLACE INTO handoff_routes VALUES (?, ?, ?, ?, ?, ?)",
                (
                    event.channel,
                    event.chat_id,
                    event.to_agent,
                    event.from_agent,
                    event.reason,
                    recorded.position,
                ),
            )
        else:
            conn.execute(
                "DELETE FROM handoff_routes WHERE channel = ? AND chat_id = ?",
                (event.channel, event.chat_id),
            )


class HandoffRoute(msgspec.Struct, frozen=True):
    """Messages on (channel, chat_id) go to ``agent``, since ``position``."""

    channel: str
    chat_id: str
    agent: str
    from_agent: str | None
    reason: str | None
    position: int


class HandoffRouteReader(Reader):
    projection: ClassVar[str] = "handoff_routes"

    async def routes(
        self, *, channel: str | None = None, agent: str | None = None
    ) -> list[HandoffRoute]:
        """The routes in force, oldest first."""
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("channel", channel), ("agent", agent)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        rows = await self.models.query(
            f"SELECT * FROM handoff_routes{where(clauses)} ORDER BY position", params
        )
        return [HandoffRoute(*row) for row in rows]

    async def route(self, channel: str, chat_id: str) -> HandoffRoute | None:
        rows = await self.models.query(
            "SELECT * FROM handoff_routes WHERE channel = ? AND chat_id = ?", (channel, chat_id)
        )
        return HandoffRoute(*rows[0]) if rows else None
