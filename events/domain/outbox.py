"""The outbox: every message meant for a person, as one event type.

A reply to ``send``, the reply of a turn resumed after a restart, a handoff target's
introduction, a parent's answer to its subagents' or delegations' announcement, a lead's
answer to a teammate's report and a ``message`` tool call all end as a
``outbox.message_posted`` event, appended by the stream's owner (the Session, on its own
stream) in the same append as the event that produced it (the ``session.turn_completed``
of the turn, or between the message tool's ``tool.call_started`` and its end).

Why one event type instead of mapping the existing ones (``session.turn_completed``,
``subagent.announced``, ``delegation.announced``...): whether a turn's reply is meant for a
person depends on who started the turn (the reply of a delegation target goes back to the
delegating agent, a subagent's to its parent, a teammate's board work to nobody), and that
decision would otherwise be re-derived by every reader from sender strings. Recording it
once, where it is made, gives the application one type to follow, the auditor one record
of what was said to whom and why (``kind``, the turn and the call), and leaves the other
events' meaning unchanged. Readers that do not know the tag skip it.
"""

from __future__ import annotations

from ..base import Event

__all__ = ["EVENTS", "OUTBOX_KINDS", "MessagePosted", "OutboxEvent"]

#: What caused a message: the reply to ``send``; a handoff target's introduction; the
#: answer to subagent results, to a delegation's result or to a teammate's report; a
#: ``message`` tool call. New kinds may be added; readers must accept unknown ones.
#: ``cron``, ``heartbeat`` and ``routine``: the reply of a turn a routine started
#: (``events.domain.routine``; a heartbeat that says nothing needs doing posts nothing).
OUTBOX_KINDS = (
    "reply",
    "handoff",
    "subagent",
    "delegation",
    "teammate",
    "message",
    "cron",
    "heartbeat",
    "routine",
)


class MessagePosted(Event, frozen=True, tag="outbox.message_posted"):
    """A message for a person, on the stream of the session that wrote it."""

    agent: str
    session_key: str
    text: str
    #: One of :data:`OUTBOX_KINDS`.
    kind: str
    channel: str = ""
    chat_id: str = ""
    #: The person the conversation is with, as the channel names them.
    user: str = ""
    #: The turn that produced it, and who spoke to the agent in that turn ("user",
    #: "handoff:front", "subagent", "delegate:d-1", "teammate:dev", ...).
    turn_id: str = ""
    sender: str = ""
    #: The ``message`` tool call that posted it ("" for a turn's reply).
    call_id: str = ""
    #: True for the reply of a turn resumed from the log after a restart: nobody awaited it.
    resumed: bool = False


OutboxEvent = MessagePosted
EVENTS = (MessagePosted,)
