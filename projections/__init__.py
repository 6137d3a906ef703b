"""Projections: read models folded from the log, their readers, rebuilds and timelines.

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
    RebuildFailed,
)
from .read_models.actor_lifecycle import ActorLifecycle, ActorLifecycleReader
from .read_models.delegations import DelegationReader, Delegations
from .read_models.handoff_routes import HandoffRouteReader, HandoffRoutes
from .read_models.lineage import Lineage, read_lineage, read_unreturned
from .read_models.mcp_health import McpHealth, McpHealthReader
from .read_models.session_history import SessionHistory, SessionHistoryReader
from .read_models.stream_catalog import StreamCatalog, StreamCatalogReader
from .read_models.subagent_tasks import SubagentTaskReader, SubagentTasks
from .read_models.task_boards import TaskBoardReader, TaskBoards
from .read_models.timers import TimerReader, Timers
from .read_models.tool_audit import ToolAudit, ToolAuditReader
from .read_models.usage import ModelUsage, ModelUsageReader
from .readers import Reader, ReadModels, open_read_models
from .rebuild import rebuild
from .runner import ProjectionRunner
from .timeline import AsOf, TimelineQuery, read_timeline, state_as_of

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
    ModelUsage,
    Timers,
)

__all__ = [
    "ALL_PROJECTIONS",
    "ActorLifecycleReader",
    "AsOf",
    "DelegationReader",
    "Envelope",
    "HandoffRouteReader",
    "InvalidProjection",
    "Lineage",
    "McpHealthReader",
    "ModelUsageReader",
    "NotCaughtUp",
    "Projection",
    "ProjectionError",
    "ProjectionFailed",
    "ProjectionRunner",
    "ProjectionStatus",
    "ReadModels",
    "ReadModelsUnavailable",
    "Reader",
    "RebuildFailed",
    "SessionHistoryReader",
    "StreamCatalogReader",
    "SubagentTaskReader",
    "TaskBoardReader",
    "TimelineQuery",
    "TimerReader",
    "ToolAuditReader",
    "open_read_models",
    "read_lineage",
    "read_timeline",
    "read_unreturned",
    "rebuild",
    "state_as_of",
    "views_path_for",
]
