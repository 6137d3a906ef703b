"""Sessions another process owns: a message goes to them through the log, and the reply
comes back the same way (several processes on one PostgreSQL log).

``send`` appends the message to the session's inbox (``inbox.message_sent`` on
``inbox/{agent}/{session_key}``, :mod:`clawlog.events.domain.inbox`) and waits for that
turn's end in the session's stream; ``wait`` only waits (a turn this process began and
another took over). The reply is the end's recorded text: a completed turn's reply as the
log holds it (scrubbed), a failed or cancelled turn as the error the owner's asker got.

While it waits it watches the session's lease: if no live process holds it (the owner
died and its lease expired, or released it with this message waiting), the session is
taken over here, if the placement allows (:class:`~actors.agents.router.SessionRouter`):
the session resumes its unfinished turn from the log and reads its inbox, so the message
is answered once, by whoever serves the session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from clawlog.events import ANY, EventMetadata, RecordedEvent, StoreUnavailable
from clawlog.events.domain.session import TurnCancelled, TurnCompleted, TurnFailed
from clawlog.events.logging import get_logger
from clawlog.events.streams import inbox_stream, session_stream

from ..errors import TurnCancelledError, TurnFailedError
from .inbox import inbox_event
from .messages import SendMessage

__all__ = ["RemoteSessions"]

_log = get_logger(__name__)
_ENDS = ["session.turn_completed", "session.turn_failed", "session.turn_cancelled"]
#: How far back in a session's stream a turn's end is looked for when waiting starts.
_LOOK_BACK = 500


class RemoteSessions:
    """Delivery to sessions owned by another process; runs on the I/O hub."""

    def __init__(self, runtime: Any, router: Any) -> None:
        self._runtime = runtime
        #: Decides who serves a session nobody holds (actors.agents.router).
        self._router = router
        self._tasks: set[asyncio.Task[None]] = set()

    def send(
        self, agent: str, message: SendMessage, reply: Any, scrub: Callable[[str], str]
    ) -> None:
        """Post ``message`` (its ``turn_id`` set) to its session's inbox; answer ``reply``
        when the turn ends. Safe from any thread."""
        self._start(self._send(agent, message, reply, scrub))

    def wait(self, agent: str, session_key: str, turn_id: str, reply: Any) -> None:
        """Answer ``reply`` when turn ``turn_id`` of the session ends (another process
        finishes it). Safe from any thread."""
        self._start(self._answer(agent, session_key, turn_id, reply, after=None))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- on the hub ---------------------------------------------------------------------
    def _start(self, coro: Any) -> None:
        def run() -> None:
            task = asyncio.get_running_loop().create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        hub = self._runtime.hub
        if hub.in_hub_thread():
            run()
        else:
            hub.loop.call_soon_threadsafe(run)

    async def _send(
        self, agent: str, message: SendMessage, reply: Any, scrub: Callable[[str], str]
    ) -> None:
        store = self._runtime.store
        try:
            event = inbox_event(agent, message, scrub, self._runtime.ownership.owner)
            meta = EventMetadata(
                correlation_id=message.turn_id, actor=self._runtime.ownership.owner
            )
            stream = inbox_stream(agent, message.session_key)
            # The turn can only end after its message is in the log: wait from there.
            head = (await store.append(stream, [event], ANY, meta))[-1].position
        except Exception as exc:
            reply.set_error(
                exc
                if isinstance(exc, StoreUnavailable)
                else TurnFailedError(
                    "session_unavailable", f"the message could not be sent to its session: {exc}"
                )
            )
            return
        posted = [event]

        async def post_again() -> None:  # for a process that serves it to see it
            await store.append(inbox_stream(agent, message.session_key), posted, ANY, meta)

        await self._answer(agent, message.session_key, message.turn_id, reply, head, post_again)

    async def _answer(
        self,
        agent: str,
        session_key: str,
        turn_id: str,
        reply: Any,
        after: int | None,
        post_again: Callable[[], Any] | None = None,
    ) -> None:
        try:
            ended = await self._wait_end(agent, session_key, turn_id, after, post_again)
        except asyncio.CancelledError:
            reply.set_error(TurnFailedError("session_unavailable", "the System is closing"))
            raise
        except Exception as exc:
            reply.set_error(
                TurnFailedError("session_unavailable", f"lost track of the turn: {exc}")
            )
            return
        if isinstance(ended, TurnCompleted):
            reply.set(ended.reply)
        elif isinstance(ended, TurnFailed):
            reply.set_error(TurnFailedError(ended.reason, ended.message))
        else:
            reply.set_error(TurnCancelledError(f"the turn was cancelled by {ended.by}"))

    async def _wait_end(
        self,
        agent: str,
        session_key: str,
        turn_id: str,
        after: int | None,
        post_again: Callable[[], Any] | None,
    ) -> TurnCompleted | TurnFailed | TurnCancelled:
        """The end of ``turn_id`` in the session's stream: already there (looked for in its
        last events), or when it is appended. Every third of a lease the session's lease
        is looked at: nobody's, it is taken over here; if this process does not serve it
        (a placement, a drain), the message is posted again, once, for the processes that
        do to see it (a session takes a turn id once)."""
        store, stream = self._runtime.store, session_stream(agent, session_key)
        if after is None:
            found = await self._recent_end(stream, turn_id)
            if found is not None:
                return found
            after = await store.head_position()
        ends: asyncio.Queue[RecordedEvent] = asyncio.Queue()

        async def follow() -> None:
            async with store.subscribe(after + 1, stream_prefix=stream, types=_ENDS) as live:
                async for recorded in live:
                    if recorded.stream == stream:
                        ends.put_nowait(recorded)

        follower = asyncio.create_task(follow())
        period = self._runtime.ownership.ttl_s / 3
        try:
            while True:
                try:  # asyncio.timeout, not wait_for: a close's cancel must not be lost
                    async with asyncio.timeout(period):
                        recorded = await ends.get()
                except TimeoutError:
                    if follower.done():
                        follower.result()  # its error, if it failed
                    if self._router.serves(agent, session_key):
                        self._router.take_over(agent, session_key)
                    elif post_again is not None and await self._router.is_free(agent, session_key):
                        await post_again()
                        post_again = None
                    continue
                event = recorded.event
                if isinstance(event, TurnCompleted | TurnFailed | TurnCancelled) and (
                    event.turn_id == turn_id
                ):
                    return event
        finally:
            follower.cancel()
            with contextlib.suppress(BaseException):
                await follower

    async def _recent_end(
        self, stream: str, turn_id: str
    ) -> TurnCompleted | TurnFailed | TurnCancelled | None:
        store = self._runtime.store
        version = await store.stream_version(stream)
        for recorded in await store.read_stream(
            stream, max(1, version - _LOOK_BACK), _LOOK_BACK + 1
        ):
            event = recorded.event
            if (
                isinstance(event, TurnCompleted | TurnFailed | TurnCancelled)
                and event.turn_id == turn_id
            ):
                return event
        return None
