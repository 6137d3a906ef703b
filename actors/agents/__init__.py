"""Agents: AgentSupervisor and Session actors running the agent loop."""

from .config import AgentConfig, QualityGate, SubagentLimits
from .gateway import CallerContext, ToolGateway
from .messages import SessionStatus
from .prompt import ContextSource, PromptBuilder

__all__ = [
    "AgentConfig",
    "CallerContext",
    "ContextSource",
    "PromptBuilder",
    "QualityGate",
    "SessionStatus",
    "SubagentLimits",
    "ToolGateway",
]
