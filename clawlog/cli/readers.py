"""The reader commands over read models: ``history``, ``board``, ``routes``,
``delegations`` and ``audit`` query the projections, caught up with the log before each
command (see ``views.py``). ``tail`` reads the log itself (``tail.py``).

Each listing is read a page at a time, by position (the read models' cursor), and each
page is printed before the next is read (``listing.py``): memory stays bounded however
many rows the log holds. ``--since``, ``--limit`` and ``--skip-corrupt`` arrive as a
:class:`~clawlog.cli.points.Window`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

from clawlog.events import EventStore
from clawlog.events.streams import session_stream
from clawlog.projections import (
    DelegationReader,
    HandoffRouteReader,
    SessionHistoryReader,
    TaskBoardReader,
    ToolAuditReader,
)
from clawlog.projections.read_models.tool_audit import AuditedCall
from clawlog.projections.timeline import Skipped

from .errors import CliError
from .listing import Format, Listing
from .points import EVERY_ROW, Window
from .render import report_skipped
from .views import read_models

__all__ = [
    "audit",
    "audit_refusals",
    "board",
    "delegations",
    "history",
    "pages",
    "routes",
]


class _Positioned(Protocol):
    @property
    def position(self) -> int: ...


_Row = TypeVar("_Row", bound=_Positioned)
#: Rows read per query: the listings' memory is about this many rows.
_PAGE = 1000

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
    "tool_failed": lambda e: ("tool.call_failed", _failed(e.who, e.text[:200])),
    "tool_refused": lambda e: ("tool.call_refused", f"{e.who} refused at {e.text}"),
    "reply": lambda e: (e.who, e.text),
    "failed": lambda e: ("failed", e.text),
    "cancelled": lambda e: ("cancelled", f"cancelled by {e.who}"),
    "compacted": lambda e: ("compacted", e.text),
    "compaction_failed": lambda e: ("compaction_failed", e.text),
    "cleared": lambda e: ("cleared", f"{e.text} (by {e.who})"),
    "resume_decided": lambda e: ("tool.call_resume_decided", f"{e.who}: {e.text[:200]}"),
}


def _failed(tool: str, message: str) -> str:
    """``{tool} failed: …``, said once: the pipeline's own messages already start so."""
    return message if message.startswith(f"{tool} ") else f"{tool} failed: {message}"


async def pages(
    fetch: Callable[[int, int], Awaitable[list[_Row]]], window: Window
) -> AsyncIterator[_Row]:
    """Every row ``fetch(after, limit)`` pages through by position, from the window's
    start, at most ``window.limit`` of them; one page in memory at a time."""
    after, left = window.after, window.limit or None
    while True:
        size = _PAGE if left is None else min(_PAGE, left)
        page = await fetch(after, size)
        for row in page:
            yield row
        if left is not None:
            left -= len(page)
            if left <= 0:
                return
        if len(page) < size:
            return
        after = page[-1].position


async def history(
    store: EventStore, agent: str, session_key: str, *, form: Format, window: Window = EVERY_ROW
) -> None:
    stream = session_stream(agent, session_key)
    skipped = Skipped() if window.skip_corrupt else None
    async with read_models(store, "session_history", skip=skipped) as views:
        reader = SessionHistoryReader(views)
        if not await reader.page(stream, limit=1):
            raise CliError(f"no session {session_key!r} for agent {agent!r} in this log")
        with Listing(
            f"session history: {stream}",
            ["pos", "who", "text"],
            form,
            json_keys=["position", "who", "text"],
        ) as listing:

            def fetch(after: int, limit: int) -> Awaitable[list[Any]]:
                return reader.page(stream, after=after, limit=limit, since=window.since_time)

            async for entry in pages(fetch, window):
                listing.add([entry.position, *_HISTORY_LINES[entry.kind](entry)])
    _report(skipped)


async def board(
    store: EventStore, team_id: str, *, form: Format, window: Window = EVERY_ROW
) -> None:
    skipped = Skipped() if window.skip_corrupt else None
    async with read_models(store, "task_boards", skip=skipped) as views:
        reader = TaskBoardReader(views)
        found = await reader.board(team_id, limit=0)  # its name and lead; tasks below
        if found is None:
            raise CliError(f"no team {team_id!r} in this log")
        with Listing(
            f"task board: {found.name} ({team_id}), lead {found.lead}",
            ["task", "subject", "prio", "status", "by", "blocked by", "result"],
            form,
            json_head={"team": team_id, "name": found.name, "lead": found.lead},
            json_key="tasks",
        ) as listing:

            def fetch(after: int, limit: int) -> Awaitable[list[Any]]:
                return reader.tasks(team_id, since=window.since_time, after=after, limit=limit)

            async for t in pages(fetch, window):
                cells = [
                    t.task_id,
                    t.subject,
                    t.priority,
                    t.status,
                    t.claimed_by,
                    ", ".join(t.blocked_by),
                    t.result,
                ]
                listing.add(cells, t)
    _report(skipped)


async def routes(store: EventStore, *, form: Format, window: Window = EVERY_ROW) -> None:
    skipped = Skipped() if window.skip_corrupt else None
    async with read_models(store, "handoff_routes", skip=skipped) as views:
        reader = HandoffRouteReader(views)
        with Listing(
            "handoff routes",
            ["channel", "chat", "agent", "from", "reason", "since pos"],
            form,
            json_keys=["channel", "chat_id", "agent", "from", "reason", "position"],
        ) as listing:

            def fetch(after: int, limit: int) -> Awaitable[list[Any]]:
                return reader.routes(since=window.since_time, after=after, limit=limit)

            async for r in pages(fetch, window):
                listing.add([r.channel, r.chat_id, r.agent, r.from_agent, r.reason, r.position])
    _report(skipped)


async def audit_refusals(store: EventStore, *, form: Format = "table") -> None:
    """Every refused tool call, with the step and reason."""
    async with read_models(store, "tool_audit") as views:
        reader = ToolAuditReader(views)
        with Listing(
            "refused tool calls",
            ["pos", "stream", "tool", "step", "reason"],
            form,
            json_keys=["position", "stream", "tool", "step", "reason"],
        ) as listing:

            def fetch(after: int, limit: int) -> Awaitable[list[AuditedCall]]:
                return reader.calls(refused=True, after=after, limit=limit)

            async for c in pages(fetch, EVERY_ROW):
                listing.add([c.position, c.stream, c.tool, c.refused_step, c.reason])


async def delegations(
    store: EventStore, *, overdue: bool, form: Format, window: Window = EVERY_ROW
) -> None:
    skipped = Skipped() if window.skip_corrupt else None
    async with read_models(store, "delegations", skip=skipped) as views:
        reader = DelegationReader(views)
        with Listing(
            "delegations" + (" (overdue)" if overdue else ""),
            ["id", "source", "target", "mode", "status", "reason", "overdue", "task"],
            form,
        ) as listing:

            def fetch(after: int, limit: int) -> Awaitable[list[Any]]:
                return reader.delegations(
                    overdue_only=overdue, since=window.since_time, after=after, limit=limit
                )

            async for r in pages(fetch, window):
                cells = [
                    r.delegation_id,
                    r.source,
                    r.target,
                    r.mode,
                    r.status,
                    r.reason,
                    "OVERDUE" if r.overdue else "",
                    r.task,
                ]
                listing.add(cells, r)
    _report(skipped)


#: The audit's columns: in the table, and as the keys of each JSON row.
#: ``pos``: the call's first event, what ``--since POSITION`` pages on. ``verdict``: the
#: step and rule that refused the call or let it run; ``policy``: the digest of the
#: policy that decided (both empty for calls recorded before verdicts). ``reruns`` and
#: ``resume``: how many times a restart ran the call again with the same key, and its
#: latest resume decision (both empty when no restart found the call in flight).
_AUDIT_COLUMNS = [
    "pos",
    "call",
    "tool",
    "stream",
    "outcome",
    "step",
    "reason",
    "approval",
    "verdict",
    "policy",
    "reruns",
    "resume",
]
_AUDIT_KEYS = [
    "position",
    "call_id",
    "tool",
    "stream",
    "outcome",
    "step",
    "reason",
    "approval",
    "verdict",
    "policy_digest",
    "reruns",
    "resume_decision",
]


async def audit(
    store: EventStore,
    *,
    tool: str | None,
    refused: bool,
    form: Format,
    window: Window = EVERY_ROW,
    agent: str | None = None,
) -> None:
    """One row per tool call: requested, then how it ended and why."""
    skipped = Skipped() if window.skip_corrupt else None
    async with read_models(store, "tool_audit", skip=skipped) as views:
        reader = ToolAuditReader(views)
        with Listing("tool-call audit", _AUDIT_COLUMNS, form, json_keys=_AUDIT_KEYS) as listing:

            def fetch(after: int, limit: int) -> Awaitable[list[AuditedCall]]:
                return reader.calls(
                    tool=tool,
                    agent=agent,
                    refused=refused,
                    since=window.since_time,
                    after=after,
                    limit=limit,
                )

            async for c in pages(fetch, window):
                listing.add(_audit_row(c))
    _report(skipped)


def _audit_row(c: AuditedCall) -> list[Any]:
    return [
        c.position,
        c.call_id,
        c.tool,
        c.stream,
        _OUTCOMES.get(c.status or "", c.status or ""),
        c.refused_step or "",
        _reason(c.error_kind, c.reason),
        f"{c.decision} by {c.decided_by or '?'}" if c.decision else "",
        f"{c.verdict_step}: {c.verdict_rule}" if c.verdict_step else "",
        c.policy_digest or "",
        "" if c.reruns is None else c.reruns,
        c.resume_decision or "",
    ]


#: Audit statuses as the command names them: a denied call was refused at approval.
_OUTCOMES = {"denied": "refused"}


def _reason(error_kind: str | None, reason: str | None) -> str:
    if not reason:
        return ""
    return f"{error_kind}: {reason[:120]}" if error_kind else reason


def _report(skipped: Skipped | None) -> None:
    if skipped:
        report_skipped(skipped.positions, skipped.damaged)
