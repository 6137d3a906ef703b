"""Projections: read models folded from the log by a runner with exactly-once checkpoints."""

from .base import Projection
from .errors import NotCaughtUp, ProjectionError, ProjectionFailed
from .models.boards_routes import HandoffRoutes, TaskBoards
from .models.delegations import Delegations, SubagentTasks, overdue_delegations
from .models.session_history import SessionHistory, SessionHistoryReader
from .models.tool_audit import ToolAudit, ToolAuditReader
from .rebuild import rebuild
from .runner import ProjectionRunner, ProjectionStatus

#: Every read model clawlog ships, in the order the CLI lists them.
ALL_PROJECTIONS = (SessionHistory, ToolAudit, TaskBoards, HandoffRoutes, Delegations, SubagentTasks)

__all__ = [
    "ALL_PROJECTIONS",
    "Delegations",
    "HandoffRoutes",
    "NotCaughtUp",
    "Projection",
    "ProjectionError",
    "ProjectionFailed",
    "ProjectionRunner",
    "ProjectionStatus",
    "SessionHistory",
    "SessionHistoryReader",
    "SubagentTasks",
    "TaskBoards",
    "ToolAudit",
    "ToolAuditReader",
    "overdue_delegations",
    "rebuild",
]
