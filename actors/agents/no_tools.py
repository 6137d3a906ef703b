"""A gateway that offers no tools: every call is refused. For agents without tools."""

from __future__ import annotations

from typing import Any

from events import Event
from events.domain.session import ChatMessage, ToolCall

from ..models.base import ToolSpec
from .gateway import CallerContext, GateResult, GateStep

__all__ = ["NoTools"]


class NoTools:
    def specs(self, ctx: CallerContext) -> list[ToolSpec]:
        return []

    def begin(self, ctx: CallerContext, call: ToolCall) -> GateStep:
        raise NotImplementedError("NoTools offers no tools; use the tool gateway")

    async def run(self, ticket: Any) -> GateResult:
        raise NotImplementedError

    def decide(self, ctx: CallerContext, ticket: Any, decision: str, by: str) -> GateStep:
        raise NotImplementedError

    def interrupted(self, ctx: CallerContext, call_id: str, name: str, reason: str) -> list[Event]:
        return []

    def read_event(self, event: Event) -> tuple[str, ChatMessage | None, str] | None:
        return None

    def scrub(self, text: str) -> str:
        return text
