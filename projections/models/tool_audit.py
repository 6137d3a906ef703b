"""Tool-call audit: one row per call with how it ended and why (refusals, approvals)."""

from __future__ import annotations

import sqlite3
from typing import Any, ClassVar

from events import RecordedEvent

__all__ = ["ToolAudit", "ToolAuditReader"]

_UPSERT = """INSERT INTO tool_audit (stream, turn_id, call_id, tool, agent, status, requested_at,
    position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (stream, turn_id, call_id) DO UPDATE SET status = excluded.status,
    position = excluded.position"""


class ToolAudit:
    name: ClassVar[str] = "tool_audit"
    version: ClassVar[int] = 1
    table_names = ("tool_audit",)
    tables = (
        """CREATE TABLE IF NOT EXISTS tool_audit (
        stream TEXT NOT NULL, turn_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,
        agent TEXT, status TEXT NOT NULL, step TEXT, reason TEXT, error_kind TEXT,
        approval TEXT, approved_by TEXT, duration_ms REAL, requested_at REAL, position INTEGER,
        PRIMARY KEY (stream, turn_id, call_id))""",
        "CREATE INDEX IF NOT EXISTS tool_audit_tool ON tool_audit (tool, status)",
    )
    types: ClassVar[tuple[str, ...]] = (
        "tool.call_requested",
        "tool.call_refused",
        "tool.approval_requested",
        "tool.approval_decided",
        "tool.call_started",
        "tool.call_completed",
        "tool.call_failed",
    )

    def handle(self, conn: sqlite3.Connection, recorded: RecordedEvent) -> None:
        event: Any = recorded.event
        key = (recorded.stream, recorded.correlation_id or "", event.call_id)
        status = {
            "tool.call_requested": "requested",
            "tool.call_refused": "refused",
            "tool.approval_requested": "awaiting_approval",
            "tool.approval_decided": "approval_decided",
            "tool.call_started": "running",
            "tool.call_completed": "completed",
            "tool.call_failed": "failed",
        }[recorded.type]
        conn.execute(
            _UPSERT,
            (
                *key,
                event.tool,
                getattr(event, "agent", ""),
                status,
                recorded.recorded_at,
                recorded.position,
            ),
        )
        match recorded.type:
            case "tool.call_refused":
                self._set(
                    conn, key, step=event.step, reason=event.reason, error_kind=event.error_kind
                )
            case "tool.approval_decided":
                self._set(conn, key, approval=event.decision, approved_by=event.by)
            case "tool.call_completed":
                self._set(conn, key, duration_ms=event.duration_ms)
            case "tool.call_failed":
                self._set(
                    conn,
                    key,
                    reason=event.message[:500],
                    error_kind=event.error_kind,
                    duration_ms=event.duration_ms,
                )

    @staticmethod
    def _set(conn: sqlite3.Connection, key: tuple[str, str, str], **values: Any) -> None:
        columns = ", ".join(f"{name} = ?" for name in values)
        conn.execute(
            f"UPDATE tool_audit SET {columns} WHERE stream = ? AND turn_id = ? AND call_id = ?",
            (*values.values(), *key),
        )


class ToolAuditReader:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def calls(
        self,
        *,
        tool: str | None = None,
        status: str | None = None,
        agent: str | None = None,
        stream_prefix: str | None = None,
        since: float | None = None,
        after: int = 0,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Calls ordered by position; ``after`` is the last position seen (pagination)."""
        sql, params = "SELECT * FROM tool_audit WHERE position > ?", [after]
        for column, value in (("tool", tool), ("status", status), ("agent", agent)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        if stream_prefix is not None:
            sql += " AND substr(stream, 1, ?) = ?"
            params += [len(stream_prefix), stream_prefix]
        if since is not None:
            sql += " AND requested_at >= ?"
            params.append(since)
        sql += " ORDER BY position LIMIT ?"
        params.append(limit)
        cursor = self._conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor]
