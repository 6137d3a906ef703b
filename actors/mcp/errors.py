"""Errors of the MCP connections.

McpError
 ├── McpConfigError          a server configuration or mcp-servers.json that cannot be used
 ├── McpConnectError         the server could not be reached or started (nothing listening,
 │                           missing command, failed handshake)
 ├── McpUnavailable          the server is down, reconnecting, failed or disabled: the call
 │                           was not sent
 ├── McpConnectionLost       the connection broke while the call was in flight
 ├── McpCallTimeout          the call ran into its deadline (a hung or stopped server)
 ├── McpProtocolError        the server answered with a JSON-RPC error
 └── McpAccessError          a grant or access request that cannot be applied

The SDK's errors (``MCPError``, httpx2 and OS errors, and the ``ExceptionGroup``s its
``async with`` blocks raise) are translated at the boundary by :func:`translate`.
"""

from __future__ import annotations

import asyncio

from mcp.shared.exceptions import MCPError

__all__ = [
    "McpAccessError",
    "McpCallTimeout",
    "McpConfigError",
    "McpConnectError",
    "McpConnectionLost",
    "McpError",
    "McpProtocolError",
    "McpUnavailable",
    "translate",
]

#: JSON-RPC codes the SDK uses for a closed connection and for its own request timeout.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001


class McpError(Exception):
    """Root of every error raised by :mod:`actors.mcp`."""

    #: A short, stable name for events and health rows.
    kind = "mcp_error"


class McpConfigError(McpError):
    kind = "config_error"


class McpConnectError(McpError):
    kind = "connect_error"


class McpUnavailable(McpError):
    kind = "unavailable"


class McpConnectionLost(McpError):
    kind = "connection_lost"


class McpCallTimeout(McpError):
    kind = "timeout"


class McpProtocolError(McpError):
    kind = "protocol_error"

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class McpAccessError(McpError):
    kind = "access_error"


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in error.exceptions:
            found.extend(_leaves(inner))
        return found
    return [error]


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def translate(error: BaseException, *, connecting: bool = False, what: str = "") -> McpError:
    """Our error for anything the SDK or its transports raised.

    ``connecting``: the failure happened before the session was up, so an I/O error
    means the server could not be reached. ExceptionGroups are unwrapped: the most
    telling leaf decides (ours first, then a JSON-RPC error, then the first).
    """
    if isinstance(error, McpError):
        return error
    leaves = _leaves(error)
    for leaf in leaves:
        if isinstance(leaf, McpError):
            return leaf
    prefix = f"{what}: " if what else ""
    for leaf in leaves:
        if isinstance(leaf, MCPError):
            code = leaf.code
            if code == CONNECTION_CLOSED:
                return McpConnectionLost(f"{prefix}the server closed the connection ({leaf})")
            if code == REQUEST_TIMEOUT:
                return McpCallTimeout(f"{prefix}the server did not answer in time ({leaf})")
            return McpProtocolError(f"{prefix}{leaf}", code)
    first = leaves[0] if leaves else error
    if isinstance(first, TimeoutError | asyncio.TimeoutError):
        return McpCallTimeout(f"{prefix}no answer before the deadline")
    if connecting:
        if isinstance(first, FileNotFoundError):
            return McpConnectError(f"command not found: {first.filename or first}")
        return McpConnectError(f"{prefix}{_describe(first)}")
    return McpConnectionLost(f"{prefix}{_describe(first)}")
