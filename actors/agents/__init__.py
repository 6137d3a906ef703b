"""Agents: AgentSupervisor and Session actors running the agent loop."""

from clawlog.events.streams import agent_stream, session_stream

from .config import AgentConfig, QualityGate, SubagentLimits
from .gateway import CallerContext, ToolGateway
from .messages import SessionStatus
from .prompt import CONTEXT_FILES, ContextSource, PromptBuilder

__all__ = [
    "CONTEXT_FILES",
    "AgentConfig",
    "CallerContext",
    "ContextSource",
    "PromptBuilder",
    "QualityGate",
    "SessionStatus",
    "SubagentLimits",
    "ToolGateway",
    "agent_stream",
    "session_stream",
]
