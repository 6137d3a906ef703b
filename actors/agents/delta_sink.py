"""Where a streamed turn's text goes: from the hub loop straight to the application's loop.

A :class:`DeltaSink` is written by the model call running on the I/O hub
(:func:`stream_reply` pushes each piece of text as the provider yields it) and read by
:class:`~clawlog.actors.agents.streaming.TurnStream` on the application's loop. It is also
the turn's reply object (``set`` / ``set_error``, as :class:`~clawlog.actors._bridge.LoopReply`):
the Session answers it when the turn ends, after every delta of the turn was pushed, so a
reader sees all the text first and then the end. The deltas never pass through the
Session's thread: one lock, one append and, when the reader is waiting, one
``call_soon_threadsafe`` per delta.

Backpressure: the hub never waits for the reader. At most ``capacity`` deltas wait to be
read; past that, a new piece is joined to the last waiting delta of the same model
iteration (so a slow reader gets fewer, larger deltas, and no text is lost; what waits is
at most the turn's text, which the provider holds anyway). A reader that detaches (closes
its stream) makes every later push a no-op: the turn goes on without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Any

import msgspec

from ..errors import ModelStreamCut
from ..providers.base import Model, ModelReply, ModelRequest, StreamingModel, TextDelta

__all__ = ["STREAM_BUFFER", "DeltaSink", "TurnDelta", "stream_reply"]

#: How many deltas may wait for a slow reader before new text joins the last one.
STREAM_BUFFER = 256


class TurnDelta(msgspec.Struct, frozen=True):
    """A piece of a streamed turn's text, as the model produced it."""

    #: The text, to append to what came before in the same iteration.
    text: str
    #: The model request (1, 2, ...) of the turn it belongs to: a turn that calls tools
    #: asks the model again, and each answer's text streams under its own iteration.
    iteration: int


class DeltaSink:
    """The deltas of one turn waiting for their reader, then the turn's end."""

    __slots__ = (
        "_capacity",
        "_detached",
        "_ended",
        "_error",
        "_lock",
        "_loop",
        "_pending",
        "_reply",
        "_waiter",
        "coalesced",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, capacity: int = STREAM_BUFFER) -> None:
        if capacity < 1:
            raise ValueError(f"a delta sink's capacity must be at least 1, not {capacity}")
        self._loop = loop
        self._capacity = capacity
        self._lock = threading.Lock()
        #: (iteration, pieces): pieces are joined when read (a slow reader's deltas grow
        #: without copying the text again at each push).
        self._pending: deque[tuple[int, list[str]]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._reply: Any = None
        self._error: BaseException | None = None
        self._detached = False
        #: Pushes joined to a waiting delta because the reader was behind.
        self.coalesced = 0

    # -- the writer side (any thread: the hub's loop, the Session's thread) -------------
    def push(self, iteration: int, text: str) -> None:
        """Queue ``text`` for the reader; never blocks. A no-op once detached or ended."""
        if not text:
            return
        with self._lock:
            if self._detached or self._ended:
                return
            pending = self._pending
            if len(pending) >= self._capacity and pending[-1][0] == iteration:
                pending[-1][1].append(text)
                self.coalesced += 1
            else:
                pending.append((iteration, [text]))
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self._wake(waiter)

    def set(self, value: Any) -> None:
        """The turn completed with ``value`` (its reply): the reader's last item."""
        self._end(value, None)

    def set_error(self, error: BaseException) -> None:
        """The turn ended without a reply: the reader raises ``error`` after the deltas."""
        self._end(None, error)

    def _end(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended, self._reply, self._error = True, value, error
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self._wake(waiter)

    def _wake(self, waiter: asyncio.Future[None]) -> None:
        # RuntimeError: the reader's loop is closed, so nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(_release, waiter)

    # -- the reader side (the application's loop) ---------------------------------------
    async def next(self) -> TurnDelta | None:
        """The next delta; None once the turn completed (its reply is :attr:`reply`).

        Raises the turn's error (after every delta that came before it)."""
        while True:
            with self._lock:
                if self._pending:
                    iteration, pieces = self._pending.popleft()
                    return TurnDelta("".join(pieces), iteration)
                if self._ended:
                    if self._error is not None:
                        raise self._error
                    return None
                waiter = self._waiter = self._loop.create_future()
            await waiter

    @property
    def ended(self) -> bool:
        return self._ended

    @property
    def reply(self) -> Any:
        """The turn's reply once it completed (None before, or when it failed)."""
        return self._reply

    def detach(self) -> None:
        """The reader stops reading: what waits is dropped and later pushes are ignored."""
        with self._lock:
            self._detached = True
            self._pending.clear()
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.cancel()


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def stream_reply(
    model: Model, request: ModelRequest, sink: DeltaSink, iteration: int
) -> ModelReply:
    """``model``'s reply to ``request``, its text pushed to ``sink`` as it arrives (runs on
    the hub). A model that cannot stream answers with ``complete``: its whole text is one
    delta. Raises what the model raises; a stream that ends without its reply is cut."""
    if not isinstance(model, StreamingModel):
        reply = await model.complete(request)
        sink.push(iteration, reply.text)
        return reply
    final: ModelReply | None = None
    delivered: list[str] = []
    items = model.stream(request)
    try:
        async for item in items:
            if isinstance(item, TextDelta):
                delivered.append(item.text)
                sink.push(iteration, item.text)
            else:
                final = item
    finally:  # cancelled (the turn was): the provider's connection closes now, not later
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()
    if final is None:
        raise ModelStreamCut(
            f"the {model.provider} model {model.name!r} ended its stream without the complete "
            "reply (a StreamingModel yields its ModelReply last)",
            partial_text="".join(delivered),
        )
    return final
