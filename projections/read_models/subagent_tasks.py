"""Subagent tasks: each spawned subagent task's lifecycle, from spawn to archive.

running = await SubagentTaskReader(views).tasks(agent="lead", status="running")
"""

from __future__ import annotations

import sqlite3
from typing import Any, ClassVar

import msgspec

from clawlog.events import RecordedEvent
from clawlog.events.domain.agent import SubagentMode, SubagentStatus

from ..readers import Reader, check_page, where

__all__ = ["SubagentTask", "SubagentTaskReader", "SubagentTasks"]


class SubagentTasks:
    name: ClassVar[str] = "subagent_tasks"
    #: 2: ``position`` (of the spawn): the listing's order and cursor, by index.
    version: ClassVar[int] = 2
    table_names = ("subagent_tasks",)
    tables = (
        """CREATE TABLE IF NOT EXISTS subagent_tasks (
        task_id TEXT PRIMARY KEY, agent TEXT NOT NULL, parent_session TEXT, task TEXT,
        label TEXT, depth INTEGER, mode TEXT, status TEXT NOT NULL, result TEXT, error TEXT,
        created_at REAL, finished_at REAL, archived INTEGER DEFAULT 0,
        position INTEGER NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS subagent_tasks_position ON subagent_tasks (position)",
        "CREATE INDEX IF NOT EXISTS subagent_tasks_agent ON subagent_tasks (agent, position)",
    )
    types: ClassVar[tuple[str, ...]] = (
        "subagent.spawned",
        "subagent.finished",
        "subagent.archived",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        match recorded.type:
            case "subagent.spawned":
                conn.execute(
                    "INSERT OR REPLACE INTO subagent_tasks (task_id, agent, "
                    "parent_session, task, label, depth, mode, status, created_at, position) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
                    (
                        event.task_id,
                        recorded.stream.removeprefix("agent/"),
                        event.parent_session,
                        event.task,
                        event.label,
                        event.depth,
                        event.mode,
                        event.at,
                        recorded.position,
                    ),
                )
            case "subagent.finished":
                conn.execute(
                    "UPDATE subagent_tasks SET status = ?, result = ?, error = ?, "
                    "finished_at = ? WHERE task_id = ?",
                    (event.status, event.result, event.error, event.at, event.task_id),
                )
            case "subagent.archived":
                conn.execute(
                    "UPDATE subagent_tasks SET archived = 1 WHERE task_id = ?", (event.task_id,)
                )


class SubagentTask(msgspec.Struct, frozen=True):
    """One spawned subagent task."""

    task_id: str
    agent: str
    parent_session: str | None
    task: str | None
    label: str | None
    depth: int | None
    mode: SubagentMode | None
    status: SubagentStatus
    result: str | None
    error: str | None
    created_at: float | None
    finished_at: float | None
    archived: bool
    #: Position of the spawn (the listing's order and pagination cursor).
    position: int


class SubagentTaskReader(Reader):
    projection: ClassVar[str] = "subagent_tasks"

    async def tasks(
        self,
        *,
        agent: str | None = None,
        status: SubagentStatus | None = None,
        include_archived: bool = True,
        since: float | None = None,
        after: int = 0,
        limit: int = -1,
    ) -> list[SubagentTask]:
        """Tasks in the order they were spawned (log order; page with ``after`` = the
        last row's ``position``); ``since``: created at or after it (the spawn's own
        time, filtered row by row)."""
        check_page(after, limit, since)
        clauses: list[str] = ["position > ?"]
        params: list[Any] = [after]
        for column, value in (("agent", agent), ("status", status)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if not include_archived:
            clauses.append("archived = 0")
        if since is not None:
            clauses.append("created_at >= ?")
            params.append(since)
        rows = await self.models.query(
            f"SELECT {_COLUMNS} FROM subagent_tasks{where(clauses)} ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [_task(row) for row in rows]


_COLUMNS = ", ".join(SubagentTask.__struct_fields__)


def _task(row: tuple[Any, ...]) -> SubagentTask:
    fields = dict(zip(SubagentTask.__struct_fields__, row, strict=True))
    fields["archived"] = bool(fields["archived"])
    return SubagentTask(**fields)
