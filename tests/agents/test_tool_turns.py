"""Turns that call tools: events per step, refusals, the iteration limit, subagents via tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawlog.actors import System, TurnFailedError
from clawlog.actors.agents import AgentConfig
from clawlog.actors.providers import ModelReply, ModelRequest, ScriptedModel, call, calls, reply
from tests.agents.support import types


def planner(request: ModelRequest) -> ModelReply:
    """Lists sessions, runs a subagent, then answers; the subagent itself answers 4."""
    if request.messages[0].content.startswith("[parent]"):
        return reply("4")
    steps = [
        call("sessions_list", call_id="c1"),
        call("subagent", call_id="c2", action="run", task="add 2 and 2"),
        reply("all done"),
    ]
    return steps[sum(1 for m in request.messages if m.role == "tool")]


async def test_a_multi_step_tool_turn_is_recorded_event_by_event(tmp_path: Path) -> None:
    model = ScriptedModel(planner)
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main"), model)
        assert await system.send("main", "u", "go") == "all done"
        events = await system.store.read_stream("session/main/u")
        assert types(events)[1:] == [
            "session.started",
            "session.turn_started",
            "session.model_requested",
            "session.model_replied",
            "tool.call_requested",
            "tool.call_started",
            "tool.call_completed",
            "session.model_requested",
            "session.model_replied",
            "tool.call_requested",
            "tool.call_started",
            "tool.call_completed",
            "session.model_requested",
            "session.model_replied",
            "session.turn_completed",
            "outbox.message_posted",
        ]
        completed = [e.event for e in events if e.type == "tool.call_completed"]
        assert completed[1].for_llm == "4"  # type: ignore[union-attr]
        last_request = model.requests[-1]
        assert [m.role for m in last_request.messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
        ]


async def test_refused_calls_tell_the_model_why_and_never_run(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            calls(
                [
                    ("no_such_tool", {}),
                    ("subagent", "{not json"),
                    ("subagent", {"action": "fly"}),
                    ("sessions_send", {"session_key": "x", "text": "hi"}),
                ]
            ),
            reply("understood"),
        ]
    )
    config = AgentConfig(key="main", tools_deny=["sessions_send"])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(config, model)
        assert await system.send("main", "u", "try things") == "understood"
        events = await system.store.read_stream("session/main/u")
        refused = [e.event for e in events if e.type == "tool.call_refused"]
        assert [r.step for r in refused] == ["resolve", "validation", "validation", "policy"]  # type: ignore[union-attr]
        assert [r.error_kind for r in refused[1:]] == [  # type: ignore[union-attr]
            "invalid_parameters",
            "invalid_parameters",
            "not_authorized",
        ]
        assert "tool.call_started" not in types(events)
        tool_messages = [m.content for m in model.requests[-1].messages if m.role == "tool"]
        assert "There is no tool named 'no_such_tool'" in tool_messages[0]
        assert "not valid JSON" in tool_messages[1]
        assert "parameter 'action' must be one of" in tool_messages[2]
        assert "agents.main.deny has 'sessions_send'" in tool_messages[3]


async def test_the_iteration_limit_ends_a_looping_turn(tmp_path: Path) -> None:
    model = ScriptedModel(lambda request: call("sessions_list"))
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(AgentConfig(key="main", max_iterations=3), model)
        with pytest.raises(
            TurnFailedError, match="iteration_limit: stopped after 3 model iterations"
        ):
            await system.send("main", "u", "loop forever")
        events = await system.store.read_stream("session/main/u")
        assert types(events).count("session.model_requested") == 3
        assert types(events)[-1] == "session.turn_failed"


async def test_a_subagent_cannot_exceed_its_parents_policy(tmp_path: Path) -> None:
    def brain(request: ModelRequest) -> object:
        last = request.messages[-1]
        if last.role == "user" and last.content.startswith("[parent]"):
            offered = sorted(t.name for t in request.tools)
            return reply("tools: " + ",".join(offered))
        if last.role == "tool":
            return reply(last.content)
        return call("subagent", action="run", task="what tools do you have?")

    config = AgentConfig(key="main", tools_deny=["delegate"])
    async with System.open(tmp_path / "log.db") as system:
        await system.register_agent(config, ScriptedModel(brain))  # type: ignore[arg-type]
        answer = await system.send("main", "u", "check")
        offered = answer.removeprefix("tools: ").split(",")
        assert "delegate" not in offered  # the parent's deny list applies
        assert "subagent" not in offered and "spawn" not in offered  # leaf deny at max depth
        assert "sessions_send" not in offered and "session_status" not in offered  # always denied
        assert "team_tasks" in offered
