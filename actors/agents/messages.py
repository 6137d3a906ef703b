"""Messages to AgentSupervisor and Session actors."""

from __future__ import annotations

from typing import Any

import msgspec

from clawlog.events.domain.session import ContentPart
from clawlog.events.domain.tool import ApprovalDecision

from ..messages import Message, Request
from .delta_sink import DeltaSink
from .session_state import CompactionInfo

__all__ = [
    "AnswerApproval",
    "ApprovalTimedOut",
    "CancelTurn",
    "ClearSession",
    "CompactSession",
    "Drain",
    "DrainSessions",
    "GetSessionStatus",
    "HoldEnded",
    "PostMessage",
    "ReadInbox",
    "ResumeTurn",
    "SendMessage",
    "SessionStatus",
    "SettleTurn",
    "StartRoutines",
    "TakeOver",
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
    #: ``System.stream``: where each model step's text goes as it arrives (from the hub,
    #: not through the session's thread); None: the reply only.
    deltas: DeltaSink | None = None
    #: What comes with ``text`` (images, documents, more text), sent after it in order
    #: and recorded on the turn's start (``TurnStarted.parts``).
    parts: list[ContentPart] = msgspec.field(default_factory=list)
    #: Read from the session's inbox (another process sent it): its version there,
    #: recorded on the turn's start so the session reads its inbox after it (0: not).
    inbox_version: int = 0


class CancelTurn(Request[bool], frozen=True, kw_only=True):
    session_key: str
    by: str = "user"


class AnswerApproval(Request[bool], frozen=True, kw_only=True):
    session_key: str
    call_id: str
    decision: ApprovalDecision
    by: str = "user"


class ApprovalTimedOut(Message, frozen=True, kw_only=True):
    """A Session to itself: the durable timer of an approval fired (``fired``, its
    ``timer.fired`` event, is recorded with the decision)."""

    turn_id: str
    call_id: str
    fired: Any = None


class ResumeTurn(Message, frozen=True, kw_only=True):
    """Sent to itself by a Session that found an unfinished turn in its stream."""


class HoldEnded(Message, frozen=True, kw_only=True):
    """Sent to itself by a Session (from the hub) when a step's calls that only read ran
    longer than ``AgentConfig.read_hold_s``: the held reply and starts are appended."""

    hold: int


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
    #: The next request's estimated prompt (calibrated by reported usage), the model's
    #: context window, and the estimate past which the session compacts, in tokens.
    context_tokens: int = 0
    context_window: int = 0
    compact_at_tokens: int = 0
    #: The latest request's prompt tokens as the provider reported them, and the tokens
    #: (input + output) of every model call of the session, summaries included.
    last_input_tokens: int = 0
    tokens_used: int = 0
    #: The session's calibrated characters per token (0: not calibrated yet).
    chars_per_token: float = 0.0
    compactions: int = 0
    last_compaction: CompactionInfo | None = None


class GetSessionStatus(Request[SessionStatus], frozen=True, kw_only=True):
    session_key: str


class CompactSession(Request["CompactionInfo | None"], frozen=True, kw_only=True):
    """Compact the conversation now (``System.compact``); None when there was nothing to
    prune or summarize."""

    session_key: str
    #: The caller's trace context: the summarizer's span is a child of its span.
    trace_context: dict[str, str] | None = None


class ClearSession(Request[bool], frozen=True, kw_only=True):
    """Start a fresh context (``System.clear``); False when it was empty already."""

    session_key: str
    by: str = "user"


class ReadInbox(Message, frozen=True, kw_only=True):
    """A Session (through its supervisor): messages may be waiting in its inbox
    (``inbox/{agent}/{session_key}``; several processes on one PostgreSQL log). With
    ``sent`` (an ``inbox.message_sent`` at ``version``): that one arrived; it is taken as
    is when it is the next one, without reading the inbox."""

    session_key: str
    version: int = 0
    sent: Any = None


class TakeOver(Message, frozen=True, kw_only=True):
    """An AgentSupervisor: start the session ``session_key`` here if no live process owns
    it (its owner stopped renewing its lease, or released it with work waiting)."""

    session_key: str


class Drain(Message, frozen=True, kw_only=True):
    """A Session: finish the turn in flight, then stop and release the lease; queued
    messages go back to the supervisor (``System.drain``)."""


class DrainSessions(Request[int], frozen=True, kw_only=True):
    """An AgentSupervisor: drain every session running here; answered (with how many
    there were) when all have stopped."""


class StartRoutines(Message, frozen=True, kw_only=True):
    """An AgentSupervisor: run the agent's routines here if no live process does (from
    the router's periodic look on a shared log)."""
