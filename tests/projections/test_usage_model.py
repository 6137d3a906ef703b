"""The usage read model: totals per agent, session, model and day equal the sums of the
recorded model usage: ``session.model_replied`` events and the summaries recorded on
``session.compacted``."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.usage_ledger import utc_day
from clawlog.actors.providers import ModelReply, ScriptedModel, Usage, call
from clawlog.events import ANY, Event, EventStore, SqliteBackend, open_store
from clawlog.events.domain.session import (
    CompactionFailed,
    ModelReplied,
    ModelRequested,
    PrunedResult,
    SessionCompacted,
    SessionStarted,
)
from clawlog.projections import ModelUsageReader, ProjectionRunner, ReadModels
from clawlog.projections.read_models.usage import ModelUsage, UsageTotal
from tests.agents.compaction_support import AGENT, STREAM, record_long_session
from tests.agents.usage_summarizer import SUMMARY_OUTPUT_TOKENS, UsageSummarizer

FIGURES = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


@pytest.fixture
async def log(tmp_path: Path) -> AsyncIterator[tuple[EventStore, ReadModels]]:
    async with (
        await open_store(SqliteBackend(tmp_path / "log.db")) as store,
        ProjectionRunner(store, None, [ModelUsage()]) as runner,
    ):
        runner.start()
        async with ReadModels(runner.path, runner=runner) as models:
            yield store, models


def expected_totals(rows: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Sums of the rows per key, as the reader's totals."""
    sums: dict[str, dict[str, Any]] = defaultdict(
        lambda: (
            dict.fromkeys(
                ["calls", *FIGURES, "estimated_calls", "unpriced_calls", "summary_calls"], 0
            )
            | {"cost_usd": 0.0}
        )
    )
    for key, reply in rows:
        total = sums[key]
        total["calls"] += 1
        for name in FIGURES:
            total[name] += reply[name]
        total["estimated_calls"] += reply["estimated"]
        total["summary_calls"] += reply.get("kind") == "summary"
        if reply["cost_usd"] is None:
            total["unpriced_calls"] += 1
        else:
            total["cost_usd"] += reply["cost_usd"]
    return dict(sums)


def as_dicts(totals: list[UsageTotal]) -> dict[str, dict[str, Any]]:
    return {
        t.key: {
            "calls": t.calls,
            **{name: getattr(t, name) for name in FIGURES},
            "estimated_calls": t.estimated_calls,
            "unpriced_calls": t.unpriced_calls,
            "summary_calls": t.summary_calls,
            "cost_usd": pytest.approx(t.cost_usd),
        }
        for t in totals
    }


async def test_totals_by_each_grouping_equal_the_sums_of_the_replies(
    log: tuple[EventStore, ReadModels],
) -> None:
    store, models = log
    chance = random.Random(19)
    sessions = {
        "session/alpha/s1": ("alpha", "s1"),
        "session/alpha/s2": ("alpha", "s2"),
        "session/beta/s1": ("beta", "s1"),
        "subagent/t1": ("alpha", "sub:t1"),  # a subagent's session: its agent from its start
    }
    written: list[dict[str, Any]] = []
    for stream, (agent, key) in sessions.items():
        await store.append(stream, [SessionStarted(agent=agent, session_key=key)], ANY)
    for i in range(60):
        stream = chance.choice(list(sessions))
        model = chance.choice(["gpt-4o", "claude-sonnet-4-5", "local", ""])
        usage = Usage(
            input_tokens=chance.randint(0, 5000),
            output_tokens=chance.randint(0, 900),
            cached_input_tokens=chance.randint(0, 100),
            cache_write_tokens=chance.randint(0, 50),
            reasoning_tokens=chance.randint(0, 30),
            estimated=chance.random() < 0.2,
        )
        cost = None if model == "local" else round(chance.random(), 4)
        events: list[Event] = [ModelRequested(turn_id="t", iteration=i, model="gpt-4o-mini")]
        events.append(
            ModelReplied(turn_id="t", iteration=i, usage=usage, model=model, cost_usd=cost)
        )
        [_, recorded] = await store.append(stream, events, ANY)
        agent, session_key = sessions[stream]
        written.append(
            {
                "stream": stream,
                "agent": agent,
                "session_key": session_key,
                # A reply that named no model: the model of the request before it.
                "model": model or "gpt-4o-mini",
                "day": utc_day(recorded.recorded_at),
                "position": recorded.position,
                "estimated": int(usage.estimated),
                "cost_usd": cost,
                **{name: getattr(usage, name) for name in FIGURES},
            }
        )
    reader = ModelUsageReader(models)
    await reader.wait_until(await store.head_position())
    for by, column in (
        ("agent", "agent"),
        ("session", "stream"),
        ("model", "model"),
        ("day", "day"),
    ):
        totals = await reader.totals(by, limit=-1)  # type: ignore[arg-type]
        assert as_dicts(totals) == expected_totals([(r[column], r) for r in written]), by
        assert [t.key for t in totals] == sorted(t.key for t in totals)
    alpha = await reader.totals("model", agent="alpha", limit=-1)
    assert as_dicts(alpha) == expected_totals(
        [(r["model"], r) for r in written if r["agent"] == "alpha"]
    )
    s1 = await reader.totals("agent", session="s1", limit=-1)
    assert as_dicts(s1) == expected_totals(
        [(r["agent"], r) for r in written if r["session_key"] == "s1"]
    )
    middle = written[30]["position"]
    later = await reader.totals("session", from_position=middle, limit=-1)
    assert as_dicts(later) == expected_totals(
        [(r["stream"], r) for r in written if r["position"] >= middle]
    )


async def test_totals_page_by_key(log: tuple[EventStore, ReadModels]) -> None:
    store, models = log
    for agent in ("c", "a", "b"):
        stream = f"session/{agent}/k"
        await store.append(stream, [SessionStarted(agent=agent, session_key="k")], ANY)
        reply = ModelReplied(turn_id="t", iteration=1, usage=Usage(input_tokens=1), model="m")
        await store.append(stream, [reply], ANY)
    reader = ModelUsageReader(models)
    await reader.wait_until(await store.head_position())
    first = await reader.totals("agent", limit=2)
    rest = await reader.totals("agent", after=first[-1].key, limit=2)
    assert [t.key for t in first + rest] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="group by one of"):
        await reader.totals("user")  # type: ignore[arg-type]


def priced(request: Any) -> ModelReply:
    """Tool call first, then an answer; usage varies with the conversation's length."""
    turns = len(request.messages)
    if request.messages[-1].role == "user":
        step = call("echo", message=f"m{turns}")
        return ModelReply(tool_calls=step.tool_calls, usage=Usage(input_tokens=100 * turns))
    return ModelReply(text="done", usage=Usage(input_tokens=50 * turns, output_tokens=7))


async def test_a_live_systems_totals_equal_its_recorded_events(tmp_path: Path) -> None:
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="a"), ScriptedModel(priced, name="gpt-4o"))
        await system.register_agent(AgentConfig(key="b"), ScriptedModel(priced, name="unpriced"))
        for agent, session in (("a", "x"), ("a", "y"), ("b", "x"), ("a", "x")):
            assert await system.send(agent, session, "hello") == "done"
        store = system.runtime.store
        recorded = await store.read_all(types=["session.model_replied"], limit=10_000)
        async with ProjectionRunner(store, tmp_path / "views.db", [ModelUsage()]) as runner:
            await runner.catch_up()
        async with ReadModels(tmp_path / "views.db") as models:
            totals = {t.key: t for t in await ModelUsageReader(models).totals("agent")}
    for agent in ("a", "b"):
        mine = [r.event for r in recorded if r.stream.startswith(f"session/{agent}/")]
        assert isinstance(mine[0], ModelReplied)
        total = totals[agent]
        assert total.calls == len(mine) == (6 if agent == "a" else 2)
        assert total.input_tokens == sum(e.usage.input_tokens for e in mine)  # type: ignore[union-attr]
        assert total.output_tokens == sum(e.usage.output_tokens for e in mine)  # type: ignore[union-attr]
        costs = [e.cost_usd for e in mine]  # type: ignore[union-attr]
        assert total.cost_usd == pytest.approx(sum(c for c in costs if c is not None))
        assert total.unpriced_calls == costs.count(None) == (0 if agent == "a" else 2)


async def test_compaction_summaries_count_as_calls_of_the_summarizers_model(
    log: tuple[EventStore, ReadModels],
) -> None:
    store, models = log
    stream = "session/alpha/s1"
    await store.append(stream, [SessionStarted(agent="alpha", session_key="s1")], ANY)
    reply = ModelReplied(
        turn_id="t1", iteration=1, usage=Usage(input_tokens=900, output_tokens=10), model="m"
    )
    pruned = [PrunedResult(call_id="c1", mode="cleared", chars=5000)]
    summary_usage = Usage(input_tokens=3000, output_tokens=200, cached_input_tokens=100)
    events: list[Event] = [
        ModelRequested(turn_id="t1", iteration=1, model="m"),
        reply,
        # Pruning only: no model was called, no row.
        SessionCompacted(turn_id="t2", iteration=1, pruned=pruned, tokens_before=9, tokens_after=5),
        # A failed summary recorded no usage: no row either.
        CompactionFailed(kind="server_error", message="down", turn_id="t2", iteration=1),
        SessionCompacted(
            turn_id="t3",
            iteration=1,
            summary="the user asked for pages",
            summarized_turns=["t1"],
            model="cheap",
            usage=summary_usage,
            cost_usd=0.25,
        ),
        SessionCompacted(trigger="manual", summary="again", summarized_turns=["t2"]),
    ]
    await store.append(stream, events, ANY)
    reader = ModelUsageReader(models)
    await reader.wait_until(await store.head_position())
    by_model = {t.key: t for t in await reader.totals("model", limit=-1)}
    # The manual one's summarizer named no model: the session's (its last request's).
    assert sorted(by_model) == ["cheap", "m"]
    cheap, session_model = by_model["cheap"], by_model["m"]
    assert (cheap.calls, cheap.summary_calls, cheap.input_tokens, cheap.output_tokens) == (
        1,
        1,
        3000,
        200,
    )
    assert cheap.cached_input_tokens == 100 and cheap.cost_usd == pytest.approx(0.25)
    assert (session_model.calls, session_model.summary_calls) == (2, 1)
    assert session_model.unpriced_calls == 2 and session_model.input_tokens == 900
    [agent] = await reader.totals("agent")
    assert (agent.calls, agent.summary_calls, agent.input_tokens) == (3, 2, 3900)
    assert agent.output_tokens == 210 and agent.cost_usd == pytest.approx(0.25)


async def test_a_compacting_sessions_totals_equal_its_replies_and_summaries(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    summarizer = UsageSummarizer()
    await record_long_session(path, summarizer, turns=12)
    async with await open_store(SqliteBackend(path)) as store:
        recorded = await store.read_stream(STREAM)
        async with ProjectionRunner(store, tmp_path / "views.db", [ModelUsage()]) as runner:
            await runner.catch_up()
    async with ReadModels(tmp_path / "views.db") as models:
        reader = ModelUsageReader(models)
        [total] = await reader.totals("agent", agent=AGENT)
        by_model = {t.key: t for t in await reader.totals("model", limit=-1)}
    replies = [r.event for r in recorded if isinstance(r.event, ModelReplied)]
    summaries = [
        r.event for r in recorded if isinstance(r.event, SessionCompacted) and r.event.summary
    ]
    assert summaries and len(summaries) == len(summarizer.requests)
    calls = [*replies, *summaries]
    assert total.calls == len(calls) and total.summary_calls == len(summaries)
    for name in FIGURES:
        assert getattr(total, name) == sum(getattr(e.usage, name) for e in calls), name
    assert by_model["summarizer"].summary_calls == by_model["summarizer"].calls == len(summaries)
    assert by_model["summarizer"].output_tokens == SUMMARY_OUTPUT_TOKENS * len(summaries)
    assert by_model["summarizer"].input_tokens == sum(
        1000 * n for n in range(1, len(summaries) + 1)
    )
    assert by_model["researcher"].summary_calls == 0
