"""Subagents (seed 001 §6): child agent loops with limits, deny lists and announcements.

The AgentSupervisor keeps the book of its subagent tasks on ``agent/{key}``
(spawned / refused / finished / steered / announced / archived), so the task list
survives restarts: a task found running when the supervisor recovers is recorded as
failed ("interrupted"), never silently dropped. Each task runs in a :class:`Subagent`
actor on ``subagent/{id}``: a Session whose depth makes the policy apply the subagent
and leaf deny lists, and whose iteration limit is the subagent limit.

Lineage: ``subagent.spawned`` is caused by the tool call that asked (correlated with the
parent's turn); the subagent's turn is caused by its task id; an async task's results
reach the parent as one turn whose id ``subagent.announced`` names. When the supervisor
starts, results the log shows undelivered (the process stopped between the finish and
the parent's turn) are announced, once (:func:`lost_announcements`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Coroutine
from typing import Any

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
from clawlog.events.streams import subagent_stream

from ..delegation.delivery import delivered_turns
from ..messages import Message, Request
from .messages import SendMessage
from .session import Session

__all__ = [
    "AnnounceDue",
    "ArchiveDue",
    "CancelSubagents",
    "ListSubagents",
    "LostAnnouncements",
    "SpawnSubagent",
    "SteerSubagent",
    "Subagent",
    "SubagentBook",
    "SubagentDone",
    "SubagentInfo",
    "announcement",
    "apply_subagent_event",
    "lost_announcements",
    "new_turn_id",
    "outcome_recorded",
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
    #: The tool call in the parent session that asked ("" when none did).
    call_id: str = ""
    #: The parent's turn that delivers the result (named by ``subagent.announced``).
    announce_turn: str = ""
    #: The log position of ``subagent.finished`` (0 while running): what the turn that
    #: announces the result is caused by.
    outcome_position: int = 0


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
                call_id=event.call_id,
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
                    book.tasks[task_id].announce_turn = event.turn_id
        case SubagentArchived() if event.task_id in book.tasks:
            book.tasks[event.task_id].archived = True
        case SubagentRefused() | SubagentSteered():
            pass


def outcome_recorded(book: SubagentBook, event: Event, position: int) -> None:
    """Note where a task's ``subagent.finished`` is in the log (the supervisor's fold
    with positions): its announcement turn is caused by it."""
    if isinstance(event, SubagentFinished) and event.task_id in book.tasks:
        book.tasks[event.task_id].outcome_position = position


class SpawnSubagent(Request[SubagentInfo], frozen=True, kw_only=True):
    parent_session: str
    parent_key: str
    depth: int
    task: str
    label: str = ""
    #: async: reply at once, announce later; sync: reply when the task finishes.
    mode: SubagentMode = "async"
    #: The tool call in the parent session that asks (the spawn's causation).
    call_id: str = ""


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


class LostAnnouncements(msgspec.Struct, frozen=True, kw_only=True):
    """Async results that never reached their parent session (found when a supervisor
    starts): never announced, by parent session; announced as a turn that is not in the
    parent's stream, by that turn id."""

    unannounced: dict[str, list[str]] = msgspec.field(default_factory=dict)
    undelivered: dict[str, list[str]] = msgspec.field(default_factory=dict)


def lost_announcements(store: object, book: SubagentBook) -> Coroutine[Any, Any, LostAnnouncements]:
    """Finished async tasks of ``book`` whose results are not in their parent's stream.

    Call it on the supervisor's thread (it reads ``book`` now) and run the coroutine it
    returns on the hub (it reads the parents' streams). Archived tasks, tasks their parent
    cancelled, and tasks of a nested subagent (whose parent turn a restart ended) are left
    out; a task announced before lineage (no turn named) is taken as delivered."""
    unannounced: dict[str, list[str]] = {}
    promised: dict[str, dict[str, list[str]]] = {}
    for task_id in book.order:
        info = book.tasks[task_id]
        if (
            info.mode != "async"
            or info.status == "running"
            or info.archived
            or not info.parent_key
            or info.parent_session.startswith(subagent_stream(""))
        ):
            continue
        if not info.announced and info.status != "cancelled":
            unannounced.setdefault(info.parent_session, []).append(task_id)
        elif info.announce_turn:
            turns = promised.setdefault(info.parent_session, {})
            turns.setdefault(info.announce_turn, []).append(task_id)
    return _undelivered(store, unannounced, promised)


async def _undelivered(
    store: object, unannounced: dict[str, list[str]], promised: dict[str, dict[str, list[str]]]
) -> LostAnnouncements:
    undelivered: dict[str, list[str]] = {}
    for session, turns in promised.items():
        found = {t for _, t, _ in await delivered_turns(store, session, turn_ids=turns)}
        undelivered |= {turn: ids for turn, ids in turns.items() if turn not in found}
    return LostAnnouncements(unannounced=unannounced, undelivered=undelivered)


def announcement(tasks: list[SubagentInfo], turn_id: str, nested: bool) -> SendMessage:
    """The message that delivers finished tasks' results to their parent session as the
    turn ``turn_id`` (the same turn id when it is sent again after a restart)."""
    lines = [f"[subagent results: {len(tasks)} task(s) finished]"]
    for t in tasks:
        body = t.result if t.status == "completed" else f"{t.status}: {t.error}"
        lines.append(f"- {t.label or t.task_id} ({t.task_id}, {t.status}): {body}")
    return SendMessage(
        session_key=tasks[0].parent_key,
        text="\n".join(lines),
        sender="subagent",
        outbox_kind="" if nested else "subagent",
        turn_id=turn_id,
        correlation_id=_cause(tasks[0]),  # the announcement turn's causation
    )


def _cause(task: SubagentInfo) -> str:
    """What an announcement turn is caused by: the first result's ``subagent.finished``
    (its position), or the task id for a result folded without one (a state from before)."""
    return str(task.outcome_position) if task.outcome_position else task.task_id


def new_turn_id() -> str:
    return uuid.uuid4().hex[:16]


def new_task_id() -> str:
    return f"sa-{uuid.uuid4().hex[:12]}"


def now() -> float:
    return time.time()
