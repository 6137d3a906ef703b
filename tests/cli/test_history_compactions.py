"""``clawlog history`` shows what was done to the conversation the model is sent:
compactions (turns summarized, results pruned, tokens before and after), a summary that
failed, a clear. The lines come from the session history read model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import System
from clawlog.actors.providers import ScriptedModel
from clawlog.events import open_store
from clawlog.events.domain.session import CompactionFailed, ModelReplied, SessionCompacted
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

from .support import clawlog


async def record(path: Path) -> None:
    """Twelve turns that compact (the first summary fails), a compaction on demand and
    a clear."""
    async with System.open(path) as system:
        config = await fitted_config(system)
        model = ScriptedModel(researcher, name="researcher")
        summarizer = Summarizer(failing=(1,))
        await system.register_agent(config, model, tools=[fetch_tool()], summarizer=summarizer)
        for number in range(12):
            await system.send(AGENT, SESSION_KEY, f"read page {number}")
        assert await system.compact(AGENT, SESSION_KEY) is not None
        assert await system.clear(AGENT, SESSION_KEY, by="ann")


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history") / "log.db"
    asyncio.run(record(path))
    return path


def history(log: Path, *args: str) -> Any:
    done = clawlog("history", AGENT, SESSION_KEY, "--db", str(log), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_the_read_model_has_a_line_per_compaction_failure_and_clear(
    log: Path, tmp_path: Path
) -> None:
    async with await open_store(log) as store:
        events = await store.read_stream(STREAM)
        async with ProjectionRunner(store, tmp_path / "views.db", [SessionHistory()]) as runner:
            await runner.catch_up()
    compacted = [r for r in events if isinstance(r.event, SessionCompacted)]
    failed = [r for r in events if isinstance(r.event, CompactionFailed)]
    async with ReadModels(tmp_path / "views.db") as models:
        reader = SessionHistoryReader(models)
        lines = await reader.page(STREAM, kinds=["compacted", "compaction_failed", "cleared"])
    by_position = {line.position: line for line in lines}
    cleared_at = max(by_position)  # the clear was the last thing done
    assert sorted(by_position) == [*sorted(r.position for r in [*compacted, *failed]), cleared_at]
    for recorded in compacted:
        event = recorded.event
        assert isinstance(event, SessionCompacted)
        line = by_position[recorded.position]
        assert (line.kind, line.who, line.turn_id) == (
            "compacted",
            "clawlog",
            recorded.correlation_id,
        )
        assert line.text.startswith("context compacted: ")
        assert f"~{event.tokens_before:,} -> ~{event.tokens_after:,} tokens" in line.text
        if event.summarized_turns:
            turns = len(event.summarized_turns)
            assert f"{turns} turn{'s' if turns > 1 else ''} summarized" in line.text
            assert "by summarizer" in line.text
        if event.pruned:
            assert f"{len(event.pruned)} tool result" in line.text
    manual = by_position[compacted[-1].position]
    assert manual.text.endswith("(asked for)") and manual.turn_id in (None, "")
    [failure] = failed
    line = by_position[failure.position]
    assert line.kind == "compaction_failed"
    assert "summary not written by summarizer (server_error: summarizer unavailable" in line.text
    cleared = lines[-1]
    assert (cleared.kind, cleared.who) == ("cleared", "ann")
    assert "earlier messages no longer sent to the model (the log keeps them)" in cleared.text


def test_clawlog_history_shows_compactions_and_the_clear(log: Path) -> None:
    rows = json.loads(history(log, "--json"))
    whos = [row["who"] for row in rows]
    assert "compacted" in whos and "compaction_failed" in whos and whos[-1] == "cleared"
    compacted = [row["text"] for row in rows if row["who"] == "compacted"]
    assert any("summarized" in text for text in compacted)
    assert any("tool results pruned" in text for text in compacted)
    assert rows[-1]["text"].endswith("(by ann)")
    table = history(log)
    assert "context compacted:" in table and "context cleared:" in table


async def test_clawlog_usage_counts_the_summaries(log: Path) -> None:
    async with await open_store(log) as store:
        events = await store.read_stream(STREAM)
    replies = [r.event for r in events if isinstance(r.event, ModelReplied)]
    summaries = [
        r.event for r in events if isinstance(r.event, SessionCompacted) and r.event.summary
    ]
    done = clawlog("usage", "--db", str(log), "--json", "--by", "model")
    assert done.returncode == 0, done.stderr
    rows = {row["model"]: row for row in json.loads(done.stdout)}
    assert rows["summarizer"]["calls"] == rows["summarizer"]["summary_calls"] == len(summaries)
    assert rows["researcher"]["calls"] == len(replies) and rows["researcher"]["summary_calls"] == 0
    calls = [*replies, *summaries]
    for key in ("input_tokens", "output_tokens"):
        assert sum(row[key] for row in rows.values()) == sum(getattr(e.usage, key) for e in calls)
