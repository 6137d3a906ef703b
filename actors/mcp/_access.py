"""Grants and access requests: the McpConnection actor's handlers for them.

A review that approves a request appends the grant in the same batch as the review
(GoClaw creates it in the same transaction), so the log never shows one without the other.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawlog.events import Event
from clawlog.events.domain.mcp import (
    McpAccessRequested,
    McpAccessReviewed,
    McpAgentGrantRevoked,
    McpAgentGrantSet,
    McpUserGrantRevoked,
    McpUserGrantSet,
)

from ..agents.config import validate_agent_key
from ..errors import McpAccessError
from .grants import EVERYONE, AccessRequest
from .messages import GetAccessRequests, RequestAccess, ReviewAccess, RevokeGrant, SetGrant

if TYPE_CHECKING:
    from .config import McpServerConfig
    from .state import McpServerState

__all__ = ["AccessHandlers"]

_MAX_USER = 200


class AccessHandlers:
    """Mixed into the McpConnection actor."""

    state: McpServerState
    config: McpServerConfig

    if TYPE_CHECKING:  # provided by the actor

        def emit(self, events: Sequence[Event], **kwargs: Any) -> Any: ...
        def _publish(self) -> None: ...

    def handle_access(self, message: object) -> Any:
        match message:
            case SetGrant():
                return self._set_grant(message)
            case RevokeGrant():
                return self._revoke_grant(message)
            case RequestAccess():
                return self._request_access(message)
            case ReviewAccess():
                return self._review_access(message)
            case GetAccessRequests(status=status):
                found = self.state.requests.values()
                return [r for r in found if status is None or r.status == status]
        return NotImplemented

    def _set_grant(self, message: SetGrant) -> bool:
        subject = _subject(message.scope, message.subject)
        event = _grant_event(
            self.config.name,
            message.scope,
            subject,
            enabled=message.enabled,
            tool_allow=message.tool_allow,
            tool_deny=list(message.tool_deny),
            by=message.by,
        )
        self.emit([event])
        self._publish()
        return True

    def _revoke_grant(self, message: RevokeGrant) -> bool:
        subject = _subject(message.scope, message.subject)
        grants = self.state.agent_grants if message.scope == "agent" else self.state.user_grants
        if subject not in grants:
            return False
        server = self.config.name
        event: Event = (
            McpAgentGrantRevoked(server=server, agent=subject, by=message.by)
            if message.scope == "agent"
            else McpUserGrantRevoked(server=server, user=subject, by=message.by)
        )
        self.emit([event])
        self._publish()
        return True

    def _request_access(self, message: RequestAccess) -> str:
        subject = _subject(message.scope, message.subject)
        if subject == EVERYONE:
            raise McpAccessError("an access request is for one agent or one user, not '*'")
        request_id = uuid.uuid4().hex[:12]
        self.emit(
            [
                McpAccessRequested(
                    server=self.config.name,
                    request_id=request_id,
                    scope=message.scope,
                    subject=subject,
                    tool_allow=message.tool_allow,
                    reason=message.reason[:2000],
                    requested_by=message.requested_by,
                )
            ]
        )
        return request_id

    def _review_access(self, message: ReviewAccess) -> AccessRequest:
        request = self.state.requests.get(message.request_id)
        if request is None:
            raise McpAccessError(
                f"no access request {message.request_id!r} on MCP server {self.config.name!r}"
            )
        if request.status != "pending":
            raise McpAccessError(
                f"access request {message.request_id!r} was already {request.status} by "
                f"{request.reviewed_by or 'someone'}"
            )
        decision = "approved" if message.approve else "rejected"
        events: list[Event] = [
            McpAccessReviewed(
                server=self.config.name,
                request_id=request.request_id,
                decision=decision,
                by=message.by,
                note=message.note[:2000],
            )
        ]
        if message.approve:
            events.append(
                _grant_event(
                    self.config.name,
                    request.scope,
                    request.subject,
                    tool_allow=request.tool_allow,
                    by=message.by,
                    request_id=request.request_id,
                )
            )
        self.emit(events)
        self._publish()
        return self.state.requests[request.request_id]


def _subject(scope: str, subject: str) -> str:
    if scope not in ("agent", "user"):
        raise McpAccessError(f"scope must be 'agent' or 'user', not {scope!r}")
    if subject == EVERYONE:
        return subject
    if scope == "agent":
        try:
            return validate_agent_key(subject)
        except ValueError as exc:
            raise McpAccessError(str(exc)) from exc
    if not isinstance(subject, str) or not subject.strip() or len(subject) > _MAX_USER:
        raise McpAccessError(f"invalid user id {subject!r}: 1-{_MAX_USER} characters")
    return subject


def _grant_event(
    server: str,
    scope: str,
    subject: str,
    *,
    enabled: bool = True,
    tool_allow: list[str] | None = None,
    tool_deny: list[str] | None = None,
    by: str = "",
    request_id: str = "",
) -> Event:
    fields: dict[str, Any] = {
        "server": server,
        "enabled": enabled,
        "tool_allow": list(tool_allow) if tool_allow is not None else None,
        "tool_deny": list(tool_deny or []),
        "by": by,
        "request_id": request_id,
    }
    if scope == "agent":
        return McpAgentGrantSet(agent=subject, **fields)
    return McpUserGrantSet(user=subject, **fields)
