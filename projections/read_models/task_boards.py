"""Team task boards: the ``task_boards`` and ``teams`` tables, folded from team events, and
their reader.

boards = TaskBoardReader(views)
board = await boards.board("release")          # name, lead, tasks in creation order
pending = await boards.tasks("release", status="pending")
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, ClassVar

import msgspec

from clawlog.events import RecordedEvent
from clawlog.events.domain.team import TaskStatus

from .._sql import select_in
from ..readers import Reader, check_page, where

__all__ = ["BoardTask", "TaskBoard", "TaskBoardReader", "TaskBoards"]


class TaskBoards:
    name: ClassVar[str] = "task_boards"
    #: 2: the ``teams`` table (name, lead, members). 3: a task's ``created_at``, and
    #: boards listed in creation order by index.
    version: ClassVar[int] = 3
    table_names = ("task_boards", "teams")
    tables = (
        """CREATE TABLE IF NOT EXISTS task_boards (
        team TEXT NOT NULL, task_id TEXT NOT NULL, subject TEXT NOT NULL, priority INTEGER,
        status TEXT NOT NULL, claimed_by TEXT, blocked_by TEXT, result TEXT, position INTEGER,
        created_at REAL NOT NULL, PRIMARY KEY (team, task_id))""",
        "CREATE INDEX IF NOT EXISTS task_boards_order ON task_boards (team, position)",
        """CREATE TABLE IF NOT EXISTS teams (
        team TEXT PRIMARY KEY, name TEXT NOT NULL, lead TEXT NOT NULL, members TEXT NOT NULL,
        position INTEGER NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS teams_position ON teams (position)",
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
        self.handle_batch(conn, [recorded])

    def handle_batch(self, conn: sqlite3.Connection, events: list[RecordedEvent]) -> None:
        """Every task the batch names (or waits on) is read once, folded in memory and
        written once, with what the statements per event would have left."""
        board = _Board(conn, events)
        for recorded in events:
            board.apply(recorded)
        board.write(conn)


_TEAM = "INSERT OR REPLACE INTO teams VALUES (?, ?, ?, ?, ?)"
_SELECT_TASKS = "SELECT * FROM task_boards WHERE team = ? AND task_id IN"
_INSERT_TASK = "INSERT INTO task_boards VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_UPDATE_TASK = (
    "UPDATE task_boards SET subject = ?, priority = ?, status = ?, claimed_by = ?, "
    "blocked_by = ?, result = ? WHERE team = ? AND task_id = ?"
)
#: What SQLite says when a task is created twice (the INSERT per event said it).
_DUPLICATE = "UNIQUE constraint failed: task_boards.team, task_boards.task_id"
_PRIORITY, _STATUS, _CLAIMED_BY, _BLOCKED_BY, _RESULT = 3, 4, 5, 6, 7
_TaskKey = tuple[str, str]


class _Board:
    """The task rows of one batch: those stored that it names, then its own."""

    def __init__(self, conn: sqlite3.Connection, events: list[RecordedEvent]) -> None:
        named: dict[str, set[str]] = {}
        for recorded in events:
            event: Any = recorded.event
            if recorded.type != "team.created":
                ids = named.setdefault(recorded.stream.removeprefix("team/"), set())
                ids.add(event.task_id)
                ids.update(getattr(event, "blocked_by", None) or ())
        self.tasks: dict[_TaskKey, list[Any]] = {
            (row[0], row[1]): list(row)
            for team, ids in named.items()
            for row in select_in(conn, _SELECT_TASKS, list(ids), (team,))
        }
        self.created: dict[_TaskKey, None] = {}  # in creation order
        self.changed: dict[_TaskKey, None] = {}
        self.teams: dict[str, tuple[Any, ...]] = {}

    def apply(self, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        team = recorded.stream.removeprefix("team/")
        if recorded.type == "team.created":
            members = json.dumps([m.agent for m in event.members])
            self.teams.pop(team, None)  # replaced: it moves to the end
            self.teams[team] = (team, event.name, event.lead, members, recorded.position)
            return
        key = (team, event.task_id)
        if recorded.type == "team.task_created":
            if key in self.tasks:
                raise sqlite3.IntegrityError(_DUPLICATE)
            status = "blocked" if event.blocked_by else "pending"
            blocked_by = json.dumps(event.blocked_by)
            task = [
                *key,
                event.subject,
                event.priority,
                status,
                "",
                blocked_by,
                "",
                recorded.position,
                recorded.recorded_at,
            ]
            self.tasks[key] = task
            self.created[key] = None
            if event.blocked_by:  # blockers may all be done already
                self._unblock_if_free(task, team, event.blocked_by)
        elif (stored := self.tasks.get(key)) is not None:  # else the UPDATE changed nothing
            self.changed[key] = None
            self._change(stored, team, recorded.type, event)

    def _change(self, row: list[Any], team: str, tag: str, event: Any) -> None:
        match tag:
            case "team.task_updated":
                if event.priority is not None:
                    row[_PRIORITY] = event.priority
                if event.blocked_by is not None:
                    row[_BLOCKED_BY], row[_STATUS] = json.dumps(event.blocked_by), "blocked"
                    self._unblock_if_free(row, team, event.blocked_by)
            case "team.task_claimed":
                row[_STATUS], row[_CLAIMED_BY] = "claimed", event.by
            case "team.task_completed":
                row[_STATUS], row[_RESULT] = "completed", event.result
            case "team.task_unblocked":
                if row[_STATUS] == "blocked":
                    row[_STATUS] = "pending"

    def _unblock_if_free(self, row: list[Any], team: str, blockers: list[str]) -> None:
        for blocker in blockers:
            found = self.tasks.get((team, blocker))
            if found is not None and found[_STATUS] != "completed":
                return
        row[_STATUS] = "pending"

    def write(self, conn: sqlite3.Connection) -> None:
        conn.executemany(_TEAM, self.teams.values())
        conn.executemany(_INSERT_TASK, [self.tasks[key] for key in self.created])
        conn.executemany(
            _UPDATE_TASK,
            [(*self.tasks[key][2:8], *key) for key in self.changed if key not in self.created],
        )


class BoardTask(msgspec.Struct, frozen=True):
    """One task on a board."""

    team: str
    task_id: str
    subject: str
    priority: int | None
    status: TaskStatus
    claimed_by: str
    blocked_by: list[str]
    result: str
    #: Position of the task's creation (the board's order and the pagination cursor).
    position: int
    #: When the task was created (epoch seconds, as the log recorded it).
    created_at: float


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
        rows = await self.models.query(
            "SELECT team, name, lead FROM teams WHERE position > 0 ORDER BY position"
        )
        return [(row[0], row[1], row[2]) for row in rows]

    async def board(
        self, team: str, *, since: float | None = None, after: int = 0, limit: int = -1
    ) -> TaskBoard | None:
        """The board of ``team`` with its tasks in creation order: all of them, or the
        page ``since``/``after``/``limit`` picks as :meth:`tasks` does. None if the log
        has no such team."""
        found = await self.models.query(
            "SELECT name, lead, members FROM teams WHERE team = ?", (team,)
        )
        tasks = await self.tasks(team, since=since, after=after, limit=limit)
        if not found and not tasks and not await self.tasks(team, limit=1):
            return None
        name, lead, members = found[0] if found else ("", "", "[]")
        return TaskBoard(team, name, lead, json.loads(members), tasks)

    async def tasks(
        self,
        team: str,
        *,
        status: TaskStatus | None = None,
        claimed_by: str | None = None,
        since: float | None = None,
        after: int = 0,
        limit: int = 100,
    ) -> list[BoardTask]:
        """Tasks of ``team`` in creation order; ``limit=-1`` for all; page with
        ``after`` = the last task's ``position``; ``since``: created at or after it."""
        check_page(after, limit, since)
        clauses = ["team = ?", "position > ?"]
        params: list[Any] = [team, after]
        for column, value in (("status", status), ("claimed_by", claimed_by)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            clauses.append("created_at >= ?")
            params.append(since)
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
