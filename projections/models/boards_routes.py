"""Team task boards and handoff routes."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, ClassVar

from events import RecordedEvent

__all__ = ["HandoffRoutes", "TaskBoards"]


class TaskBoards:
    name: ClassVar[str] = "task_boards"
    version: ClassVar[int] = 1
    table_names = ("task_boards",)
    tables = (
        """CREATE TABLE IF NOT EXISTS task_boards (
        team TEXT NOT NULL, task_id TEXT NOT NULL, subject TEXT NOT NULL, priority INTEGER,
        status TEXT NOT NULL, claimed_by TEXT, blocked_by TEXT, result TEXT, position INTEGER,
        PRIMARY KEY (team, task_id))""",
    )
    types: ClassVar[tuple[str, ...]] = (
        "team.task_created",
        "team.task_updated",
        "team.task_claimed",
        "team.task_completed",
        "team.task_unblocked",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        team = recorded.stream.removeprefix("team/")
        key = (team, event.task_id)
        match recorded.type:
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
