"""The model protocol: one request in, one reply out, provider-neutral.

A model that can also stream implements :class:`StreamingModel`: ``stream(request)`` yields
:class:`TextDelta` items as the text arrives and, last, the complete :class:`ModelReply`
(tool calls assembled from their pieces, usage from the end of the stream), the same reply
``complete`` would have given. A stream cut off before its end raises
:class:`clawlog.actors.errors.ModelStreamCut`, never a half reply.

A model that takes more than text in a user message (images, documents: the
:data:`ContentPart` kinds) says so with a ``check_part(part)`` method that raises
:class:`~clawlog.actors.errors.ModelBadRequest` for a part it cannot send: the Session
asks it before a turn with parts starts (:func:`refused_part`), so a part no provider
would take is refused to the sender, never recorded, dropped or failed mid-turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

import msgspec

from clawlog.events.domain.session import (
    ChatMessage,
    ContentPart,
    DocumentPart,
    ImagePart,
    TextPart,
    ToolCall,
    Usage,
)

from ..errors import ModelBadRequest

__all__ = [
    "TOOL_CHOICE_MODES",
    "ChatMessage",
    "ContentPart",
    "DocumentPart",
    "ImagePart",
    "Model",
    "ModelReply",
    "ModelRequest",
    "StreamingModel",
    "TextDelta",
    "TextPart",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "check_tool_choice",
    "message_parts",
    "part_kind",
    "refused_part",
]

#: The ``tool_choice`` values that are no tool's name.
TOOL_CHOICE_MODES = ("auto", "none", "required")


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
    #: None: the provider's default (it may call tools). "auto": it may; "none": it must not;
    #: "required": it must call one; a tool's name: it must call that tool.
    tool_choice: str | None = None


class ModelReply(msgspec.Struct, frozen=True, kw_only=True):
    text: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    #: Provider's reason ("stop", "tool_calls", "end_turn", "tool_use", "max_tokens", ...).
    stop_reason: str = ""
    model: str = ""


class TextDelta(msgspec.Struct, frozen=True):
    """A piece of a streamed reply's text, as it arrived."""

    text: str


@runtime_checkable
class Model(Protocol):
    """A chat model. ``complete`` raises :class:`clawlog.actors.errors.ModelError` kinds."""

    @property
    def name(self) -> str: ...

    @property
    def provider(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelReply: ...


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model that can stream its reply.

    ``stream`` yields :class:`TextDelta` items, then the complete :class:`ModelReply` as its
    last item. It raises the kinds ``complete`` raises, and ``ModelStreamCut`` when the
    stream stops before its end. A failure before the first delta is retried like a request;
    after it, it is raised (the deltas are out).
    """

    def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelReply]: ...


def check_tool_choice(request: ModelRequest) -> None:
    """Refuse a ``tool_choice`` that names no offered tool, or asks for tools when none are."""
    choice = request.tool_choice
    if choice is None or choice in ("auto", "none"):
        return
    offered = [tool.name for tool in request.tools]
    if choice == "required":
        if not offered:
            raise ModelBadRequest(
                "tool_choice='required' but the request offers no tools; offer tools, or use "
                "'auto' or 'none'"
            )
        return
    if choice not in offered:
        names = ", ".join(offered) if offered else "none are offered"
        raise ModelBadRequest(
            f"tool_choice={choice!r} is neither one of {', '.join(TOOL_CHOICE_MODES)} nor an "
            f"offered tool's name (offered: {names})"
        )


def message_parts(message: ChatMessage) -> list[ContentPart]:
    """The content blocks to send for ``message`` (see ``ChatMessage.parts``)."""
    if not message.parts:
        return [TextPart(text=message.content)] if message.content else []
    if any(isinstance(part, TextPart) for part in message.parts) or not message.content:
        return list(message.parts)
    return [TextPart(text=message.content), *message.parts]


def refused_part(model: object, part: ContentPart) -> str | None:
    """Why ``model`` cannot take ``part`` in a user message; None when it can.

    Text always goes. Other parts go to a model whose ``check_part(part)`` accepts them
    (it raises ``ModelBadRequest`` otherwise); a model without that method takes text
    only: it would drop an image silently."""
    if isinstance(part, TextPart):
        return None
    check = getattr(model, "check_part", None)
    name = f"{type(model).__name__} {getattr(model, 'name', '')!r}"
    if not callable(check):
        return (
            f"the model {name} takes text only (it has no check_part method saying which "
            f"content parts it takes), so it cannot be sent {part_kind(part)}"
        )
    try:
        check(part)
    except ModelBadRequest as exc:
        return f"the model {name} cannot take {part_kind(part)} as given: {exc}"
    return None


def part_kind(part: object) -> str:
    """``an image``, ``a document``, ``a text part``: a part as a message names it."""
    kinds: dict[type, str] = {
        TextPart: "a text part",
        ImagePart: "an image",
        DocumentPart: "a document",
    }
    return kinds.get(type(part), f"a {type(part).__name__}")
