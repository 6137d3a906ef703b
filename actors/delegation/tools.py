"""The delegation tools (group ``delegation``): delegate, delegate_search, evaluate_loop."""

from __future__ import annotations

from typing import Any

import msgspec

from ..agents.gateway import CallerContext
from ..agents.tools import ActorTool, required_arg

__all__ = ["DELEGATION_TOOLS", "DelegateSearchTool", "DelegateTool", "EvaluateLoopTool"]


class DelegateTool(ActorTool):
    name = "delegate"
    group = "delegation"
    description = (
        "Delegate a task to another agent over a configured link. action=delegate with agent "
        "and task (mode sync waits for the answer, async announces it later as "
        "delegate:<id>); cancel (id); list (running); history (finished too)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["delegate", "cancel", "list", "history"],
                "default": "delegate",
            },
            "agent": {"type": "string"},
            "task": {"type": "string"},
            "mode": {"type": "string", "enum": ["sync", "async"], "default": "sync"},
            "id": {"type": "string"},
        },
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        ports = self.services["delegation"]
        action = args.get("action", "delegate")
        if action == "delegate":
            info = await ports.delegate(
                ctx,
                required_arg(args, "agent"),
                required_arg(args, "task"),
                mode=args.get("mode", "sync"),
            )
            if info.status == "running":
                return (
                    f"delegated as {info.delegation_id}; the result will arrive as a "
                    f"message from delegate:{info.delegation_id}"
                )
            return info.result
        if action == "cancel":
            info = await ports.cancel(ctx, required_arg(args, "id"))
            return f"{info.delegation_id} cancelled"
        found = await ports.list_delegations(ctx, include_finished=action == "history")
        fields = ("delegation_id", "target", "status", "task", "result")
        return msgspec.json.encode([{k: getattr(d, k) for k in fields} for d in found]).decode()


class DelegateSearchTool(ActorTool):
    name = "delegate_search"
    group = "delegation"
    description = "Find agents you can delegate to, ranked by how well they match the query."
    parameters = {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        found = self.services["delegation"].search(ctx, required_arg(args, "query"))
        return msgspec.json.encode(msgspec.to_builtins(found)).decode()


class EvaluateLoopTool(ActorTool):
    name = "evaluate_loop"
    group = "delegation"
    description = (
        "Generator drafts, evaluator answers APPROVED or REJECTED: feedback; repeat up to "
        "max_rounds (default 3, at most 5). Returns the final draft and every round."
    )
    parameters = {
        "type": "object",
        "properties": {
            "generator": {"type": "string"},
            "evaluator": {"type": "string"},
            "task": {"type": "string"},
            "criteria": {"type": "string"},
            "max_rounds": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
        },
        "required": ["generator", "evaluator", "task", "criteria"],
    }

    async def run(self, ctx: CallerContext, args: dict[str, Any]) -> str:
        result = await self.services["delegation"].evaluate_loop(
            ctx,
            args["generator"],
            args["evaluator"],
            args["task"],
            args["criteria"],
            args.get("max_rounds", 3),
        )
        return msgspec.json.encode(msgspec.to_builtins(result)).decode()


DELEGATION_TOOLS = (DelegateTool, DelegateSearchTool, EvaluateLoopTool)
