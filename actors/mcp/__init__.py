"""MCP connections as actors (seed 001 §12, seed 004 §5), on the official ``mcp`` SDK.

    servers = mcp_servers(system)
    await servers.add(McpServerConfig(name="time", command="mcp-server-time"))
    await servers.grant_agent("time", "main")
    await servers.wait_connected("time")
    await system.register_agent(config, model, gateway=servers.gateway(config))

One McpConnection actor per server (stdio, SSE or streamable HTTP) writes ``mcp/{server}``;
its tools reach granted agents as ``mcp_{server}_{tool}`` in the groups ``mcp`` and
``mcp:{server}``, leave while the server is down and come back when it reconnects.

Where things live: ``connection.py`` the actor (connecting, health checks, calls,
operators' commands, grants and access requests); ``_client.py`` one connection to one
server on the I/O hub (``McpClient``); ``_direct.py`` agents' calls straight to the live
client (``DirectCalls``); ``views.py`` each server's published view, what gateways read
(``ServerViews``); ``state.py`` the actor's fold (its connection part is shared with the
read model: ``events/folds/mcp.py``); ``gateway.py``, ``tool.py``, ``discovery.py``,
``grants.py``, ``config.py``, ``api.py`` (``McpServers``). Each server's health over the
log is the read model ``projections.McpHealth`` (``McpHealthReader``, ``clawlog mcp``).
"""

from .api import McpServers, mcp_servers
from .config import McpServerConfig, Transport, load_servers_file
from .gateway import McpGateway
from .grants import EVERYONE, AccessRequest, AccessRequestStatus, Grant
from .state import ConnectionState, McpServerStatus
from .tool import McpTool

__all__ = [
    "EVERYONE",
    "AccessRequest",
    "AccessRequestStatus",
    "ConnectionState",
    "Grant",
    "McpGateway",
    "McpServerConfig",
    "McpServerStatus",
    "McpServers",
    "McpTool",
    "Transport",
    "load_servers_file",
    "mcp_servers",
]
