"""The state of a Session, folded from its stream: conversation and the turn in flight."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from clawlog.events import Event
from clawlog.events.domain.session import (
    ChatMessage,
    ModelFailed,
    ModelReplied,
    ModelRequested,
    SessionStarted,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)

__all__ = ["SessionState", "TurnState", "apply_session_event"]


class TurnState(msgspec.Struct, kw_only=True):
    turn_id: str
    sender: str = "user"
    iteration: int = 0
    #: "model" while a model call is out; "tools" while tool calls are out.
    awaiting: str = "model"
    #: call_id -> tool name, for calls requested by the model and not yet answered.
    pending_calls: dict[str, str] = msgspec.field(default_factory=dict)
    #: call ids waiting for an approval decision.
    awaiting_approval: list[str] = msgspec.field(default_factory=list)
    #: Delegations made in this turn run no quality gates. Snapshots keep the old name.
    skip_quality_gates: bool = msgspec.field(default=False, name="skip_hooks")
    #: The outbox kind of the turn's reply ("" = only for the asker).
    outbox_kind: str = ""


class SessionState(msgspec.Struct, kw_only=True):
    agent: str = ""
    session_key: str = ""
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    parent: str | None = None
    depth: int = 0
    messages: list[ChatMessage] = msgspec.field(default_factory=list)
    turn: TurnState | None = None
    turns_completed: int = 0
    turns_failed: int = 0
    last_reply: str = ""
    #: The id of the last turn whose end (completed, failed, cancelled) is in the stream.
    last_ended_turn: str = ""


#: Maps a tool event to (call_id, the tool message for the conversation or None, approval
#: state change). Provided by the tool gateway so this fold does not depend on tool events.
ToolEventReader = Callable[[Event], "tuple[str, ChatMessage | None, str] | None"]


def apply_session_event(
    state: SessionState, event: Event, read_tool_event: ToolEventReader
) -> SessionState:
    """Fold one event. Mutates and returns ``state`` (it is private to one actor)."""
    match event:
        case SessionStarted():
            state.agent, state.session_key = event.agent, event.session_key
            state.channel, state.chat_id, state.user = event.channel, event.chat_id, event.user
            state.parent, state.depth = event.parent, event.depth
        case TurnStarted():
            prefix = "" if event.sender == "user" else f"[{event.sender}] "
            state.messages.append(ChatMessage(role="user", content=prefix + event.text))
            state.turn = TurnState(
                turn_id=event.turn_id,
                sender=event.sender,
                skip_quality_gates=event.skip_quality_gates,
                outbox_kind=_outbox_kind(event),
            )
            if event.channel:
                state.channel, state.chat_id = event.channel, event.chat_id
            if event.user:
                state.user = event.user
        case ModelRequested() if state.turn is not None:
            state.turn.iteration = event.iteration
            state.turn.awaiting = "model"
        case ModelReplied() if state.turn is not None:
            state.messages.append(
                ChatMessage(role="assistant", content=event.text, tool_calls=list(event.tool_calls))
            )
            state.turn.pending_calls = {c.id: c.name for c in event.tool_calls}
            state.turn.awaiting = "tools" if event.tool_calls else "done"
        case ModelFailed():
            pass
        case TurnCompleted():
            state.turn, state.last_reply = None, event.reply
            state.turns_completed += 1
            state.last_ended_turn = event.turn_id
        case TurnFailed() | TurnCancelled():
            state.turn = None
            state.turns_failed += 1
            state.last_ended_turn = event.turn_id
        case _:
            _apply_tool_event(state, event, read_tool_event)
    return state


def _apply_tool_event(state: SessionState, event: Event, read: ToolEventReader) -> None:
    found = read(event)
    if found is None or state.turn is None:
        return
    call_id, message, approval = found
    turn = state.turn
    if approval == "requested" and call_id not in turn.awaiting_approval:
        turn.awaiting_approval.append(call_id)
    elif approval == "decided" and call_id in turn.awaiting_approval:
        turn.awaiting_approval.remove(call_id)
    if message is not None and call_id in turn.pending_calls:
        del turn.pending_calls[call_id]
        state.messages.append(message)


def _outbox_kind(event: TurnStarted) -> str:
    if event.outbox_kind is not None:
        return event.outbox_kind
    return "reply" if event.sender == "user" else ""  # recorded before the outbox existed
