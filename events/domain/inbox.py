"""Messages for sessions another process owns (several processes on one PostgreSQL log).

A process that has a message for a session whose stream another live process leases
appends it to the session's inbox, ``inbox/{agent}/{session_key}``, as
``inbox.message_sent``; the owner's session takes it as turn ``turn_id`` (recording the
message's inbox version on its ``session.turn_started``), and the sender learns the
reply from the log: the session's ``session.turn_completed`` (or failed, cancelled) of
that turn. No table, no socket: the log is the channel. Several processes append to one
inbox (``expected_version=ANY``); only the session's owner reads it as work.

The text is scrubbed like a turn's (it is in the log before any session has it): a
secret in a message sent across processes reaches the model as ``[REDACTED]``.
"""

from __future__ import annotations

import msgspec

from ..base import Event
from .session import ContentPart

__all__ = ["EVENTS", "InboxEvent", "InboxMessageSent"]


class InboxMessageSent(Event, frozen=True, tag="inbox.message_sent"):
    """A message for session ``session_key`` of ``agent``, to become turn ``turn_id``."""

    turn_id: str
    agent: str
    session_key: str
    text: str
    sender: str = "user"
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    parts: list[ContentPart] = msgspec.field(default_factory=list)
    #: The outbox kind of the turn's reply ("" = only for the sender), as ``send`` sets it.
    outbox_kind: str = ""
    skip_quality_gates: bool = False
    #: The process that sent it (its lease owner name), for the record.
    sent_by: str = ""


InboxEvent = InboxMessageSent
EVENTS = (InboxMessageSent,)
