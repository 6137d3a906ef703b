"""Agents: AgentSupervisor and Session actors running the agent loop."""

from .config import AgentConfig, QualityGate, SubagentLimits
from .gateway import CallerContext, GateResult, GateStep, ToolGateway
from .messages import SessionStatus
from .prompt import CONTEXT_FILES, ContextSource, PromptBuilder
from .session import Session, session_stream
from .supervisor import AgentSupervisor, agent_stream

__all__ = [
    "CONTEXT_FILES",
    "AgentConfig",
    "AgentSupervisor",
    "CallerContext",
    "ContextSource",
    "GateResult",
    "GateStep",
    "PromptBuilder",
    "QualityGate",
    "Session",
    "SessionStatus",
    "SubagentLimits",
    "ToolGateway",
    "agent_stream",
    "session_stream",
]
