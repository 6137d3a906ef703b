"""Re-running a session that compacted: the recorded compactions (pruning, summaries, a
failed summary, an on-demand compaction, a clear) are served again, never re-summarized,
and the re-run matches the recording exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clawlog.actors import System
from clawlog.actors.agents.pruning import SUMMARY_HEADER
from clawlog.actors.providers import ScriptedModel
from clawlog.actors.replay import rerun, stream_state_as_of
from clawlog.events import EventStore, open_store
from tests.agents.compaction_support import (
    AGENT,
    SESSION_KEY,
    STREAM,
    Summarizer,
    fetch_tool,
    fitted_config,
    researcher,
)

ROOT = Path(__file__).parents[2]


async def record(path: Path, summarizer: Summarizer) -> None:
    """Twelve turns that compact (the first summary fails), an on-demand compaction,
    two turns, a clear, two turns."""
    async with System.open(path) as system:
        config = await fitted_config(system)
        model = ScriptedModel(researcher, name="researcher")
        await system.register_agent(config, model, tools=[fetch_tool()], summarizer=summarizer)

        async def turns(first: int, count: int) -> None:
            for number in range(first, first + count):
                answer = await system.send(AGENT, SESSION_KEY, f"read page {number}")
                assert answer.startswith("answer ")

        await turns(0, 12)
        assert await system.compact(AGENT, SESSION_KEY) is not None
        await turns(12, 2)
        assert await system.clear(AGENT, SESSION_KEY, by="ann")
        await turns(14, 2)


@pytest.fixture
async def recorded(tmp_path: Path) -> AsyncIterator[tuple[EventStore, Summarizer, Path]]:
    summarizer = Summarizer(failing=(1,))
    await record(tmp_path / "log.db", summarizer)
    async with await open_store(tmp_path / "log.db") as store:
        yield store, summarizer, tmp_path / "log.db"


async def types_of(store: EventStore) -> list[str]:
    return [e.type for e in await store.read_stream(STREAM)]


async def test_the_recording_compacted_in_every_way_the_rerun_must_serve(
    recorded: tuple[EventStore, Summarizer, Path],
) -> None:
    store, summarizer, _ = recorded
    events = await store.read_stream(STREAM)
    compacted = [e.event for e in events if e.type == "session.compacted"]
    assert any(c.pruned and not c.summarized_turns for c in compacted)  # pruning alone
    assert any(c.summarized_turns and c.trigger == "threshold" for c in compacted)
    assert [c.trigger for c in compacted].count("manual") == 1
    assert "session.compaction_failed" in await types_of(store)
    assert "session.cleared" in await types_of(store)
    assert len(summarizer.requests) >= 3


async def test_a_rerun_of_a_compacted_session_matches_without_summarizing_again(
    recorded: tuple[EventStore, Summarizer, Path],
) -> None:
    store, summarizer, _ = recorded
    asked = len(summarizer.requests)
    recorded_units = sum(
        1
        for e in await store.read_stream(STREAM)
        if e.type == "session.compacted"
        or (e.type == "session.compaction_failed" and e.event.pruned == 0)
    )
    report = await rerun(store, AGENT, SESSION_KEY, tools=[fetch_tool()])
    assert report.matched and report.divergence is None, report.divergence
    # The model requests carried exactly the recorded (compacted) conversations.
    assert report.context == []
    assert report.turns == 16 and report.model_replies == 32 and report.tool_calls == 16
    assert report.compactions == recorded_units
    assert len(summarizer.requests) == asked  # read back from the log, never called


async def test_a_rerun_from_a_turn_after_the_summary_matches(
    recorded: tuple[EventStore, Summarizer, Path],
) -> None:
    store, _, _ = recorded
    events = await store.read_stream(STREAM)
    summary = next(e for e in events if e.type == "session.compacted" and e.event.summary)
    starts = [e for e in events if e.type == "session.turn_started"]
    later = 1 + sum(1 for e in starts if e.position < summary.position) + 1
    report = await rerun(store, AGENT, SESSION_KEY, first_turn=later, tools=[fetch_tool()])
    assert report.matched and report.context == [] and report.turns == 16 - later + 1


async def test_the_state_as_of_a_position_is_the_compacted_conversation(
    recorded: tuple[EventStore, Summarizer, Path],
) -> None:
    store, _, _ = recorded
    events = await store.read_stream(STREAM)
    summary = next(e for e in events if e.type == "session.compacted" and e.event.summary)
    before = await stream_state_as_of(store, STREAM, position=summary.position - 1)
    after = await stream_state_as_of(store, STREAM, position=summary.position)
    assert not before.state.messages[0].content.startswith(SUMMARY_HEADER)
    assert after.state.messages[0].content == SUMMARY_HEADER + summary.event.summary
    assert len(after.state.messages) < len(before.state.messages)
    cleared = next(e for e in events if e.type == "session.cleared")
    at_clear = await stream_state_as_of(store, STREAM, position=cleared.position)
    assert at_clear.state.messages == [] and at_clear.state.compactions >= 3


def test_clawlog_replay_rerun_matches_a_compacted_session(
    recorded: tuple[EventStore, Summarizer, Path],
) -> None:
    _, _, path = recorded
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "clawlog",
            "replay",
            "--db",
            str(path),
            "--json",
            "--rerun",
            AGENT,
            SESSION_KEY,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["matched"] and report["divergence"] is None and report["context"] == []
    assert report["compactions"] >= 4
