"""Faults against real servers: killed, stopped (SIGSTOP), nothing listening, missing
command. A dead or hung server never blocks an agent or its connection actor."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.errors import McpCallTimeout, McpUnavailable
from clawlog.actors.mcp import McpServerConfig, McpServers, Transport
from clawlog.actors.providers import ScriptedModel
from clawlog.events.domain.mcp import McpConnectFailed, McpDisconnected, McpReconnectScheduled
from clawlog.events.domain.tool import ToolCallFailed
from clawlog.tools import ToolContext, ToolPipeline, ToolRegistry
from clawlog.tools.driver import RecordingSink, run_tool_call
from tests.mcp.conftest import (
    FAST,
    HttpEverything,
    Peers,
    answer_with_tool_output,
    child_pids,
    count,
    everything_stdio,
    free_port,
    types,
    wait_for_events,
)


def _after(events: list[Any], kind: str) -> list[str]:
    """Event types after the first ``kind``."""
    names = types(events)
    return names[names.index(kind) :]


async def test_a_killed_stdio_server_is_started_again_and_its_tools_come_back(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)
    [pid] = child_pids(peers.everything_js)

    os.kill(pid, signal.SIGKILL)
    events = await wait_for_events(system, "mcp/everything", count("mcp.tools_discovered", 2))

    assert _after(events, "mcp.disconnected") == [
        "mcp.disconnected",
        "mcp.tools_withdrawn",
        "mcp.reconnect_scheduled",
        "mcp.connecting",
        "mcp.connected",
        "mcp.tools_discovered",
    ]
    lost = next(e.event for e in events if isinstance(e.event, McpDisconnected))
    assert (lost.cause, lost.error_kind) == ("connection_lost", "connection_lost")
    await servers.wait_connected("everything", 20)
    assert (await servers.call("everything", "echo", {"message": "back"})).for_llm == "Echo: back"
    assert child_pids(peers.everything_js) != [pid]


@pytest.mark.parametrize("mode", ["streamableHttp", "sse"])
async def test_a_killed_http_server_is_retried_with_backoff_until_it_returns(
    mode: str, peers: Peers, http_servers: Any, system: System, servers: McpServers
) -> None:
    server = await http_servers(mode)
    transport: Transport = "sse" if mode == "sse" else "streamable-http"
    config = McpServerConfig(
        name="everything",
        url=server.url,
        transport=transport,
        # Enough attempts that restarting node on a busy machine never outlasts them, and
        # a health timeout no live server misses (a killed one refuses at once anyway).
        **{**FAST, "health_interval_s": 0.3, "health_timeout_s": 10.0, "max_attempts": 1000},
    )
    await servers.add(config)
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)
    registry = ToolRegistry(servers.tools_for("main"))

    await server.kill()
    events = await wait_for_events(system, "mcp/everything", count("mcp.reconnect_scheduled", 4))

    # Down: no tools offered, and a call fails at once with a result that says why.
    assert servers.tools_for("main") == []
    result = await run_tool_call(
        ToolPipeline(registry),
        ToolContext(agent="main", session_key="s"),
        "mcp_everything_echo",
        {"message": "anyone?"},
        RecordingSink(),
    )
    assert result.is_error and result.error_kind == "external_service"
    # In the backoff or during the next attempt alike (the latter on a busy machine).
    assert "MCP server 'everything' is reconnecting (attempt " in result.for_llm
    delays = [e.event.delay_s for e in events if isinstance(e.event, McpReconnectScheduled)]
    assert delays[:4] == [0.05, 0.1, 0.2, 0.4]
    failures = [e.event for e in events if isinstance(e.event, McpConnectFailed)]
    assert failures and all(f.error_kind == "connect_error" for f in failures)

    await server.start()  # same port
    await wait_for_events(system, "mcp/everything", count("mcp.tools_discovered", 2))
    await servers.wait_connected("everything", 20)
    assert [t.name for t in servers.tools_for("main")][:1] == ["mcp_everything_echo"]
    assert (await servers.call("everything", "echo", {"message": "up"})).for_llm == "Echo: up"


async def test_a_call_during_a_reconnect_attempt_hears_reconnecting_not_connecting(
    peers: Peers, http_servers: Any, system: System, servers: McpServers
) -> None:
    server = await http_servers("streamableHttp")
    config = McpServerConfig(
        name="everything",
        url=server.url,
        **{**FAST, "health_interval_s": 0.2, "health_timeout_s": 2.0, "connect_timeout_s": 120.0},
    )
    await servers.add(config)
    await wait_for_events(system, "mcp/everything", count("mcp.tools_discovered"))
    attempts = types(await system.store.read_stream("mcp/everything")).count("mcp.connecting")
    server.signal(signal.SIGSTOP)
    try:
        # The health check finds it hung; the retry's handshake then hangs until SIGCONT.
        events = await wait_for_events(
            system, "mcp/everything", count("mcp.connecting", attempts + 1), timeout=60
        )
        assert _after(events, "mcp.disconnected")[-2:] == [
            "mcp.reconnect_scheduled",
            "mcp.connecting",
        ]
        with pytest.raises(McpUnavailable) as raised:
            await servers.call("everything", "echo", {"message": "anyone?"})
        assert "is reconnecting (attempt 1 of 8 is running)" in str(raised.value)
    finally:
        server.signal(signal.SIGCONT)
    await servers.wait_connected("everything", 20)
    assert (await servers.call("everything", "echo", {"message": "up"})).for_llm == "Echo: up"


async def test_a_stopped_server_times_out_the_call_while_agent_and_actor_stay_responsive(
    peers: Peers, system: System, servers: McpServers
) -> None:
    # The status asks below are answered while the call hangs: 5 s for them is only a hang.
    await servers.add(everything_stdio(peers, call_timeout_s=5.0, health_timeout_s=0.5))
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)
    model = ScriptedModel(answer_with_tool_output("mcp_everything_echo", message="hello?"))
    config = AgentConfig(key="main")
    await system.register_agent(config, model, gateway=servers.gateway(config))
    [pid] = child_pids(peers.everything_js)
    os.kill(pid, signal.SIGSTOP)
    try:
        turn = asyncio.ensure_future(system.send("main", "u", "say hello"))
        await wait_for_events(system, "session/main/u", count("tool.call_started"))

        [status] = await servers.status("everything")  # answered while the call hangs
        session = await system.session_status("main", "u")
        assert not turn.done()
        assert status.state == "connected"
        assert session.busy

        answer = await turn
        assert answer == (
            "tool said: mcp_everything_echo failed: echo got no answer within 5 s; "
            "the MCP server 'everything' may be overloaded or hung."
        )
        session_events = await system.store.read_stream("session/main/u")
        [failed_call] = [e.event for e in session_events if isinstance(e.event, ToolCallFailed)]
        assert failed_call.error_kind == "timeout"
        events = await wait_for_events(system, "mcp/everything", count("mcp.tools_discovered", 2))
        assert _after(events, "mcp.call_timed_out")[:4] == [
            "mcp.call_timed_out",
            "mcp.disconnected",  # the health check found it hung
            "mcp.tools_withdrawn",
            "mcp.reconnect_scheduled",
        ]
        lost = next(e.event for e in events if isinstance(e.event, McpDisconnected))
        assert lost.cause == "health_check"
        await servers.wait_connected("everything", 20)
        fresh = await servers.call("everything", "echo", {"message": "fresh"})
        assert fresh.for_llm == "Echo: fresh"  # a new process replaced the hung one
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_a_stopped_http_server_times_out_and_recovers_when_continued(
    peers: Peers, http_servers: Any, servers: McpServers
) -> None:
    server = await http_servers("streamableHttp")
    await servers.add(
        McpServerConfig(
            name="everything",
            url=server.url,
            # The status ask below is answered while the call hangs: 3 s is only a hang.
            **{**FAST, "call_timeout_s": 3.0, "health_timeout_s": 5.0},
        )
    )
    await servers.wait_connected("everything", 20)
    server.signal(signal.SIGSTOP)

    call = asyncio.ensure_future(servers.call("everything", "echo", {"message": "stuck"}))
    [status] = await servers.status("everything")
    assert status.state == "connected" and not call.done()
    with pytest.raises(McpCallTimeout, match="no answer within 3 s"):
        await call

    server.signal(signal.SIGCONT)
    await servers.wait_connected("everything", 20)
    assert (await servers.call("everything", "echo", {"message": "ok"})).for_llm == "Echo: ok"


async def test_nothing_listening_fails_fast_gives_up_then_an_operator_reconnects(
    peers: Peers, http_servers: Any, system: System, servers: McpServers
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    await servers.add(McpServerConfig(name="late", url=url, **{**FAST, "max_attempts": 3}))

    events = await wait_for_events(system, "mcp/late", count("mcp.failed"))

    assert types(events)[2:] == [
        "mcp.connecting",
        "mcp.connect_failed",
        "mcp.reconnect_scheduled",
        "mcp.connecting",
        "mcp.connect_failed",
        "mcp.reconnect_scheduled",
        "mcp.connecting",
        "mcp.connect_failed",
        "mcp.failed",
    ]
    failed = [e.event for e in events if isinstance(e.event, McpConnectFailed)]
    assert all("ConnectError" in f.message and f.duration_ms < 5000 for f in failed)
    [status] = await servers.status("late")
    assert (status.state, status.last_error_kind) == ("failed", "connect_error")
    with pytest.raises(McpUnavailable, match="failed after 3 attempts"):
        await servers.call("late", "echo", {"message": "x"})

    server = HttpEverything(peers, "streamableHttp")
    server.port = port
    await server.start()
    try:
        assert await servers.reconnect("late", by="ops")
        await servers.wait_connected("late", 20)
        assert (await servers.call("late", "echo", {"message": "hi"})).for_llm == "Echo: hi"
    finally:
        await server.kill()


async def test_a_missing_command_is_reported_and_the_server_is_marked_failed(
    system: System, servers: McpServers
) -> None:
    config = McpServerConfig(
        name="ghost", command="clawlog-no-such-mcp-server", **{**FAST, "max_attempts": 2}
    )
    await servers.add(config)
    events = await wait_for_events(system, "mcp/ghost", count("mcp.failed"))
    failed = [e.event for e in events if isinstance(e.event, McpConnectFailed)]
    assert [f.attempt for f in failed] == [1, 2]
    assert failed[0].message == "command not found: clawlog-no-such-mcp-server"
    [status] = await servers.status("ghost")
    assert status.state == "failed"
    assert status.last_error == "command not found: clawlog-no-such-mcp-server"


async def test_the_periodic_health_check_finds_a_hung_server_without_any_call(
    peers: Peers, system: System, servers: McpServers
) -> None:
    # 2 s: a live server never misses a check before the SIGSTOP, however busy the machine.
    await servers.add(everything_stdio(peers, health_interval_s=0.2, health_timeout_s=2.0))
    await servers.wait_connected("everything", 20)
    [pid] = child_pids(peers.everything_js)
    os.kill(pid, signal.SIGSTOP)
    try:
        events = await wait_for_events(system, "mcp/everything", count("mcp.tools_discovered", 2))
        lost = next(e.event for e in events if isinstance(e.event, McpDisconnected))
        assert (lost.cause, lost.error_kind) == ("health_check", "timeout")
        assert "mcp.call_timed_out" not in types(events)
        await servers.wait_connected("everything", 20)
        assert child_pids(peers.everything_js) != [pid]
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_a_process_that_never_answers_the_handshake_fails_at_the_connect_deadline(
    system: System, servers: McpServers
) -> None:
    silent = McpServerConfig(
        name="silent",
        command="sleep",
        args=["60"],
        **{**FAST, "connect_timeout_s": 0.5, "max_attempts": 1},
    )
    await servers.add(silent)
    events = await wait_for_events(system, "mcp/silent", count("mcp.failed"))
    [failed] = [e.event for e in events if isinstance(e.event, McpConnectFailed)]
    assert failed.message == "no handshake within 0.5 s"
    assert failed.error_kind == "connect_error"
    assert 400 < failed.duration_ms < 5000
