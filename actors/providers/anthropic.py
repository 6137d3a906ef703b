"""An Anthropic messages client (``POST {base}/v1/messages``)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import MalformedReply
from .base import ChatMessage, ModelReply, ModelRequest, ToolCall, Usage
from .http import HttpProvider

__all__ = ["ANTHROPIC_VERSION", "AnthropicModel"]

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicModel(HttpProvider):
    provider = "anthropic"
    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key, "anthropic-version": ANTHROPIC_VERSION}

    async def complete(self, request: ModelRequest) -> ModelReply:
        return parse_reply(await self._call(request_body(request)))


def request_body(request: ModelRequest) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": _messages(request.messages),
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Tool results travel in a user message; consecutive ones share it."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
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
                        "input": msgspec.json.decode(call.arguments or "{}"),
                    }
                )
            out.append({"role": "assistant", "content": blocks})
        elif message.role == "user":
            out.append({"role": "user", "content": message.content})
    return out


def _input(arguments: str) -> dict[str, Any]:
    """The recorded arguments as an object (bad JSON from the model is passed as text)."""
    try:
        value = msgspec.json.decode(arguments or "{}")
    except msgspec.DecodeError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_value": value}


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
        usage = data.get("usage") or {}
        return ModelReply(
            text="".join(texts),
            tool_calls=calls,
            stop_reason=str(data.get("stop_reason") or ""),
            usage=Usage(
                input_tokens=int(usage.get("input_tokens", 0)),
                output_tokens=int(usage.get("output_tokens", 0)),
            ),
            model=str(data.get("model", "")),
        )
    except MalformedReply:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MalformedReply(
            f"anthropic reply is missing or mistypes a field: {type(exc).__name__}: {exc}"
        ) from exc
