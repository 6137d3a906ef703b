"""Assembling a streamed Anthropic message: text deltas, tool inputs from their JSON
pieces, usage from the first and last events.

The events: ``message_start`` (the model, and the usage of the prompt: input and cache
tokens), ``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` per
block (``text_delta``; ``input_json_delta`` pieces of a tool_use input; thinking deltas,
not kept), ``message_delta`` (stop reason and the cumulative usage: output tokens, and on
newer API versions the input counts again), ``message_stop`` (the end), ``ping``, and
``error`` (the stream failed). Unknown events are skipped, as Anthropic's versioning
policy asks.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import (
    MalformedReply,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelServerError,
    ModelStreamCut,
)
from .anthropic_wire import parse_usage, tool_input
from .base import ModelReply, ToolCall
from .sse import ServerSentEvent

__all__ = ["AnthropicStreamAssembler"]


class _Block(msgspec.Struct):
    """One content block being assembled (text, or a tool_use and its input pieces)."""

    type: str
    id: str = ""
    name: str = ""
    pieces: list[str] = msgspec.field(default_factory=list)


class AnthropicStreamAssembler:
    """Fed the events of one streamed message; gives its text deltas, then the reply."""

    def __init__(self) -> None:
        self.finished = False
        self._started = False
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, Any] = {}
        self._stop_reason = ""
        self._model = ""

    def feed(self, event: ServerSentEvent) -> str:
        data = _decode(event)
        kind = data.get("type") or event.event
        if kind == "error":
            raise _error_event(data.get("error"))
        try:
            return self._take(kind, data)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ModelStreamCut(
                f"anthropic sent a malformed {kind} event ({type(exc).__name__}: {exc}): "
                f"{event.data[:200]!r}"
            ) from exc

    def _take(self, kind: str, data: dict[str, Any]) -> str:
        if kind == "message_start":
            message = data["message"]
            self._started = True
            self._model = str(message.get("model") or "")
            self._take_usage(message.get("usage"))
        elif kind == "content_block_start":
            block = data["content_block"]
            self._blocks[int(data["index"])] = _Block(
                type=str(block["type"]),
                id=str(block.get("id", "")),
                name=str(block.get("name", "")),
            )
            if block["type"] == "text" and block.get("text"):
                return self._text(int(data["index"]), str(block["text"]))
        elif kind == "content_block_delta":
            return self._delta(int(data["index"]), data["delta"])
        elif kind == "message_delta":
            self._stop_reason = str(data["delta"].get("stop_reason") or self._stop_reason)
            self._take_usage(data.get("usage"))
        elif kind == "message_stop":
            if not self._started:
                raise ValueError("message_stop came without a message_start")
            self.finished = True
        return ""

    def _take_usage(self, usage: Any) -> None:
        """Counts override the earlier ones; a null count (``message_delta`` sends
        ``"cache_read_input_tokens": null`` when it has no new value) keeps them."""
        for key, value in (usage or {}).items():
            if value is not None:
                self._usage[key] = value

    def _delta(self, index: int, delta: dict[str, Any]) -> str:
        if delta["type"] == "text_delta":
            return self._text(index, str(delta["text"]))
        if delta["type"] == "input_json_delta":
            self._blocks[index].pieces.append(str(delta["partial_json"]))
        return ""

    def _text(self, index: int, text: str) -> str:
        self._blocks[index].pieces.append(text)
        return text

    def reply(self) -> ModelReply:
        texts, calls = [], []
        for _, block in sorted(self._blocks.items()):
            if block.type == "text":
                texts.append("".join(block.pieces))
            elif block.type == "tool_use":
                if not block.id or not block.name:
                    raise MalformedReply("anthropic streamed a tool_use block without id or name")
                calls.append(
                    ToolCall(
                        id=block.id, name=block.name, arguments=tool_input("".join(block.pieces))
                    )
                )
        return ModelReply(
            text="".join(texts),
            tool_calls=calls,
            stop_reason=self._stop_reason,
            usage=parse_usage(self._usage),
            model=self._model,
        )


def _decode(event: ServerSentEvent) -> dict[str, Any]:
    try:
        data = msgspec.json.decode(event.data)
    except msgspec.DecodeError as exc:
        raise ModelStreamCut(
            f"anthropic sent a {event.event} event that is not valid JSON ({exc}): "
            f"{event.data[:200]!r}"
        ) from exc
    if not isinstance(data, dict):
        raise ModelStreamCut(
            f"anthropic sent a {event.event} event that is no JSON object: {event.data[:200]!r}"
        )
    return data


def _error_event(error: Any) -> ModelError:
    """An ``error`` event, mapped like the HTTP status it stands for."""
    error = error if isinstance(error, dict) else {"message": str(error)}
    kind = str(error.get("type") or "")
    detail = str(error.get("message") or "no message")[:500]
    text = f"anthropic's stream ended with {kind or 'an error'}: {detail}"
    if kind == "rate_limit_error":
        return ModelRateLimited(text)
    if kind in ("authentication_error", "permission_error"):
        return ModelAuthError(text)
    if kind in ("invalid_request_error", "not_found_error", "request_too_large"):
        return ModelBadRequest(text)
    return ModelServerError(text)
