"""Real servers on every transport: connect, discover tools, call them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clawlog.actors import System
from clawlog.actors.mcp import McpServerConfig, McpServers, Transport
from clawlog.events.domain.mcp import McpConnected, McpToolsDiscovered
from tests.mcp.conftest import FAST, Peers, everything_stdio, types

EVERYTHING_TOOLS = {
    "echo",
    "get-sum",
    "get-env",
    "get-tiny-image",
    "trigger-long-running-operation",
}


async def _config(peers: Peers, mode: str, http_servers: Any) -> McpServerConfig:
    if mode == "stdio":
        return everything_stdio(peers)
    server = await http_servers(mode)
    transport: Transport = "sse" if mode == "sse" else "streamable-http"
    return McpServerConfig(name="everything", url=server.url, transport=transport, **FAST)


@pytest.mark.parametrize("mode", ["stdio", "sse", "streamableHttp"])
async def test_everything_connects_lists_prefixed_tools_and_answers_on_every_transport(
    mode: str, peers: Peers, http_servers: Any, system: System, servers: McpServers
) -> None:
    config = await _config(peers, mode, http_servers)
    await servers.add(config)
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)

    names = {tool.name for tool in servers.tools_for("main")}
    assert {f"mcp_everything_{name}" for name in EVERYTHING_TOOLS} <= names
    assert all(tool.group == "mcp:everything" for tool in servers.tools_for("main"))

    echoed = await servers.call("everything", "echo", {"message": f"over {mode}"})
    assert echoed.for_llm == f"Echo: over {mode}"
    summed = await servers.call("everything", "get-sum", {"a": 2, "b": 40})
    assert "42" in summed.for_llm

    [status] = await servers.status("everything")
    assert status.state == "connected"
    assert status.transport == config.transport
    assert status.server_name == "mcp-servers/everything"
    events = await system.store.read_stream("mcp/everything")
    assert types(events)[:3] == ["actor.started", "mcp.server_configured", "mcp.connecting"]
    connected = next(e.event for e in events if isinstance(e.event, McpConnected))
    assert connected.protocol_version and connected.duration_ms > 0
    discovered = next(e.event for e in events if isinstance(e.event, McpToolsDiscovered))
    assert {t.name for t in discovered.tools} >= EVERYTHING_TOOLS
    # The server's annotations, as it sent them over this transport.
    hints = {t.name: (t.read_only, t.destructive, t.requires_approval) for t in discovered.tools}
    assert hints["echo"] == (True, False, False)
    assert hints["toggle-simulated-logging"] == (False, False, False)
    offered = {t.name: t for t in servers.tools_for("main")}
    assert offered["mcp_everything_echo"].read_only
    assert not offered["mcp_everything_toggle-simulated-logging"].read_only


async def test_time_server_over_stdio_tells_the_time_in_utc(
    peers: Peers, servers: McpServers
) -> None:
    config = McpServerConfig(
        name="time", command=peers.time_server, args=["--local-timezone", "UTC"], **FAST
    )
    await servers.add(config)
    await servers.grant_agent("time", "*")
    await servers.wait_connected("time", 20)

    assert {t.name for t in servers.tools_for("anyone")} == {
        "mcp_time_get_current_time",
        "mcp_time_convert_time",
    }
    result = await servers.call("time", "get_current_time", {"timezone": "UTC"})
    assert not result.is_error
    assert json.loads(result.for_llm)["timezone"] == "UTC"
    assert result.details["structured"]["timezone"] == "UTC"
    converted = await servers.call(
        "time",
        "convert_time",
        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    )
    assert "21:00" in converted.for_llm


async def test_a_server_error_comes_back_as_an_error_result(
    peers: Peers, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.wait_connected("everything", 20)
    result = await servers.call("everything", "get-sum", {"a": "two"})
    assert result.is_error
    assert result.error_kind == "invalid_parameters"
    assert "get-sum" in result.for_llm or "a" in result.for_llm
