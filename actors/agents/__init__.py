"""Agents: AgentSupervisor and Session actors running the agent loop."""

from .config import AgentConfig, QualityGate, SubagentLimits
from .gateway import CallerContext, ToolGateway
from .messages import SessionStatus
from .prompt import CONTEXT_FILES, ContextSource, PromptBuilder
from .session import session_stream
from .supervisor import agent_stream

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
