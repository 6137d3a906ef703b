"""The Anthropic messages wire format: the request body, the reply, its usage block.

Tool results travel in a user message (consecutive ones share it). Message parts map to
content blocks (``image`` and ``document`` with a base64 or URL source). With prompt
caching, the system prompt and the last tool carry ``cache_control``: the prefix they end
(tools, then system) is cached, and the usage block reports the tokens read from the cache
(``cache_read_input_tokens``) and written to it (``cache_creation_input_tokens``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import MalformedReply
from .base import (
    ChatMessage,
    ContentPart,
    DocumentPart,
    ImagePart,
    ModelReply,
    ModelRequest,
    TextPart,
    ToolCall,
    Usage,
    message_parts,
)

__all__ = ["ANTHROPIC_VERSION", "parse_reply", "parse_usage", "request_body", "tool_input"]

ANTHROPIC_VERSION = "2023-06-01"
_EPHEMERAL = {"type": "ephemeral"}


def request_body(request: ModelRequest, *, prompt_caching: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": _messages(request.messages),
    }
    if request.system:
        body["system"] = (
            [{"type": "text", "text": request.system, "cache_control": _EPHEMERAL}]
            if prompt_caching
            else request.system
        )
    if request.tools:
        tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if prompt_caching:
            tools[-1]["cache_control"] = _EPHEMERAL
        body["tools"] = tools
        if request.tool_choice is not None:
            body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def _messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Tool results travel in a user message; consecutive ones share it."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": _blocks(message) if message.parts else message.content,
                "is_error": message.is_error,
            }
            if (
                out
                and out[-1]["role"] == "user"
                and isinstance(out[-1]["content"], list)
                and out[-1]["content"][-1].get("type") == "tool_result"
            ):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": _recorded_input(call.arguments),
                    }
                )
            out.append({"role": "assistant", "content": blocks})
        elif message.role == "user":
            content = _blocks(message) if message.parts else message.content
            out.append({"role": "user", "content": content})
    return out


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    return [_block(part) for part in message_parts(message)]


def _block(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    source: dict[str, Any] = (
        {"type": "url", "url": part.url}
        if part.url
        else {"type": "base64", "media_type": part.media_type, "data": part.data}
    )
    if isinstance(part, ImagePart):
        return {"type": "image", "source": source}
    block: dict[str, Any] = {"type": "document", "source": source}
    if isinstance(part, DocumentPart) and part.filename:
        block["title"] = part.filename
    return block


def _recorded_input(arguments: str) -> dict[str, Any]:
    """A recorded call's arguments as an object (bad JSON from the model is passed as text)."""
    try:
        value = msgspec.json.decode(arguments or "{}")
    except msgspec.DecodeError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_value": value}


def tool_input(arguments: str) -> str:
    """A tool_use block's input, as the JSON text a ToolCall records: it must be an object."""
    try:
        value = msgspec.json.decode(arguments or "{}")
    except msgspec.DecodeError as exc:
        raise MalformedReply(f"tool_use input is not valid JSON: {arguments[:200]!r}") from exc
    if not isinstance(value, dict):
        raise MalformedReply(f"tool_use input is not an object: {arguments[:200]!r}")
    return msgspec.json.encode(value).decode()


def parse_usage(usage: Any) -> Usage:
    """Anthropic's usage block. Its ``input_tokens`` leaves out the cached prompt; ``Usage``
    counts the whole prompt, so the cache reads and writes are added to it."""
    usage = usage or {}
    cached = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=int(usage.get("input_tokens") or 0) + cached + written,
        output_tokens=int(usage.get("output_tokens") or 0),
        cached_input_tokens=cached,
        cache_write_tokens=written,
    )


def parse_reply(data: Any) -> ModelReply:
    try:
        texts, calls = [], []
        for block in data["content"]:
            if block["type"] == "text":
                texts.append(str(block["text"]))
            elif block["type"] == "tool_use":
                if not isinstance(block["input"], dict):
                    raise MalformedReply(f"tool_use {block.get('id')} input is not an object")
                calls.append(
                    ToolCall(
                        id=str(block["id"]),
                        name=str(block["name"]),
                        arguments=msgspec.json.encode(block["input"]).decode(),
                    )
                )
        return ModelReply(
            text="".join(texts),
            tool_calls=calls,
            stop_reason=str(data.get("stop_reason") or ""),
            usage=parse_usage(data.get("usage")),
            model=str(data.get("model", "")),
        )
    except MalformedReply:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MalformedReply(
            f"anthropic reply is missing or mistypes a field: {type(exc).__name__}: {exc}"
        ) from exc
