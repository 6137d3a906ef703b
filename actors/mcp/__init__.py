"""MCP connections as actors (seed 001 §12, seed 004 §5), on the official ``mcp`` SDK.

    servers = mcp_servers(system)
    await servers.add(McpServerConfig(name="time", command="mcp-server-time"))
    await servers.grant_agent("time", "main")
    await servers.wait_connected("time")
    await system.register_agent(config, model, gateway=servers.gateway(config))

One McpConnection actor per server (stdio, SSE or streamable HTTP) writes ``mcp/{server}``;
its tools reach granted agents as ``mcp_{server}_{tool}`` in the groups ``mcp`` and
``mcp:{server}``, leave while the server is down and come back when it reconnects.
"""

from ..errors import (
    McpAccessError,
    McpCallTimeout,
    McpConfigError,
    McpConnectError,
    McpConnectionLost,
    McpError,
    McpProtocolError,
    McpUnavailable,
)
from .api import McpServers, mcp_servers
from .config import McpServerConfig, Transport, load_servers_file, registered_name
from .connection import McpConnection, mcp_stream
from .directory import McpDirectory, ServerView
from .discovery import discover_tools
from .gateway import McpGateway
from .grants import EVERYONE, Access, AccessRequest, Grant, resolve_access, tool_permitted
from .health import HEALTH_COLUMNS, fold_health, health_rows, read_mcp_health
from .state import ConnectionState, McpServerState, McpServerStatus
from .tool import McpTool

__all__ = [
    "EVERYONE",
    "HEALTH_COLUMNS",
    "Access",
    "AccessRequest",
    "ConnectionState",
    "Grant",
    "McpAccessError",
    "McpCallTimeout",
    "McpConfigError",
    "McpConnectError",
    "McpConnection",
    "McpConnectionLost",
    "McpDirectory",
    "McpError",
    "McpGateway",
    "McpProtocolError",
    "McpServerConfig",
    "McpServerState",
    "McpServerStatus",
    "McpServers",
    "McpTool",
    "McpUnavailable",
    "ServerView",
    "Transport",
    "discover_tools",
    "fold_health",
    "health_rows",
    "load_servers_file",
    "mcp_servers",
    "mcp_stream",
    "read_mcp_health",
    "registered_name",
    "resolve_access",
    "tool_permitted",
]
