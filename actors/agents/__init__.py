"""Agents: AgentSupervisor and Session actors running the agent loop."""

from .budgets import BudgetLimits, Budgets
from .compaction_config import CompactionConfig
from .config import AgentConfig, QualityGate, SubagentLimits
from .delta_sink import TurnDelta
from .gateway import CallerContext, ToolGateway
from .messages import SessionStatus
from .prompt import ContextSource, PromptBuilder
from .router import Placement
from .routine_config import CronLimits, HeartbeatConfig
from .session_state import CompactionInfo
from .streaming import TurnStream

__all__ = [
    "AgentConfig",
    "BudgetLimits",
    "Budgets",
    "CallerContext",
    "CompactionConfig",
    "CompactionInfo",
    "ContextSource",
    "CronLimits",
    "HeartbeatConfig",
    "Placement",
    "PromptBuilder",
    "QualityGate",
    "SessionStatus",
    "SubagentLimits",
    "ToolGateway",
    "TurnDelta",
    "TurnStream",
]
