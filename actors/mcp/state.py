"""The McpConnection actor's state, as a fold of ``mcp/{server}``, and the live status
it answers with (``McpServerStatus``, one row of ``McpServers.status()``).

The connection part of the fold (state, attempt, last error...) is
:func:`clawlog.events.folds.mcp.fold_connection`, which the MCP health read model
(``projections.McpHealth``) folds with too; the tools, grants and access requests are
the actor's own.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import msgspec

from clawlog.events import Event
from clawlog.events.domain.mcp import (
    McpAccessRequested,
    McpAccessReviewed,
    McpAgentGrantRevoked,
    McpAgentGrantSet,
    McpServerConfigured,
    McpToolInfo,
    McpToolsDiscovered,
    McpToolSkipped,
    McpTransport,
    McpUserGrantRevoked,
    McpUserGrantSet,
)
from clawlog.events.folds.mcp import (
    ConnectionState,
    ServerConnection,
    fold_connection,
)

from .grants import AccessRequest, Grant

__all__ = [
    "ConnectionState",
    "McpServerState",
    "McpServerStatus",
    "apply_mcp_event",
    "config_digest",
]


class McpServerState(ServerConnection, kw_only=True):
    """The McpConnection actor's state: the connection fold
    (:class:`~clawlog.events.folds.mcp.ServerConnection`) plus the last discovered tools,
    the grants, the access requests and the configuration's digest."""

    #: The last discovered tools; ``offered`` says whether agents see them now.
    tools: list[McpToolInfo] = msgspec.field(default_factory=list)
    skipped: list[McpToolSkipped] = msgspec.field(default_factory=list)
    agent_grants: dict[str, Grant] = msgspec.field(default_factory=dict)
    user_grants: dict[str, Grant] = msgspec.field(default_factory=dict)
    requests: dict[str, AccessRequest] = msgspec.field(default_factory=dict)
    #: Digest of the last ``mcp.server_configured``: a restart records only a changed one.
    config_digest: str = ""

    def offered_names(self) -> list[str]:
        return [t.registered_name for t in self.tools] if self.offered else []

    def pending_requests(self) -> list[AccessRequest]:
        return [r for r in self.requests.values() if r.status == "pending"]


class McpServerStatus(msgspec.Struct, frozen=True, kw_only=True):
    """A server's live status (``McpServers.status``): its state, its tools and its last
    error; ``clawlog mcp`` shows the same from the read model ``projections.McpHealth``."""

    server: str
    state: ConnectionState
    transport: McpTransport | Literal[""] = ""
    enabled: bool = True
    #: Registered names offered to granted agents now (empty while the server is down).
    tools: list[str] = msgspec.field(default_factory=list)
    discovered: int = 0
    skipped: int = 0
    attempt: int = 0
    max_attempts: int = 0
    server_name: str = ""
    server_version: str = ""
    last_error: str = ""
    last_error_kind: str = ""
    last_error_at: float = 0.0
    since: float = 0.0
    agent_grants: int = 0
    user_grants: int = 0
    pending_requests: int = 0
    #: Calls in flight (live status only).
    in_flight: int = 0

    @classmethod
    def of(cls, state: McpServerState, in_flight: int = 0) -> McpServerStatus:
        return cls(
            server=state.server,
            state=state.state,
            transport=state.transport,
            enabled=state.enabled,
            tools=state.offered_names(),
            discovered=len(state.tools),
            skipped=len(state.skipped),
            attempt=state.attempt,
            max_attempts=state.max_attempts,
            server_name=state.server_name,
            server_version=state.server_version,
            last_error=state.last_error,
            last_error_kind=state.last_error_kind,
            last_error_at=state.last_error_at,
            since=state.since,
            agent_grants=len(state.agent_grants),
            user_grants=len(state.user_grants),
            pending_requests=len(state.pending_requests()),
            in_flight=in_flight,
        )


def config_digest(event: McpServerConfigured) -> str:
    return hashlib.sha256(msgspec.msgpack.encode(event)).hexdigest()[:16]


def apply_mcp_event(state: McpServerState, event: Event, at: float = 0.0) -> McpServerState:
    """Fold one ``mcp.*`` event (``at``: when it was recorded, if known)."""
    match event:
        case McpServerConfigured():
            state.config_digest = config_digest(event)
        case McpToolsDiscovered():
            state.tools, state.skipped = list(event.tools), list(event.skipped)
    if fold_connection(state, event, at):
        return state
    match event:
        case McpAgentGrantSet():
            state.agent_grants[event.agent] = _grant(event)
        case McpAgentGrantRevoked():
            state.agent_grants.pop(event.agent, None)
        case McpUserGrantSet():
            state.user_grants[event.user] = _grant(event)
        case McpUserGrantRevoked():
            state.user_grants.pop(event.user, None)
        case McpAccessRequested():
            state.requests[event.request_id] = AccessRequest(
                request_id=event.request_id,
                server=event.server,
                scope=event.scope,
                subject=event.subject,
                tool_allow=event.tool_allow,
                reason=event.reason,
                requested_by=event.requested_by,
            )
        case McpAccessReviewed():
            found = state.requests.get(event.request_id)
            if found is not None:
                state.requests[event.request_id] = msgspec.structs.replace(
                    found, status=event.decision, reviewed_by=event.by, note=event.note
                )
    return state


def _grant(event: McpAgentGrantSet | McpUserGrantSet) -> Grant:
    return Grant(
        enabled=event.enabled,
        tool_allow=list(event.tool_allow) if event.tool_allow is not None else None,
        tool_deny=list(event.tool_deny),
        by=event.by,
        request_id=event.request_id,
    )
