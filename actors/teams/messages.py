"""Requests to a Team actor. ``by`` is the agent key of the member asking."""

from __future__ import annotations

from typing import Literal

import msgspec

from ..messages import Request
from .board import MailItem, TaskItem

__all__ = [
    "Broadcast",
    "ClaimTask",
    "CompleteTask",
    "CreateTask",
    "GetBoard",
    "ListTasks",
    "ReadMessages",
    "SearchTasks",
    "SendTeamMessage",
    "TaskFilter",
    "TaskOrder",
    "TeamView",
    "UpdateTask",
]

#: Which tasks a list shows: not completed, completed, or all.
TaskFilter = Literal["active", "completed", "all"]
#: Highest priority first (then oldest), or newest first.
TaskOrder = Literal["priority", "newest"]


class CreateTask(Request[TaskItem], frozen=True, kw_only=True):
    by: str
    subject: str
    description: str = ""
    priority: int = 0
    blocked_by: list[str] = msgspec.field(default_factory=list)
    assignee: str = ""
    origin_session: str = ""


class UpdateTask(Request[TaskItem], frozen=True, kw_only=True):
    by: str
    task_id: str
    priority: int | None = None
    description: str | None = None
    blocked_by: list[str] | None = None


class ListTasks(Request["list[TaskItem]"], frozen=True, kw_only=True):
    by: str
    filter: TaskFilter = "active"
    order: TaskOrder = "priority"


class ClaimTask(Request[TaskItem], frozen=True, kw_only=True):
    by: str
    task_id: str


class CompleteTask(Request[TaskItem], frozen=True, kw_only=True):
    by: str
    task_id: str
    result: str = ""


class SearchTasks(Request["list[TaskItem]"], frozen=True, kw_only=True):
    by: str
    query: str
    limit: int = 20


class SendTeamMessage(Request[MailItem], frozen=True, kw_only=True):
    by: str
    to: str
    text: str


class Broadcast(Request[MailItem], frozen=True, kw_only=True):
    by: str
    text: str


class ReadMessages(Request["list[MailItem]"], frozen=True, kw_only=True):
    by: str


class TeamView(msgspec.Struct, frozen=True, kw_only=True):
    team_id: str
    name: str
    lead: str
    members: list[tuple[str, str]]
    tasks: list[TaskItem]


class GetBoard(Request[TeamView], frozen=True, kw_only=True):
    pass
