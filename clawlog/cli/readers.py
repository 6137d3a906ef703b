"""The reader commands over read models: ``history``, ``board``, ``routes``,
``delegations`` and ``audit`` query the projections, caught up with the log before each
command (see ``views.py``). ``tail`` reads the log itself (``tail.py``)."""

from __future__ import annotations

from typing import Any

from clawlog.events import EventStore
from clawlog.events.streams import session_stream
from clawlog.projections import (
    DelegationReader,
    HandoffRouteReader,
    SessionHistoryReader,
    TaskBoardReader,
    ToolAuditReader,
)
from clawlog.projections.read_models.session_history import HistoryEntry

from .errors import CliError
from .render import emit_json, table
from .views import read_models

__all__ = [
    "audit",
    "audit_refusals",
    "board",
    "delegations",
    "history",
    "routes",
]


#: How each kind of history line reads: (who, text).
_HISTORY_LINES: dict[str, Any] = {
    "user": lambda e: (e.who, e.text),
    "tool_calls": lambda e: (f"{e.who} → tools", e.text),
    "approval_requested": lambda e: (
        "tool.approval_requested",
        f"{e.who} awaits approval: {e.text}",
    ),
    "approval_decided": lambda e: ("tool.approval_decided", f"{e.who}: {e.text}"),
    "tool": lambda e: ("tool.call_completed", f"{e.who} → {e.text[:200]}"),
    "tool_failed": lambda e: ("tool.call_failed", f"{e.who} failed: {e.text[:200]}"),
    "tool_refused": lambda e: ("tool.call_refused", f"{e.who} refused at {e.text}"),
    "reply": lambda e: (e.who, e.text),
    "failed": lambda e: ("failed", e.text),
    "cancelled": lambda e: ("cancelled", f"cancelled by {e.who}"),
}
_PAGE = 1000


async def history(store: EventStore, agent: str, session_key: str, *, as_json: bool) -> None:
    stream = session_stream(agent, session_key)
    entries: list[HistoryEntry] = []
    async with read_models(store, "session_history") as views:
        reader = SessionHistoryReader(views)
        while page := await reader.page(
            stream, after=entries[-1].position if entries else 0, limit=_PAGE
        ):
            entries.extend(page)
    if not entries:
        raise CliError(f"no session {session_key!r} for agent {agent!r} in this log")
    rows = [[e.position, *_HISTORY_LINES[e.kind](e)] for e in entries]
    if as_json:
        emit_json([dict(zip(("position", "who", "text"), r, strict=True)) for r in rows])
        return
    table(f"session history: {stream}", ["pos", "who", "text"], rows)


async def board(store: EventStore, team_id: str, *, as_json: bool) -> None:
    async with read_models(store, "task_boards") as views:
        found = await TaskBoardReader(views).board(team_id)
    if found is None:
        raise CliError(f"no team {team_id!r} in this log")
    if as_json:
        emit_json({"team": team_id, "name": found.name, "lead": found.lead, "tasks": found.tasks})
        return
    rows = [
        [
            t.task_id,
            t.subject,
            t.priority,
            t.status,
            t.claimed_by,
            ", ".join(t.blocked_by),
            t.result,
        ]
        for t in found.tasks
    ]
    table(
        f"task board: {found.name} ({team_id}), lead {found.lead}",
        ["task", "subject", "prio", "status", "by", "blocked by", "result"],
        rows,
    )


async def routes(store: EventStore, *, as_json: bool) -> None:
    async with read_models(store, "handoff_routes") as views:
        found = await HandoffRouteReader(views).routes()
    items = [
        {
            "channel": r.channel,
            "chat_id": r.chat_id,
            "agent": r.agent,
            "from": r.from_agent,
            "reason": r.reason,
            "position": r.position,
        }
        for r in found
    ]
    if as_json:
        emit_json(items)
        return
    table(
        "handoff routes",
        ["channel", "chat", "agent", "from", "reason", "since pos"],
        [[r.channel, r.chat_id, r.agent, r.from_agent, r.reason, r.position] for r in found],
    )


async def audit_refusals(store: EventStore, *, as_json: bool = False) -> None:
    """Every refused tool call, with the step and reason."""
    async with read_models(store, "tool_audit") as views:
        calls = await _all_calls(ToolAuditReader(views), tool=None, refused=True)
    rows = [[c.position, c.stream, c.tool, c.refused_step, c.reason] for c in calls]
    if as_json:
        emit_json(
            [
                dict(zip(("position", "stream", "tool", "step", "reason"), r, strict=True))
                for r in rows
            ]
        )
        return
    table("refused tool calls", ["pos", "stream", "tool", "step", "reason"], rows)


async def delegations(store: EventStore, *, overdue: bool, as_json: bool) -> None:
    async with read_models(store, "delegations") as views:
        rows = await DelegationReader(views).delegations(overdue_only=overdue)
    if as_json:
        emit_json(rows)
        return
    table(
        "delegations" + (" (overdue)" if overdue else ""),
        ["id", "source", "target", "mode", "status", "reason", "overdue", "task"],
        [
            [
                r.delegation_id,
                r.source,
                r.target,
                r.mode,
                r.status,
                r.reason,
                "OVERDUE" if r.overdue else "",
                r.task,
            ]
            for r in rows
        ],
    )


async def audit(store: EventStore, *, tool: str | None, refused: bool, as_json: bool) -> None:
    """One row per tool call: requested, then how it ended and why."""
    async with read_models(store, "tool_audit") as views:
        calls = await _all_calls(ToolAuditReader(views), tool=tool, refused=refused)
    rows = [
        {
            "call_id": c.call_id,
            "tool": c.tool,
            "stream": c.stream,
            "outcome": _OUTCOMES.get(c.status or "", c.status or ""),
            "step": c.refused_step or "",
            "reason": _reason(c.error_kind, c.reason),
            "approval": f"{c.decision} by {c.decided_by or '?'}" if c.decision else "",
        }
        for c in calls
    ]
    if as_json:
        emit_json(rows)
        return
    table(
        "tool-call audit",
        ["call", "tool", "stream", "outcome", "step", "reason", "approval"],
        [list(r.values()) for r in rows],
    )


#: Audit statuses as the command names them: a denied call was refused at approval.
_OUTCOMES = {"denied": "refused"}


def _reason(error_kind: str | None, reason: str | None) -> str:
    if not reason:
        return ""
    return f"{error_kind}: {reason[:120]}" if error_kind else reason


async def _all_calls(reader: ToolAuditReader, *, tool: str | None, refused: bool) -> list[Any]:
    calls: list[Any] = []
    while page := await reader.calls(
        tool=tool, refused=refused, after=calls[-1].position if calls else 0, limit=_PAGE
    ):
        calls.extend(page)
    return calls
