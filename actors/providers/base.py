"""The model protocol: one request in, one reply out, provider-neutral."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import msgspec

from clawlog.events.domain.session import ChatMessage, ToolCall, Usage

__all__ = ["ChatMessage", "Model", "ModelReply", "ModelRequest", "ToolCall", "ToolSpec", "Usage"]


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A tool as offered to a model (parameters already normalized for its provider)."""

    name: str
    description: str
    parameters: dict[str, Any]


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    system: str
    messages: list[ChatMessage]
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    max_tokens: int = 4096
    temperature: float | None = None


class ModelReply(msgspec.Struct, frozen=True, kw_only=True):
    text: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    #: Provider's reason ("stop", "tool_calls", "end_turn", "tool_use", "max_tokens", ...).
    stop_reason: str = ""
    model: str = ""


@runtime_checkable
class Model(Protocol):
    """A chat model. ``complete`` raises :class:`clawlog.actors.errors.ModelError` kinds."""

    @property
    def name(self) -> str: ...

    @property
    def provider(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelReply: ...
