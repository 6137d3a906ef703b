"""Tool-call audit: one row per call with how it ended and why (refusals, approvals)."""

from __future__ import annotations

import sqlite3
from typing import Any, ClassVar

from events import RecordedEvent

__all__ = ["ToolAudit", "ToolAuditReader"]

_COLUMNS = ("step", "reason", "error_kind", "approval", "approved_by", "duration_ms")
#: One statement per event: insert the call, or move its status and fill what it adds.
_UPSERT = (
    "INSERT INTO tool_audit (stream, turn_id, call_id, tool, agent, status, requested_at, "
    "position, step, reason, error_kind, approval, approved_by, duration_ms) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (stream, turn_id, call_id) DO UPDATE SET status = excluded.status, "
    "position = excluded.position, "
    + ", ".join(f"{c} = coalesce(excluded.{c}, tool_audit.{c})" for c in _COLUMNS)
)
_STATUS = {
    "tool.call_requested": "requested",
    "tool.call_refused": "refused",
    "tool.approval_requested": "awaiting_approval",
    "tool.approval_decided": "approval_decided",
    "tool.call_started": "running",
    "tool.call_completed": "completed",
    "tool.call_failed": "failed",
}


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
        conn.execute(_UPSERT, self._row(recorded))

    def handle_batch(self, conn: sqlite3.Connection, events: list[RecordedEvent]) -> None:
        """The same upserts as ``handle``, in order, with one executemany."""
        conn.executemany(_UPSERT, map(self._row, events))

    @staticmethod
    def _row(recorded: RecordedEvent) -> tuple[Any, ...]:
        event: Any = recorded.event
        extra: dict[str, Any] = {}
        match recorded.type:
            case "tool.call_refused":
                extra = {"step": event.step, "reason": event.reason, "error_kind": event.error_kind}
            case "tool.approval_decided":
                extra = {"approval": event.decision, "approved_by": event.by}
            case "tool.call_completed":
                extra = {"duration_ms": event.duration_ms}
            case "tool.call_failed":
                extra = {
                    "reason": event.message[:500],
                    "error_kind": event.error_kind,
                    "duration_ms": event.duration_ms,
                }
        return (
            recorded.stream,
            recorded.correlation_id or "",
            event.call_id,
            event.tool,
            getattr(event, "agent", ""),
            _STATUS[recorded.type],
            recorded.recorded_at,
            recorded.position,
            *(extra.get(c) for c in _COLUMNS),
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
