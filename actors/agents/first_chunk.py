"""The time to a streamed reply's first text delta, on its ``chat`` span.

A traced turn that streams (``System.stream``) hands :func:`~.delta_sink.stream_reply`
a :class:`FirstChunkTimer` instead of its model (:meth:`.turn_trace.TurnTrace.streamed`):
the same model, whose stream, on its first text delta, sets
``gen_ai.response.time_to_first_chunk`` (seconds since the request was made, the GenAI
semconv's attribute) on the request's span. It runs on the hub, where the stream is read;
the SDK's spans take attributes from any thread. Untraced turns never build one.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from opentelemetry.trace import Span

from clawlog.events.telemetry import GEN_AI_TIME_TO_FIRST_CHUNK

from ..providers.base import ModelReply, ModelRequest, StreamingModel, TextDelta

__all__ = ["FirstChunkTimer"]


class FirstChunkTimer:
    """A :class:`StreamingModel` that times its first text delta onto ``span``."""

    __slots__ = ("_model", "_span", "_started")

    def __init__(self, model: StreamingModel, span: Span, started: float) -> None:
        self._model = model
        self._span = span
        #: ``time.monotonic()`` when the request was made (``TurnTrace.model_started``).
        self._started = started

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def provider(self) -> str:
        return self._model.provider

    async def complete(self, request: ModelRequest) -> ModelReply:
        return await self._model.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextDelta | ModelReply]:
        items = self._model.stream(request)
        timed = False
        try:
            async for item in items:
                if not timed and isinstance(item, TextDelta):
                    timed = True
                    seconds = time.monotonic() - self._started
                    self._span.set_attribute(GEN_AI_TIME_TO_FIRST_CHUNK, seconds)
                yield item
        finally:  # closed early (the turn was cancelled): the provider's stream closes too
            close = getattr(items, "aclose", None)
            if close is not None:
                await close()
