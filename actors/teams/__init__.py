"""Teams: a Team actor per team with a task board and a mailbox (seed 001 §8)."""

from .board import BoardState, MailItem, TaskItem
from .messages import (
    Broadcast,
    ClaimTask,
    CompleteTask,
    CreateTask,
    GetBoard,
    ListTasks,
    ReadMessages,
    SearchTasks,
    SendTeamMessage,
    TeamView,
    UpdateTask,
)
from .team import Team, team_session_key, team_stream

__all__ = [
    "BoardState",
    "Broadcast",
    "ClaimTask",
    "CompleteTask",
    "CreateTask",
    "GetBoard",
    "ListTasks",
    "MailItem",
    "ReadMessages",
    "SearchTasks",
    "SendTeamMessage",
    "TaskItem",
    "Team",
    "TeamView",
    "UpdateTask",
    "team_session_key",
    "team_stream",
]
