"""An OpenAI-compatible chat-completions client (``POST {base}/chat/completions``)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import MalformedReply
from .base import ChatMessage, ModelReply, ModelRequest, ToolCall, Usage
from .http import HttpProvider

__all__ = ["OpenAIChatModel"]


class OpenAIChatModel(HttpProvider):
    provider = "openai"
    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"}

    async def complete(self, request: ModelRequest) -> ModelReply:
        return parse_reply(await self._call(request_body(request)))


def request_body(request: ModelRequest) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_message(m) for m in request.messages)
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def parse_reply(data: Any) -> ModelReply:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        text = message.get("content") or ""
        calls = [_tool_call(c) for c in message.get("tool_calls") or []]
        usage = data.get("usage") or {}
        if not isinstance(text, str):
            raise TypeError("message.content is not a string")
        return ModelReply(
            text=text,
            tool_calls=calls,
            stop_reason=choice.get("finish_reason") or "",
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
            ),
            model=str(data.get("model", "")),
        )
    except MalformedReply:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise MalformedReply(
            f"openai reply is missing or mistypes a field: {type(exc).__name__}: {exc}"
        ) from exc


def _tool_call(raw: dict[str, Any]) -> ToolCall:
    function = raw["function"]
    arguments = function.get("arguments") or "{}"
    try:
        if not isinstance(msgspec.json.decode(arguments), dict):
            raise MalformedReply(f"tool call {raw.get('id')} arguments are not a JSON object")
    except msgspec.DecodeError as exc:
        raise MalformedReply(
            f"tool call {raw.get('id')} arguments are not valid JSON: {arguments[:200]!r}"
        ) from exc
    return ToolCall(id=str(raw["id"]), name=str(function["name"]), arguments=arguments)
