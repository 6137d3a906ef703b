"""Team task boards and mailboxes (seed 001 §8), on ``team/{id}``."""

from __future__ import annotations

from typing import Literal

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "TaskStatus",
    "TeamCreated",
    "TeamMember",
    "TeamMessageSent",
    "TeamMessagesRead",
    "TeamRequestRefused",
    "TeamTaskClaimed",
    "TeamTaskCompleted",
    "TeamTaskCreated",
    "TeamTaskUnblocked",
    "TeamTaskUpdated",
    "TeammateActivated",
]

#: A board task. blocked: waits for an open task it is blocked by; pending: may be
#: claimed. (Folded from the events, not written in one.)
TaskStatus = Literal["blocked", "pending", "claimed", "completed"]


class TeamMember(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    role: str = ""


class TeamCreated(Event, frozen=True, tag="team.created"):
    team_id: str
    name: str
    lead: str
    members: list[TeamMember]


class TeamTaskCreated(Event, frozen=True, tag="team.task_created"):
    task_id: str
    subject: str
    description: str = ""
    priority: int = 0
    blocked_by: list[str] = msgspec.field(default_factory=list)
    created_by: str = ""
    #: Who should do it ("" = any teammate).
    assignee: str = ""
    #: The session of the creator, where teammates' results are reported.
    origin_session: str = ""
    at: float = 0.0


class TeamTaskUpdated(Event, frozen=True, tag="team.task_updated"):
    """A task not yet claimed got a new priority, description or blockers."""

    task_id: str
    by: str
    priority: int | None = None
    description: str | None = None
    blocked_by: list[str] | None = None


class TeamTaskClaimed(Event, frozen=True, tag="team.task_claimed"):
    task_id: str
    by: str
    at: float = 0.0


class TeamTaskCompleted(Event, frozen=True, tag="team.task_completed"):
    task_id: str
    by: str
    result: str = ""
    at: float = 0.0


class TeamTaskUnblocked(Event, frozen=True, tag="team.task_unblocked"):
    """Every blocker of ``task_id`` is done: it can be claimed now."""

    task_id: str


class TeamMessageSent(Event, frozen=True, tag="team.message_sent"):
    message_id: str
    sender: str
    #: A member's agent key, or "*" for a broadcast.
    to: str
    text: str
    at: float = 0.0


class TeamMessagesRead(Event, frozen=True, tag="team.messages_read"):
    agent: str
    message_ids: list[str]


class TeammateActivated(Event, frozen=True, tag="team.teammate_activated"):
    agent: str
    reason: str
    task_id: str = ""


class TeamRequestRefused(Event, frozen=True, tag="team.request_refused"):
    """A bad request from a member, with the reason it was given."""

    by: str
    action: str
    reason: str


EVENTS = (
    TeamCreated,
    TeamTaskCreated,
    TeamTaskUpdated,
    TeamTaskClaimed,
    TeamTaskCompleted,
    TeamTaskUnblocked,
    TeamMessageSent,
    TeamMessagesRead,
    TeammateActivated,
    TeamRequestRefused,
)
