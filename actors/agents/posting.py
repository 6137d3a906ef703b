"""What a Session appends to put a message in the outbox (events.domain.outbox)."""

from __future__ import annotations

from clawlog.events.domain.outbox import MessagePosted

from .session_state import SessionState

__all__ = ["message_posted"]


def message_posted(
    agent: str,
    session_key: str,
    state: SessionState,
    text: str,
    kind: str,
    *,
    channel: str = "",
    chat_id: str = "",
    call_id: str = "",
    resumed: bool = False,
) -> MessagePosted:
    """The outbox event for ``text`` from the turn in flight; the conversation's channel
    and chat unless ``channel`` names another one."""
    turn = state.turn
    if not channel:
        channel, chat_id = state.channel, chat_id or state.chat_id
    return MessagePosted(
        agent=agent,
        session_key=session_key,
        text=text,
        kind=kind,
        channel=channel,
        chat_id=chat_id,
        user=state.user,
        turn_id=turn.turn_id if turn is not None else "",
        sender=turn.sender if turn is not None else "",
        call_id=call_id,
        resumed=resumed,
    )
