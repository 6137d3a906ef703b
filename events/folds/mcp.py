"""The connection fold of an MCP server's stream ``mcp/{server}``: its state, since when,
the attempt running or next, whether its tools are offered, and its last error.

    connection = ServerConnection(server="time")
    for recorded in events:
        fold_connection(connection, recorded.event, recorded.recorded_at)

The McpConnection actor decides on it (its state, ``actors.mcp.state.McpServerState``,
extends :class:`ServerConnection`); the MCP health read model (``projections.McpHealth``)
keeps one row of it per server. Both fold with :func:`fold_connection`, so the live
status and ``clawlog mcp`` follow one set of rules. Grants and access requests are kept
apart by each side (dicts for the actor, tables for the projection); their events carry
the scope and the decision as Literal fields, so there is no rule left to share.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..base import Event
from ..domain.mcp import (
    McpCallTimedOut,
    McpConnected,
    McpConnectFailed,
    McpConnecting,
    McpDisconnected,
    McpFailed,
    McpReconnectScheduled,
    McpServerConfigured,
    McpServerEnabledChanged,
    McpServerRemoved,
    McpToolsDiscovered,
    McpToolsWithdrawn,
    McpTransport,
)

__all__ = [
    "ConnectionState",
    "ServerConnection",
    "fold_connection",
]

ConnectionState = Literal[
    "configured",
    "connecting",
    "connected",
    "disconnected",
    "reconnecting",
    "failed",
    "disabled",
    "removed",
]


class ServerConnection(msgspec.Struct, kw_only=True):
    """One server's connection, as its events left it."""

    server: str = ""
    #: ``""`` until the server's ``mcp.server_configured``.
    transport: McpTransport | Literal[""] = ""
    enabled: bool = True
    state: ConnectionState = "configured"
    #: The attempt running (connecting) or scheduled next (reconnecting).
    attempt: int = 0
    #: The attempts are retries (after a lost connection or a failed attempt), from the
    #: first ``mcp.reconnect_scheduled`` until connected or failed: a caller hears
    #: "reconnecting" whether the backoff is running or the next attempt is.
    retrying: bool = False
    max_attempts: int = 10
    #: Whether agents are offered the last discovered tools now.
    offered: bool = False
    server_name: str = ""
    server_version: str = ""
    last_error: str = ""
    last_error_kind: str = ""
    #: Seconds since the epoch, where the fold was given times.
    last_error_at: float = 0.0
    since: float = 0.0


def fold_connection(connection: ServerConnection, event: Event, at: float = 0.0) -> bool:
    """Fold one ``mcp.*`` event (``at``: when it was recorded, if known); False for an
    event that says nothing about the connection (grants, access requests)."""
    match event:
        case McpServerConfigured():
            connection.server, connection.transport = event.server, event.transport
            connection.enabled = event.enabled
            max_attempts = event.settings.get("max_attempts", connection.max_attempts)
            connection.max_attempts = int(max_attempts)
            if not event.enabled:
                _move(connection, "disabled", at)
            elif connection.state in ("disabled", "removed"):
                _move(connection, "configured", at)
        case McpServerEnabledChanged():
            connection.enabled = event.enabled
            if not event.enabled:
                connection.retrying = False
                _move(connection, "disabled", at)
        case McpServerRemoved():
            connection.offered, connection.retrying = False, False
            _move(connection, "removed", at)
        case McpConnecting():
            connection.attempt = event.attempt
            _move(connection, "connecting", at)
        case McpConnected():
            connection.server_name = event.server_name
            connection.server_version = event.server_version
            connection.attempt, connection.retrying = event.attempt, False
            _move(connection, "connected", at)
        case _:
            return _fold_trouble(connection, event, at)
    return True


def _fold_trouble(connection: ServerConnection, event: Event, at: float) -> bool:
    """Tools coming and going, errors, reconnects and giving up."""
    match event:
        case McpConnectFailed():
            _error(connection, event.error_kind, event.message, at)
        case McpToolsDiscovered():
            connection.offered = True
        case McpToolsWithdrawn():
            connection.offered = False
        case McpCallTimedOut():
            message = f"{event.tool} got no answer within {event.timeout_s:g} s"
            _error(connection, "timeout", message, at)
        case McpDisconnected():
            if event.message:
                _error(connection, event.error_kind or event.cause, event.message, at)
            if connection.state not in ("disabled", "removed"):
                _move(connection, "disconnected", at)
        case McpReconnectScheduled():
            connection.attempt, connection.retrying = event.attempt, True
            _move(connection, "reconnecting", at)
        case McpFailed():
            connection.retrying = False
            _move(connection, "failed", at)
        case _:
            return False
    return True


def _move(connection: ServerConnection, to: ConnectionState, at: float) -> None:
    """``since`` moves only with a change of state."""
    if connection.state != to:
        connection.state, connection.since = to, at


def _error(connection: ServerConnection, kind: str, message: str, at: float) -> None:
    connection.last_error, connection.last_error_kind = message, kind
    connection.last_error_at = at
