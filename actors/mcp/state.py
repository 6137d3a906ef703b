"""A server's state as a fold of ``mcp/{server}``: the McpConnection actor's state, and
the rows of the MCP health read model (``actors.mcp.health``)."""

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
    McpToolInfo,
    McpToolsDiscovered,
    McpToolSkipped,
    McpToolsWithdrawn,
    McpUserGrantRevoked,
    McpUserGrantSet,
)

from .grants import AccessRequest, Grant

__all__ = [
    "ConnectionState",
    "McpServerState",
    "McpServerStatus",
    "apply_mcp_event",
    "config_digest",
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


class McpServerState(msgspec.Struct, kw_only=True):
    server: str = ""
    transport: str = ""
    enabled: bool = True
    state: ConnectionState = "configured"
    #: The attempt running (connecting) or scheduled next (reconnecting).
    attempt: int = 0
    #: The attempts are retries (after a lost connection or a failed attempt), from the
    #: first ``mcp.reconnect_scheduled`` until connected or failed: a caller hears
    #: "reconnecting" whether the backoff is running or the next attempt is.
    retrying: bool = False
    max_attempts: int = 10
    #: The last discovered tools; ``offered`` says whether agents see them now.
    tools: list[McpToolInfo] = msgspec.field(default_factory=list)
    skipped: list[McpToolSkipped] = msgspec.field(default_factory=list)
    offered: bool = False
    server_name: str = ""
    server_version: str = ""
    last_error: str = ""
    last_error_kind: str = ""
    #: Seconds since the epoch, where the fold was given times (the health read model).
    last_error_at: float = 0.0
    since: float = 0.0
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
    """One row of ``clawlog mcp``: a server, its state, its tools and its last error."""

    server: str
    state: ConnectionState
    transport: str = ""
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


def _error(state: McpServerState, kind: str, message: str, at: float) -> None:
    state.last_error, state.last_error_kind, state.last_error_at = message, kind, at


def _move(state: McpServerState, to: ConnectionState, at: float) -> None:
    if state.state != to:
        state.state, state.since = to, at


def apply_mcp_event(state: McpServerState, event: Event, at: float = 0.0) -> McpServerState:
    """Fold one ``mcp.*`` event (``at``: when it was recorded, if known)."""
    if _apply_connection(state, event, at):
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
                scope="user" if event.scope == "user" else "agent",
                subject=event.subject,
                tool_allow=event.tool_allow,
                reason=event.reason,
                requested_by=event.requested_by,
            )
        case McpAccessReviewed():
            found = state.requests.get(event.request_id)
            if found is not None:
                state.requests[event.request_id] = msgspec.structs.replace(
                    found,
                    status="approved" if event.decision == "approved" else "rejected",
                    reviewed_by=event.by,
                    note=event.note,
                )
    return state


def _apply_connection(state: McpServerState, event: Event, at: float) -> bool:
    match event:
        case McpServerConfigured():
            state.config_digest = config_digest(event)
            state.server, state.transport, state.enabled = (
                event.server,
                event.transport,
                event.enabled,
            )
            state.max_attempts = int(event.settings.get("max_attempts", state.max_attempts))
            if not event.enabled:
                _move(state, "disabled", at)
            elif state.state in ("disabled", "removed"):
                _move(state, "configured", at)
        case McpServerEnabledChanged():
            state.enabled = event.enabled
            if not event.enabled:
                state.retrying = False
                _move(state, "disabled", at)
        case McpServerRemoved():
            state.offered, state.retrying = False, False
            _move(state, "removed", at)
        case McpConnecting():
            state.attempt = event.attempt
            _move(state, "connecting", at)
        case McpConnected():
            state.server_name, state.server_version = event.server_name, event.server_version
            state.attempt, state.retrying = event.attempt, False
            _move(state, "connected", at)
        case McpConnectFailed():
            _error(state, event.error_kind, event.message, at)
        case McpToolsDiscovered():
            state.tools, state.skipped, state.offered = list(event.tools), list(event.skipped), True
        case McpToolsWithdrawn():
            state.offered = False
        case McpCallTimedOut():
            message = f"{event.tool} got no answer within {event.timeout_s:g} s"
            _error(state, "timeout", message, at)
        case McpDisconnected():
            if event.message:
                _error(state, event.error_kind or event.cause, event.message, at)
            if state.state not in ("disabled", "removed"):
                _move(state, "disconnected", at)
        case McpReconnectScheduled():
            state.attempt, state.retrying = event.attempt, True
            _move(state, "reconnecting", at)
        case McpFailed():
            state.retrying = False
            _move(state, "failed", at)
        case _:
            return False
    return True


def _grant(event: McpAgentGrantSet | McpUserGrantSet) -> Grant:
    return Grant(
        enabled=event.enabled,
        tool_allow=list(event.tool_allow) if event.tool_allow is not None else None,
        tool_deny=list(event.tool_deny),
        by=event.by,
        request_id=event.request_id,
    )
