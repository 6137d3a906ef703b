"""The MCP health read model and ``clawlog mcp``, on a log written by real servers:
server-everything and mcp-server-time over stdio, a missing command that failed, and a
server that was removed. The projection's rows are what the session did, live equals
rebuild, they agree with the actor's own state over every kind of MCP event, and the
command shows state, tools and the last error."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from clawlog.actors import System
from clawlog.actors.mcp import McpServerConfig, McpServerStatus, mcp_servers
from clawlog.actors.mcp.state import McpServerState, apply_mcp_event
from clawlog.events import EventStore, SqliteBackend, open_store
from clawlog.events.domain.mcp import MCP_EVENTS
from clawlog.projections import McpHealthReader, ProjectionRunner, ReadModels, rebuild
from clawlog.projections.read_models.mcp_health import McpHealth
from clawlog.projections.testing import dump_tables, write_mixed_log
from tests.mcp.conftest import (
    FAST,
    ROOT,
    Peers,
    count,
    everything_stdio,
    notes_stdio,
    wait_for_events,
)

MISSING = "clawlog-no-such-mcp-server"


class RecordedLog(msgspec.Struct, frozen=True):
    log: Path
    live_views: Path


async def _record(peers: Peers, folder: Path) -> RecordedLog:
    log, live = folder / "log.db", folder / "live-mcp.views.db"
    async with System.open(log) as system:
        # A reader of its own, as a runner in another process would have: it polls the file.
        follower = await open_store(SqliteBackend(log, read_only=True))
        try:
            async with ProjectionRunner(follower, live, [McpHealth()], batch_size=3) as runner:
                runner.start()  # follows the session live, in small batches
                await _session(peers, system)
                await runner.wait_until(await system.store.head_position(), timeout=20)
        finally:
            await follower.close()
    store = await open_store(log)  # the close's disconnections: resumed from the checkpoint
    try:
        async with ProjectionRunner(store, live, [McpHealth()]) as runner:
            await runner.catch_up()
    finally:
        await store.close()
    return RecordedLog(log=log, live_views=live)


async def _session(peers: Peers, system: System) -> None:
    servers = mcp_servers(system)
    await servers.add(everything_stdio(peers))
    await servers.add(McpServerConfig(name="time", command=peers.time_server, **FAST))
    await servers.add(McpServerConfig(name="ghost", command=MISSING, **{**FAST, "max_attempts": 2}))
    await servers.add(notes_stdio())
    await servers.grant_agent("everything", "main", tool_allow=["echo"])
    await servers.grant_user("everything", "*", tool_deny=["get-env"])
    for name in ("everything", "time", "notes"):
        await servers.wait_connected(name, 20)
    await wait_for_events(system, "mcp/ghost", count("mcp.failed"))
    assert await servers.remove("notes", by="ops")
    await wait_for_events(system, "mcp/notes", count("mcp.server_removed"))


@pytest.fixture(scope="module")
def recorded(peers: Peers, tmp_path_factory: pytest.TempPathFactory) -> RecordedLog:
    """One real session, shared by the tests of this module (they only read it)."""
    return asyncio.run(_record(peers, tmp_path_factory.mktemp("mcp-health")))


def clawlog(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clawlog", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},  # one table row per line
    )


async def test_the_projection_shows_what_the_session_did_live_and_after_a_rebuild(
    recorded: RecordedLog, tmp_path: Path
) -> None:
    store = await open_store(recorded.log)
    try:
        rebuilt = tmp_path / "rebuilt.views.db"
        await rebuild(store, rebuilt, [McpHealth()], show_progress=False)
    finally:
        await store.close()
    assert dump_tables(recorded.live_views) == dump_tables(rebuilt)
    async with ReadModels(recorded.live_views) as views:
        rows = {r.server: r for r in await McpHealthReader(views).servers(include_removed=True)}
    assert sorted(rows) == ["everything", "ghost", "notes", "time"]
    shown = {
        name: (r.state, r.removed, r.enabled, r.transport, r.tools, r.attempt, r.max_attempts)
        for name, r in rows.items()
    }
    assert shown == {
        # closed with the system: disconnected, its tools withdrawn
        "everything": ("disconnected", False, True, "stdio", [], 1, 8),
        "ghost": ("failed", False, True, "stdio", [], 2, 2),
        "notes": ("removed", True, True, "stdio", [], 1, 8),
        "time": ("disconnected", False, True, "stdio", [], 1, 8),
    }
    everything, ghost, time = rows["everything"], rows["ghost"], rows["time"]
    assert (everything.discovered, everything.skipped, everything.server_name) == (
        13,
        0,
        "mcp-servers/everything",
    )
    assert (everything.agent_grants, everything.user_grants, everything.pending_requests) == (
        1,
        1,
        0,
    )
    assert (ghost.discovered, ghost.last_error_kind) == (0, "connect_error")
    assert ghost.last_error == f"command not found: {MISSING}"
    assert 0 < ghost.last_error_at <= ghost.since  # the last attempt failed, then: failed
    assert time.discovered >= 2 and not time.last_error
    assert all(r.since > 0 for r in rows.values())


async def test_the_reader_filters_by_state_and_lists_a_servers_tools(
    recorded: RecordedLog,
) -> None:
    async with ReadModels(recorded.live_views) as views:
        health = McpHealthReader(views)
        listed = [s.server for s in await health.servers()]
        failed = await health.servers(state="failed")
        removed = await health.servers(state="removed")
        everything = await health.server("everything")
        tools = await health.tools("everything")
        grants = await health.grants("everything")
        unknown = await health.server("nobody")
    assert listed == ["everything", "ghost", "time"]  # removed ones only when asked
    assert [(s.server, s.last_error_kind, s.last_error) for s in failed] == [
        ("ghost", "connect_error", f"command not found: {MISSING}")
    ]
    assert [(s.server, s.removed, s.tools) for s in removed] == [("notes", True, [])]
    assert everything is not None and unknown is None
    # Closed with the system: its tools are withdrawn but the last listing is kept.
    assert (everything.state, everything.tools, everything.discovered) == ("disconnected", [], 13)
    assert (everything.agent_grants, everything.user_grants) == (1, 1)
    assert len(tools) == 13 and not any(t.offered for t in tools)
    echo = next(t for t in tools if t.name == "echo")
    assert (echo.registered_name, echo.skipped_reason) == ("mcp_everything_echo", "")
    assert [(g.scope, g.subject, g.tool_allow, g.tool_deny) for g in grants] == [
        ("agent", "main", ["echo"], []),
        ("user", "*", None, ["get-env"]),
    ]


def test_clawlog_mcp_shows_servers_state_tools_and_the_last_error(
    recorded: RecordedLog,
) -> None:
    shown = clawlog("mcp", "--db", str(recorded.log))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("server\tstate\ttransport\t")  # piped: tab-separated
    lines = {line.split("\t")[0]: line for line in shown.stdout.splitlines()[1:]}
    assert "disconnected" in lines["everything"] and "0/13" in lines["everything"]
    assert "failed" in lines["ghost"] and "2/2" in lines["ghost"]
    assert f"connect_error: command not found: {MISSING}" in lines["ghost"]
    assert "notes" not in lines

    as_json = json.loads(clawlog("mcp", "--db", str(recorded.log), "--json").stdout)
    by_name = {s["server"]: s for s in as_json}
    assert sorted(by_name) == ["everything", "ghost", "time"]
    assert by_name["ghost"]["state"] == "failed"
    assert by_name["ghost"]["last_error"] == f"command not found: {MISSING}"
    assert by_name["time"]["transport"] == "stdio" and by_name["time"]["discovered"] >= 2

    failed = json.loads(
        clawlog("mcp", "--db", str(recorded.log), "--state", "failed", "--json").stdout
    )
    assert [s["server"] for s in failed] == ["ghost"]
    everything = clawlog("mcp", "--db", str(recorded.log), "--all", "--json")
    assert "notes" in {s["server"] for s in json.loads(everything.stdout)}


def test_clawlog_mcp_server_shows_one_server_with_its_tools(recorded: RecordedLog) -> None:
    detail = json.loads(
        clawlog("mcp", "--db", str(recorded.log), "--server", "time", "--json").stdout
    )
    assert detail["server"]["server"] == "time"
    names = [t["registered_name"] for t in detail["tools"]]
    assert "mcp_time_get_current_time" in names and "mcp_time_convert_time" in names
    # mcp-server-time annotates its tools read-only: mapped, and no approval asked.
    assert {
        (t["read_only"], t["destructive"], t["requires_approval"]) for t in detail["tools"]
    } == {(True, False, False)}
    shown = clawlog("mcp", "--db", str(recorded.log), "--server", "everything")
    assert shown.returncode == 0, shown.stderr
    assert "tools of everything" in shown.stdout and "mcp_everything_echo" in shown.stdout
    assert "grants of everything" in shown.stdout and "get-env" in shown.stdout

    unknown = clawlog("mcp", "--db", str(recorded.log), "--server", "nobody")
    assert unknown.returncode == 2
    assert "no MCP server named 'nobody'" in unknown.stderr


def test_clawlog_mcp_refuses_a_missing_file_and_a_file_that_is_not_a_log(tmp_path: Path) -> None:
    missing = clawlog("mcp", "--db", str(tmp_path / "nope.db"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    other = tmp_path / "notes.txt"
    other.write_text("not a database\n" * 100)
    refused = clawlog("mcp", "--db", str(other))
    assert refused.returncode == 2 and "clawlog" in refused.stderr
    assert "Traceback" not in refused.stderr


async def actor_states(store: EventStore) -> list[McpServerStatus]:
    """Every server's state as its McpConnection actor folds it on recovery, by name."""
    states: dict[str, McpServerState] = {}
    position = 1
    while page := await store.read_all(position, 1000, stream_prefix="mcp/"):
        for recorded in page:
            if isinstance(recorded.event, MCP_EVENTS):
                server: str = recorded.event.server  # type: ignore[attr-defined]
                state = states.setdefault(server, McpServerState(server=server))
                apply_mcp_event(state, recorded.event, recorded.recorded_at)
        position = page[-1].position + 1
    return [McpServerStatus.of(state) for _, state in sorted(states.items())]


async def test_the_projection_agrees_with_the_actors_state_over_every_kind_of_mcp_event(
    tmp_path: Path,
) -> None:
    """The mixed log's servers go through timeouts, reconnects, failures, grants, reviews,
    disabling, removal and configuration again; compared at many heads along the way."""
    store = await open_store(tmp_path / "mixed.db")
    states: set[str] = set()
    try:
        for _ in range(12):
            await write_mixed_log(store, 400, concurrency=8)
            async with ProjectionRunner(store, tmp_path / "views.db", [McpHealth()]) as runner:
                await runner.catch_up()  # resumes where the last round stopped
            folded = await actor_states(store)
            async with ReadModels(tmp_path / "views.db") as views:
                rows = await McpHealthReader(views).servers(include_removed=True)
            assert len(rows) == len(folded) >= 1
            for row, status in zip(rows, folded, strict=True):
                expected = msgspec.to_builtins(status)
                expected.pop("in_flight")
                got = msgspec.to_builtins(row)
                assert got.pop("removed") == (status.state == "removed")
                assert got == expected
                states.add(status.state)
    finally:
        await store.close()
    assert len(states) >= 4, states
