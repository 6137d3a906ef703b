"""Messages to AgentSupervisor and Session actors."""

from __future__ import annotations

import msgspec

from clawlog.events.domain.tool import ApprovalDecision

from ..messages import Message, Request

__all__ = [
    "AnswerApproval",
    "ApprovalTimedOut",
    "CancelTurn",
    "GetSessionStatus",
    "PostMessage",
    "ResumeTurn",
    "SendMessage",
    "SessionStatus",
    "SettleTurn",
]


class SendMessage(Request[str], frozen=True, kw_only=True):
    """A message for the agent; the reply is the turn's final answer."""

    session_key: str
    text: str
    #: "user", or who else speaks: "teammate:x", "subagent:id", "delegate:id", ...
    sender: str = "user"
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    turn_id: str = ""
    #: Quality gates do not run for delegations made in this turn (recursion guard).
    skip_quality_gates: bool = False
    #: The reply also goes to the outbox with this kind ("reply", "handoff", ...; see
    #: events.domain.outbox); "" when it is only for the asker.
    outbox_kind: str = ""


class CancelTurn(Request[bool], frozen=True, kw_only=True):
    session_key: str
    by: str = "user"


class AnswerApproval(Request[bool], frozen=True, kw_only=True):
    session_key: str
    call_id: str
    decision: ApprovalDecision
    by: str = "user"


class ApprovalTimedOut(Message, frozen=True, kw_only=True):
    turn_id: str
    call_id: str


class ResumeTurn(Message, frozen=True, kw_only=True):
    """Sent to itself by a Session that found an unfinished turn in its stream."""


class SettleTurn(Message, frozen=True, kw_only=True):
    """Sent to itself by a Session: record the end of a turn a store failure ended, then
    serve the queued messages."""


class PostMessage(Request[int], frozen=True, kw_only=True):
    """Put a message for a person in the outbox, from the turn in flight (the ``message``
    tool). The reply is the position of the recorded ``outbox.message_posted``."""

    text: str
    channel: str = ""
    chat_id: str = ""
    call_id: str = ""


class SessionStatus(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    session_key: str
    version: int
    busy: bool
    turn_id: str | None
    iteration: int
    queued: int
    turns_completed: int
    turns_failed: int
    awaiting_approval: list[str]
    messages: int


class GetSessionStatus(Request[SessionStatus], frozen=True, kw_only=True):
    session_key: str
