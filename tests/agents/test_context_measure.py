"""The running measure of a conversation (``context_size.ConversationMeasure``): equal to
a full recount after every event of a scripted session (with pruning, summaries and a
clear), and walking the conversation again only when the fold changed more than its end."""

from __future__ import annotations

from clawlog.actors.agents.context_size import ConversationMeasure, messages_chars
from clawlog.actors.agents.session_state import SessionState, apply_session_event
from clawlog.actors.agents.staged_append import scratch_state
from clawlog.events import Event
from clawlog.events.domain.session import (
    ChatMessage,
    ModelReplied,
    PrunedResult,
    SessionCleared,
    SessionCompacted,
    ToolCall,
    TurnCompleted,
    TurnStarted,
)
from clawlog.events.domain.tool import ToolCallCompleted


def read_tool_event(event: Event) -> tuple[str, ChatMessage | None, str] | None:
    """The conversation's side of a tool event, as the tool gateway reads it."""
    if isinstance(event, ToolCallCompleted):
        message = ChatMessage(
            role="tool", content=event.for_llm, tool_call_id=event.call_id, name=event.tool
        )
        return event.call_id, message, ""
    return None


def turn(number: int, result_chars: int) -> list[Event]:
    """A turn with one tool call whose result is ``result_chars`` long."""
    turn_id, call_id = f"t{number}", f"c{number}"
    return [
        TurnStarted(turn_id=turn_id, text=f"question {number}"),
        ModelReplied(
            turn_id=turn_id,
            iteration=1,
            tool_calls=[ToolCall(id=call_id, name="fetch", arguments='{"n": 1}')],
        ),
        ToolCallCompleted(call_id=call_id, tool="fetch", for_llm="r" * result_chars),
        ModelReplied(turn_id=turn_id, iteration=2, text=f"answer {number}"),
        TurnCompleted(turn_id=turn_id, reply=f"answer {number}", iterations=2),
    ]


def scripted_session() -> list[Event]:
    events: list[Event] = []
    for number in range(6):
        events += turn(number, 9000)
    # Pruning: same number of messages, same last message, shorter results.
    events.append(
        SessionCompacted(
            pruned=[
                PrunedResult(call_id="c0", mode="cleared", chars=9000),
                PrunedResult(
                    call_id="c1", mode="trimmed", chars=9000, head_chars=100, tail_chars=100
                ),
            ]
        )
    )
    for number in range(6, 9):
        events += turn(number, 50)
    events.append(
        SessionCompacted(summary="what happened", summarized_turns=["t0"], kept_from_turn="t1")
    )
    events += turn(9, 10)
    events.append(SessionCleared(by="test", messages=40))
    for number in range(10, 13):
        events += turn(number, 20)
    return events


def staged_step(state: SessionState, event: Event, measure: ConversationMeasure) -> SessionState:
    """What a session's staged step does: fold ``event`` into a scratch copy and measure
    that, then append it (folded again, into new objects, into the log's state)."""
    scratch = apply_session_event(scratch_state(state), event, read_tool_event)
    assert measure.chars(scratch) == messages_chars(scratch.messages)
    return apply_session_event(state, event, read_tool_event)


def test_the_running_measure_equals_a_full_recount_after_every_event() -> None:
    state, measure = SessionState(), ConversationMeasure()
    for number, event in enumerate(scripted_session()):
        if number % 2:
            state = staged_step(state, event, measure)
        else:
            state = apply_session_event(state, event, read_tool_event)
        assert measure.chars(state) == messages_chars(state.messages)
    assert len(state.messages) == 12  # three turns since the clear


def test_a_forgotten_measure_counts_again() -> None:
    """Staged messages measured, then dropped (not appended), then others appended that
    end with an equal message: after ``forget`` the conversation is measured whole."""
    state, measure = SessionState(), ConversationMeasure()
    for event in [*turn(0, 10), TurnStarted(turn_id="t1", text="again")]:
        state = apply_session_event(state, event, read_tool_event)

    def call(arguments: str) -> list[Event]:
        return [
            ModelReplied(
                turn_id="t1",
                iteration=1,
                tool_calls=[ToolCall(id="c1", name="fetch", arguments=arguments)],
            ),
            ToolCallCompleted(call_id="c1", tool="fetch", for_llm="same result"),
        ]

    scratch = scratch_state(state)
    for event in call("{}"):
        scratch = apply_session_event(scratch, event, read_tool_event)
    measure.chars(scratch)
    measure.forget()
    for event in call('{"query": "a much longer argument than the dropped one"}'):
        state = apply_session_event(state, event, read_tool_event)
    assert state.messages[-1] == scratch.messages[-1]
    assert measure.chars(state) == messages_chars(state.messages)
    assert measure.recounts == 1


def test_a_summary_that_keeps_the_conversation_length_is_measured_again() -> None:
    """The summary replaces one message: same count, same last message, other text."""
    state, measure = SessionState(), ConversationMeasure()
    for event in [
        TurnStarted(turn_id="t0", text="q" * 5000),
        TurnStarted(turn_id="t1", text="second"),
    ]:
        state = apply_session_event(state, event, read_tool_event)
    before = measure.chars(state)
    state = apply_session_event(
        state,
        SessionCompacted(summary="short", summarized_turns=["t0"], kept_from_turn="t1"),
        read_tool_event,
    )
    assert len(state.messages) == 2
    assert measure.chars(state) == messages_chars(state.messages) < before


def test_steps_of_a_long_session_measure_only_the_new_messages() -> None:
    """Over a long session the conversation is walked again only after each change that
    is not an append (two compactions and a clear here); a session that only grows never."""
    state, measure = SessionState(), ConversationMeasure()
    for event in scripted_session():
        state = staged_step(state, event, measure)
        measure.chars(state)
    assert measure.recounts == 3
    appended_only = ConversationMeasure()
    state = SessionState()
    for number in range(200):
        for event in turn(number, 10):
            state = staged_step(state, event, appended_only)
            appended_only.chars(state)
    assert appended_only.recounts == 0
    assert appended_only.chars(state) == messages_chars(state.messages)
