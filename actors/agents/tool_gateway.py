"""The gateway from a Session to its tools: the deciding steps, then execution.

``begin`` runs in the session's thread: resolve → policy → argument validation →
approval lookup, each decision an event; ``run`` executes on the I/O hub with a timeout,
then scrubs and truncates the result. Tools here are :class:`ActorTool` objects (tools
that drive actors) or any object with ``name``, ``description``, ``parameters``,
``group`` and ``async run(ctx, args) -> str``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterable
from typing import Any

import fastjsonschema
import msgspec

from events import Event
from events.domain.session import ChatMessage, ToolCall
from events.domain.tool import (
    ToolAllowlistChanged,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
    ToolCallRequested,
    ToolCallStarted,
)

from ..errors import Rejected
from ..models.base import ToolSpec
from .config import AgentConfig
from .gateway import CallerContext, GateResult, GateStep

__all__ = ["ALWAYS_DENIED_FOR_SUBAGENTS", "LEAF_DENIED", "SimpleGateway"]

#: Seed 001 §6.
ALWAYS_DENIED_FOR_SUBAGENTS = frozenset(
    {
        "gateway",
        "agents_list",
        "whatsapp_login",
        "session_status",
        "cron",
        "memory_search",
        "memory_get",
        "sessions_send",
    }
)
LEAF_DENIED = frozenset(
    {"sessions_list", "sessions_history", "sessions_spawn", "spawn", "subagent"}
)
MAX_RESULT_CHARS = 100_000
_SECRET = re.compile(
    r"(sk-(?:ant-)?[A-Za-z0-9_\-]{20,}|gh[pousr]_[A-Za-z0-9]{36,}|AKIA[0-9A-Z]{16}"
    r"|(?i:(?:api[_-]?key|secret|token|password)\s*[=:]\s*)\S{8,})"
)


class _Ticket(msgspec.Struct, frozen=True, kw_only=True):
    call_id: str
    tool: str
    arguments: dict[str, Any]
    ctx: CallerContext


class SimpleGateway:
    """A tool gateway over a fixed set of tools and one agent's allow/deny lists."""

    def __init__(
        self,
        config: AgentConfig,
        tools: Iterable[Any],
        *,
        timeout_s: float = 120.0,
        approval_required: Iterable[str] = (),
        approval_timeout_s: float = 120.0,
    ) -> None:
        self.config = config
        self.timeout_s = timeout_s
        self.approval_timeout_s = approval_timeout_s
        self._tools = {tool.name: tool for tool in tools}
        self._validators = {
            name: fastjsonschema.compile(tool.parameters) for name, tool in self._tools.items()
        }
        self._needs_approval = set(approval_required)
        self._always_allowed: set[str] = set()

    # -- what the model sees ------------------------------------------------------------
    def allowed(self, ctx: CallerContext) -> list[str]:
        names = set(self._tools)
        if self.config.tools_allow is not None:
            names &= set(self.config.tools_allow) | set(self.config.tools_also_allow)
        names -= set(self.config.tools_deny)
        if ctx.depth > 0:
            names -= ALWAYS_DENIED_FOR_SUBAGENTS
            if ctx.depth >= self.config.subagents.max_spawn_depth:
                names -= LEAF_DENIED
        return sorted(names)

    def specs(self, ctx: CallerContext) -> list[ToolSpec]:
        return [
            ToolSpec(
                name=n, description=self._tools[n].description, parameters=self._tools[n].parameters
            )
            for n in self.allowed(ctx)
        ]

    # -- deciding -----------------------------------------------------------------------
    def begin(self, ctx: CallerContext, call: ToolCall) -> GateStep:
        try:
            arguments = msgspec.json.decode(call.arguments or "{}")
        except msgspec.DecodeError:
            arguments = None
        requested = ToolCallRequested(
            call_id=call.id,
            tool=call.name,
            arguments=self._scrub_value(arguments) if isinstance(arguments, dict) else {},
            raw_arguments="" if isinstance(arguments, dict) else self.scrub(call.arguments)[:2000],
            agent=ctx.agent,
            session_key=ctx.session_key,
            user=ctx.user,
            depth=ctx.depth,
        )
        if not isinstance(arguments, dict):
            return self._refuse(
                requested,
                "validation",
                "the arguments are not a JSON object: "
                "send the tool's parameters as one JSON object",
                "invalid_parameters",
            )
        if call.name in self.config.tools_deny:
            return self._refuse(
                requested,
                "policy",
                f"{call.name} is denied for agent {ctx.agent} by its tool policy",
                "not_authorized",
            )
        if call.name not in self._tools:
            return self._refuse(
                requested,
                "resolve",
                f"unknown tool {call.name!r}; available: {', '.join(self.allowed(ctx)) or 'none'}",
                "not_authorized",
            )
        if call.name not in self.allowed(ctx):
            return self._refuse(
                requested, "policy", f"{call.name} is not allowed here", "not_authorized"
            )
        try:
            self._validators[call.name](arguments)
        except fastjsonschema.JsonSchemaValueException as exc:
            field = exc.name.removeprefix("data.").removeprefix("data") or "arguments"
            return self._refuse(
                requested,
                "validation",
                f"invalid parameter {field}: {exc.message.replace('data.', '')}",
                "invalid_parameters",
            )
        ticket = _Ticket(call_id=call.id, tool=call.name, arguments=arguments, ctx=ctx)
        if call.name in self._needs_approval and call.name not in self._always_allowed:
            return GateStep(
                events=[
                    requested,
                    ToolApprovalRequested(
                        call_id=call.id,
                        tool=call.name,
                        reason=f"{call.name} requires approval",
                        summary=self.scrub(call.arguments)[:500],
                        timeout_s=self.approval_timeout_s,
                    ),
                ],
                outcome="approval",
                ticket=ticket,
                approval_timeout_s=self.approval_timeout_s,
            )
        return GateStep(
            events=[requested, ToolCallStarted(call_id=call.id, tool=call.name)],
            outcome="ready",
            ticket=ticket,
        )

    def decide(self, ctx: CallerContext, ticket: Any, decision: str, by: str) -> GateStep:
        events: list[Event] = [
            ToolApprovalDecided(call_id=ticket.call_id, tool=ticket.tool, decision=decision, by=by)
        ]
        if decision in ("allow-once", "allow-always"):
            if decision == "allow-always":
                self._always_allowed.add(ticket.tool)
                events.append(ToolAllowlistChanged(tool=ticket.tool, pattern=ticket.tool, by=by))
            events.append(ToolCallStarted(call_id=ticket.call_id, tool=ticket.tool))
            return GateStep(events=events, outcome="ready", ticket=ticket)
        reason = "the approval timed out" if decision == "timeout" else f"denied by {by}"
        text = f"{ticket.tool} was not run: {reason}. Do not retry it without asking the user."
        events.append(
            ToolCallRefused(
                call_id=ticket.call_id,
                tool=ticket.tool,
                step="approval",
                reason=reason,
                for_llm=text,
            )
        )
        return GateStep(events=events, outcome="refused")

    # -- running ------------------------------------------------------------------------
    async def run(self, ticket: Any) -> GateResult:
        tool = self._tools[ticket.tool]
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout_s):
                text = await tool.run(ticket.ctx, ticket.arguments)
        except Rejected as exc:
            return self._failed(ticket, "execution_failed", str(exc), started)
        except TimeoutError:
            return self._failed(
                ticket, "timeout", f"{ticket.tool} timed out after {self.timeout_s} s", started
            )
        except Exception as exc:
            return self._failed(ticket, "execution_failed", f"{type(exc).__name__}: {exc}", started)
        clean = self.scrub(str(text))
        truncated = len(clean) > MAX_RESULT_CHARS
        if truncated:
            clean = clean[:MAX_RESULT_CHARS] + "\n[output truncated]"
        return GateResult(
            events=[
                ToolCallCompleted(
                    call_id=ticket.call_id,
                    tool=ticket.tool,
                    for_llm=clean,
                    truncated=truncated,
                    duration_ms=(time.perf_counter() - started) * 1000,
                )
            ]
        )

    def interrupted(self, ctx: CallerContext, call_id: str, name: str, reason: str) -> list[Event]:
        return [
            ToolCallFailed(
                call_id=call_id,
                tool=name,
                error_kind="interrupted",
                message=reason,
                for_llm=f"{name} did not finish: {reason}",
            )
        ]

    def read_event(self, event: Event) -> tuple[str, ChatMessage | None, str] | None:
        match event:
            case ToolCallCompleted():
                return (
                    event.call_id,
                    ChatMessage(
                        role="tool",
                        content=event.for_llm,
                        tool_call_id=event.call_id,
                        name=event.tool,
                        is_error=event.is_error,
                    ),
                    "",
                )
            case ToolCallFailed() | ToolCallRefused():
                text = event.for_llm or getattr(event, "message", "") or event.reason  # type: ignore[union-attr]
                return (
                    event.call_id,
                    ChatMessage(
                        role="tool",
                        content=text,
                        is_error=True,
                        tool_call_id=event.call_id,
                        name=event.tool,
                    ),
                    "",
                )
            case ToolApprovalRequested():
                return event.call_id, None, "requested"
            case ToolApprovalDecided():
                return event.call_id, None, "decided"
        return None

    def scrub(self, text: str) -> str:
        return _SECRET.sub("[REDACTED]", text)

    # -- helpers ------------------------------------------------------------------------
    def _refuse(self, requested: ToolCallRequested, step: str, reason: str, kind: str) -> GateStep:
        text = f"Tool call refused at {step}: {reason}"
        return GateStep(
            events=[
                requested,
                ToolCallRefused(
                    call_id=requested.call_id,
                    tool=requested.tool,
                    step=step,
                    reason=reason,
                    error_kind=kind,
                    for_llm=text,
                ),
            ],
            outcome="refused",
        )

    def _failed(self, ticket: _Ticket, kind: str, message: str, started: float) -> GateResult:
        message = self.scrub(message)
        return GateResult(
            events=[
                ToolCallFailed(
                    call_id=ticket.call_id,
                    tool=ticket.tool,
                    error_kind=kind,
                    message=message,
                    duration_ms=(time.perf_counter() - started) * 1000,
                    for_llm=f"{ticket.tool} failed ({kind}): {message}",
                )
            ]
        )

    def _scrub_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {k: self._scrub_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._scrub_value(v) for v in value]
        return value
