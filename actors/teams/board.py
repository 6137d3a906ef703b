"""A team's task board and mailbox as a fold of its events, with a full-text index.

The fold only applies what was decided: claims are decided one at a time by the Team
actor (``team.py``, ``Team._claim``), which is what makes a claim atomic.
"""

from __future__ import annotations

import sqlite3

import msgspec

from clawlog.events import Event
from clawlog.events.domain.team import (
    TaskStatus,
    TeamCreated,
    TeamMember,
    TeamMessageSent,
    TeamMessagesRead,
    TeamTaskClaimed,
    TeamTaskCompleted,
    TeamTaskCreated,
    TeamTaskUnblocked,
    TeamTaskUpdated,
)

__all__ = [
    "BoardState",
    "MailItem",
    "TaskItem",
    "TaskSearch",
    "apply_board_event",
    "find_cycle",
]


class TaskItem(msgspec.Struct, kw_only=True):
    task_id: str
    subject: str
    description: str = ""
    priority: int = 0
    blocked_by: list[str] = msgspec.field(default_factory=list)
    created_by: str = ""
    assignee: str = ""
    origin_session: str = ""
    status: TaskStatus = "pending"
    claimed_by: str = ""
    result: str = ""
    created_at: float = 0.0
    completed_at: float | None = None
    seq: int = 0


class MailItem(msgspec.Struct, kw_only=True):
    message_id: str
    sender: str
    to: str
    text: str
    at: float = 0.0
    read_by: list[str] = msgspec.field(default_factory=list)


class BoardState(msgspec.Struct, kw_only=True):
    team_id: str = ""
    name: str = ""
    lead: str = ""
    members: list[TeamMember] = msgspec.field(default_factory=list)
    tasks: dict[str, TaskItem] = msgspec.field(default_factory=dict)
    mail: list[MailItem] = msgspec.field(default_factory=list)

    def member_keys(self) -> list[str]:
        return [self.lead, *(m.agent for m in self.members if m.agent != self.lead)]

    def is_member(self, agent: str) -> bool:
        return agent in self.member_keys()

    def open_blockers(self, task: TaskItem) -> list[str]:
        return [b for b in task.blocked_by if self.tasks[b].status != "completed"]


def apply_board_event(state: BoardState, event: Event) -> BoardState:
    match event:
        case TeamCreated():
            state.team_id, state.name, state.lead = event.team_id, event.name, event.lead
            state.members = list(event.members)
        case TeamTaskCreated():
            task = TaskItem(
                task_id=event.task_id,
                subject=event.subject,
                description=event.description,
                priority=event.priority,
                blocked_by=list(event.blocked_by),
                created_by=event.created_by,
                assignee=event.assignee,
                origin_session=event.origin_session,
                created_at=event.at,
                seq=len(state.tasks),
            )
            state.tasks[task.task_id] = task
            task.status = "blocked" if state.open_blockers(task) else "pending"
        case TeamTaskUpdated():
            task = state.tasks[event.task_id]
            if event.priority is not None:
                task.priority = event.priority
            if event.description is not None:
                task.description = event.description
            if event.blocked_by is not None:
                task.blocked_by = list(event.blocked_by)
                task.status = "blocked" if state.open_blockers(task) else "pending"
        case TeamTaskClaimed(task_id=task_id, by=by):
            state.tasks[task_id].status, state.tasks[task_id].claimed_by = "claimed", by
        case TeamTaskCompleted(task_id=task_id):
            task = state.tasks[task_id]
            task.status, task.result, task.completed_at = "completed", event.result, event.at
        case TeamTaskUnblocked(task_id=task_id):
            if state.tasks[task_id].status == "blocked":
                state.tasks[task_id].status = "pending"
        case TeamMessageSent():
            state.mail.append(
                MailItem(
                    message_id=event.message_id,
                    sender=event.sender,
                    to=event.to,
                    text=event.text,
                    at=event.at,
                )
            )
        case TeamMessagesRead(agent=agent, message_ids=ids):
            wanted = set(ids)
            for item in state.mail:
                if item.message_id in wanted and agent not in item.read_by:
                    item.read_by.append(agent)
    return state


def find_cycle(tasks: dict[str, TaskItem], new_id: str, blocked_by: list[str]) -> list[str] | None:
    """A dependency cycle the new task would close, as a path of task ids, or None."""
    graph = {tid: list(t.blocked_by) for tid, t in tasks.items()}
    graph[new_id] = list(blocked_by)
    path: list[str] = []
    seen: set[str] = set()

    def visit(node: str) -> bool:
        if node in path:
            path.append(node)
            return True
        if node in seen:
            return False
        seen.add(node)
        path.append(node)
        if any(visit(dep) for dep in graph.get(node, ())):
            return True
        path.pop()
        return False

    return path if visit(new_id) else None


class TaskSearch:
    """FTS5 over task subjects and descriptions, ranked by bm25 (one in-memory db per team)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE tasks USING fts5(task_id UNINDEXED, subject, description)"
        )

    def add(self, task: TaskItem) -> None:
        self._db.execute(
            "INSERT INTO tasks VALUES (?, ?, ?)", (task.task_id, task.subject, task.description)
        )

    def search(self, query: str, limit: int = 20) -> list[str]:
        terms = [t for t in "".join(c if c.isalnum() else " " for c in query).split() if t]
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = self._db.execute(
            "SELECT task_id FROM tasks WHERE tasks MATCH ? "
            "ORDER BY bm25(tasks, 0, 2.0, 1.0) LIMIT ?",
            (match, limit),
        )
        return [row[0] for row in rows]

    def close(self) -> None:
        self._db.close()
