"""The message a user's ``System.send`` or ``System.stream`` becomes, its arguments
checked at the boundary (:mod:`actors.boundary`) before anything is sent or appended."""

from __future__ import annotations

from clawlog.events.telemetry import context_carrier

from ..boundary import Limits, check_name, check_parts, check_text
from .messages import SendMessage

__all__ = ["user_message"]


def user_message(
    limits: Limits,
    session_key: str,
    text: object,
    parts: object,
    *,
    channel: object,
    chat_id: object,
    user: object,
    sender: object,
    turn_id: str = "",
) -> SendMessage:
    """The checked arguments as the message a session takes; its reply also goes to the
    outbox. Raises what the boundary's checks raise, naming the argument."""
    checked_text = check_text(text, limits)
    return SendMessage(
        session_key=session_key,
        text=checked_text,
        parts=check_parts(parts, checked_text, limits),
        channel=check_name(channel, "channel", limits),
        chat_id=check_name(chat_id, "chat_id", limits),
        user=check_name(user, "user", limits),
        sender=check_name(sender, "sender", limits, required=True),
        outbox_kind="reply",
        turn_id=turn_id,
        trace_context=context_carrier(),  # the turn's span: a child of the caller's
    )
