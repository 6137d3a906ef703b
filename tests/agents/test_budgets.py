"""Budgets stop the model request that would pass them, record why, and tell the user."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import System, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.agents.budgets import BudgetLimits, Budgets
from clawlog.actors.agents.usage_ledger import utc_day
from clawlog.actors.errors import InvalidArgument
from clawlog.actors.providers import ModelReply, ScriptedModel, Usage, call
from clawlog.actors.replay import rerun
from clawlog.events import open_store
from clawlog.events.domain.outbox import MessagePosted
from clawlog.events.domain.session import BudgetExceeded, TurnFailed
from tests.agents.support import types

#: A limit far above any request's estimate, so only what a reply reports can reach it.
LIMIT = 1_000_000


def spending(tokens: int, text: str = "done", **reply: Any) -> ModelReply:
    return ModelReply(text=text, usage=Usage(input_tokens=tokens, output_tokens=0), **reply)


def tool_call_spending(tokens: int) -> ModelReply:
    step = call("echo", call_id="c1", message="hi")
    return ModelReply(tool_calls=step.tool_calls, usage=Usage(input_tokens=tokens))


async def events_of(system: System, stream: str) -> list[Any]:
    return list(await system.store.read_stream(stream))


async def test_a_budget_hit_mid_turn_stops_before_the_next_request(tmp_path: Path) -> None:
    # The first reply asks for a tool and uses all but 10 tokens of the session's budget:
    # the request after the tool's result (its max output alone is 100) is never sent.
    model = ScriptedModel([tool_call_spending(LIMIT - 10), spending(1)])
    config = AgentConfig(
        key="main", max_tokens=100, budgets=Budgets(session=BudgetLimits(max_tokens=LIMIT))
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(config, model)
        with pytest.raises(TurnFailedError) as failed:
            await system.send("main", "u", "go")
        events = await events_of(system, "session/main/u")
    assert failed.value.reason == "budget_exceeded"
    assert len(model.requests) == 1  # the second request was not sent
    assert types(events)[-7:] == [
        "session.model_replied",
        "tool.call_requested",
        "tool.call_started",
        "tool.call_completed",
        "session.budget_exceeded",
        "session.turn_failed",
        "outbox.message_posted",
    ]
    exceeded, ended, posted = (e.event for e in events[-3:])
    assert isinstance(exceeded, BudgetExceeded) and isinstance(ended, TurnFailed)
    assert (exceeded.scope, exceeded.metric, exceeded.limit) == ("session", "tokens", LIMIT)
    assert exceeded.spent == LIMIT - 10 and exceeded.iteration == 2
    assert exceeded.request_estimate > 100  # the input estimate plus the max output
    assert ended.reason == "budget_exceeded" and ended.message == exceeded.message
    assert "this conversation's budget" in exceeded.message
    assert "raise the limit" in exceeded.message
    assert isinstance(posted, MessagePosted) and posted.text == exceeded.message
    assert failed.value.message == exceeded.message


async def test_a_spent_session_refuses_its_next_turn_but_not_a_new_session(tmp_path: Path) -> None:
    model = ScriptedModel([spending(LIMIT - 10, "first"), spending(1, "other session")])
    budgets = Budgets(session=BudgetLimits(max_tokens=LIMIT))
    async with System.open(tmp_path / "log.db", budgets=budgets) as system:
        await system.register_agent(AgentConfig(key="main", max_tokens=100), model)
        assert await system.send("main", "u", "one") == "first"
        with pytest.raises(TurnFailedError, match="budget_exceeded"):
            await system.send("main", "u", "two")
        assert await system.send("main", "v", "three") == "other session"
        events = await events_of(system, "session/main/u")
    assert types(events)[-4:] == [
        "session.turn_started",
        "session.budget_exceeded",
        "session.turn_failed",
        "outbox.message_posted",
    ]


async def test_an_agents_daily_budget_spans_its_sessions(tmp_path: Path) -> None:
    model = ScriptedModel([spending(LIMIT - 10, "first")])
    config = AgentConfig(
        key="main", max_tokens=100, budgets=Budgets(agent_daily=BudgetLimits(max_tokens=LIMIT))
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(config, model)
        assert await system.send("main", "u", "one") == "first"
        with pytest.raises(TurnFailedError, match="budget_exceeded"):
            await system.send("main", "v", "two")
        events = await events_of(system, "session/main/v")
    [exceeded] = [e for e in events if e.type == "session.budget_exceeded"]
    assert exceeded.event.scope == "agent" and exceeded.event.subject == "main"
    assert exceeded.event.day == utc_day(exceeded.recorded_at)
    assert "daily budget of agent main" in exceeded.event.message


async def test_a_users_daily_budget_spans_agents_and_leaves_other_users_alone(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(lambda request: spending(LIMIT // 2, "ok"))
    budgets = Budgets(user_daily=BudgetLimits(max_tokens=LIMIT))
    async with System.open(tmp_path / "log.db", budgets=budgets) as system:
        await system.register_agent(AgentConfig(key="a", max_tokens=100), model)
        await system.register_agent(AgentConfig(key="b", max_tokens=100), model)
        assert await system.send("a", "s1", "one", user="alice") == "ok"
        assert await system.send("b", "s2", "two", user="alice") == "ok"
        with pytest.raises(TurnFailedError, match=r"the daily budget of user alice \("):
            await system.send("a", "s3", "three", user="alice")
        assert await system.send("a", "s4", "four", user="bob") == "ok"
        assert await system.send("a", "s5", "five") == "ok"  # no user known: no user budget


async def test_a_cost_budget_counts_the_estimated_cost(tmp_path: Path) -> None:
    # gpt-4o output: $10 per million tokens; max_tokens 1000 could cost $0.01 more.
    model = ScriptedModel(
        [ModelReply(text="first", usage=Usage(output_tokens=99_000))], name="gpt-4o"
    )
    config = AgentConfig(
        key="main", max_tokens=1000, budgets=Budgets(session=BudgetLimits(max_cost_usd=1.0))
    )
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(config, model)
        assert await system.send("main", "u", "one") == "first"  # $0.99 spent
        with pytest.raises(TurnFailedError, match=r"\$0\.9900 of \$1\.0000"):
            await system.send("main", "u", "two")
        events = await events_of(system, "session/main/u")
    [exceeded] = [e.event for e in events if e.type == "session.budget_exceeded"]
    assert exceeded.metric == "cost_usd" and exceeded.spent == pytest.approx(0.99)
    assert exceeded.request_estimate > 0.01


async def test_a_cost_budget_on_a_model_without_a_price_is_refused(tmp_path: Path) -> None:
    config = AgentConfig(key="main", budgets=Budgets(session=BudgetLimits(max_cost_usd=5.0)))
    async with System.open(tmp_path / "log.db") as system:
        with pytest.raises(InvalidArgument, match="no price for its model 'my-local-llm'"):
            await system.register_agent(config, ScriptedModel([], name="my-local-llm"))


async def test_a_cost_budget_with_a_summarizer_without_a_price_is_refused(
    tmp_path: Path,
) -> None:
    # Else its summaries would cost None: uncounted, so never stopped by the cost budget.
    budgets = Budgets(user_daily=BudgetLimits(max_cost_usd=5.0))
    async with System.open(tmp_path / "log.db", budgets=budgets) as system:
        with pytest.raises(InvalidArgument, match="no price for its summarizer 'my-local-llm'"):
            await system.register_agent(
                AgentConfig(key="main"),
                ScriptedModel([], name="gpt-4o"),
                summarizer=ScriptedModel([], name="my-local-llm"),
            )
        assert system.registered_agents() == []


async def test_the_days_spending_is_read_back_from_the_log_after_a_restart(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.db"
    async with System.open(path) as system:
        model = ScriptedModel([spending(LIMIT - 10, "first")])
        await system.register_agent(AgentConfig(key="main", max_tokens=100), model)
        assert await system.send("main", "u", "one") == "first"
    budgets = Budgets(agent_daily=BudgetLimits(max_tokens=LIMIT))
    async with System.open(path, budgets=budgets) as system:
        model = ScriptedModel([spending(1, "never")])
        await system.register_agent(AgentConfig(key="main", max_tokens=100), model)
        with pytest.raises(TurnFailedError, match="budget_exceeded"):
            await system.send("main", "v", "two")
        assert model.requests == []


@pytest.mark.parametrize(
    ("limits", "named"),
    [
        ({}, "limits nothing"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_cost_usd": -1.0}, "max_cost_usd"),
        ({"max_cost_usd": float("inf")}, "max_cost_usd"),
        ({"max_tokens": 1.5}, r"max_tokens: must be a whole number of tokens \(int\)"),
        ({"max_tokens": "100"}, r"max_tokens: must be a whole number of tokens \(int\)"),
        ({"max_cost_usd": True}, "max_cost_usd: must be an amount of US dollars"),
    ],
)
def test_bad_limits_are_refused_naming_what_is_wrong(limits: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidArgument, match=named):
        BudgetLimits(**limits)


def test_budgets_of_the_wrong_type_are_refused() -> None:
    with pytest.raises(InvalidArgument, match=r"Budgets\.session"):
        Budgets(session=100)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"AgentConfig\.budgets"):
        AgentConfig(key="main", budgets=BudgetLimits(max_tokens=5))  # type: ignore[arg-type]


async def test_a_rerun_of_a_turn_a_budget_stopped_matches_the_log(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    config = AgentConfig(
        key="main", max_tokens=100, budgets=Budgets(session=BudgetLimits(max_tokens=LIMIT))
    )
    async with System.open(path) as system:
        await system.register_agent(config, ScriptedModel([tool_call_spending(LIMIT - 10)]))
        with pytest.raises(TurnFailedError, match="budget_exceeded"):
            await system.send("main", "u", "go")
    async with await open_store(path) as store:
        report = await rerun(store, "main", "u")
    assert report.matched, report.divergence
