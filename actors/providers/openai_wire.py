"""The OpenAI chat-completions wire format: the request body, the reply, its usage block.

Reasoning models (the o1, o3, o4-mini and gpt-5 families) refuse ``max_tokens`` and take
``max_completion_tokens``: picked by the model's name unless the caller says, never both.
Message parts map to content parts (``image_url``, ``file``); tool results and assistant
messages carry text only in this API.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ..errors import MalformedReply, ModelBadRequest
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

__all__ = [
    "check_part",
    "parse_reply",
    "parse_usage",
    "request_body",
    "tool_call",
    "uses_max_completion_tokens",
]

#: Model names (after any "vendor/" prefix) that take ``max_completion_tokens``.
_COMPLETION_TOKENS_MODELS = re.compile(r"^(o\d+|gpt-5)(\b|[-._])", re.IGNORECASE)


def uses_max_completion_tokens(model: str) -> bool:
    """True for the reasoning models that refuse ``max_tokens`` (o1, o3, o4-mini, gpt-5...)."""
    return bool(_COMPLETION_TOKENS_MODELS.match(model.rsplit("/", 1)[-1]))


def request_body(
    request: ModelRequest, *, max_completion_tokens: bool | None = None
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_message(m) for m in request.messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if max_completion_tokens is None:
        max_completion_tokens = uses_max_completion_tokens(request.model)
    body["max_completion_tokens" if max_completion_tokens else "max_tokens"] = request.max_tokens
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
        if request.tool_choice is not None:
            body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": _text_only(message, "a tool result"),
        }
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": _text_only(message, "an assistant message") or None,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ],
        }
    if message.role == "user" and message.parts:
        return {"role": "user", "content": [_part(p) for p in message_parts(message)]}
    return {"role": message.role, "content": _text_only(message, f"a {message.role} message")}


def _text_only(message: ChatMessage, what: str) -> str:
    """The text of a message the chat-completions API takes as text only."""
    if not message.parts:
        return message.content
    if any(not isinstance(part, TextPart) for part in message.parts):
        raise ModelBadRequest(
            f"openai chat completions take only text in {what}; send images and documents "
            "in a user message"
        )
    return "".join(part.text for part in message_parts(message) if isinstance(part, TextPart))


def check_part(part: ContentPart) -> None:
    """Raise ``ModelBadRequest`` for a part a user message cannot carry in this API (a
    document by URL)."""
    _part(part)


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        image: dict[str, Any] = {"url": part.url or f"data:{part.media_type};base64,{part.data}"}
        if part.detail:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    if isinstance(part, DocumentPart):
        if part.url:
            raise ModelBadRequest(
                "openai chat completions take documents only as base64 data, not by URL "
                f"({part.url}); fetch it and pass DocumentPart(data=...)"
            )
        return {
            "type": "file",
            "file": {
                "filename": part.filename or "document.pdf",
                "file_data": f"data:{part.media_type};base64,{part.data}",
            },
        }
    raise ModelBadRequest(f"openai cannot send a {type(part).__name__} part")


def parse_usage(usage: Any) -> Usage:
    """OpenAI's usage block: ``prompt_tokens`` includes the cached ones, and
    ``completion_tokens`` the reasoning ones, as ``Usage`` counts them."""
    usage = usage or {}
    prompt = usage.get("prompt_tokens_details") or {}
    completion = usage.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cached_input_tokens=int(prompt.get("cached_tokens") or 0),
        reasoning_tokens=int(completion.get("reasoning_tokens") or 0),
    )


def parse_reply(data: Any) -> ModelReply:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        # A model that refuses answers in ``refusal`` (content null): what it says is the
        # reply, not an empty one.
        text = message.get("content") or message.get("refusal") or ""
        calls = [tool_call(c) for c in message.get("tool_calls") or []]
        if not isinstance(text, str):
            raise TypeError("message.content is not a string")
        return ModelReply(
            text=text,
            tool_calls=calls,
            stop_reason=choice.get("finish_reason") or "",
            usage=parse_usage(data.get("usage")),
            model=str(data.get("model", "")),
        )
    except MalformedReply:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise MalformedReply(
            f"openai reply is missing or mistypes a field: {type(exc).__name__}: {exc}"
        ) from exc


def tool_call(raw: dict[str, Any]) -> ToolCall:
    """A tool call of a reply (or assembled from a stream's pieces); its arguments must be
    a JSON object."""
    function = raw["function"]
    arguments = function.get("arguments") or "{}"
    if isinstance(arguments, dict):  # a compatible server that sends the object itself
        arguments = msgspec.json.encode(arguments).decode()
    if not isinstance(arguments, str):
        raise MalformedReply(
            f"tool call {raw.get('id')} arguments are a {type(arguments).__name__}, "
            "not a JSON object's text"
        )
    try:
        if not isinstance(msgspec.json.decode(arguments), dict):
            raise MalformedReply(f"tool call {raw.get('id')} arguments are not a JSON object")
    except msgspec.DecodeError as exc:
        raise MalformedReply(
            f"tool call {raw.get('id')} arguments are not valid JSON: {arguments[:200]!r}"
        ) from exc
    return ToolCall(id=str(raw["id"]), name=str(function["name"]), arguments=arguments)
