"""The state of a Session, folded from its stream: conversation and the turn in flight."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from clawlog.events import Event
from clawlog.events.domain.session import (
    ChatMessage,
    CompactionFailed,
    ContentPart,
    ModelFailed,
    ModelReplied,
    ModelRequested,
    SessionCleared,
    SessionCompacted,
    SessionStarted,
    TextPart,
    TurnCancelled,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
)
from clawlog.events.domain.tool import ToolCallResumeDecided
from clawlog.events.folds.timers import TimerBook, apply_timer_event

from .context_size import calibrated_ratio
from .pruning import apply_pruning, summary_message

__all__ = [
    "CompactionInfo",
    "SessionState",
    "TurnState",
    "apply_session_event",
    "message_positions",
    "user_message",
]


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
    #: call_id -> how many times a restart ran the call again (actors.agents.resume_calls).
    reruns: dict[str, int] = msgspec.field(default_factory=dict)
    #: A summary failed in this turn: it is not tried again before the turn ends.
    summary_failed: bool = False


class CompactionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One compaction of a session's conversation (a ``session.compacted``, or a
    ``session.compaction_failed``), as ``System.compact`` and the status report it."""

    #: "threshold" | "manual"
    trigger: str
    #: The turn it happened in ("" between turns).
    turn_id: str = ""
    #: Tool results pruned, and turns replaced by the summary (0: none summarized).
    pruned: int = 0
    summarized_turns: int = 0
    #: The estimated prompt before and after, and the window, in tokens.
    tokens_before: int = 0
    tokens_after: int = 0
    context_window: int = 0
    #: The summarizer model ("" when nothing was summarized).
    model: str = ""
    #: "kind: message" when the summarizer failed ("" otherwise).
    failure: str = ""


#: How many ended turns a session remembers for answering a repeated turn id.
RECENT_TURNS = 200


class EndedTurn(msgspec.Struct, frozen=True, kw_only=True):
    """How a turn ended: ``completed`` (``text`` is the reply, scrubbed as recorded),
    ``failed`` (``reason``, ``text`` the message) or ``cancelled`` (``text``: by whom)."""

    outcome: str
    text: str = ""
    reason: str = ""


class SessionState(msgspec.Struct, kw_only=True):
    agent: str = ""
    session_key: str = ""
    channel: str = ""
    chat_id: str = ""
    user: str = ""
    parent: str | None = None
    depth: int = 0
    messages: list[ChatMessage] = msgspec.field(default_factory=list)
    #: The log position of the event each of ``messages`` comes from (a summary's: the
    #: first of the events it replaced), or 0 where it is not known (folded without
    #: positions, or from a snapshot taken before they were kept): read it with
    #: :func:`message_positions`, which lines it up with ``messages``.
    positions: list[int] = msgspec.field(default_factory=list)
    turn: TurnState | None = None
    turns_completed: int = 0
    turns_failed: int = 0
    last_reply: str = ""
    #: The id of the last turn whose end (completed, failed, cancelled) is in the stream.
    last_ended_turn: str = ""
    #: What the session's model replies cost: tokens (input + output) and estimated US
    #: dollars (the session budget, actors.agents.budgets).
    spent_tokens: int = 0
    spent_usd: float = 0.0
    #: turn_id -> index in ``messages`` of the turn's first message, for the turns whose
    #: messages are there word for word (a summary replaces whole turns).
    turn_starts: dict[str, int] = msgspec.field(default_factory=dict)
    #: Characters per token, calibrated by the latest reported usage (0: not yet;
    #: actors.agents.context_size), and the measure of the latest request.
    chars_per_token: float = 0.0
    last_prompt_chars: int = 0
    #: The latest request's prompt tokens as the provider reported them.
    last_input_tokens: int = 0
    compactions: int = 0
    last_compaction: CompactionInfo | None = None
    #: Approval timeouts: durable timers (``actors.timers``), one per call awaiting a
    #: person's answer.
    timers: TimerBook = msgspec.field(default_factory=TimerBook)
    #: How the last :data:`RECENT_TURNS` turns ended, by turn id: a message sent again
    #: with the turn id of one of them (a run sent again after a restart, a request
    #: delivered twice) is answered from here instead of starting the turn again.
    recent_turns: dict[str, EndedTurn] = msgspec.field(default_factory=dict)
    #: The highest version of this session's inbox (``inbox/{agent}/{key}``: messages
    #: other processes sent) a turn started from; the inbox is read after it.
    inbox_version: int = 0
    #: ``messages[0]`` is the summary a compaction wrote (known from the fold, never from
    #: the text: a user can type the summary's header; actors.agents.pruning).
    summary_first: bool = False
    #: Bumped whenever the fold changes the conversation other than by appending to it
    #: (a compaction, a clear): a measure kept beside the state starts over then
    #: (actors.agents.context_size.ConversationMeasure).
    conversation_edits: int = 0


#: Maps a tool event to (call_id, the tool message for the conversation or None, approval
#: state change). Provided by the tool gateway so this fold does not depend on tool events.
ToolEventReader = Callable[[Event], "tuple[str, ChatMessage | None, str] | None"]


def apply_session_event(
    state: SessionState, event: Event, read_tool_event: ToolEventReader, position: int = 0
) -> SessionState:
    """Fold one event, recorded at log ``position`` (0: not known). Mutates and returns
    ``state`` (it is private to one actor)."""
    match event:
        case SessionStarted():
            state.agent, state.session_key = event.agent, event.session_key
            state.channel, state.chat_id, state.user = event.channel, event.chat_id, event.user
            state.parent, state.depth = event.parent, event.depth
        case TurnStarted():
            state.turn_starts[event.turn_id] = len(state.messages)
            prefix = "" if event.sender == "user" else f"[{event.sender}] "
            _add_message(state, user_message(prefix + event.text, event.parts), position)
            state.turn = TurnState(
                turn_id=event.turn_id,
                sender=event.sender,
                skip_quality_gates=event.skip_quality_gates,
                outbox_kind=_outbox_kind(event),
            )
            if event.channel:
                state.channel, state.chat_id = event.channel, event.chat_id
            state.inbox_version = max(state.inbox_version, event.inbox_version)
            if event.user:
                state.user = event.user
        case ModelRequested() if state.turn is not None:
            state.turn.iteration = event.iteration
            state.turn.awaiting = "model"
            state.last_prompt_chars = event.prompt_chars
        case ModelReplied() if state.turn is not None:
            replied = ChatMessage(
                role="assistant", content=event.text, tool_calls=list(event.tool_calls)
            )
            _add_message(state, replied, position)
            state.turn.pending_calls = {c.id: c.name for c in event.tool_calls}
            state.turn.awaiting = "tools" if event.tool_calls else "done"
            state.spent_tokens += event.usage.input_tokens + event.usage.output_tokens
            state.spent_usd += event.cost_usd or 0.0
            _calibrate(state, event)
        case ModelFailed():
            pass
        case SessionCompacted() | CompactionFailed() | SessionCleared():
            _apply_compaction_event(state, event, position)
        case ToolCallResumeDecided(decision="rerun") if state.turn is not None:
            state.turn.reruns[event.call_id] = event.attempt
        case TurnCompleted():
            state.turn, state.last_reply = None, event.reply
            state.turns_completed += 1
            state.last_ended_turn = event.turn_id
            _remember(state, event.turn_id, EndedTurn(outcome="completed", text=event.reply))
        case TurnFailed():
            state.turn = None
            state.turns_failed += 1
            state.last_ended_turn = event.turn_id
            ended = EndedTurn(outcome="failed", text=event.message, reason=event.reason)
            _remember(state, event.turn_id, ended)
        case TurnCancelled():
            state.turn = None
            state.turns_failed += 1
            state.last_ended_turn = event.turn_id
            _remember(state, event.turn_id, EndedTurn(outcome="cancelled", text=event.by))
        case _:
            if not apply_timer_event(state.timers, event):
                _apply_tool_event(state, event, read_tool_event, position)
    return state


def _remember(state: SessionState, turn_id: str, ended: EndedTurn) -> None:
    state.recent_turns[turn_id] = ended
    if len(state.recent_turns) > RECENT_TURNS:  # dicts keep order: the oldest goes
        del state.recent_turns[next(iter(state.recent_turns))]


def user_message(text: str, parts: list[ContentPart]) -> ChatMessage:
    """The conversation's message for a turn's ``text`` and the ``parts`` that came with
    it: the text first, then the parts in their order (``content`` stays the text, what
    readers and the summarizer see)."""
    if not parts:
        return ChatMessage(role="user", content=text)
    if any(isinstance(part, TextPart) for part in parts):
        # Parts holding text are sent as they are, without ``content``: put it first.
        return ChatMessage(role="user", content=text, parts=[TextPart(text=text), *parts])
    return ChatMessage(role="user", content=text, parts=list(parts))


def message_positions(state: SessionState) -> list[int]:
    """The log position of each of ``state.messages`` (0 where not known), lined up with
    them: a state from an older snapshot knows none of its earlier messages'."""
    _line_up(state)
    return state.positions


def _line_up(state: SessionState) -> None:
    missing = len(state.messages) - len(state.positions)
    if missing > 0:
        state.positions[:0] = [0] * missing
    elif missing < 0:
        del state.positions[:-missing]


def _add_message(state: SessionState, message: ChatMessage, position: int) -> None:
    _line_up(state)
    state.messages.append(message)
    state.positions.append(position)


def _calibrate(state: SessionState, event: ModelReplied) -> None:
    if event.usage.estimated or event.usage.input_tokens <= 0:
        return
    state.last_input_tokens = event.usage.input_tokens
    ratio = calibrated_ratio(state.last_prompt_chars, event.usage.input_tokens)
    if ratio is not None:
        state.chars_per_token = ratio


def _apply_compaction_event(
    state: SessionState, event: SessionCompacted | CompactionFailed | SessionCleared, position: int
) -> None:
    match event:
        case SessionCleared():
            state.messages, state.turn_starts, state.summary_first = [], {}, False
            state.positions = []
            state.conversation_edits += 1
            return
        case CompactionFailed():
            if state.turn is not None and state.turn.turn_id == event.turn_id:
                state.turn.summary_failed = True
            info = _info(event)
            last = state.last_compaction
            if event.pruned and last is not None and last.trigger == event.trigger:
                # Its pruning was recorded just before, in the same append: one compaction.
                info = msgspec.structs.replace(last, failure=info.failure)
            state.last_compaction = info
            return
    state.messages = apply_pruning(state.messages, event.pruned)
    state.conversation_edits += 1
    if event.summarized_turns:
        # The summary stands for what it replaced: it is placed at the first of it (0,
        # not known, for compactions recorded before they named it).
        _summarize(state, event.summary, event.kept_from_turn, event.replaced_from_position)
    state.spent_tokens += event.usage.input_tokens + event.usage.output_tokens
    state.spent_usd += event.cost_usd or 0.0
    state.compactions += 1
    state.last_compaction = _info(event)


def _summarize(state: SessionState, summary: str, kept_from_turn: str, position: int) -> None:
    """The messages before ``kept_from_turn`` ("": all) become one summary message, at
    log ``position``."""
    if kept_from_turn and kept_from_turn not in state.turn_starts:
        return  # the turn's start is not in this conversation (cleared since)
    cut = state.turn_starts[kept_from_turn] if kept_from_turn else len(state.messages)
    state.positions = [position, *message_positions(state)[cut:]]
    state.messages = [summary_message(summary), *state.messages[cut:]]
    state.summary_first = True
    state.turn_starts = {
        turn_id: start - cut + 1 for turn_id, start in state.turn_starts.items() if start >= cut
    }


def _info(event: SessionCompacted | CompactionFailed) -> CompactionInfo:
    if isinstance(event, CompactionFailed):
        return CompactionInfo(
            trigger=event.trigger,
            turn_id=event.turn_id,
            pruned=event.pruned,
            model=event.model,
            failure=f"{event.kind}: {event.message}",
        )
    return CompactionInfo(
        trigger=event.trigger,
        turn_id=event.turn_id,
        pruned=len(event.pruned),
        summarized_turns=len(event.summarized_turns),
        tokens_before=event.tokens_before,
        tokens_after=event.tokens_after,
        context_window=event.context_window,
        model=event.model,
    )


def _apply_tool_event(
    state: SessionState, event: Event, read: ToolEventReader, position: int
) -> None:
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
        _add_message(state, message, position)


def _outbox_kind(event: TurnStarted) -> str:
    if event.outbox_kind is not None:
        return event.outbox_kind
    return "reply" if event.sender == "user" else ""  # recorded before the outbox existed
