"""Messages of the McpConnection actor."""

from __future__ import annotations

from typing import Any

import mcp.types as mt

from clawlog.events.domain.mcp import McpGrantScope

from ..messages import Message, Request
from .grants import AccessRequest, AccessRequestStatus
from .state import McpServerStatus

__all__ = [
    "CallFailed",
    "CallTool",
    "ClientLost",
    "GetAccessRequests",
    "GetStatus",
    "HealthDue",
    "ReconfigureServer",
    "Reconnect",
    "RemoveServer",
    "RequestAccess",
    "RetryDue",
    "ReviewAccess",
    "RevokeGrant",
    "SetEnabled",
    "SetGrant",
]


class CallTool(Request[mt.CallToolResult], frozen=True, kw_only=True):
    """Call ``tool`` (its name on the server) now; fails at once while the server is down."""

    tool: str
    arguments: dict[str, Any]


class GetStatus(Request[McpServerStatus], frozen=True, kw_only=True):
    pass


class Reconnect(Request[bool], frozen=True, kw_only=True):
    """Drop the connection (if any) and connect again from attempt 1, even when failed."""

    by: str = ""


class ReconfigureServer(Request[bool], frozen=True, kw_only=True):
    """Replace the configuration (an ``McpServerConfig``); reconnects when it changed."""

    config: Any
    source: str = "api"


class SetEnabled(Request[bool], frozen=True, kw_only=True):
    enabled: bool
    by: str = ""


class RemoveServer(Request[bool], frozen=True, kw_only=True):
    """Withdraw the tools, record the removal and disconnect; the caller stops the actor."""

    by: str = ""


class SetGrant(Request[bool], frozen=True, kw_only=True):
    scope: McpGrantScope
    #: An agent key or a user id; ``*`` for every agent / user without a grant.
    subject: str
    enabled: bool = True
    tool_allow: list[str] | None = None
    tool_deny: list[str] = []
    by: str = ""


class RevokeGrant(Request[bool], frozen=True, kw_only=True):
    scope: McpGrantScope
    subject: str
    by: str = ""


class RequestAccess(Request[str], frozen=True, kw_only=True):
    """Answered with the new request's id."""

    scope: McpGrantScope
    subject: str
    tool_allow: list[str] | None = None
    reason: str = ""
    requested_by: str = ""


class ReviewAccess(Request[AccessRequest], frozen=True, kw_only=True):
    request_id: str
    approve: bool
    by: str = ""
    note: str = ""


class GetAccessRequests(Request[list[AccessRequest]], frozen=True, kw_only=True):
    #: Only requests with this status; None for all.
    status: AccessRequestStatus | None = "pending"


# -- the actor's messages to itself ------------------------------------------------------
class ClientLost(Message, frozen=True, kw_only=True):
    """The connection of ``generation`` ended without being asked to."""

    generation: int
    error: Any


class CallFailed(Message, frozen=True, kw_only=True):
    """A call of ``generation``'s connection timed out or lost its connection."""

    generation: int
    tool: str
    error: Any


class RetryDue(Message, frozen=True, kw_only=True):
    generation: int


class HealthDue(Message, frozen=True, kw_only=True):
    generation: int
    #: Which scheduling this is: only the latest one checks (one timer per connection).
    timer: int = 0
