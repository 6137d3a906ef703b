"""MCP server connections, their tools and who may use them (seed 001 §12, seed 004 §5).

One stream per configured server, ``mcp/{server}``, written only by its McpConnection
actor. Every event names its ``server``. What a connection goes through::

    mcp.server_configured
    mcp.connecting → mcp.connected → mcp.tools_discovered          (tools offered)
                   └ mcp.connect_failed → mcp.reconnect_scheduled → mcp.connecting …
                                        └ mcp.failed               (attempts used up)
    mcp.call_timed_out | mcp.disconnected → mcp.tools_withdrawn → mcp.reconnect_scheduled …

Grants and access requests live on the same stream: ``mcp.agent_grant_set`` /
``mcp.user_grant_set`` (and ``…_revoked``), ``mcp.access_requested`` →
``mcp.access_reviewed`` (an approval appends the grant in the same batch).

No secret enters these events: environment variables and HTTP headers are recorded by
name only, and arguments and URLs are scrubbed before they are recorded.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..base import Event

__all__ = [
    "EVENTS",
    "MCP_EVENTS",
    "McpAccessDecision",
    "McpAccessRequested",
    "McpAccessReviewed",
    "McpAgentGrantRevoked",
    "McpAgentGrantSet",
    "McpCallTimedOut",
    "McpConnectFailed",
    "McpConnected",
    "McpConnecting",
    "McpDisconnected",
    "McpEvent",
    "McpFailed",
    "McpGrantScope",
    "McpReconnectScheduled",
    "McpServerConfigured",
    "McpServerEnabledChanged",
    "McpServerRemoved",
    "McpToolInfo",
    "McpToolSkipped",
    "McpToolsDiscovered",
    "McpToolsWithdrawn",
    "McpTransport",
    "McpUserGrantRevoked",
    "McpUserGrantSet",
]

McpTransport = Literal["stdio", "sse", "streamable-http"]
#: Whom a grant is for: one agent, or one user (with any agent).
McpGrantScope = Literal["agent", "user"]
#: An operator's review of an access request.
McpAccessDecision = Literal["approved", "rejected"]


class McpToolInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One tool a server listed, and the name agents know it by."""

    #: The name on the server (``echo``, ``get-sum``).
    name: str
    #: ``{prefix}_{name}``, made safe for model providers (``mcp_everything_echo``).
    registered_name: str
    description: str = ""
    title: str = ""
    input_schema: dict[str, Any] = msgspec.field(default_factory=dict)
    #: The server's annotations; None where the server did not say.
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    #: destructiveHint → every call waits for a person's approval (seed 004 §5).
    requires_approval: bool = False


class McpToolSkipped(msgspec.Struct, frozen=True, kw_only=True):
    """A listed tool that is not offered, and why (shadows a built-in, bad schema...)."""

    name: str
    registered_name: str = ""
    reason: str


class McpServerConfigured(Event, frozen=True, tag="mcp.server_configured"):
    server: str
    transport: McpTransport
    command: str = ""
    #: Scrubbed.
    args: list[str] = msgspec.field(default_factory=list)
    #: Scrubbed.
    url: str = ""
    cwd: str = ""
    #: Names only: the values may be secrets.
    env_keys: list[str] = msgspec.field(default_factory=list)
    header_names: list[str] = msgspec.field(default_factory=list)
    enabled: bool = True
    description: str = ""
    tool_prefix: str = ""
    #: Timeouts, health check and reconnect policy (McpServerConfig field names).
    settings: dict[str, float] = msgspec.field(default_factory=dict)
    #: Where the configuration came from: ``api`` or the path of an mcp-servers.json.
    source: str = "api"


class McpServerEnabledChanged(Event, frozen=True, tag="mcp.server_enabled_changed"):
    server: str
    enabled: bool
    by: str = ""


class McpServerRemoved(Event, frozen=True, tag="mcp.server_removed"):
    server: str
    by: str = ""


class McpConnecting(Event, frozen=True, tag="mcp.connecting"):
    server: str
    #: 1 for the first try after a start, a loss or an operator's reconnect.
    attempt: int
    transport: McpTransport | Literal[""] = ""


class McpConnected(Event, frozen=True, tag="mcp.connected"):
    server: str
    attempt: int
    server_name: str = ""
    server_version: str = ""
    protocol_version: str = ""
    #: From the start of the attempt to a listed set of tools.
    duration_ms: float = 0.0


class McpConnectFailed(Event, frozen=True, tag="mcp.connect_failed"):
    server: str
    attempt: int
    #: An McpError class name: connect_error, timeout, protocol_error, config_error...
    error_kind: str
    message: str
    duration_ms: float = 0.0


class McpToolsDiscovered(Event, frozen=True, tag="mcp.tools_discovered"):
    """The tools of a fresh connection: from now on they are offered to granted agents."""

    server: str
    tools: list[McpToolInfo] = msgspec.field(default_factory=list)
    skipped: list[McpToolSkipped] = msgspec.field(default_factory=list)


class McpToolsWithdrawn(Event, frozen=True, tag="mcp.tools_withdrawn"):
    """The server's tools left every agent's list (it is down, disabled or removed)."""

    server: str
    names: list[str] = msgspec.field(default_factory=list)
    reason: str = ""


class McpCallTimedOut(Event, frozen=True, tag="mcp.call_timed_out"):
    """A call ran into its deadline: the server may hang, so it is checked at once."""

    server: str
    tool: str
    timeout_s: float


class McpDisconnected(Event, frozen=True, tag="mcp.disconnected"):
    server: str
    #: connection_lost, health_check, restart, stopped, reconfigured, disabled, removed,
    #: or an operator's ``reconnect requested by <who>``: free text, so ``str``.
    cause: str
    error_kind: str = ""
    message: str = ""


class McpReconnectScheduled(Event, frozen=True, tag="mcp.reconnect_scheduled"):
    server: str
    #: The attempt that will run after ``delay_s``.
    attempt: int
    delay_s: float
    max_attempts: int


class McpFailed(Event, frozen=True, tag="mcp.failed"):
    """Every attempt failed: no more retries until an operator reconnects the server."""

    server: str
    attempts: int
    message: str = ""


class McpAgentGrantSet(Event, frozen=True, tag="mcp.agent_grant_set"):
    """``agent`` may use the server (``*``: every agent without a grant of its own)."""

    server: str
    agent: str
    enabled: bool = True
    #: Server tool names or fnmatch patterns; None = every tool.
    tool_allow: list[str] | None = None
    tool_deny: list[str] = msgspec.field(default_factory=list)
    by: str = ""
    #: Set when an approved access request created it.
    request_id: str = ""


class McpAgentGrantRevoked(Event, frozen=True, tag="mcp.agent_grant_revoked"):
    server: str
    agent: str
    by: str = ""


class McpUserGrantSet(Event, frozen=True, tag="mcp.user_grant_set"):
    """Narrows what ``user`` gets through agents granted the server (``*``: every user
    without a grant of their own); a disabled user grant hides the server from them."""

    server: str
    user: str
    enabled: bool = True
    tool_allow: list[str] | None = None
    tool_deny: list[str] = msgspec.field(default_factory=list)
    by: str = ""
    request_id: str = ""


class McpUserGrantRevoked(Event, frozen=True, tag="mcp.user_grant_revoked"):
    server: str
    user: str
    by: str = ""


class McpAccessRequested(Event, frozen=True, tag="mcp.access_requested"):
    server: str
    request_id: str
    scope: McpGrantScope
    #: The agent key or the user id the grant would be for.
    subject: str
    tool_allow: list[str] | None = None
    reason: str = ""
    requested_by: str = ""


class McpAccessReviewed(Event, frozen=True, tag="mcp.access_reviewed"):
    server: str
    request_id: str
    decision: McpAccessDecision
    by: str = ""
    note: str = ""


McpEvent = (
    McpServerConfigured
    | McpServerEnabledChanged
    | McpServerRemoved
    | McpConnecting
    | McpConnected
    | McpConnectFailed
    | McpToolsDiscovered
    | McpToolsWithdrawn
    | McpCallTimedOut
    | McpDisconnected
    | McpReconnectScheduled
    | McpFailed
    | McpAgentGrantSet
    | McpAgentGrantRevoked
    | McpUserGrantSet
    | McpUserGrantRevoked
    | McpAccessRequested
    | McpAccessReviewed
)
MCP_EVENTS: tuple[type[Event], ...] = (
    McpServerConfigured,
    McpServerEnabledChanged,
    McpServerRemoved,
    McpConnecting,
    McpConnected,
    McpConnectFailed,
    McpToolsDiscovered,
    McpToolsWithdrawn,
    McpCallTimedOut,
    McpDisconnected,
    McpReconnectScheduled,
    McpFailed,
    McpAgentGrantSet,
    McpAgentGrantRevoked,
    McpUserGrantSet,
    McpUserGrantRevoked,
    McpAccessRequested,
    McpAccessReviewed,
)
#: The name :func:`events.domain.all_event_classes` reads.
EVENTS = MCP_EVENTS
