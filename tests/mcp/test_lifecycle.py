"""Operating servers: enable, disable, remove, reconfigure, a file of servers, restarts,
secrets kept out of the log, and the health read model over the log."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from clawlog.actors import System
from clawlog.actors.agents import AgentConfig
from clawlog.actors.mcp import McpServers, mcp_servers
from clawlog.cli.mcp import SERVER_COLUMNS, server_row
from clawlog.events import SqliteBackend, open_store
from clawlog.events.domain.mcp import McpServerConfigured, McpToolsDiscovered
from clawlog.projections import McpHealthReader, ProjectionRunner, ReadModels
from clawlog.projections.read_models.mcp_health import McpHealth, McpServerHealth
from tests.mcp.conftest import (
    FAST,
    Peers,
    count,
    everything_stdio,
    notes_stdio,
    types,
    wait_for_events,
)


async def health(log: Path, views: Path) -> list[McpServerHealth]:
    """The MCP health read model in ``views``, caught up with the head of ``log`` (read by
    a store of its own, as a runner in another process would)."""
    store = await open_store(SqliteBackend(log, read_only=True))
    try:
        async with ProjectionRunner(store, views, [McpHealth()]) as runner:
            await runner.catch_up()
    finally:
        await store.close()
    async with ReadModels(views) as models:
        return await McpHealthReader(models).servers()


async def test_disabling_withdraws_the_tools_and_enabling_brings_them_back(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)

    assert await servers.set_enabled("everything", False, by="ops")
    [status] = await servers.status("everything")
    assert (status.state, status.tools) == ("disabled", [])
    assert servers.tools_for("main") == []
    assert not await servers.set_enabled("everything", False)

    assert await servers.set_enabled("everything", True, by="ops")
    await servers.wait_connected("everything", 20)
    assert servers.tools_for("main")
    stream = types(await system.store.read_stream("mcp/everything"))
    assert stream.count("mcp.server_enabled_changed") == 2
    assert stream.count("mcp.tools_withdrawn") == 1


async def test_removing_a_server_records_it_and_stops_its_connection(
    peers: Peers, system: System, servers: McpServers, tmp_path: Path
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.grant_agent("everything", "main")
    await servers.wait_connected("everything", 20)

    assert await servers.remove("everything", by="ops")

    assert servers.tools_for("main") == []
    assert servers.names() == []
    assert system.actor("mcp/everything") is None
    stream = types(await system.store.read_stream("mcp/everything"))
    assert stream[-4:] == [
        "mcp.disconnected",
        "mcp.tools_withdrawn",
        "mcp.server_removed",
        "actor.stopped",
    ]
    assert not await servers.remove("everything")
    assert [s.server for s in await health(tmp_path / "log.db", tmp_path / "views.db")] == []


async def test_a_changed_configuration_reconnects_and_an_unchanged_one_does_nothing(
    peers: Peers, system: System, servers: McpServers
) -> None:
    await servers.add(everything_stdio(peers))
    await servers.wait_connected("everything", 20)
    await servers.add(everything_stdio(peers))
    assert types(await system.store.read_stream("mcp/everything")).count("mcp.connecting") == 1

    await servers.add(everything_stdio(peers, tool_prefix="ev"))
    await wait_for_events(system, "mcp/everything", count("mcp.tools_discovered", 2))
    await servers.grant_agent("everything", "main")
    assert "ev_echo" in {t.name for t in servers.tools_for("main")}
    configured = [
        e.event
        for e in await system.store.read_stream("mcp/everything")
        if isinstance(e.event, McpServerConfigured)
    ]
    assert [c.tool_prefix for c in configured] == ["mcp_everything", "ev"]
    stream = types(await system.store.read_stream("mcp/everything"))
    assert stream[stream.index("mcp.tools_discovered") + 1 :][:4] == [
        "mcp.disconnected",  # cause: reconfigured
        "mcp.tools_withdrawn",
        "mcp.server_configured",
        "mcp.connecting",
    ]


async def test_tools_named_like_built_ins_are_skipped_and_recorded(
    system: System, servers: McpServers
) -> None:
    await servers.add(notes_stdio(tool_prefix=""))
    await servers.grant_agent("notes", "main")
    await servers.wait_connected("notes", 30)
    assert "echo" not in {t.name for t in servers.tools_for("main")}
    assert {"read_note", "delete_note", "whoami"} <= {t.name for t in servers.tools_for("main")}
    discovered = next(
        e.event
        for e in await system.store.read_stream("mcp/notes")
        if isinstance(e.event, McpToolsDiscovered)
    )
    [skipped] = discovered.skipped
    assert (skipped.name, skipped.reason) == ("echo", "'echo' would shadow a built-in tool")
    gateway = servers.gateway(AgentConfig(key="main"))
    gateway.context(_caller("main"))  # syncs the registry
    assert gateway.pipeline.registry.get("echo").__class__.__name__ == "EchoTool"


def _caller(agent: str):  # type: ignore[no-untyped-def]
    from clawlog.actors.agents import CallerContext

    return CallerContext(agent=agent, session_key="s")


async def test_a_file_of_servers_is_loaded_and_oauth_servers_fail_with_a_clear_reason(
    peers: Peers, tmp_path: Path, system: System, servers: McpServers
) -> None:
    path = tmp_path / "mcp-servers.json"
    path.write_text(
        json.dumps(
            {
                "servers": [
                    {
                        "name": "everything",
                        "command": peers.node,
                        "args": [peers.everything_js, "stdio"],
                    },
                    {
                        "name": "remote",
                        "url": "https://mcp.example.com/mcp",
                        "oauth": {"client_id": "abc"},
                        "max_attempts": 1,
                    },
                ],
                "schema_version": 1,
            }
        )
    )
    assert await servers.load_file(path) == ["everything", "remote"]
    await servers.wait_connected("everything", 20)
    events = await wait_for_events(system, "mcp/remote", count("mcp.failed"))
    assert "OAuth" in events[-1].event.message  # type: ignore[union-attr]
    configured = next(e.event for e in events if isinstance(e.event, McpServerConfigured))
    assert configured.source == str(path)
    states = {s.server: s.state for s in await servers.status()}
    assert states == {"everything": "connected", "remote": "failed"}


async def test_secrets_stay_out_of_the_log_and_out_of_results(
    peers: Peers, tmp_path: Path, system: System, servers: McpServers
) -> None:
    secret = "s3cr3t-token-4242"
    await servers.add(everything_stdio(peers, env={"CLAWLOG_TEST_TOKEN": secret}))
    await servers.wait_connected("everything", 20)

    result = await servers.call("everything", "get-env", {})

    assert "CLAWLOG_TEST_TOKEN" in result.for_llm
    assert secret not in result.for_llm
    recorded = await system.store.read_stream("mcp/everything")
    encoded = b"".join(msgspec.msgpack.encode(r.event) for r in recorded)
    assert b"CLAWLOG_TEST_TOKEN" in encoded and secret.encode() not in encoded
    files = b"".join(p.read_bytes() for p in tmp_path.glob("log.db*"))
    assert secret.encode() not in files


async def test_grants_survive_a_restart_and_the_health_model_matches_the_live_status(
    peers: Peers, tmp_path: Path
) -> None:
    location, views = tmp_path / "log.db", tmp_path / "views.db"
    async with System.open(location) as system:
        servers = mcp_servers(system)
        await servers.add(everything_stdio(peers))
        await servers.grant_agent("everything", "main", tool_allow=["echo"])
        await servers.wait_connected("everything", 20)
        [live] = await servers.status("everything")
        [folded] = await health(location, views)
        assert (folded.state, folded.tools, folded.server_name) == (
            live.state,
            live.tools,
            live.server_name,
        )
        assert folded.since > 0

    async with System.open(location) as system:
        [after_close] = await health(location, views)
        assert (after_close.state, after_close.tools) == ("disconnected", [])
        servers = mcp_servers(system)
        await servers.add(everything_stdio(peers))
        await servers.wait_connected("everything", 20)
        assert [t.name for t in servers.tools_for("main")] == ["mcp_everything_echo"]
        stream = types(await system.store.read_stream("mcp/everything"))
        assert stream.count("mcp.server_configured") == 1  # unchanged: not recorded again
        assert stream.count("mcp.agent_grant_set") == 1

        rows = [server_row(s) for s in await health(location, views)]
        assert len(rows[0]) == len(SERVER_COLUMNS)
        assert rows[0][:3] == ["everything", "connected", "stdio"]
        assert rows[0][3] == "13/13"


def test_fast_settings_are_valid() -> None:
    from clawlog.actors.mcp import McpServerConfig

    McpServerConfig(name="x", command="y", **FAST)


def test_the_folded_state_survives_a_snapshot_round_trip() -> None:
    from clawlog.actors.mcp.state import McpServerState, apply_mcp_event
    from clawlog.events.domain.mcp import (
        McpAccessRequested,
        McpAgentGrantSet,
        McpConnected,
        McpServerConfigured,
        McpToolInfo,
    )

    state = McpServerState()
    for event in [
        McpServerConfigured(server="x", transport="stdio", settings={"max_attempts": 3.0}),
        McpConnected(server="x", attempt=1, server_name="srv"),
        McpToolsDiscovered(
            server="x", tools=[McpToolInfo(name="a", registered_name="mcp_x_a", read_only=True)]
        ),
        McpAgentGrantSet(server="x", agent="main", tool_allow=["a"]),
        McpAccessRequested(server="x", request_id="r1", scope="user", subject="bob"),
    ]:
        apply_mcp_event(state, event, at=1.0)
    copy = msgspec.msgpack.decode(msgspec.msgpack.encode(state), type=McpServerState)
    assert copy == state
    assert (copy.state, copy.max_attempts, copy.offered_names()) == ("connected", 3, ["mcp_x_a"])


def test_the_connection_fold_moves_since_only_on_a_change_and_keeps_a_removal() -> None:
    from clawlog.actors.mcp.state import McpServerState
    from clawlog.events.domain.mcp import (
        McpAgentGrantSet,
        McpConnectFailed,
        McpConnecting,
        McpDisconnected,
        McpServerRemoved,
    )
    from clawlog.events.folds.mcp import ServerConnection, fold_connection

    assert issubclass(McpServerState, ServerConnection)  # the actor folds with it too
    connection = ServerConnection(server="x")
    assert fold_connection(connection, McpConnecting(server="x", attempt=1), at=1.0)
    assert fold_connection(connection, McpConnecting(server="x", attempt=2), at=2.0)
    assert (connection.state, connection.attempt, connection.since) == ("connecting", 2, 1.0)
    failed = McpConnectFailed(server="x", attempt=2, error_kind="timeout", message="slow")
    assert fold_connection(connection, failed, at=3.0)
    assert (connection.last_error_kind, connection.last_error_at) == ("timeout", 3.0)
    assert fold_connection(connection, McpServerRemoved(server="x"), at=4.0)
    assert fold_connection(connection, McpDisconnected(server="x", cause="removed"), at=5.0)
    assert (connection.state, connection.since) == ("removed", 4.0)
    assert not fold_connection(connection, McpAgentGrantSet(server="x", agent="main"), at=6.0)
