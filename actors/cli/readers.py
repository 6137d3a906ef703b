"""Reader commands: tail, history, board, routes. They only read the log."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec

from events import EventStore, RecordedEvent, UnknownEvent
from events.domain.agent import HandoffCleared, HandoffRouted
from events.domain.session import ModelReplied, TurnCompleted, TurnFailed, TurnStarted

from ..teams.board import BoardState, apply_board_event
from .logfile import CliError
from .render import console, emit_json, table

__all__ = [
    "audit",
    "audit_refusals",
    "board",
    "delegations",
    "history",
    "routes",
    "summarize",
    "tail",
]


def summarize(recorded: RecordedEvent) -> str:
    """A one-line description of an event's fields."""
    event = recorded.event
    fields = event.as_dict() if isinstance(event, UnknownEvent) else msgspec.to_builtins(event)
    fields.pop("type", None)
    parts = []
    for key, value in fields.items():
        if value in (None, "", [], {}, 0) and key not in ("version",):
            continue
        text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
        parts.append(f"{key}={text[:120]}")
    return " ".join(parts)


def _row(recorded: RecordedEvent) -> list[Any]:
    when = dt.datetime.fromtimestamp(recorded.recorded_at, dt.UTC).strftime("%H:%M:%S.%f")[:-3]
    return [recorded.position, when, recorded.stream, recorded.type, summarize(recorded)]


async def tail(
    store: EventStore,
    *,
    follow: bool,
    last: int,
    stream_prefix: str | None,
    types: list[str] | None,
    as_json: bool,
) -> None:
    head = await store.head_position()
    start = max(head - last + 1, 1) if last else 1
    events = []
    while True:
        page = await store.read_all(start, 1000, stream_prefix=stream_prefix, types=types)
        events.extend(page)
        if len(page) < 1000:
            break
        start = page[-1].position + 1
    events = events[-last:] if last else events
    _print_events(events, as_json)
    if not follow:
        return
    next_position = (events[-1].position + 1) if events else head + 1
    async with store.subscribe(next_position, stream_prefix=stream_prefix, types=types) as live:
        async for recorded in live:
            _print_events([recorded], as_json)


def _print_events(events: list[RecordedEvent], as_json: bool) -> None:
    if as_json:
        for recorded in events:
            emit_json(recorded)
        return
    for recorded in events:
        position, when, stream, type_, text = _row(recorded)
        console.print(
            f"[dim]{position:>7} {when}[/dim] [cyan]{stream}[/cyan] [bold]{type_}[/bold] {text}"
        )


_TOOL_LINES: dict[str, Any] = {
    "tool.call_completed": lambda e: f"{e.tool} → {e.for_llm[:200]}",
    "tool.call_failed": lambda e: f"{e.tool} failed ({e.error_kind}): {e.message[:200]}",
    "tool.call_refused": lambda e: f"{e.tool} refused at {e.step}: {e.reason}",
    "tool.approval_requested": lambda e: f"{e.tool} awaits approval: {e.reason}",
    "tool.approval_decided": lambda e: f"{e.tool}: {e.decision} by {e.by or '?'}",
}


async def history(store: EventStore, agent: str, session_key: str, *, as_json: bool) -> None:
    stream = f"session/{agent}/{session_key}"
    events = await store.read_stream(stream)
    if not events:
        raise CliError(f"no session {session_key!r} for agent {agent!r} in this log")
    rows = []
    for recorded in events:
        event = recorded.event
        match event:
            case TurnStarted():
                rows.append([recorded.position, event.sender, event.text])
            case ModelReplied() if event.tool_calls:
                calls = ", ".join(f"{c.name}({c.arguments[:80]})" for c in event.tool_calls)
                rows.append([recorded.position, f"{agent} → tools", calls])
            case TurnCompleted():
                rows.append([recorded.position, agent, event.reply])
            case TurnFailed():
                rows.append([recorded.position, "failed", f"{event.reason}: {event.message}"])
            case _ if recorded.type in _TOOL_LINES:
                rows.append([recorded.position, recorded.type, _TOOL_LINES[recorded.type](event)])
    if as_json:
        emit_json([dict(zip(("position", "who", "text"), r, strict=True)) for r in rows])
        return
    table(f"session history: {stream}", ["pos", "who", "text"], rows)


async def board(store: EventStore, team_id: str, *, as_json: bool) -> None:
    state = BoardState()
    events = await store.read_stream(f"team/{team_id}")
    if not events:
        raise CliError(f"no team {team_id!r} in this log")
    for recorded in events:
        if not isinstance(recorded.event, UnknownEvent):
            apply_board_event(state, recorded.event)
    tasks = sorted(state.tasks.values(), key=lambda t: t.seq)
    if as_json:
        emit_json({"team": team_id, "name": state.name, "lead": state.lead, "tasks": tasks})
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
        for t in tasks
    ]
    table(
        f"task board: {state.name} ({team_id}), lead {state.lead}",
        ["task", "subject", "prio", "status", "by", "blocked by", "result"],
        rows,
    )


async def routes(store: EventStore, *, as_json: bool) -> None:
    current: dict[tuple[str, str], dict[str, Any]] = {}
    start = 1
    while True:
        page = await store.read_all(start, 1000, stream_prefix="handoff/")
        for recorded in page:
            event = recorded.event
            if isinstance(event, HandoffRouted):
                current[(event.channel, event.chat_id)] = {
                    "channel": event.channel,
                    "chat_id": event.chat_id,
                    "agent": event.to_agent,
                    "from": event.from_agent,
                    "reason": event.reason,
                    "position": recorded.position,
                }
            elif isinstance(event, HandoffCleared):
                current.pop((event.channel, event.chat_id), None)
        if len(page) < 1000:
            break
        start = page[-1].position + 1
    items = list(current.values())
    if as_json:
        emit_json(items)
        return
    table(
        "handoff routes",
        ["channel", "chat", "agent", "from", "reason", "since pos"],
        [
            [r["channel"], r["chat_id"], r["agent"], r["from"], r["reason"], r["position"]]
            for r in items
        ],
    )


async def audit_refusals(store: EventStore, *, as_json: bool = False) -> None:
    """Every refused tool call, with the step and reason (from the log)."""
    rows = []
    start = 1
    while True:
        page = await store.read_all(start, 1000, types=["tool.call_refused"])
        for recorded in page:
            event: Any = recorded.event
            rows.append([recorded.position, recorded.stream, event.tool, event.step, event.reason])
        if len(page) < 1000:
            break
        start = page[-1].position + 1
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
    from ..delegation.overview import delegation_overview

    rows = await delegation_overview(store, overdue_only=overdue)
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


_AUDIT_TYPES = [
    "tool.call_requested",
    "tool.call_refused",
    "tool.approval_requested",
    "tool.approval_decided",
    "tool.call_completed",
    "tool.call_failed",
]


async def audit(store: EventStore, *, tool: str | None, refused: bool, as_json: bool) -> None:
    """One row per tool call: requested, then how it ended and why."""
    calls: dict[tuple[str, str, str], dict[str, Any]] = {}
    start = 1
    while True:
        page = await store.read_all(start, 2000, types=_AUDIT_TYPES)
        for recorded in page:
            event: Any = recorded.event
            # Call ids repeat across sessions and turns (models number them per reply).
            key = (recorded.stream, recorded.correlation_id or "", event.call_id)
            row = calls.setdefault(
                key,
                {
                    "call_id": event.call_id,
                    "tool": event.tool,
                    "stream": recorded.stream,
                    "outcome": "",
                    "step": "",
                    "reason": "",
                    "approval": "",
                },
            )
            match recorded.type:
                case "tool.call_refused":
                    row.update(outcome="refused", step=event.step, reason=event.reason)
                case "tool.approval_decided":
                    row["approval"] = f"{event.decision} by {event.by or '?'}"
                case "tool.call_completed":
                    row["outcome"] = "completed"
                case "tool.call_failed":
                    row.update(
                        outcome="failed", reason=f"{event.error_kind}: {event.message[:120]}"
                    )
        if len(page) < 2000:
            break
        start = page[-1].position + 1
    rows = [
        r
        for r in calls.values()
        if (tool is None or r["tool"] == tool) and (not refused or r["outcome"] == "refused")
    ]
    if as_json:
        emit_json(rows)
        return
    table(
        "tool-call audit",
        ["call", "tool", "stream", "outcome", "step", "reason", "approval"],
        [
            [
                r["call_id"],
                r["tool"],
                r["stream"],
                r["outcome"],
                r["step"],
                r["reason"],
                r["approval"],
            ]
            for r in rows
        ],
    )
