"""Who may use a server's tools: agent and user grants (seed 001 §12, GoClaw's rules).

A server's tools reach an agent's session for a user when:

1. the server is enabled and connected;
2. the agent holds an enabled grant (its own, else the ``*`` grant for every agent);
3. the user holds no user grant, or an enabled one (their own, else ``*``);
4. the tool passes both grants' lists: a ``tool_deny`` entry removes it (deny beats
   allow), and every ``tool_allow`` that is set must list it.

List entries are the server's tool names (``get-sum``), registered names
(``mcp_everything_get-sum``) or fnmatch patterns (``get-*``). :func:`grant_event` is the
event that sets a grant, :func:`check_subject` the check of whom it is for.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import msgspec

from clawlog.events import Event
from clawlog.events.domain.mcp import (
    McpAccessDecision,
    McpAgentGrantSet,
    McpGrantScope,
    McpUserGrantSet,
)

from ..agents.config import validate_agent_key
from ..errors import McpAccessError

__all__ = [
    "EVERYONE",
    "Access",
    "AccessRequest",
    "AccessRequestStatus",
    "Grant",
    "check_subject",
    "filter_tools",
    "grant_event",
    "resolve_access",
    "tool_permitted",
]

#: The subject of a grant that applies to every agent (or user) without one of its own.
EVERYONE = "*"
_MAX_USER = 200


#: An access request waits (pending) until an operator approves or rejects it.
AccessRequestStatus = Literal["pending", McpAccessDecision]


class Grant(msgspec.Struct, frozen=True, kw_only=True):
    """One agent's or one user's grant on a server."""

    enabled: bool = True
    #: None: every tool; a list: only these (names or patterns).
    tool_allow: list[str] | None = None
    tool_deny: list[str] = msgspec.field(default_factory=list)
    by: str = ""
    #: The access request that created it, if one did.
    request_id: str = ""


class AccessRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A request for a grant, and its review."""

    request_id: str
    server: str
    scope: McpGrantScope
    subject: str
    tool_allow: list[str] | None = None
    reason: str = ""
    requested_by: str = ""
    status: AccessRequestStatus = "pending"
    reviewed_by: str = ""
    note: str = ""


class Access(NamedTuple):
    """What one (agent, user) may use of one server."""

    #: Every list here must match a tool (an empty tuple: no allow list is set).
    allow_lists: tuple[tuple[str, ...], ...]
    deny: tuple[str, ...]


def resolve_access(
    agent_grants: Mapping[str, Grant],
    user_grants: Mapping[str, Grant],
    agent: str,
    user: str = "",
) -> Access | None:
    """The access of ``agent`` acting for ``user``; None when the server is not theirs."""
    agent_grant = agent_grants.get(agent) or agent_grants.get(EVERYONE)
    if agent_grant is None or not agent_grant.enabled:
        return None
    user_grant = (user_grants.get(user) if user else None) or user_grants.get(EVERYONE)
    grants = [agent_grant]
    if user_grant is not None:
        if not user_grant.enabled:
            return None
        grants.append(user_grant)
    allow_lists = tuple(tuple(g.tool_allow) for g in grants if g.tool_allow is not None)
    deny = tuple(entry for g in grants for entry in g.tool_deny)
    return Access(allow_lists=allow_lists, deny=deny)


def _matches(entries: Iterable[str], names: Sequence[str]) -> bool:
    for entry in entries:
        for name in names:
            if entry == name or fnmatch.fnmatchcase(name, entry):
                return True
    return False


def tool_permitted(access: Access, name: str, registered_name: str = "") -> bool:
    """Deny first, then every allow list."""
    names = (name, registered_name) if registered_name else (name,)
    if _matches(access.deny, names):
        return False
    return all(_matches(allow, names) for allow in access.allow_lists)


def filter_tools(access: Access, tools: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``(name, registered_name)`` pairs ``access`` permits, in order."""
    return [
        (name, registered) for name, registered in tools if tool_permitted(access, name, registered)
    ]


def check_subject(scope: str, subject: str) -> str:
    """``subject`` if it is a valid agent key or user id for ``scope`` (or ``*``);
    :class:`McpAccessError` otherwise."""
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


def grant_event(
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
    """``mcp.agent_grant_set`` or ``mcp.user_grant_set``, by ``scope``."""
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
