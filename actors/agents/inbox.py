"""A session's inbox: messages other processes sent it (several processes on one
PostgreSQL log; :mod:`clawlog.events.domain.inbox`). The sender's side is
:mod:`.remote`; this is what a session does with them."""

from __future__ import annotations

from typing import Any

from clawlog.events.domain.inbox import InboxMessageSent
from clawlog.events.streams import inbox_stream

from .messages import SendMessage

__all__ = ["inbox_event", "read_inbox", "sent_message"]


async def read_inbox(
    store: Any, agent: str, session_key: str, after: int
) -> list[tuple[int, InboxMessageSent]]:
    """The inbox's messages after version ``after``, with their versions (on the hub)."""
    return [
        (recorded.version, recorded.event)
        async for recorded in store.iter_stream(inbox_stream(agent, session_key), after + 1)
        if isinstance(recorded.event, InboxMessageSent)
    ]


def sent_message(version: int, event: InboxMessageSent) -> SendMessage:
    """The message a session takes from its inbox, as the turn ``event.turn_id``."""
    return SendMessage(
        session_key=event.session_key,
        text=event.text,
        sender=event.sender,
        channel=event.channel,
        chat_id=event.chat_id,
        user=event.user,
        turn_id=event.turn_id,
        outbox_kind=event.outbox_kind,
        skip_quality_gates=event.skip_quality_gates,
        parts=list(event.parts),
        inbox_version=version,
        correlation_id=event.turn_id,
    )


def inbox_event(agent: str, message: SendMessage, scrub: Any, sent_by: str) -> InboxMessageSent:
    """``message`` as it is posted to its session's inbox: scrubbed, as a turn's start
    would record it (it is in the log before the owner has it)."""
    return InboxMessageSent(
        turn_id=message.turn_id,
        agent=agent,
        session_key=message.session_key,
        text=scrub(message.text),
        sender=message.sender,
        channel=message.channel,
        chat_id=message.chat_id,
        user=message.user,
        parts=list(message.parts),
        outbox_kind=message.outbox_kind,
        skip_quality_gates=message.skip_quality_gates,
        sent_by=sent_by,
    )
