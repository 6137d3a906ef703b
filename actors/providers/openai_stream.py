"""Assembling a streamed chat completion: text deltas, tool calls from their pieces, the
usage block of the last chunk.

Each chunk's ``choices[0].delta`` carries text and tool-call pieces: the first piece of a
call (keyed by ``index``) names its id and function, the next ones append to its
arguments. With ``stream_options.include_usage`` a last chunk with no choices carries the
usage; ``data: [DONE]`` ends the stream.
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
from .base import ModelReply, Usage
from .openai_wire import parse_usage, tool_call
from .sse import ServerSentEvent

__all__ = ["OpenAIStreamAssembler"]


class _CallPieces(msgspec.Struct):
    """One tool call being assembled."""

    id: str = ""
    name: str = ""
    arguments: list[str] = msgspec.field(default_factory=list)


class OpenAIStreamAssembler:
    """Fed the events of one streamed reply; gives its text deltas, then the reply."""

    def __init__(self) -> None:
        self.finished = False
        self._text: list[str] = []
        #: The calls in the order they started, and the one each ``index`` now builds.
        self._calls: list[_CallPieces] = []
        self._by_index: dict[int, _CallPieces] = {}
        self._stop_reason = ""
        self._model = ""
        self._usage = Usage()

    def feed(self, event: ServerSentEvent) -> str:
        data = event.data.strip()
        if data == "[DONE]":
            self.finished = True
            return ""
        if not data:  # a keep-alive some compatible servers send: no chunk
            return ""
        chunk = _decode(event.data)
        if chunk.get("error"):
            raise _error_event(chunk["error"])
        try:
            return self._take(chunk)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ModelStreamCut(
                f"openai sent a malformed stream chunk ({type(exc).__name__}: {exc}): "
                f"{event.data[:200]!r}"
            ) from exc

    def _take(self, chunk: dict[str, Any]) -> str:
        self._model = str(chunk.get("model") or self._model)
        if chunk.get("usage"):
            self._usage = parse_usage(chunk["usage"])
        choices = chunk.get("choices") or []
        choice = next((c for c in choices if c.get("index", 0) == 0), None)
        if choice is None:
            return ""
        self._stop_reason = choice.get("finish_reason") or self._stop_reason
        delta = choice.get("delta") or {}
        for position, piece in enumerate(delta.get("tool_calls") or []):
            self._take_call_piece(position, piece)
        # A refusal streams in its own field, as the reply's text does (see parse_reply).
        text = delta.get("content") or delta.get("refusal") or ""
        if not isinstance(text, str):
            raise TypeError("delta.content is not a string")
        if text:
            self._text.append(text)
        return text

    def _take_call_piece(self, position: int, piece: dict[str, Any]) -> None:
        """A piece goes to the call its ``index`` builds. A piece naming another id than
        that call's starts a new call: some compatible servers (Ollama) give every call
        of a reply ``index`` 0, or none, and would otherwise merge them into bad JSON.
        A repeated id (vLLM names it in every piece) is the same call."""
        index = piece.get("index")
        index = position if index is None else int(index)
        piece_id = str(piece.get("id") or "")
        call = self._by_index.get(index)
        if call is None or (piece_id and call.id and piece_id != call.id):
            call = self._by_index[index] = _CallPieces()
            self._calls.append(call)
        call.id = call.id or piece_id
        function = piece.get("function") or {}
        call.name = call.name or str(function.get("name") or "")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a compatible server that sends the object itself
            arguments = msgspec.json.encode(arguments).decode()
        if arguments:
            call.arguments.append(str(arguments))

    def reply(self) -> ModelReply:
        for number, pieces in enumerate(self._calls, 1):
            if not pieces.id or not pieces.name:
                raise MalformedReply(
                    f"openai streamed tool call #{number} without its "
                    f"{'id' if not pieces.id else 'function name'}"
                )
        calls = [
            tool_call(
                {
                    "id": pieces.id,
                    "function": {"name": pieces.name, "arguments": "".join(pieces.arguments)},
                }
            )
            for pieces in self._calls
        ]
        return ModelReply(
            text="".join(self._text),
            tool_calls=calls,
            stop_reason=self._stop_reason,
            usage=self._usage,
            model=self._model,
        )


def _decode(data: str) -> dict[str, Any]:
    try:
        chunk = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ModelStreamCut(
            f"openai sent a stream chunk that is not valid JSON ({exc}): {data[:200]!r}"
        ) from exc
    if not isinstance(chunk, dict):
        raise ModelStreamCut(f"openai sent a stream chunk that is no JSON object: {data[:200]!r}")
    return chunk


def _error_event(error: Any) -> ModelError:
    """An error sent in the stream, mapped like the HTTP status it stands for."""
    if not isinstance(error, dict):
        return ModelServerError(f"openai's stream ended with an error: {str(error)[:500]}")
    kind = f"{error.get('type') or ''} {error.get('code') or ''}"
    text = f"openai's stream ended with an error: {str(error.get('message') or kind)[:500]}"
    if "rate_limit" in kind:
        return ModelRateLimited(text)
    if "auth" in kind or "permission" in kind:
        return ModelAuthError(text)
    if "invalid_request" in kind:
        return ModelBadRequest(text)
    return ModelServerError(text)
