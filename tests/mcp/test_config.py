"""Server configuration from the API and from an IronClaw-style mcp-servers.json; tool
naming; translation of the SDK's errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as mt
import pytest
from mcp.shared.exceptions import MCPError

from clawlog.actors.errors import (
    McpCallTimeout,
    McpConfigError,
    McpConnectError,
    McpConnectionLost,
    McpProtocolError,
)
from clawlog.actors.mcp import McpServerConfig, load_servers_file
from clawlog.actors.mcp.config import registered_name
from clawlog.actors.mcp.discovery import discover_tools
from clawlog.actors.mcp.sdk_errors import translate


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "mcp-servers.json"
    path.write_text(json.dumps(data))
    return path


def test_an_ironclaw_file_loads_with_transports_inferred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTION_TOKEN", "secret-token-value")
    path = write(
        tmp_path,
        {
            "servers": [
                {"name": "local", "command": "node", "args": ["server.js", "stdio"]},
                {
                    "name": "notion",
                    "url": "https://mcp.notion.com/mcp",
                    "enabled": False,
                    "description": "Notion workspace tools",
                    "headers": {"Authorization": "Bearer ${NOTION_TOKEN}"},
                    "oauth": {"client_id": "abc", "scopes": ["read_content"]},
                },
                {"name": "events", "url": "http://127.0.0.1:3001/sse", "timeout_sec": 12},
                {"name": "typed", "url": "http://localhost:3002/mcp", "type": "http"},
            ],
            "schema_version": 1,
        },
    )
    local, notion, events, typed = load_servers_file(path)
    assert (local.transport, local.prefix, local.group) == ("stdio", "mcp_local", "mcp:local")
    assert (notion.transport, notion.enabled) == ("streamable-http", False)
    assert notion.headers == {"Authorization": "Bearer secret-token-value"}
    assert notion.oauth == {"client_id": "abc", "scopes": ["read_content"]}
    assert (events.transport, events.call_timeout_s) == ("sse", 12)
    assert typed.transport == "streamable-http"


def test_the_common_mcp_servers_map_shape_loads_too(tmp_path: Path) -> None:
    path = write(tmp_path, {"mcpServers": {"time": {"command": "mcp-server-time"}}})
    [time_server] = load_servers_file(path)
    assert (time_server.name, time_server.transport) == ("time", "stdio")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "expected a JSON object"),
        ({"servers": [{"name": "x"}]}, "needs a command or a url"),
        ({"servers": [{"name": "Bad Name", "command": "x"}]}, "invalid MCP server name"),
        ({"servers": [{"name": "x", "command": "y", "colour": 1}]}, "unknown field `colour`"),
        ({"servers": [{"name": "x", "url": "http://example.com/mcp"}]}, "use https"),
        ({"servers": [{"name": "x", "url": "ftp://127.0.0.1/"}]}, "not an http"),
        ({"servers": [{"name": "x", "command": "a"}, {"name": "x", "command": "b"}]}, "twice"),
        (
            {"servers": [{"name": "x", "command": "a", "env": {"K": "${CLAWLOG_UNSET_VAR}"}}]},
            "CLAWLOG_UNSET_VAR is not set",
        ),
        ({"servers": [{"name": "x", "command": "a", "max_attempts": 0}]}, "at least 1"),
        ({"servers": [], "schema_version": 2}, "schema_version 2"),
    ],
)
def test_a_bad_file_is_refused_with_the_reason(tmp_path: Path, data: object, problem: str) -> None:
    with pytest.raises(McpConfigError, match=problem):
        load_servers_file(write(tmp_path, data))


def test_a_missing_or_broken_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match=r"mcp-servers\.json"):
        load_servers_file(tmp_path / "mcp-servers.json")
    (tmp_path / "mcp-servers.json").write_text("{not json")
    with pytest.raises(McpConfigError, match="not valid JSON"):
        load_servers_file(tmp_path / "mcp-servers.json")


def test_backoff_doubles_from_the_initial_delay_up_to_the_maximum() -> None:
    config = McpServerConfig(name="x", command="y")
    assert [config.backoff_s(n) for n in range(1, 8)] == [2, 4, 8, 16, 32, 60, 60]
    assert (config.health_interval_s, config.max_attempts) == (30, 10)


def test_registered_names_are_prefixed_cleaned_and_kept_short() -> None:
    assert registered_name("mcp_everything", "get-sum") == "mcp_everything_get-sum"
    assert registered_name("", "echo") == "echo"
    assert registered_name("mcp_x", "a.b c") == "mcp_x_a_b_c"
    long_a, long_b = (
        registered_name("mcp_x", "t" * 80 + "a"),
        registered_name("mcp_x", "t" * 80 + "b"),
    )
    assert len(long_a) == 64 and long_a != long_b


def _tool(name: str, **annotations: Any) -> mt.Tool:
    return mt.Tool(
        name=name,
        input_schema={"type": "object", "properties": {}},
        annotations=mt.ToolAnnotations(**annotations) if annotations else None,
    )


def test_discovery_maps_annotations_and_never_shadows_a_built_in() -> None:
    config = McpServerConfig(name="x", command="y", tool_prefix="")
    bad_schema = mt.Tool(name="broken", input_schema={"type": "object", "properties": 3})
    tools, skipped = discover_tools(
        config,
        [
            _tool("echo"),
            _tool("drop", destructive_hint=True, read_only_hint=False),
            _tool("look", read_only_hint=True),
            _tool("plain"),
            bad_schema,
        ],
    )
    by_name = {t.registered_name: t for t in tools}
    assert set(by_name) == {"drop", "look", "plain"}
    assert by_name["drop"].requires_approval and by_name["drop"].destructive
    assert by_name["look"].read_only and not by_name["look"].requires_approval
    assert by_name["plain"].read_only is None and not by_name["plain"].requires_approval
    reasons = {s.name: s.reason for s in skipped}
    assert "would shadow a built-in tool" in reasons["echo"]
    assert "not valid JSON Schema" in reasons["broken"]


def test_sdk_errors_and_exception_groups_become_our_errors() -> None:
    closed = MCPError(code=-32000, message="Connection closed")
    assert isinstance(translate(closed), McpConnectionLost)
    assert isinstance(translate(MCPError(code=-32001, message="timed out")), McpCallTimeout)
    invalid = translate(MCPError(code=-32602, message="bad params"))
    assert isinstance(invalid, McpProtocolError) and invalid.code == -32602
    nested = ExceptionGroup("outer", [ExceptionGroup("inner", [httpx2.ConnectError("refused")])])
    assert isinstance(translate(nested), McpConnectionLost)
    refused = translate(nested, connecting=True, what="http://127.0.0.1:1/mcp")
    assert isinstance(refused, McpConnectError) and "ConnectError: refused" in str(refused)
    group = ExceptionGroup("g", [RuntimeError("noise"), closed])
    assert isinstance(translate(group), McpConnectionLost)
    missing = translate(FileNotFoundError(2, "No such file", "nope"), connecting=True)
    assert str(missing) == "command not found: nope"
