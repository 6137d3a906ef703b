"""MCP health: each server's state, transport, tools offered, reconnect attempt and last
error, with its grants and access requests (what ``clawlog mcp`` shows).

    health = McpHealthReader(views)
    down = await health.servers(state="reconnecting")
    time = await health.server("time")                 # None if the log never named it
    tools = await health.tools("time")                 # offered or not, with annotations

A server's row is the connection fold the McpConnection actor decides on
(:func:`clawlog.events.folds.mcp.fold_connection`): read, folded, written back. ``since``
and the error times are the events' ``recorded_at``.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, ClassVar, Literal

import msgspec

from clawlog.events import RecordedEvent
from clawlog.events.domain.mcp import McpGrantScope, McpTransport
from clawlog.events.folds.mcp import (
    ConnectionState,
    ServerConnection,
    fold_connection,
)

from ..readers import Reader, check_page, where

__all__ = [
    "McpGrantRow",
    "McpHealth",
    "McpHealthReader",
    "McpServerHealth",
    "McpToolRow",
]

_UPSERT_SERVER = "INSERT OR IGNORE INTO mcp_health (server) VALUES (?)"
#: The columns of the connection fold (``ServerConnection`` without ``retrying``, which
#: no rule reads and no reader shows).
_CONNECTION = (
    "transport",
    "enabled",
    "state",
    "attempt",
    "max_attempts",
    "offered",
    "server_name",
    "server_version",
    "last_error",
    "last_error_kind",
    "last_error_at",
    "since",
)
_READ_CONNECTION = f"SELECT {', '.join(_CONNECTION)} FROM mcp_health WHERE server = ?"
#: ``tools``: the names offered now, the last discovered ones while ``offered``. (In an
#: UPDATE every right-hand side reads the old row: the new values come as parameters.)
_WRITE_CONNECTION = (
    f"UPDATE mcp_health SET {', '.join(f'{c} = ?' for c in _CONNECTION)}, removed = ?, "
    "tools = CASE WHEN ? THEN discovered_names ELSE '[]' END WHERE server = ?"
)


class McpHealth:
    name: ClassVar[str] = "mcp_health"
    version: ClassVar[int] = 1
    table_names = ("mcp_health", "mcp_tools", "mcp_grants", "mcp_access_requests")
    tables = (
        """CREATE TABLE IF NOT EXISTS mcp_health (
        server TEXT PRIMARY KEY, state TEXT NOT NULL DEFAULT 'configured',
        transport TEXT NOT NULL DEFAULT '', enabled INTEGER NOT NULL DEFAULT 1,
        removed INTEGER NOT NULL DEFAULT 0, offered INTEGER NOT NULL DEFAULT 0,
        tools TEXT NOT NULL DEFAULT '[]', discovered_names TEXT NOT NULL DEFAULT '[]',
        discovered INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0,
        attempt INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL DEFAULT 10,
        server_name TEXT NOT NULL DEFAULT '', server_version TEXT NOT NULL DEFAULT '',
        last_error TEXT NOT NULL DEFAULT '', last_error_kind TEXT NOT NULL DEFAULT '',
        last_error_at REAL NOT NULL DEFAULT 0, since REAL NOT NULL DEFAULT 0)""",
        "CREATE INDEX IF NOT EXISTS mcp_health_state ON mcp_health (state, server)",
        """CREATE TABLE IF NOT EXISTS mcp_tools (
        server TEXT NOT NULL, registered_name TEXT NOT NULL, name TEXT NOT NULL,
        description TEXT NOT NULL, read_only INTEGER, destructive INTEGER,
        requires_approval INTEGER NOT NULL, skipped_reason TEXT NOT NULL,
        PRIMARY KEY (server, name))""",
        # A server's tools in the order they are listed (offered first), without a sort.
        "CREATE INDEX IF NOT EXISTS mcp_tools_order "
        "ON mcp_tools (server, skipped_reason != '', registered_name, name)",
        """CREATE TABLE IF NOT EXISTS mcp_grants (
        server TEXT NOT NULL, scope TEXT NOT NULL, subject TEXT NOT NULL,
        enabled INTEGER NOT NULL, tool_allow TEXT, tool_deny TEXT NOT NULL,
        granted_by TEXT NOT NULL, request_id TEXT NOT NULL,
        PRIMARY KEY (server, scope, subject))""",
        """CREATE TABLE IF NOT EXISTS mcp_access_requests (
        server TEXT NOT NULL, request_id TEXT NOT NULL, scope TEXT NOT NULL,
        subject TEXT NOT NULL, tool_allow TEXT, reason TEXT NOT NULL,
        requested_by TEXT NOT NULL, status TEXT NOT NULL, reviewed_by TEXT NOT NULL,
        note TEXT NOT NULL, PRIMARY KEY (server, request_id))""",
    )
    types: ClassVar[tuple[str, ...]] = (
        "mcp.server_configured",
        "mcp.server_enabled_changed",
        "mcp.server_removed",
        "mcp.connecting",
        "mcp.connected",
        "mcp.connect_failed",
        "mcp.tools_discovered",
        "mcp.tools_withdrawn",
        "mcp.call_timed_out",
        "mcp.disconnected",
        "mcp.reconnect_scheduled",
        "mcp.failed",
        "mcp.agent_grant_set",
        "mcp.agent_grant_revoked",
        "mcp.user_grant_set",
        "mcp.user_grant_revoked",
        "mcp.access_requested",
        "mcp.access_reviewed",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        server: str = event.server
        conn.execute(_UPSERT_SERVER, (server,))
        if recorded.type == "mcp.tools_discovered":
            self._discovered(conn, server, event)
        row = conn.execute(_READ_CONNECTION, (server,)).fetchone()
        connection = ServerConnection(server=server, **dict(zip(_CONNECTION, row, strict=True)))
        connection.enabled, connection.offered = bool(connection.enabled), bool(connection.offered)
        if fold_connection(connection, event, recorded.recorded_at):
            values = [getattr(connection, column) for column in _CONNECTION]
            removed = connection.state == "removed"
            conn.execute(_WRITE_CONNECTION, (*values, removed, connection.offered, server))
        else:
            _access(conn, server, recorded.type, event)

    @staticmethod
    def _discovered(conn: sqlite3.Connection, server: str, event: Any) -> None:
        """The listing: every tool, offered or skipped (offering them is the fold's)."""
        conn.execute("DELETE FROM mcp_tools WHERE server = ?", (server,))
        conn.executemany(
            "INSERT OR REPLACE INTO mcp_tools VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    server,
                    t.registered_name,
                    t.name,
                    t.description,
                    t.read_only,
                    t.destructive,
                    t.requires_approval,
                    "",
                )
                for t in event.tools
            ]
            + [
                (server, s.registered_name, s.name, "", None, None, False, s.reason)
                for s in event.skipped
            ],
        )
        names = json.dumps([t.registered_name for t in event.tools])
        conn.execute(
            "UPDATE mcp_health SET discovered_names = ?, discovered = ?, skipped = ? "
            "WHERE server = ?",
            (names, len(event.tools), len(event.skipped), server),
        )


def _access(conn: sqlite3.Connection, server: str, tag: str, event: Any) -> None:
    """Grants and access requests."""
    match tag:
        case "mcp.agent_grant_set" | "mcp.user_grant_set":
            scope, subject = (
                ("agent", event.agent) if tag == "mcp.agent_grant_set" else ("user", event.user)
            )
            conn.execute(
                "INSERT OR REPLACE INTO mcp_grants VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    server,
                    scope,
                    subject,
                    event.enabled,
                    _json_or_none(event.tool_allow),
                    json.dumps(event.tool_deny),
                    event.by,
                    event.request_id,
                ),
            )
        case "mcp.agent_grant_revoked" | "mcp.user_grant_revoked":
            scope, subject = (
                ("agent", event.agent) if tag == "mcp.agent_grant_revoked" else ("user", event.user)
            )
            conn.execute(
                "DELETE FROM mcp_grants WHERE server = ? AND scope = ? AND subject = ?",
                (server, scope, subject),
            )
        case "mcp.access_requested":
            conn.execute(
                "INSERT OR REPLACE INTO mcp_access_requests VALUES "
                "(?, ?, ?, ?, ?, ?, ?, 'pending', '', '')",
                (
                    server,
                    event.request_id,
                    event.scope,
                    event.subject,
                    _json_or_none(event.tool_allow),
                    event.reason,
                    event.requested_by,
                ),
            )
        case "mcp.access_reviewed":
            conn.execute(
                "UPDATE mcp_access_requests SET status = ?, reviewed_by = ?, note = ? "
                "WHERE server = ? AND request_id = ?",
                (event.decision, event.by, event.note, server, event.request_id),
            )


def _json_or_none(value: list[str] | None) -> str | None:
    return None if value is None else json.dumps(value)


class McpServerHealth(msgspec.Struct, frozen=True, kw_only=True):
    """One server. ``tools``: the registered names agents are
    offered now (empty while the server is down); ``discovered``: how many the last
    connection listed; ``attempt``: the one running or scheduled next."""

    server: str
    state: ConnectionState
    transport: McpTransport | Literal[""]
    enabled: bool
    removed: bool
    tools: list[str]
    discovered: int
    skipped: int
    attempt: int
    max_attempts: int
    server_name: str
    server_version: str
    last_error: str
    last_error_kind: str
    last_error_at: float
    since: float
    agent_grants: int
    user_grants: int
    pending_requests: int


class McpToolRow(msgspec.Struct, frozen=True, kw_only=True):
    """A tool the server's last connection listed; ``skipped_reason`` set for one that is
    not offered (it would shadow a built-in, its schema is unusable...)."""

    server: str
    registered_name: str
    name: str
    description: str
    read_only: bool | None
    destructive: bool | None
    requires_approval: bool
    skipped_reason: str
    offered: bool


class McpGrantRow(msgspec.Struct, frozen=True, kw_only=True):
    """A grant: ``subject`` is the agent, the user or ``*``."""

    server: str
    scope: McpGrantScope
    subject: str
    enabled: bool
    tool_allow: list[str] | None
    tool_deny: list[str]
    granted_by: str
    request_id: str


_SERVER_SELECT = (
    "SELECT h.server, state, transport, enabled, removed, tools, discovered, skipped, "
    "attempt, max_attempts, server_name, server_version, last_error, last_error_kind, "
    "last_error_at, since, "
    "(SELECT COUNT(*) FROM mcp_grants g WHERE g.server = h.server AND scope = 'agent'), "
    "(SELECT COUNT(*) FROM mcp_grants g WHERE g.server = h.server AND scope = 'user'), "
    "(SELECT COUNT(*) FROM mcp_access_requests r WHERE r.server = h.server "
    "AND status = 'pending') FROM mcp_health h"
)


class McpHealthReader(Reader):
    projection: ClassVar[str] = "mcp_health"

    async def servers(
        self,
        *,
        state: str | None = None,
        include_removed: bool = False,
        since: float | None = None,
        after: str | None = None,
        limit: int = -1,
    ) -> list[McpServerHealth]:
        """Servers by name; removed ones only with ``include_removed`` (or ``state``).
        A listing by name pages by name: pass the last ``server`` of a page as
        ``after``. ``since``: in their state since that moment or later (epoch s)."""
        check_page(0, limit, since)
        clauses: list[str] = ["h.server > ?"]
        params: list[Any] = [after or ""]
        if state is not None:
            clauses.append("state = ?")
            params.append(state)
        elif not include_removed:
            clauses.append("removed = 0")
        if since is not None:
            clauses.append("since >= ?")
            params.append(since)
        rows = await self.models.query(
            f"{_SERVER_SELECT}{where(clauses)} ORDER BY h.server LIMIT ?", [*params, limit]
        )
        return [_server(row) for row in rows]

    async def server(self, name: str) -> McpServerHealth | None:
        """One server, removed or not; None if the log never named it."""
        rows = await self.models.query(f"{_SERVER_SELECT} WHERE h.server = ?", [name])
        return _server(rows[0]) if rows else None

    async def tools(self, server: str, *, limit: int = -1) -> list[McpToolRow]:
        """The tools of the server's last listing, offered ones first, by name (the first
        ``limit`` of them; one listing is one event's worth: no paging needed)."""
        check_page(0, limit)
        rows = await self.models.query(
            "SELECT t.server, registered_name, name, description, read_only, destructive, "
            "requires_approval, skipped_reason, h.offered AND skipped_reason = '' "
            "FROM mcp_tools t JOIN mcp_health h ON h.server = t.server WHERE t.server = ? "
            "ORDER BY skipped_reason != '', registered_name, name LIMIT ?",
            [server, limit],
        )
        return [_tool(row) for row in rows]

    async def grants(
        self,
        server: str | None = None,
        *,
        after: tuple[str, str, str] | None = None,
        limit: int = -1,
    ) -> list[McpGrantRow]:
        """Grants by server, scope and subject; page with ``after`` = the last row's
        ``(server, scope, subject)``."""
        check_page(0, limit)
        clauses: list[str] = ["(server, scope, subject) > (?, ?, ?)"]
        params: list[Any] = list(after or ("", "", ""))
        if server is not None:
            clauses.append("server = ?")
            params.append(server)
        rows = await self.models.query(
            f"SELECT * FROM mcp_grants{where(clauses)} ORDER BY server, scope, subject LIMIT ?",
            [*params, limit],
        )
        return [
            McpGrantRow(
                server=r[0],
                scope=r[1],
                subject=r[2],
                enabled=bool(r[3]),
                tool_allow=json.loads(r[4]) if r[4] is not None else None,
                tool_deny=json.loads(r[5]),
                granted_by=r[6],
                request_id=r[7],
            )
            for r in rows
        ]


def _server(row: tuple[Any, ...]) -> McpServerHealth:
    fields = dict(zip(McpServerHealth.__struct_fields__, row, strict=True))
    fields["enabled"], fields["removed"] = bool(fields["enabled"]), bool(fields["removed"])
    fields["tools"] = json.loads(fields["tools"])
    return McpServerHealth(**fields)


def _tool(row: tuple[Any, ...]) -> McpToolRow:
    fields = dict(zip(McpToolRow.__struct_fields__, row, strict=True))
    for key in ("read_only", "destructive"):
        fields[key] = None if fields[key] is None else bool(fields[key])
    fields["requires_approval"], fields["offered"] = (
        bool(fields["requires_approval"]),
        bool(fields["offered"]),
    )
    return McpToolRow(**fields)
