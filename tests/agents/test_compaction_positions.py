"""``session.compacted`` names the log positions it replaces: the first and last of the
summarized events (``replaced_from_position``, ``replaced_to_position``) and each pruned
result's (``PrunedResult.position``), whether the session ran in one process or was
folded again from the log in between; ``clawlog history`` shows them."""

from __future__ import annotations

from pathlib import Path

from clawlog.actors import System
from clawlog.actors.agents.session_state import (
    SessionState,
    apply_session_event,
    message_positions,
)
from clawlog.actors.providers import ScriptedModel
from clawlog.events import RecordedEvent, open_store
from clawlog.events.domain.session import (
    ChatMessage,
    ModelReplied,
    SessionCleared,
    SessionCompacted,
    TurnStarted,
)
from clawlog.events.domain.tool import ToolCallCompleted
from clawlog.projections import ProjectionRunner, ReadModels, SessionHistoryReader
from clawlog.projections.read_models.session_history import SessionHistory
from tests.agents.compaction_support import (
    AGENT,
    SESSION_KEY,
    STREAM,
    Summarizer,
    fetch_tool,
    fitted_config,
    researcher,
)


async def record(path: Path) -> list[RecordedEvent]:
    """Fourteen turns that compact, in two processes (the second folds the first's log),
    then a compaction on demand; the session's events."""
    for first, last in ((0, 7), (7, 14)):
        async with System.open(path) as system:
            config = await fitted_config(system)
            model = ScriptedModel(researcher, name="researcher")
            await system.register_agent(
                config, model, tools=[fetch_tool()], summarizer=Summarizer()
            )
            for number in range(first, last):
                await system.send(AGENT, SESSION_KEY, f"read page {number}")
    async with System.open(path) as system:
        config = await fitted_config(system)
        await system.register_agent(
            config, ScriptedModel(researcher), tools=[fetch_tool()], summarizer=Summarizer()
        )
        assert await system.compact(AGENT, SESSION_KEY) is not None
    async with await open_store(path) as store:
        return await store.read_stream(STREAM)


def message_events(events: list[RecordedEvent]) -> dict[int, str]:
    """Position -> turn of each event that puts a message in the conversation."""
    found: dict[int, str] = {}
    for recorded in events:
        event = recorded.event
        if isinstance(event, TurnStarted | ModelReplied):
            found[recorded.position] = event.turn_id
        elif isinstance(event, ToolCallCompleted):
            found[recorded.position] = recorded.correlation_id or ""
    return found


async def test_a_compaction_names_the_positions_of_the_messages_it_replaced(
    tmp_path: Path,
) -> None:
    events = await record(tmp_path / "log.db")
    messages = message_events(events)
    results = {
        r.event.call_id: r.position for r in events if isinstance(r.event, ToolCallCompleted)
    }
    compactions = [r for r in events if isinstance(r.event, SessionCompacted)]
    summaries = [r for r in compactions if r.event.summarized_turns]  # type: ignore[union-attr]
    assert len(summaries) >= 2 and summaries[-1].event.trigger == "manual"  # type: ignore[union-attr]
    assert any(r.event.pruned for r in compactions)  # type: ignore[union-attr]
    covered: set[int] = set()  # what the conversation's summary stands for
    for recorded in compactions:
        event = recorded.event
        assert isinstance(event, SessionCompacted)
        for pruned in event.pruned:  # each names its result's event
            assert pruned.position == results[pruned.call_id]
        if not event.summarized_turns:
            assert (event.replaced_from_position, event.replaced_to_position) == (0, 0)
            continue
        replaced = {p for p, turn in messages.items() if turn in event.summarized_turns}
        # An earlier summary is replaced too: it stands for what it replaced.
        assert event.replaced_messages == len(replaced) + (1 if covered else 0)
        covered |= replaced
        assert event.replaced_from_position == min(covered)
        assert event.replaced_to_position == max(covered)
        # Every message of the session from one to the other was replaced, none other.
        first, last = event.replaced_from_position, event.replaced_to_position
        assert {p for p in messages if first <= p <= last} == covered


async def test_clawlog_history_shows_the_positions_replaced(tmp_path: Path) -> None:
    events = await record(tmp_path / "log.db")
    async with (
        await open_store(tmp_path / "log.db") as store,
        ProjectionRunner(store, tmp_path / "views.db", [SessionHistory()]) as runner,
    ):
        await runner.catch_up()
    async with ReadModels(tmp_path / "views.db") as models:
        lines = await SessionHistoryReader(models).page(STREAM, kinds=["compacted"])
    by_position = {line.position: line.text for line in lines}
    for recorded in events:
        event = recorded.event
        if not isinstance(event, SessionCompacted):
            continue
        text = by_position[recorded.position]
        if event.summarized_turns:
            first, last = event.replaced_from_position, event.replaced_to_position
            assert f"; positions {first}-{last})" in text
        if event.pruned:
            shown = ", ".join(str(p.position) for p in event.pruned[:8])
            assert f"pruned (position{'s' if len(event.pruned) > 1 else ''} {shown}" in text


def test_the_fold_lines_positions_up_with_a_conversation_from_an_older_snapshot() -> None:
    old = SessionState(messages=[ChatMessage(role="user", content="from a snapshot")])
    state = apply_session_event(old, TurnStarted(turn_id="t", text="new"), lambda e: None, 40)
    assert message_positions(state) == [0, 40]
    state = apply_session_event(state, SessionCleared(), lambda e: None, 41)
    assert message_positions(state) == [] and state.messages == []
