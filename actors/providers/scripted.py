"""A deterministic model for tests and the demo: replies from a script, no network.

model = ScriptedModel([
    call("read_file", path="notes.md"),      # first request: a tool call
    reply("Done: the notes say hi."),        # second request: a final answer
])
# or a function of the conversation:
model = ScriptedModel(lambda request: reply(f"you said {request.messages[-1].content}"))

It streams too (``model.stream(request)``): a reply's text comes in a few deltas, then the
reply; a :func:`stream_cut` step delivers its partial text, then raises ModelStreamCut.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import Any

import msgspec

from ..errors import ModelError, ModelStreamCut, ScriptExhausted
from .base import (
    ContentPart,
    ModelReply,
    ModelRequest,
    TextDelta,
    ToolCall,
    Usage,
    check_tool_choice,
)

__all__ = ["ScriptStep", "ScriptedModel", "call", "calls", "reply", "stream_cut"]

#: How many deltas a scripted text streams in, at most.
STREAM_PIECES = 3

_ids = itertools.count(1)
ScriptStep = ModelReply | ModelError | Callable[[ModelRequest], "ModelReply | ModelError"]


def reply(text: str) -> ModelReply:
    """A final answer."""
    return ModelReply(text=text, stop_reason="stop", usage=Usage(output_tokens=len(text.split())))


def call(name: str, text: str = "", call_id: str | None = None, **arguments: Any) -> ModelReply:
    """A reply asking for one tool call with ``arguments``."""
    return calls([(name, arguments)], text=text, ids=[call_id] if call_id else None)


def calls(
    requests: Iterable[tuple[str, dict[str, Any] | str]],
    text: str = "",
    ids: Sequence[str] | None = None,
) -> ModelReply:
    """A reply asking for several tool calls; a ``str`` argument is sent as raw JSON text."""
    tool_calls = []
    for index, (name, arguments) in enumerate(requests):
        raw = arguments if isinstance(arguments, str) else msgspec.json.encode(arguments).decode()
        call_id = ids[index] if ids else f"call_{next(_ids)}"
        tool_calls.append(ToolCall(id=call_id, name=name, arguments=raw))
    return ModelReply(text=text, tool_calls=tool_calls, stop_reason="tool_calls")


def stream_cut(partial_text: str, message: str = "the scripted stream was cut") -> ModelStreamCut:
    """A step whose stream delivers ``partial_text`` and then breaks off (``complete``
    raises it at once, as a request whose stream broke before its end)."""
    return ModelStreamCut(message, partial_text=partial_text)


def pieces(text: str, count: int = STREAM_PIECES) -> list[str]:
    """``text`` cut at word boundaries into at most ``count`` pieces that join back to it."""
    words = re.findall(r"\S+\s*|\s+", text)
    size = max(1, -(-len(words) // count))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


class ScriptedModel:
    """Replies in script order (shared by all sessions using it), or by a function.

    A step may be a :class:`ModelReply`, a :class:`ModelError` instance (raised, to test
    failures), or a callable of the request returning either.
    """

    def __init__(
        self,
        script: Sequence[ScriptStep] | Callable[[ModelRequest], ModelReply | ModelError],
        *,
        name: str = "scripted",
    ) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._function = script if callable(script) else None
        self._steps = list(script) if not callable(script) else []
        self._next = 0
        #: Every request received, in order (for assertions in tests).
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def provider(self) -> str:
        return "scripted"

    def check_part(self, part: ContentPart) -> None:
        """A script takes every part kind (its replies do not look at them)."""

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps) - self._next

    async def complete(self, request: ModelRequest) -> ModelReply:
        outcome = self._take(request)
        if isinstance(outcome, ModelError):
            raise outcome
        return outcome

    async def stream(self, request: ModelRequest) -> AsyncGenerator[TextDelta | ModelReply, None]:
        """The next reply's text in a few deltas, then the reply (one script step, as
        ``complete``); a :func:`stream_cut` step yields its partial text, then raises."""
        outcome = self._take(request)
        if isinstance(outcome, ModelStreamCut):
            for piece in pieces(outcome.partial_text):
                yield TextDelta(piece)
            raise outcome
        if isinstance(outcome, ModelError):
            raise outcome
        for piece in pieces(outcome.text):
            yield TextDelta(piece)
        yield outcome

    def _take(self, request: ModelRequest) -> ModelReply | ModelError:
        check_tool_choice(request)
        with self._lock:
            self.requests.append(request)
            if self._function is not None:
                step: ScriptStep = self._function
            elif self._next < len(self._steps):
                step = self._steps[self._next]
                self._next += 1
            else:
                raise ScriptExhausted(
                    f"the scripted model {self._name!r} has no reply left "
                    f"(it had {len(self._steps)})"
                )
        return step(request) if callable(step) else step
