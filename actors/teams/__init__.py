"""Teams: a Team actor per team with a task board and a mailbox (seed 001 §8)."""

from .board import MailItem, TaskItem
from .messages import TeamView
from .team import Team

__all__ = [
    "MailItem",
    "TaskItem",
    "Team",
    "TeamView",
]
