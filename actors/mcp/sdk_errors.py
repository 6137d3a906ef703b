"""The MCP SDK's errors translated at the boundary: one function from anything the SDK,
its transports or their ``ExceptionGroup``s raised to our :class:`~clawlog.actors.errors.McpError`.
"""

from __future__ import annotations

import asyncio

from mcp.shared.exceptions import MCPError

from ..errors import McpCallTimeout, McpConnectError, McpConnectionLost, McpError, McpProtocolError

__all__ = ["translate"]

#: JSON-RPC codes the SDK uses for a closed connection and for its own request timeout.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001


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
