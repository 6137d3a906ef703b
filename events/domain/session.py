"""Conversation value types and the events of a Session (one agent loop per session key).

Every model request and reply is recorded, so a session can be audited and re-run
without the model. Texts and tool arguments are scrubbed before they are recorded.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "ChatMessage",
    "ModelFailed",
    "ModelReplied",
    "ModelRequested",
    "SessionEvent",
    "SessionStarted",
    "ToolCall",
    "TurnCancelled",
    "TurnCompleted",
    "TurnFailed",
    "TurnFailureReason",
    "TurnStarted",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
#: Why a turn ended without a reply: too many model iterations, a model error, a restart
#: that interrupted a delegated turn, a crash, or the event store refusing, not reaching or
#: failing an append.
TurnFailureReason = Literal[
    "iteration_limit",
    "model_error",
    "interrupted",
    "crashed",
    "append_refused",
    "store_unavailable",
    "store_error",
]


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call as the model produced it. ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str = "{}"


class ChatMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One message of a conversation, provider-neutral."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    #: For ``role="tool"``: the call this message answers, and the tool's name.
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    input_tokens: int = 0
    output_tokens: int = 0


class SessionStarted(Event, frozen=True, tag="session.started"):
    agent: str
    session_key: str
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    #: Set for subagent sessions: the spawning session's stream and this one's depth.
    parent: str | None = None
    depth: int = 0


class TurnStarted(Event, frozen=True, tag="session.turn_started"):
    """A user (or teammate, or parent) message starts a turn."""

    turn_id: str
    text: str
    sender: str = "user"
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    #: Delegations made in this turn run no quality gates (seed 001 §11 recursion guard).
    skip_quality_gates: bool = msgspec.field(default=False, name="skip_hooks")
    #: The outbox kind of this turn's reply (events.domain.outbox): "" when the reply goes
    #: only to whoever asked (a delegating agent, a parent); None for turns recorded before
    #: the outbox existed (a user's turn is then taken as "reply").
    outbox_kind: str | None = None


class ModelRequested(Event, frozen=True, tag="session.model_requested"):
    turn_id: str
    iteration: int
    model: str
    provider: str = ""
    #: Number of messages sent, and the tool names offered (the prompt itself is rebuilt
    #: from the stream on replay, so it is not duplicated here).
    message_count: int = 0
    tools: list[str] = msgspec.field(default_factory=list)
    system_prompt_digest: str = ""


class ModelReplied(Event, frozen=True, tag="session.model_replied"):
    turn_id: str
    iteration: int
    text: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    stop_reason: str = ""
    duration_ms: float = 0.0


class ModelFailed(Event, frozen=True, tag="session.model_failed"):
    turn_id: str
    iteration: int
    #: The ``ModelError``'s kind (rate_limited, server_error, timeout, auth, bad_request,
    #: malformed_reply, unavailable, script_exhausted, not_recorded, error), or the class
    #: name of another exception a ``Model`` raised: an open set, so ``str``.
    kind: str
    message: str
    attempts: int = 1


class TurnCompleted(Event, frozen=True, tag="session.turn_completed"):
    turn_id: str
    reply: str
    iterations: int


class TurnFailed(Event, frozen=True, tag="session.turn_failed"):
    """The turn ended without a reply, for ``reason``."""

    turn_id: str
    reason: TurnFailureReason
    message: str = ""


class TurnCancelled(Event, frozen=True, tag="session.turn_cancelled"):
    turn_id: str
    by: str = "user"


SessionEvent = (
    SessionStarted
    | TurnStarted
    | ModelRequested
    | ModelReplied
    | ModelFailed
    | TurnCompleted
    | TurnFailed
    | TurnCancelled
)
EVENTS = (
    SessionStarted,
    TurnStarted,
    ModelRequested,
    ModelReplied,
    ModelFailed,
    TurnCompleted,
    TurnFailed,
    TurnCancelled,
)
