"""Subagents (seed 001 §6): child agent loops with limits, deny lists and announcements.

The AgentSupervisor keeps the book of its subagent tasks on ``agent/{key}``
(spawned / refused / finished / steered / announced / archived), so the task list
survives restarts: a task found running when the supervisor recovers is recorded as
failed ("interrupted"), never silently dropped. Each task runs in a :class:`Subagent`
actor on ``subagent/{id}``: a Session whose depth makes the policy apply the subagent
and leaf deny lists, and whose iteration limit is the subagent limit.
"""

from __future__ import annotations

import time
import uuid

import msgspec

from clawlog.events import Event
from clawlog.events.domain.agent import (
    SubagentAnnounced,
    SubagentArchived,
    SubagentFinished,
    SubagentMode,
    SubagentOutcome,
    SubagentRefused,
    SubagentSpawned,
    SubagentStatus,
    SubagentSteered,
)

from ..messages import Message, Request
from .session import Session

__all__ = [
    "AnnounceDue",
    "ArchiveDue",
    "CancelSubagents",
    "ListSubagents",
    "SpawnSubagent",
    "SteerSubagent",
    "Subagent",
    "SubagentBook",
    "SubagentDone",
    "SubagentInfo",
    "apply_subagent_event",
]


class SubagentInfo(msgspec.Struct, kw_only=True):
    task_id: str
    parent_session: str
    task: str
    parent_key: str = ""
    label: str = ""
    depth: int = 1
    mode: SubagentMode = "async"
    status: SubagentStatus = "running"
    result: str = ""
    error: str = ""
    created_at: float = 0.0
    finished_at: float | None = None
    archived: bool = False
    announced: bool = False


class SubagentBook(msgspec.Struct, kw_only=True):
    """The supervisor's subagents by task id, in spawn order (folded from ``agent/{key}``)."""

    tasks: dict[str, SubagentInfo] = msgspec.field(default_factory=dict)
    order: list[str] = msgspec.field(default_factory=list)


def apply_subagent_event(book: SubagentBook, event: Event) -> None:
    match event:
        case SubagentSpawned():
            book.tasks[event.task_id] = SubagentInfo(
                task_id=event.task_id,
                parent_session=event.parent_session,
                task=event.task,
                label=event.label,
                depth=event.depth,
                mode=event.mode,
                created_at=event.at,
                parent_key=event.parent_key,
            )
            book.order.append(event.task_id)
        case SubagentFinished() if event.task_id in book.tasks:
            info = book.tasks[event.task_id]
            info.status, info.result, info.error = event.status, event.result, event.error
            info.finished_at = event.at
        case SubagentAnnounced():
            for task_id in event.task_ids:
                if task_id in book.tasks:
                    book.tasks[task_id].announced = True
        case SubagentArchived() if event.task_id in book.tasks:
            book.tasks[event.task_id].archived = True
        case SubagentRefused() | SubagentSteered():
            pass


class SpawnSubagent(Request[SubagentInfo], frozen=True, kw_only=True):
    parent_session: str
    parent_key: str
    depth: int
    task: str
    label: str = ""
    #: async: reply at once, announce later; sync: reply when the task finishes.
    mode: SubagentMode = "async"


class ListSubagents(Request["list[SubagentInfo]"], frozen=True, kw_only=True):
    parent_session: str | None = None
    include_archived: bool = False


class CancelSubagents(Request["list[str]"], frozen=True, kw_only=True):
    parent_session: str
    #: a task id, "all" or "last"
    target: str


class SteerSubagent(Request[SubagentInfo], frozen=True, kw_only=True):
    parent_session: str
    parent_key: str
    task_id: str
    message: str


class SubagentDone(Message, frozen=True, kw_only=True):
    task_id: str
    status: SubagentOutcome
    result: str = ""
    error: str = ""


class AnnounceDue(Message, frozen=True, kw_only=True):
    parent_session: str


class ArchiveDue(Message, frozen=True, kw_only=True):
    task_id: str


class Subagent(Session):
    """A Session spawned by a parent session; its stream is ``subagent/{id}``."""

    kind = "subagent"


def new_task_id() -> str:
    return f"sa-{uuid.uuid4().hex[:12]}"


def now() -> float:
    return time.time()
