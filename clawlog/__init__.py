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
from typing import TYPE_CHECKING, Any

#: The installed version, looked up on first use: importlib.metadata takes a while to
#: import, and ``clawlog --help`` should not wait for it.
__version__: str


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("clawlog")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "0+unknown"


# name -> the module that defines it (public modules only; each re-exports it in __all__).
_EXPORTS: dict[str, str] = {
    # the runtime
    "System": "clawlog.actors",
    "SupervisionPolicy": "clawlog.actors",
    "ActorError": "clawlog.actors",
    "ActorDead": "clawlog.actors",
    "ActorUnavailable": "clawlog.actors",
    "ArgumentTypeError": "clawlog.actors",
    "InvalidArgument": "clawlog.actors",
    "Limits": "clawlog.actors",
    "MessageTooLarge": "clawlog.actors",
    "UnknownAgent": "clawlog.actors",
    "AskTimeout": "clawlog.actors",
    "HubError": "clawlog.actors",
    "OutboxMessage": "clawlog.actors",
    "SystemClosed": "clawlog.actors",
    "TurnCancelledError": "clawlog.actors",
    "TurnFailedError": "clawlog.actors",
    "InvalidSchedule": "clawlog.actors",
    # routines, timers and the clock
    "Trigger": "clawlog.actors.automation",
    "RoutineInfo": "clawlog.actors.automation",
    "ManualClock": "clawlog.actors.timers",
    "CronLimits": "clawlog.actors.agents",
    "HeartbeatConfig": "clawlog.actors.agents",
    "Placement": "clawlog.actors.agents",
    # agents and models
    "AgentConfig": "clawlog.actors.agents",
    "BudgetLimits": "clawlog.actors.agents",
    "Budgets": "clawlog.actors.agents",
    "SessionStatus": "clawlog.actors.agents",
    "TurnDelta": "clawlog.actors.agents",
    "TurnStream": "clawlog.actors.agents",
    "CompactionConfig": "clawlog.actors.agents",
    "CompactionInfo": "clawlog.actors.agents",
    "CompactionFailedError": "clawlog.actors",
    "SubagentLimits": "clawlog.actors.agents",
    "Model": "clawlog.actors.providers",
    "ModelError": "clawlog.actors",
    "ModelStreamCut": "clawlog.actors",
    "ScriptedModel": "clawlog.actors.providers",
    "ModelCatalog": "clawlog.actors.providers",
    "ModelSpec": "clawlog.actors.providers",
    "OpenAIChatModel": "clawlog.actors.providers",
    "AnthropicModel": "clawlog.actors.providers",
    "call": "clawlog.actors.providers",
    "calls": "clawlog.actors.providers",
    "reply": "clawlog.actors.providers",
    # tools
    "ApprovalConfig": "clawlog.tools",
    "FunctionTool": "clawlog.tools",
    "PolicyConfig": "clawlog.tools",
    "SideEffects": "clawlog.tools",
    "ToolContext": "clawlog.tools",
    "ToolError": "clawlog.tools",
    "ToolResult": "clawlog.tools",
    "CommandCheck": "clawlog.tools.command_check",
    "ExecConfig": "clawlog.tools.exec",
    "check_command": "clawlog.tools.command_check",
    "SandboxConfig": "clawlog.tools.sandbox",
    "WorkspaceConfig": "clawlog.tools.workspace",
    # workspaces: file, exec and sandbox tools for agents
    "AgentWorkspaces": "clawlog.actors.workspace",
    # the log
    "EventStore": "clawlog.events",
    "EventStoreError": "clawlog.events",
    "InvalidEvent": "clawlog.events",
    "MissingDependency": "clawlog.events",
    "open_store": "clawlog.events",
}

__all__ = [
    "ActorDead",
    "ActorError",
    "ActorUnavailable",
    "AgentConfig",
    "AgentWorkspaces",
    "AnthropicModel",
    "ApprovalConfig",
    "ArgumentTypeError",
    "AskTimeout",
    "BudgetLimits",
    "Budgets",
    "CommandCheck",
    "CompactionConfig",
    "CompactionFailedError",
    "CompactionInfo",
    "CronLimits",
    "EventStore",
    "EventStoreError",
    "ExecConfig",
    "FunctionTool",
    "HeartbeatConfig",
    "HubError",
    "InvalidArgument",
    "InvalidEvent",
    "InvalidSchedule",
    "Limits",
    "ManualClock",
    "MessageTooLarge",
    "MissingDependency",
    "Model",
    "ModelCatalog",
    "ModelError",
    "ModelSpec",
    "ModelStreamCut",
    "OpenAIChatModel",
    "OutboxMessage",
    "Placement",
    "PolicyConfig",
    "RoutineInfo",
    "SandboxConfig",
    "ScriptedModel",
    "SessionStatus",
    "SideEffects",
    "SubagentLimits",
    "SupervisionPolicy",
    "System",
    "SystemClosed",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Trigger",
    "TurnCancelledError",
    "TurnDelta",
    "TurnFailedError",
    "TurnStream",
    "UnknownAgent",
    "WorkspaceConfig",
    "__version__",
    "call",
    "calls",
    "check_command",
    "open_store",
    "reply",
]

if TYPE_CHECKING:
    from clawlog.actors import (
        ActorDead,
        ActorError,
        ActorUnavailable,
        ArgumentTypeError,
        AskTimeout,
        CompactionFailedError,
        HubError,
        InvalidArgument,
        InvalidSchedule,
        Limits,
        MessageTooLarge,
        ModelStreamCut,
        OutboxMessage,
        SupervisionPolicy,
        System,
        SystemClosed,
        TurnCancelledError,
        TurnFailedError,
        UnknownAgent,
    )
    from clawlog.actors.agents import (
        AgentConfig,
        BudgetLimits,
        Budgets,
        CompactionConfig,
        CompactionInfo,
        CronLimits,
        HeartbeatConfig,
        Placement,
        SessionStatus,
        SubagentLimits,
        TurnDelta,
        TurnStream,
    )
    from clawlog.actors.automation import RoutineInfo, Trigger
    from clawlog.actors.errors import ModelError
    from clawlog.actors.providers import (
        AnthropicModel,
        Model,
        ModelCatalog,
        ModelSpec,
        OpenAIChatModel,
        ScriptedModel,
        call,
        calls,
        reply,
    )
    from clawlog.actors.timers import ManualClock
    from clawlog.actors.workspace import AgentWorkspaces
    from clawlog.events import (
        EventStore,
        EventStoreError,
        InvalidEvent,
        MissingDependency,
        open_store,
    )
    from clawlog.tools import (
        ApprovalConfig,
        FunctionTool,
        PolicyConfig,
        SideEffects,
        ToolContext,
        ToolError,
        ToolResult,
    )
    from clawlog.tools.command_check import CommandCheck, check_command
    from clawlog.tools.exec import ExecConfig
    from clawlog.tools.sandbox import SandboxConfig
    from clawlog.tools.workspace import WorkspaceConfig
else:

    def __getattr__(name: str) -> Any:
        if name == "__version__":
            globals()[name] = _installed_version()
            return globals()[name]
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'clawlog' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
