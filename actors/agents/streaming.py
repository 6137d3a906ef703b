"""A turn whose text the application reads as it arrives: what ``System.stream`` returns.

    async with system.stream("assistant", "chat-42", "What changed?") as turn:
        async for delta in turn:          # TurnDelta(text, iteration), as the model writes
            ui.append(delta.text)
    print(turn.reply)                     # the whole reply, as System.send returns it

The turn is the one ``System.send`` runs: the same events in the log, the same reply in
the outbox, the same errors (raised by the iteration, after the text that came before
them). Only the path of the text differs: each model step streams when its model can
(:class:`~clawlog.actors.providers.StreamingModel`; any other model's text arrives as one
delta), and the pieces go from the I/O hub to the application's loop without waiting for
the log (:mod:`.delta_sink`). What is recorded is the complete reply, once; a stream cut
off in the middle ends the turn as a model error (``ModelFailed`` kind ``stream_cut``) and
the iteration raises ``TurnFailedError``: the text already shown is not a reply.

The turn starts when the stream is entered or first iterated, and the timeout (as
``send``'s) counts from then. Closing the stream before the end (leaving the ``async
with`` block, ``aclose()``) only detaches the reader: the turn goes on, its reply is
recorded and goes to the outbox as ``send``'s does. To stop the turn itself, call
``System.cancel``. A reader cancelled while it waits (``asyncio.wait_for`` around one
``anext``) loses nothing: the next ``anext`` goes on where it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Literal

from ..errors import AskTimeout
from .delta_sink import DeltaSink, TurnDelta

__all__ = ["TurnStream"]

#: Sends the turn's message with the sink as its reply and delta target.
TurnStarter = Callable[[DeltaSink], Awaitable[None]]


class TurnStream:
    """The deltas of one turn (an async iterator, and an async context manager that
    detaches on exit); :attr:`reply` once the iteration ended without an error."""

    def __init__(self, start: TurnStarter, *, turn_id: str, timeout: float, what: str) -> None:
        self._start = start
        #: The id of the turn in the log (``TurnStarted.turn_id``, the events' correlation).
        self.turn_id = turn_id
        self._timeout = timeout
        self._what = what
        self._sink: DeltaSink | None = None
        self._deadline = 0.0
        self._state: Literal["unopened", "open", "ended", "closed"] = "unopened"

    @property
    def reply(self) -> str | None:
        """The turn's reply (as ``System.send`` returns it) once the iteration ended; None
        before, and when the turn failed or the stream was closed first."""
        if self._sink is None or self._state == "closed":
            return None
        return self._sink.reply  # type: ignore[no-any-return]

    @property
    def coalesced(self) -> int:
        """Pieces joined to a waiting delta because this reader was behind."""
        return 0 if self._sink is None else self._sink.coalesced

    async def __aenter__(self) -> TurnStream:
        await self._open()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> TurnDelta:
        if self._state == "unopened":
            await self._open()
        if self._state != "open":
            raise StopAsyncIteration
        sink = self._sink
        assert sink is not None
        deadline = asyncio.timeout_at(self._deadline)
        try:
            async with deadline:
                delta = await sink.next()
        except TimeoutError:
            if not deadline.expired():
                self._state = "ended"  # the turn's own error (raised once)
                raise
            self._close()
            raise AskTimeout(
                f"{self._what} did not end within {self._timeout} s; the turn goes on (its "
                "reply goes to the outbox; stop it with System.cancel)"
            ) from None
        except asyncio.CancelledError:
            raise  # the reader was cancelled: the stream stays open (aclose detaches it)
        except BaseException:
            self._state = "ended"  # the turn's error (raised once, after its deltas)
            raise
        if delta is None:
            self._state = "ended"
            raise StopAsyncIteration
        return delta

    async def aclose(self) -> None:
        """Stop reading: the turn goes on without this reader. Safe to call twice."""
        if self._state in ("unopened", "open"):
            self._close()

    async def _open(self) -> None:
        if self._state != "unopened":
            return
        sink = DeltaSink(asyncio.get_running_loop())
        self._state, self._sink = "open", sink
        self._deadline = asyncio.get_running_loop().time() + self._timeout
        try:
            await self._start(sink)
        except BaseException:
            self._close()
            raise

    def _close(self) -> None:
        self._state = "closed"
        if self._sink is not None:
            self._sink.detach()
