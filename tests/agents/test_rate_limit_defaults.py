"""An agent's tool calls are not rate-limited unless its config says so (issue 24,
"Defaults that do not throttle real work"; seed 001 §15: limits apply "when configured")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, calls, reply
from clawlog.tools import FunctionTool, RateLimitConfig
from clawlog.tools.ratelimit import SUGGESTED_USER_TOOL_WINDOWS, Window

AGENT, KEY = "main", "s"
STREAM = f"session/{AGENT}/{KEY}"


async def _lookup(ctx: object, args: dict[str, Any]) -> str:
    return f"value of {args['key']}"


def lookup_tool() -> FunctionTool:
    return FunctionTool(
        "lookup",
        _lookup,
        description="Look a key up",
        parameters={
            "type": "object",
            "properties": {"key": {"type": "string"}},
            "required": ["key"],
        },
        side_effects="none",
    )


def asks_for(count: int) -> ScriptedModel:
    """A model that asks for ``count`` lookups at once, then counts the answers."""

    def answer(request: ModelRequest) -> ModelReply:
        if request.messages[-1].role == "user":
            return calls([("lookup", {"key": f"k{n}"}) for n in range(count)])
        results = [m for m in request.messages if m.role == "tool"]
        refused = sum(1 for m in results if m.is_error)
        return reply(f"{len(results) - refused} answered, {refused} refused")

    return ScriptedModel(answer)


async def outcomes(system: System) -> list[str]:
    events = await system.store.read_stream(STREAM)
    return [e.type for e in events if e.type in ("tool.call_completed", "tool.call_refused")]


async def test_an_agent_without_rate_limits_runs_every_call(tmp_path: Path) -> None:
    # 1,001 calls by one user of one tool in one step: past seed 004's 60 a minute and
    # 1000 an hour, which were clawlog's defaults before.
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key=AGENT), asks_for(1001), tools=[lookup_tool()])
        assert await system.send(AGENT, KEY, "look them up", timeout=120) == (
            "1001 answered, 0 refused"
        )
        assert await outcomes(system) == ["tool.call_completed"] * 1001


async def test_configured_limits_refuse_the_calls_past_them(tmp_path: Path) -> None:
    config = AgentConfig(key=AGENT, rate_limits=RateLimitConfig(user_tool=(Window(2, 60.0),)))
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(config, asks_for(3), tools=[lookup_tool()])
        assert await system.send(AGENT, KEY, "look them up") == "2 answered, 1 refused"
        events = await system.store.read_stream(STREAM)
    [refused] = [e.event for e in events if e.type == "tool.call_refused"]
    assert refused.step == "rate_limit"  # type: ignore[attr-defined]
    assert "2 per minute" in refused.for_llm  # type: ignore[attr-defined]


async def test_seed_004s_limits_are_a_setting(tmp_path: Path) -> None:
    limits = RateLimitConfig(user_tool=SUGGESTED_USER_TOOL_WINDOWS)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(
            AgentConfig(key=AGENT, rate_limits=limits), asks_for(61), tools=[lookup_tool()]
        )
        assert await system.send(AGENT, KEY, "look them up") == "60 answered, 1 refused"


def test_rate_limits_of_another_type_are_refused_with_what_to_pass() -> None:
    with pytest.raises(
        TypeError, match=r"AgentConfig.rate_limits must be a clawlog RateLimitConfig"
    ):
        AgentConfig(key=AGENT, rate_limits="60/min")  # type: ignore[arg-type]
