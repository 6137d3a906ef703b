"""The outbox as the application reads it: every message meant for a person, in log order.

    async with system.outbox(since=saved_position) as outbox:
        async for message in outbox:
            await deliver(message.channel, message.chat_id, message.text)
            save_position(message.position)   # with the delivery, if you can

Each message is an ``outbox.message_posted`` event (:mod:`clawlog.events.domain.outbox`)
read back with its envelope. ``since`` is exclusive: an application that saves the
``position`` of the last message it handled and restarts with it loses none and sees none
twice. The iterator catches up from the log, then follows new messages live (on the I/O
hub, so the application's loop never blocks); ``follow=False`` stops once caught up.
Closing the System ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection
from types import TracebackType
from typing import TYPE_CHECKING

import msgspec

from clawlog.events import RecordedEvent, StoreClosed, event_tag
from clawlog.events.domain.outbox import MessagePosted

from .errors import HubError

if TYPE_CHECKING:
    from .hub_store import HubStore, HubSubscription

__all__ = ["Outbox", "OutboxMessage"]

_TYPES = [event_tag(MessagePosted)]
_PAGE = 500


class OutboxMessage(msgspec.Struct, frozen=True, kw_only=True):
    """A message for a person, as the application receives it."""

    #: The event's global position: save it and pass it as ``since`` after a restart.
    position: int
    #: The agent and session that wrote it, and the session's stream.
    agent: str
    session_key: str
    stream: str
    #: Where it goes: the conversation's channel and chat (or those the ``message`` tool
    #: named), and the person the conversation is with.
    channel: str
    chat_id: str
    user: str
    text: str
    #: What caused it: ``reply`` (to ``send``), ``handoff``, ``subagent``, ``delegation``,
    #: ``teammate`` or ``message`` (the tool); new kinds may appear.
    kind: str
    #: True when the turn was resumed from the log after a restart: nobody awaited it
    #: (for ``kind="reply"``, ``send`` did not return it).
    resumed: bool
    #: Who spoke to the agent in the turn that produced it, the turn, and the message
    #: tool call ("" for a turn's reply).
    sender: str
    turn_id: str
    call_id: str
    #: The envelope: the turn it belongs to, and the turn or call that produced it.
    correlation_id: str | None
    causation_id: str | None
    recorded_at: float


def outbox_message(recorded: RecordedEvent) -> OutboxMessage:
    event = recorded.event
    assert isinstance(event, MessagePosted)
    return OutboxMessage(
        position=recorded.position,
        agent=event.agent,
        session_key=event.session_key,
        stream=recorded.stream,
        channel=event.channel,
        chat_id=event.chat_id,
        user=event.user,
        text=event.text,
        kind=event.kind,
        resumed=event.resumed,
        sender=event.sender,
        turn_id=event.turn_id,
        call_id=event.call_id,
        correlation_id=recorded.correlation_id,
        causation_id=recorded.causation_id,
        recorded_at=recorded.recorded_at,
    )


class Outbox:
    """An async iterator of :class:`OutboxMessage` after ``since``, filtered; an async
    context manager whose ``aclose()`` is idempotent. Made by ``System.outbox``."""

    def __init__(
        self,
        store: HubStore,
        since: int = 0,
        *,
        agent: str | None = None,
        channel: str | None = None,
        chat_id: str | None = None,
        kinds: Collection[str] | None = None,
        follow: bool = True,
    ) -> None:
        if type(since) is not int or since < 0:
            raise ValueError(f"since must be a position (an int >= 0), not {since!r}")
        if isinstance(kinds, str):
            raise ValueError("kinds must be a collection of kinds, not one string")
        self._store = store
        self._next = since + 1
        self._agent, self._channel, self._chat_id = agent, channel, chat_id
        self._kinds = frozenset(kinds) if kinds is not None else None
        self._follow = follow
        self._head: int | None = None
        self._page: list[RecordedEvent] = []
        self._live: HubSubscription | None = None
        self._closing: set[asyncio.Future[None]] = set()
        self._closed = False

    def __aiter__(self) -> Outbox:
        return self

    async def __anext__(self) -> OutboxMessage:
        while True:
            recorded = await self._next_event()
            self._next = recorded.position + 1
            if self._wanted(recorded.event):
                return outbox_message(recorded)

    async def _next_event(self) -> RecordedEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            if self._follow:
                if self._live is None:
                    self._live = self._store.subscribe(self._next, types=_TYPES)
                return await anext(self._live)
            return await self._caught_up_event()
        except (StoreClosed, HubError) as exc:  # the System closed under us
            await self.aclose()
            raise StopAsyncIteration from exc
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # Our caller is cancelled (a timeout around anext): the hub may already
                # have taken an event off the subscription for this step, and it is lost
                # with it. Drop the subscription; the next step subscribes again from the
                # first position not yet delivered, so nothing is skipped.
                self._drop_live()
                raise
            await self.aclose()  # the hub stopped (the System closed) during the wait
            raise StopAsyncIteration from None

    async def _caught_up_event(self) -> RecordedEvent:
        if self._head is None:
            self._head = await self._store.head_position()
        if not self._page and self._next <= self._head:
            self._page = await self._store.read_all(self._next, _PAGE, types=_TYPES)
            self._page.reverse()
        if not self._page or self._page[-1].position > self._head:
            raise StopAsyncIteration
        return self._page.pop()

    def _wanted(self, event: object) -> bool:
        return (
            isinstance(event, MessagePosted)
            and (self._agent is None or event.agent == self._agent)
            and (self._channel is None or event.channel == self._channel)
            and (self._chat_id is None or event.chat_id == self._chat_id)
            and (self._kinds is None or event.kind in self._kinds)
        )

    @property
    def position(self) -> int:
        """The position of the last event read (``since`` until one is read)."""
        return self._next - 1

    def _drop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:  # closed in the background: this task is being cancelled
            closing = asyncio.ensure_future(_close_quietly(live))
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        live, self._live = self._live, None
        if live is not None:
            await _close_quietly(live)

    async def __aenter__(self) -> Outbox:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def _close_quietly(live: HubSubscription) -> None:
    with contextlib.suppress(StoreClosed, HubError):
        await live.aclose()
