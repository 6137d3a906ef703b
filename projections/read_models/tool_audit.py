"""Tool-call audit: one row per call with how it ended, plus every reason given on the way
(refusals with their step and rule, approval requests and decisions, loop warnings,
failures), and the call's verdict: the step and rule that refused it or let it run, and
the digest of the policy that decided (``tools.policy_digest``). A call a restart found
in flight also has its resume decision (``tool.call_resume_decided``): how many times it
was run again with the same key, and the latest decision (``rerun`` or
``interrupted``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import msgspec

from clawlog.events import RecordedEvent
from clawlog.events.domain.tool import ApprovalOutcome, RefusalStep

from .._sql import insert_rows
from ..readers import Reader, check_page, log_order, where

__all__ = [
    "AuditReason",
    "AuditReasonKind",
    "AuditedCall",
    "CallStatus",
    "ToolAudit",
    "ToolAuditReader",
]

#: Where a call stands: requested, then refused, awaiting_approval (then approved or
#: denied), running, and how it ended. (Folded from the ``tool.*`` events, never written.)
CallStatus = Literal[
    "requested",
    "refused",
    "awaiting_approval",
    "approved",
    "denied",
    "running",
    "completed",
    "failed",
]
#: The event a reason comes from.
AuditReasonKind = Literal[
    "refused", "approval_requested", "approval_decided", "loop_warning", "failed", "resumed"
]


class AuditedCall(msgspec.Struct, frozen=True):
    """One tool call, and how far it got."""

    #: Position of the call's first event (the pagination cursor).
    position: int
    stream: str
    #: The turn (correlation id) the call belongs to.
    turn_id: str
    call_id: str
    tool: str
    status: CallStatus | None
    #: Position of the call's latest event.
    last_position: int
    agent: str | None
    session_key: str | None
    requested_at: float | None
    #: The step that refused it (None if it was not refused).
    refused_step: RefusalStep | None
    #: Why it was refused, or the failure message of a call that ran and failed.
    reason: str | None
    error_kind: str | None
    finished_at: float | None
    #: The approval's outcome (None if the call did not wait for one).
    decision: ApprovalOutcome | None
    decided_by: str | None
    duration_ms: float | None
    truncated: bool | None
    #: The tool ran but returned an error result.
    is_error: bool | None
    #: The verdict: the step that refused the call or let it run (``policy``,
    #: ``approval``...) and its rule; None for calls recorded before verdicts.
    verdict_step: str | None = None
    verdict_rule: str | None = None
    #: The digest of the effective policy that decided (``tools.policy_digest``).
    policy_digest: str | None = None
    #: How many times a restart ran the call again with the same idempotency key, and
    #: the latest resume decision ("rerun" | "interrupted"); None: no restart found it
    #: in flight.
    reruns: int | None = None
    resume_decision: str | None = None


class AuditReason(msgspec.Struct, frozen=True):
    """A reason recorded for a call. ``detail``: the step, decision, loop pattern or error
    kind."""

    position: int
    stream: str
    turn_id: str
    call_id: str
    tool: str
    kind: AuditReasonKind
    detail: str
    reason: str
    recorded_at: float


_COLUMNS = AuditedCall.__struct_fields__
_SELECT = ", ".join(_COLUMNS)
_UPSERT = f"INSERT INTO tool_audit ({', '.join(_COLUMNS)})"
#: Later values win; ``reruns`` counts, so a batch's re-runs add to the stored ones.
_ON_CONFLICT = "ON CONFLICT (stream, turn_id, call_id) DO UPDATE SET " + ", ".join(
    "reruns = CASE WHEN excluded.reruns IS NULL THEN tool_audit.reruns "
    "ELSE coalesce(tool_audit.reruns, 0) + excluded.reruns END"
    if c == "reruns"
    else f"{c} = coalesce(excluded.{c}, tool_audit.{c})"
    for c in _COLUMNS[4:]
)
_REASON = "INSERT INTO tool_audit_reasons"
_DECIDED: dict[ApprovalOutcome, CallStatus] = {
    "allow-once": "approved",
    "allow-always": "approved",
}
(
    _STATUS,
    _LAST,
    _AGENT,
    _SESSION,
    _REQUESTED,
    _STEP,
    _REASON_TEXT,
    _KIND,
    _FINISHED,
    _DECISION,
    _DECIDED_BY,
    _DURATION,
    _TRUNCATED,
    _IS_ERROR,
    _VERDICT_STEP,
    _VERDICT_RULE,
    _DIGEST,
    _RERUNS,
    _RESUME,
) = range(5, len(_COLUMNS))


class ToolAudit:
    name: ClassVar[str] = "tool_audit"
    version: ClassVar[int] = 4
    table_names: ClassVar[tuple[str, ...]] = ("tool_audit", "tool_audit_reasons")
    tables: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS tool_audit (
        position INTEGER PRIMARY KEY, stream TEXT NOT NULL, turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL, tool TEXT NOT NULL, status TEXT, last_position INTEGER NOT NULL,
        agent TEXT, session_key TEXT, requested_at REAL, refused_step TEXT, reason TEXT,
        error_kind TEXT, finished_at REAL, decision TEXT, decided_by TEXT, duration_ms REAL,
        truncated INTEGER, is_error INTEGER, verdict_step TEXT, verdict_rule TEXT,
        policy_digest TEXT, reruns INTEGER, resume_decision TEXT,
        UNIQUE (stream, turn_id, call_id))""",
        "CREATE INDEX IF NOT EXISTS tool_audit_tool ON tool_audit (tool, position)",
        "CREATE INDEX IF NOT EXISTS tool_audit_agent ON tool_audit (agent, position)",
        "CREATE INDEX IF NOT EXISTS tool_audit_session ON tool_audit (session_key, position)",
        # `clawlog audit --refused`: the refused calls in log order, without a scan.
        "CREATE INDEX IF NOT EXISTS tool_audit_refused ON tool_audit (position) "
        "WHERE refused_step IS NOT NULL",
        # ``since``: where in the log a moment falls (see readers.log_order).
        "CREATE INDEX IF NOT EXISTS tool_audit_requested ON tool_audit (requested_at)",
        """CREATE TABLE IF NOT EXISTS tool_audit_reasons (
        position INTEGER PRIMARY KEY, stream TEXT NOT NULL, turn_id TEXT NOT NULL,
        call_id TEXT NOT NULL, tool TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL,
        reason TEXT NOT NULL, recorded_at REAL NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS tool_audit_reasons_call "
        "ON tool_audit_reasons (stream, turn_id, call_id)",
        "CREATE INDEX IF NOT EXISTS tool_audit_reasons_recorded "
        "ON tool_audit_reasons (recorded_at)",
    )
    types: ClassVar[tuple[str, ...]] = (
        "tool.approval_decided",
        "tool.approval_requested",
        "tool.call_completed",
        "tool.call_failed",
        "tool.call_refused",
        "tool.call_requested",
        "tool.call_resume_decided",
        "tool.call_started",
        "tool.loop_warning",
    )

    def handle(self, conn: sqlite3.Connection, event: RecordedEvent) -> None:
        self.handle_batch(conn, [event])

    def handle_batch(self, conn: sqlite3.Connection, events: list[RecordedEvent]) -> None:
        """The events of one call are merged first (later values win, as the upsert's
        coalesce would do), so a call costs one upsert per batch, not one per event."""
        calls: dict[tuple[str, str, str], list[Any]] = {}
        reasons: list[tuple[Any, ...]] = []
        for recorded in events:
            event: Any = recorded.event
            key = (recorded.stream, recorded.correlation_id or "", event.call_id)
            row = calls.get(key)
            if row is None:
                row = calls[key] = [recorded.position, *key, event.tool, *_EMPTY]
            row[_LAST] = recorded.position
            reason = _APPLY[recorded.type](row, event, recorded.recorded_at)
            if reason is not None:
                reasons.append((recorded.position, *key, event.tool, *reason, recorded.recorded_at))
        insert_rows(conn, _UPSERT, list(calls.values()), _ON_CONFLICT)
        insert_rows(conn, _REASON, reasons)


_EMPTY = (None,) * (len(_COLUMNS) - 5)
#: Sets the columns an event decides on the call's row; returns its reason row
#: (kind, detail, text) if it gives one.
_Apply = Callable[[list[Any], Any, float], tuple[AuditReasonKind, str, str] | None]


def _requested(row: list[Any], e: Any, at: float) -> None:
    row[_STATUS], row[_AGENT], row[_SESSION], row[_REQUESTED] = (
        "requested",
        e.agent,
        e.session_key,
        at,
    )


def _refused(row: list[Any], e: Any, at: float) -> tuple[AuditReasonKind, str, str]:
    row[_STATUS], row[_STEP], row[_REASON_TEXT], row[_KIND], row[_FINISHED] = (
        "refused",
        e.step,
        e.reason,
        e.error_kind,
        at,
    )
    _verdict(row, e)
    return "refused", e.step, f"{e.reason} (rule: {e.rule})" if e.rule else e.reason


def _approval_requested(row: list[Any], e: Any, at: float) -> tuple[AuditReasonKind, str, str]:
    row[_STATUS] = "awaiting_approval"
    return "approval_requested", "approval", e.reason or e.summary


def _approval_decided(row: list[Any], e: Any, at: float) -> tuple[AuditReasonKind, str, str]:
    row[_STATUS], row[_DECISION], row[_DECIDED_BY] = (
        _DECIDED.get(e.decision, "denied"),
        e.decision,
        e.by,
    )
    return "approval_decided", e.decision, f"by {e.by or 'unknown'}"


def _started(row: list[Any], e: Any, at: float) -> None:
    row[_STATUS] = "running"
    _verdict(row, e)


def _verdict(row: list[Any], e: Any) -> None:
    """The verdict's columns, when the event carries one (not before verdicts)."""
    if e.policy_digest or e.step:
        row[_VERDICT_STEP], row[_VERDICT_RULE] = e.step, e.rule
        row[_DIGEST] = e.policy_digest or None


def _completed(row: list[Any], e: Any, at: float) -> None:
    row[_STATUS], row[_FINISHED], row[_DURATION], row[_TRUNCATED], row[_IS_ERROR] = (
        "completed",
        at,
        e.duration_ms,
        e.truncated,
        e.is_error,
    )


def _failed(row: list[Any], e: Any, at: float) -> tuple[AuditReasonKind, str, str]:
    message = e.message[:500]
    row[_STATUS], row[_REASON_TEXT], row[_KIND], row[_FINISHED] = (
        "failed",
        message,
        e.error_kind,
        at,
    )
    row[_DURATION], row[_TRUNCATED] = e.duration_ms, e.truncated
    return "failed", e.error_kind, message


def _loop_warning(row: list[Any], e: Any, at: float) -> tuple[AuditReasonKind, str, str]:
    return "loop_warning", e.pattern, e.message  # the call still ran


def _resume_decided(row: list[Any], e: Any, at: float) -> tuple[AuditReasonKind, str, str]:
    """A restart found the call in flight: run again (counted) or interrupted."""
    row[_RESUME] = e.decision
    if e.decision == "rerun":
        row[_RERUNS] = (row[_RERUNS] or 0) + 1
    elif row[_RERUNS] is None:
        row[_RERUNS] = 0  # decided: never NULL once a restart found it
    effects = f"{e.side_effects} side effects, key {e.idempotency_key}"
    return "resumed", e.decision, f"{e.reason} ({effects})" if e.reason else effects


_APPLY: dict[str, _Apply] = {
    "tool.call_requested": _requested,
    "tool.call_refused": _refused,
    "tool.approval_requested": _approval_requested,
    "tool.approval_decided": _approval_decided,
    "tool.call_started": _started,
    "tool.call_completed": _completed,
    "tool.call_failed": _failed,
    "tool.loop_warning": _loop_warning,
    "tool.call_resume_decided": _resume_decided,
}


class ToolAuditReader(Reader):
    """Queries over the audit. Pages go by position: pass the last row's ``position`` as
    ``after`` for the next page."""

    projection: ClassVar[str] = "tool_audit"

    async def calls(
        self,
        *,
        tool: str | None = None,
        agent: str | None = None,
        session: str | None = None,
        stream: str | None = None,
        status: CallStatus | None = None,
        refused: bool = False,
        since: float | None = None,
        until: float | None = None,
        after: int = 0,
        limit: int = 100,
    ) -> list[AuditedCall]:
        """Calls in log order. ``session`` is the session key; ``since``/``until``
        bound the request time (epoch seconds, ``until`` exclusive); ``limit=-1`` for
        all. Every filter the CLI offers is answered by an index."""
        check_page(after, limit, since)
        clauses, params = log_order("tool_audit", "requested_at", after, since)
        for column, value in (
            ("tool", tool),
            ("agent", agent),
            ("session_key", session),
            ("stream", stream),
            ("status", status),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if refused:
            clauses.append("refused_step IS NOT NULL")
        if until is not None:
            clauses.append("requested_at < ?")
            params.append(until)
        rows = await self.models.query(
            f"SELECT {_SELECT} FROM tool_audit{where(clauses)} ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [_call(row) for row in rows]

    async def call(self, stream: str, turn_id: str, call_id: str) -> AuditedCall | None:
        rows = await self.models.query(
            f"SELECT {_SELECT} FROM tool_audit WHERE stream = ? AND turn_id = ? AND call_id = ?",
            (stream, turn_id, call_id),
        )
        return _call(rows[0]) if rows else None

    async def reasons(self, call: AuditedCall) -> list[AuditReason]:
        """Every reason recorded for ``call``, in log order."""
        rows = await self.models.query(
            "SELECT * FROM tool_audit_reasons WHERE stream = ? AND turn_id = ? AND call_id = ? "
            "ORDER BY position",
            (call.stream, call.turn_id, call.call_id),
        )
        return [AuditReason(*row) for row in rows]

    async def reasons_by_kind(
        self,
        kinds: Sequence[AuditReasonKind],
        *,
        tool: str | None = None,
        since: float | None = None,
        after: int = 0,
        limit: int = 100,
    ) -> list[AuditReason]:
        """Reasons of the given kinds across calls (e.g. every refusal), in log order;
        ``since``: recorded at or after it (epoch seconds)."""
        check_page(after, limit, since)
        clauses, params = log_order("tool_audit_reasons", "recorded_at", after, since)
        clauses.append(f"kind IN ({','.join('?' * len(kinds))})")
        params += kinds
        if tool is not None:
            clauses.append("tool = ?")
            params.append(tool)
        rows = await self.models.query(
            f"SELECT * FROM tool_audit_reasons{where(clauses)} ORDER BY position LIMIT ?",
            [*params, limit],
        )
        return [AuditReason(*row) for row in rows]


def _call(row: tuple[Any, ...]) -> AuditedCall:
    values = list(row)
    for index in (_TRUNCATED, _IS_ERROR):  # SQLite stores booleans as 0/1
        if values[index] is not None:
            values[index] = bool(values[index])
    return AuditedCall(*values)
