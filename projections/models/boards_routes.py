"""Team task boards and handoff routes, with their readers.

boards = TaskBoardReader(views)
board = await boards.board("release")          # name, lead, tasks in creation order
pending = await boards.tasks("release", status="pending")
routes = await HandoffRouteReader(views).routes(channel="cli")
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, ClassVar

import msgspec

from events import RecordedEvent

from ..readers import Reader, where

__all__ = [
    "BoardTask",
    "HandoffRoute",
    "HandoffRouteReader",
    "HandoffRoutes",
    "TaskBoard",
    "TaskBoardReader",
    "TaskBoards",
]


class TaskBoards:
    name: ClassVar[str] = "task_boards"
    #: 2: the ``teams`` table (name, lead, members).
    version: ClassVar[int] = 2
    table_names = ("task_boards", "teams")
    tables = (
        """CREATE TABLE IF NOT EXISTS task_boards (
        team TEXT NOT NULL, task_id TEXT NOT NULL, subject TEXT NOT NULL, priority INTEGER,
        status TEXT NOT NULL, claimed_by TEXT, blocked_by TEXT, result TEXT, position INTEGER,
        PRIMARY KEY (team, task_id))""",
        """CREATE TABLE IF NOT EXISTS teams (
        team TEXT PRIMARY KEY, name TEXT NOT NULL, lead TEXT NOT NULL, members TEXT NOT NULL,
        position INTEGER NOT NULL)""",
    )
    types: ClassVar[tuple[str, ...]] = (
        "team.created",
        "team.task_created",
        "team.task_updated",
        "team.task_claimed",
        "team.task_completed",
        "team.task_unblocked",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        team = recorded.stream.removeprefix("team/")
        key = (team, getattr(event, "task_id", ""))
        match recorded.type:
            case "team.created":
                conn.execute(
                    "INSERT OR REPLACE INTO teams VALUES (?, ?, ?, ?, ?)",
                    (
                        team,
                        event.name,
                        event.lead,
                        json.dumps([m.agent for m in event.members]),
                        recorded.position,
                    ),
                )
            case "team.task_created":
                conn.execute(
                    "INSERT INTO task_boards VALUES (?, ?, ?, ?, ?, '', ?, '', ?)",
                    (
                        *key,
                        event.subject,
                        event.priority,
                        "blocked" if event.blocked_by else "pending",
                        json.dumps(event.blocked_by),
                        recorded.position,
                    ),
                )
                if event.blocked_by:  # blockers may all be done already
                    self._unblock_if_free(conn, team, event.task_id, event.blocked_by)
            case "team.task_updated":
                if event.priority is not None:
                    conn.execute(
                        "UPDATE task_boards SET priority = ? WHERE team = ? AND task_id = ?",
                        (event.priority, *key),
                    )
                if event.blocked_by is not None:
                    conn.execute(
                        "UPDATE task_boards SET blocked_by = ?, status = 'blocked' "
                        "WHERE team = ? AND task_id = ?",
                        (json.dumps(event.blocked_by), *key),
                    )
                    self._unblock_if_free(conn, team, event.task_id, event.blocked_by)
            case "team.task_claimed":
                conn.execute(
                    "UPDATE task_boards SET status = 'claimed', claimed_by = ? "
                    "WHERE team = ? AND task_id = ?",
                    (event.by, *key),
                )
            case "team.task_completed":
                conn.execute(
                    "UPDATE task_boards SET status = 'completed', result = ? "
                    "WHERE team = ? AND task_id = ?",
                    (event.result, *key),
                )
            case "team.task_unblocked":
                conn.execute(
                    "UPDATE task_boards SET status = 'pending' WHERE team = ? AND "
                    "task_id = ? AND status = 'blocked'",
                    key,
                )

    @staticmethod
    def _unblock_if_free(
        conn: sqlite3.Connection, team: str, task_id: str, blockers: list[str]
    ) -> None:
        marks = ",".join("?" * len(blockers))
        open_count = conn.execute(
            f"SELECT count(*) FROM task_boards WHERE team = ? AND task_id IN ({marks}) AND "
            "status != 'completed'",
            (team, *blockers),
        ).fetchone()[0]
        if not open_count:
            conn.execute(
                "UPDATE task_boards SET status = 'pending' WHERE team = ? AND task_id = ?",
                (team, task_id),
            )


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


class BoardTask(msgspec.Struct, frozen=True):
    """One task. ``status``: pending | blocked | claimed | completed."""

    team: str
    task_id: str
    subject: str
    priority: int | None
    status: str
    claimed_by: str
    blocked_by: list[str]
    result: str
    #: Position of the task's creation (the board's order and the pagination cursor).
    position: int


class TaskBoard(msgspec.Struct, frozen=True):
    """A team's board: its name and lead, and every task in creation order."""

    team: str
    name: str
    lead: str
    members: list[str]
    tasks: list[BoardTask]


_TASK_COLUMNS = ", ".join(BoardTask.__struct_fields__)


class TaskBoardReader(Reader):
    projection: ClassVar[str] = "task_boards"

    async def teams(self) -> list[tuple[str, str, str]]:
        """``(team id, name, lead)`` of every team, in the order they were created."""
        rows = await self.models.query("SELECT team, name, lead FROM teams ORDER BY position")
        return [(row[0], row[1], row[2]) for row in rows]

    async def board(self, team: str) -> TaskBoard | None:
        """The whole board of ``team``, or None if the log has no such team."""
        found = await self.models.query(
            "SELECT name, lead, members FROM teams WHERE team = ?", (team,)
        )
        tasks = await self.tasks(team, limit=-1)
        if not found and not tasks:
            return None
        name, lead, members = found[0] if found else ("", "", "[]")
        return TaskBoard(team, name, lead, json.loads(members), tasks)

    async def tasks(
        self,
        team: str,
        *,
        status: str | None = None,
        claimed_by: str | None = None,
        after: int = 0,
        limit: int = 100,
    ) -> list[BoardTask]:
        """Tasks of ``team`` in creation order; ``limit=-1`` for all."""
        clauses = ["team = ?", "position > ?"]
        params: list[Any] = [team, after]
        for column, value in (("status", status), ("claimed_by", claimed_by)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        rows = await self.models.query(
            f"SELECT {_TASK_COLUMNS} FROM task_boards{where(clauses)} ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [_task(row) for row in rows]


def _task(row: tuple[Any, ...]) -> BoardTask:
    values = list(row)
    values[5] = values[5] or ""
    values[6] = json.loads(values[6]) if values[6] else []
    values[7] = values[7] or ""
    return BoardTask(*values)


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
