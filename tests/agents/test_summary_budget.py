"""A compaction's summary is a model call like the others: the day's ledger counts its
usage, and the budgets are checked before it is sent (a summary that would pass one is
not written; the turn goes on with the pruned conversation)."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from pathlib import Path

import pytest

from clawlog.actors import CompactionFailedError, System, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.budgets import BudgetLimits, Budgets
from clawlog.actors.agents.metering import USAGE_LEDGER
from clawlog.actors.agents.summary_budget import BUDGET_EXCEEDED
from clawlog.actors.agents.usage_ledger import UsageLedger, utc_day
from clawlog.actors.providers import ScriptedModel, reply
from clawlog.events import RecordedEvent
from clawlog.events.domain.session import CompactionFailed, ModelReplied, SessionCompacted
from tests.agents.compaction_support import (
    AGENT,
    SESSION_KEY,
    STREAM,
    fetch_tool,
    fitted_config,
    of_type,
    record_long_session,
    researcher,
)
from tests.agents.usage_summarizer import CATALOG, UsageSummarizer

COST_BUDGET = Budgets(session=BudgetLimits(max_cost_usd=1.0))


def ledger_of(system: System) -> UsageLedger:
    ledger = system.runtime.services[USAGE_LEDGER]
    assert isinstance(ledger, UsageLedger)
    return ledger


def tokens_per_day(events: list[RecordedEvent]) -> dict[str, int]:
    """Tokens (input + output) of every model call the stream records, per UTC day."""
    days: dict[str, int] = defaultdict(int)
    for recorded in events:
        event = recorded.event
        if isinstance(event, ModelReplied) or (
            isinstance(event, SessionCompacted) and event.summary
        ):
            days[utc_day(recorded.recorded_at)] += (
                event.usage.input_tokens + event.usage.output_tokens
            )
    return dict(days)


async def test_the_days_ledger_counts_the_summaries_live_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    budgets = Budgets(agent_daily=BudgetLimits(max_tokens=10**12))
    summarizer = UsageSummarizer()
    async with System.open(path, budgets=budgets) as system:
        config = await fitted_config(system)
        model = ScriptedModel(researcher, name="researcher")
        await system.register_agent(config, model, tools=[fetch_tool()], summarizer=summarizer)
        for number in range(12):
            assert (await system.send(AGENT, SESSION_KEY, f"read page {number}")).startswith(
                "answer"
            )
        events = list(await system.store.read_stream(STREAM))
        expected = tokens_per_day(events)
        live = {day: ledger_of(system).spent("agent", AGENT, day).tokens for day in expected}
    summaries = [e for e in of_type(events, "session.compacted") if e.summary]
    assert summaries and all(s.usage.input_tokens >= 1000 for s in summaries)
    assert live == expected
    async with System.open(path, budgets=budgets) as system:
        today = utc_day(time.time())
        await system.register_agent(await fitted_config(system), ScriptedModel([]))
        read_back = ledger_of(system).spent("agent", AGENT, today).tokens
    assert read_back == expected.get(today, 0)


async def test_a_summary_that_would_pass_a_budget_is_not_written_and_the_turn_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="clawlog")
    summarizer = ScriptedModel(lambda request: reply("never"), name="pricey")
    async with System.open(tmp_path / "log.db", model_catalog=CATALOG) as system:
        config = await fitted_config(system, budgets=COST_BUDGET)
        model = ScriptedModel(researcher, name="researcher")
        await system.register_agent(config, model, tools=[fetch_tool()], summarizer=summarizer)
        for number in range(10):
            answer = await system.send(AGENT, SESSION_KEY, f"read page {number}")
            assert answer.startswith("answer ")  # every turn still replied
        events = list(await system.store.read_stream(STREAM))
        status = await system.session_status(AGENT, SESSION_KEY)
    assert summarizer.requests == []  # never sent
    failures: list[CompactionFailed] = of_type(events, "session.compaction_failed")
    assert failures and all(f.kind == BUDGET_EXCEEDED for f in failures)
    assert len({f.turn_id for f in failures}) == len(failures)  # one refusal per turn
    first = failures[0]
    assert first.model == "pricey"
    assert "the summarizer's request (pricey) would pass this conversation's budget" in (
        first.message
    )
    assert "$" in first.message and "(estimated)" in first.message
    assert not any(c.summarized_turns for c in of_type(events, "session.compacted"))
    assert not of_type(events, "session.budget_exceeded")  # the agent's requests fit
    assert status.last_compaction is not None
    assert status.last_compaction.failure.startswith("budget_exceeded: ")
    logged = [vars(r) for r in caplog.records if r.name.startswith("clawlog.actors.agents")]
    refused = [r for r in logged if r["event"] == "summary refused: it would pass a budget"]
    assert [(r["turn_id"], r["correlation_id"]) for r in refused] == [
        (f.turn_id, f.turn_id) for f in failures
    ]
    assert all(
        (r["actor"], r["scope"], r["metric"], r["model"])
        == (STREAM, "session", "cost_usd", "pricey")
        for r in refused
    )


async def test_a_refused_summary_then_a_spent_budget_ends_the_turn(tmp_path: Path) -> None:
    # Recorded once without a budget: the tokens spent before the first summary.
    await record_long_session(tmp_path / "free.db", UsageSummarizer())
    async with System.open(tmp_path / "free.db") as system:
        free = list(await system.store.read_stream(STREAM))
    first = next(
        i for i, r in enumerate(free) if isinstance(r.event, SessionCompacted) and r.event.summary
    )
    spent = sum(tokens_per_day(free[:first]).values())
    # Again with a token budget the agent's requests fit until then (each adds at most
    # its max_tokens, 1000, to what it spent) and the summary does not: it is refused,
    # then so is the request after it, and the turn ends.
    summarizer = ScriptedModel(lambda request: reply("never"), name="pricey")
    async with System.open(tmp_path / "log.db") as system:
        budgets = Budgets(session=BudgetLimits(max_tokens=spent + 1000))
        config = await fitted_config(system, budgets=budgets)
        model = ScriptedModel(researcher, name="researcher")
        await system.register_agent(config, model, tools=[fetch_tool()], summarizer=summarizer)
        with pytest.raises(TurnFailedError, match="budget_exceeded"):
            for number in range(10):
                await system.send(AGENT, SESSION_KEY, f"read page {number}")
        events = list(await system.store.read_stream(STREAM))
    assert summarizer.requests == []
    [refusal] = of_type(events, "session.compaction_failed")
    [exceeded] = of_type(events, "session.budget_exceeded")
    assert refusal.kind == BUDGET_EXCEEDED and refusal.turn_id == exceeded.turn_id
    assert "tokens are used and the summary could use up to" in refusal.message
    assert exceeded.spent == spent
    assert "session.turn_failed" in [e.type for e in events[-2:]]


async def test_compact_on_demand_over_budget_raises_and_records_the_refusal(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(lambda request: reply("ok"), name="researcher")
    summarizer = ScriptedModel(lambda request: reply("never"), name="pricey")
    async with System.open(tmp_path / "log.db", model_catalog=CATALOG) as system:
        config = AgentConfig(key=AGENT, budgets=COST_BUDGET)
        await system.register_agent(config, model, summarizer=summarizer)
        for number in range(3):
            await system.send(AGENT, SESSION_KEY, f"message {number} " + "m" * 5000)
        with pytest.raises(CompactionFailedError, match="was not written") as caught:
            await system.compact(AGENT, SESSION_KEY)
        assert caught.value.kind == BUDGET_EXCEEDED
        assert "cheaper summarizer" in str(caught.value)
        events = await system.store.read_stream(STREAM)
        assert events[-1].type == "session.compaction_failed"
        assert await system.send(AGENT, SESSION_KEY, "still here") == "ok"
        assert len(model.requests[-1].messages) == 7  # nothing was summarized
    assert summarizer.requests == []
