"""Projections: read models folded from the log, their readers, rebuilds and replay.

async with ProjectionRunner(store, "clawlog.views.db", [p() for p in ALL_PROJECTIONS]) as runner:
    runner.start()                                  # catch up, then follow live
    async with ReadModels("clawlog.views.db", runner=runner) as views:
        audit = ToolAuditReader(views)
        await audit.wait_until(position)            # read your own writes
        refused = await audit.calls(tool="exec", refused=True)
"""

from ._apply import ProjectionStatus
from ._db import views_path_for
from .base import Envelope, Projection
from .errors import (
    InvalidProjection,
    NotCaughtUp,
    ProjectionError,
    ProjectionFailed,
    ReadModelsUnavailable,
)
from .models.actors import ActorIncident, ActorLifecycle, ActorLifecycleReader, ActorSummary
from .models.catalog import StreamCatalog, StreamCatalogReader, StreamInfo
from .models.delegations import (
    DelegationReader,
    DelegationRecord,
    Delegations,
    SubagentTask,
    SubagentTaskReader,
    SubagentTasks,
    overdue_delegations,
)
from .models.handoff_routes import HandoffRoute, HandoffRouteReader, HandoffRoutes
from .models.mcp_health import (
    McpGrantRow,
    McpHealth,
    McpHealthReader,
    McpServerHealth,
    McpToolRow,
)
from .models.session_history import HistoryEntry, SessionHistory, SessionHistoryReader
from .models.task_boards import BoardTask, TaskBoard, TaskBoardReader, TaskBoards
from .models.tool_audit import AuditedCall, AuditReason, ToolAudit, ToolAuditReader
from .readers import Reader, ReadModels, open_read_models
from .rebuild import rebuild
from .replay import AsOf, TimelineQuery, read_timeline, state_as_of, timeline
from .runner import ProjectionRunner

#: Every read model clawlog ships, in the order the CLI lists them.
ALL_PROJECTIONS = (
    SessionHistory,
    ToolAudit,
    StreamCatalog,
    ActorLifecycle,
    TaskBoards,
    HandoffRoutes,
    Delegations,
    SubagentTasks,
    McpHealth,
)

__all__ = [
    "ALL_PROJECTIONS",
    "ActorIncident",
    "ActorLifecycle",
    "ActorLifecycleReader",
    "ActorSummary",
    "AsOf",
    "AuditReason",
    "AuditedCall",
    "BoardTask",
    "DelegationReader",
    "DelegationRecord",
    "Delegations",
    "Envelope",
    "HandoffRoute",
    "HandoffRouteReader",
    "HandoffRoutes",
    "HistoryEntry",
    "InvalidProjection",
    "McpGrantRow",
    "McpHealth",
    "McpHealthReader",
    "McpServerHealth",
    "McpToolRow",
    "NotCaughtUp",
    "Projection",
    "ProjectionError",
    "ProjectionFailed",
    "ProjectionRunner",
    "ProjectionStatus",
    "ReadModels",
    "ReadModelsUnavailable",
    "Reader",
    "SessionHistory",
    "SessionHistoryReader",
    "StreamCatalog",
    "StreamCatalogReader",
    "StreamInfo",
    "SubagentTask",
    "SubagentTaskReader",
    "SubagentTasks",
    "TaskBoard",
    "TaskBoardReader",
    "TaskBoards",
    "TimelineQuery",
    "ToolAudit",
    "ToolAuditReader",
    "open_read_models",
    "overdue_delegations",
    "read_timeline",
    "rebuild",
    "state_as_of",
    "timeline",
    "views_path_for",
]
