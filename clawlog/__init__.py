"""clawlog: an embeddable, event-sourced actor backend for LLM agents.

The embedder's front door: everything an application needs to run agents on a log.

    from clawlog import AgentConfig, ScriptedModel, System, reply

    async with System.open("app.db") as system:
        await system.register_agent(AgentConfig(key="main"), ScriptedModel([reply("hi!")]))
        answer = await system.send("main", "user-42", "hello")

The packages behind it are ``clawlog.actors`` (the runtime), ``clawlog.events`` (the log),
``clawlog.projections`` (read models and readers) and ``clawlog.tools`` (the tool system).
Names are loaded on first use, so ``import clawlog`` (and the ``clawlog`` command) starts
at once; type checkers see them all.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("clawlog")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0+unknown"

# name -> the module that defines it (public modules only; each re-exports it in __all__).
_EXPORTS: dict[str, str] = {
    # the runtime
    "System": "clawlog.actors",
    "SupervisionPolicy": "clawlog.actors",
    "ActorError": "clawlog.actors",
    "ActorDead": "clawlog.actors",
    "AskTimeout": "clawlog.actors",
    "HubError": "clawlog.actors",
    "SystemClosed": "clawlog.actors",
    "TurnCancelledError": "clawlog.actors",
    "TurnFailedError": "clawlog.actors",
    # agents and models
    "AgentConfig": "clawlog.actors.agents",
    "SessionStatus": "clawlog.actors.agents",
    "SubagentLimits": "clawlog.actors.agents",
    "Model": "clawlog.actors.models",
    "ModelError": "clawlog.actors.models",
    "ScriptedModel": "clawlog.actors.models",
    "OpenAIChatModel": "clawlog.actors.models",
    "AnthropicModel": "clawlog.actors.models",
    "call": "clawlog.actors.models",
    "calls": "clawlog.actors.models",
    "reply": "clawlog.actors.models",
    # tools
    "ApprovalConfig": "clawlog.tools",
    "FunctionTool": "clawlog.tools",
    "PolicyConfig": "clawlog.tools",
    "ToolContext": "clawlog.tools",
    "ToolError": "clawlog.tools",
    "ToolResult": "clawlog.tools",
    # the log
    "EventStore": "clawlog.events",
    "EventStoreError": "clawlog.events",
    "open_store": "clawlog.events",
}

__all__ = [
    "ActorDead",
    "ActorError",
    "AgentConfig",
    "AnthropicModel",
    "ApprovalConfig",
    "AskTimeout",
    "EventStore",
    "EventStoreError",
    "FunctionTool",
    "HubError",
    "Model",
    "ModelError",
    "OpenAIChatModel",
    "PolicyConfig",
    "ScriptedModel",
    "SessionStatus",
    "SubagentLimits",
    "SupervisionPolicy",
    "System",
    "SystemClosed",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "TurnCancelledError",
    "TurnFailedError",
    "__version__",
    "call",
    "calls",
    "open_store",
    "reply",
]

if TYPE_CHECKING:
    from clawlog.actors import (
        ActorDead,
        ActorError,
        AskTimeout,
        HubError,
        SupervisionPolicy,
        System,
        SystemClosed,
        TurnCancelledError,
        TurnFailedError,
    )
    from clawlog.actors.agents import AgentConfig, SessionStatus, SubagentLimits
    from clawlog.actors.models import (
        AnthropicModel,
        Model,
        ModelError,
        OpenAIChatModel,
        ScriptedModel,
        call,
        calls,
        reply,
    )
    from clawlog.events import EventStore, EventStoreError, open_store
    from clawlog.tools import (
        ApprovalConfig,
        FunctionTool,
        PolicyConfig,
        ToolContext,
        ToolError,
        ToolResult,
    )
else:

    def __getattr__(name: str) -> Any:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'clawlog' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
