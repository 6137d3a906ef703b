"""MCP tools end to end: through the tool pipeline, and through an agent's turn with the
scripted model (offered by grant, approval for destructive tools, refusals recorded)."""

from __future__ import annotations

import asyncio

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.mcp import McpServers
from clawlog.actors.providers import ScriptedModel
from clawlog.events import event_tag
from clawlog.events.domain.session import ModelRequested
from clawlog.events.domain.tool import ToolCallCompleted, ToolCallRefused
from clawlog.tools import ToolContext, ToolPipeline, ToolRegistry, builtin_tools
from clawlog.tools.driver import RecordingSink, run_tool_call
from tests.mcp.conftest import (
    Peers,
    answer_with_tool_output,
    everything_stdio,
    notes_stdio,
    types,
    wait_for_events,
)


async def test_a_call_runs_end_to_end_through_the_tool_pipeline(
    peers: Peers, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)
    registry = ToolRegistry(builtin_tools())
    for tool in servers.tools_for("main"):
        registry.register(tool)
    sink = RecordingSink()
    ctx = ToolContext(agent="main", session_key="s1", user="u1")

    result = await run_tool_call(
        ToolPipeline(registry), ctx, "mcp_everything_echo", {"message": "through"}, sink
    )

    assert result.for_llm == "Echo: through"
    assert [event_tag(type(e)) for e in sink.events] == [
        "tool.call_requested",
        "tool.call_started",
        "tool.call_completed",
    ]
    completed = sink.events[-1]
    assert isinstance(completed, ToolCallCompleted)
    assert completed.details == {"server": "everything", "tool": "echo"}


async def test_an_agent_turn_calls_a_granted_mcp_tool(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)
    model = ScriptedModel(answer_with_tool_output("mcp_everything_get-sum", a=2, b=3))
    config = AgentConfig(key="main")
    await system.register_agent(config, model, gateway=servers.gateway(config))

    answer = await system.send("main", "u", "add 2 and 3", user="alice")

    assert answer == "tool said: The sum of 2 and 3 is 5."
    events = await system.store.read_stream("session/main/u")
    assert types(events)[-7:] == [
        "tool.call_requested",
        "tool.call_started",
        "tool.call_completed",
        "session.model_requested",
        "session.model_replied",
        "session.turn_completed",
        "outbox.message_posted",
    ]
    offered = next(e.event for e in events if isinstance(e.event, ModelRequested))
    assert "mcp_everything_get-sum" in offered.tools
    assert "echo" in offered.tools  # built-ins stay


async def test_an_agent_without_a_grant_is_not_offered_the_tools_and_is_refused(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)
    model = ScriptedModel(answer_with_tool_output("mcp_everything_echo", message="hi"))
    config = AgentConfig(key="other")
    await system.register_agent(config, model, gateway=servers.gateway(config))

    answer = await system.send("other", "u", "echo hi")

    events = await system.store.read_stream("session/other/u")
    offered = next(e.event for e in events if isinstance(e.event, ModelRequested))
    assert not [name for name in offered.tools if name.startswith("mcp_")]
    refused = next(e.event for e in events if isinstance(e.event, ToolCallRefused))
    assert refused.step == "policy"
    assert answer.startswith("tool said: The tool 'mcp_everything_echo' is not available")


async def test_a_user_grant_disabled_hides_the_server_from_that_user_only(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.grant_agent("everything", "main")
    await servers.grant_user("everything", "mallory", enabled=False)
    await servers.wait_connected("everything", 20)
    model = ScriptedModel(answer_with_tool_output("mcp_everything_echo", message="hi"))
    config = AgentConfig(key="main")
    await system.register_agent(config, model, gateway=servers.gateway(config))

    assert await system.send("main", "a", "echo", user="alice") == "tool said: Echo: hi"
    blocked = await system.send("main", "m", "echo", user="mallory")

    assert "not available" in blocked
    events = await system.store.read_stream("session/main/m")
    assert any(isinstance(e.event, ToolCallRefused) for e in events)


async def test_a_destructive_tool_waits_for_approval_and_a_read_only_one_does_not(
    system: System, servers: McpServers
) -> None:
    await servers.add(notes_stdio())
    await servers.grant_agent("notes", "main")
    await servers.wait_connected("notes", 30)
    tools = {t.name: t for t in servers.tools_for("main")}
    assert tools["mcp_notes_delete_note"].requires_approval
    assert not tools["mcp_notes_read_note"].requires_approval
    assert tools["mcp_notes_read_note"].read_only
    model = ScriptedModel(answer_with_tool_output("mcp_notes_delete_note", name="todo"))
    config = AgentConfig(key="main")
    await system.register_agent(config, model, gateway=servers.gateway(config))

    turn = asyncio.ensure_future(system.send("main", "u", "delete my todo note"))
    await wait_for_events(
        system, "session/main/u", lambda seen: "tool.approval_requested" in types(seen)
    )
    assert (await system.session_status("main", "u")).awaiting_approval == ["c1"]
    assert await system.approve("main", "u", "c1", "allow-once", by="ops")

    assert await turn == "tool said: deleted"
    assert "tool.approval_decided" in types(await system.store.read_stream("session/main/u"))
