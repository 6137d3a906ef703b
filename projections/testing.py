"""Helpers for testing projections (yours and ours): a deterministic mixed log, and a dump
of every read-model table to compare a live run with a rebuild.

    head = await write_mixed_log(store, 5000)
    assert dump_tables(live_views) == dump_tables(rebuilt_views)
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from clawlog.events import ANY, Event, EventMetadata, EventStore, open_store
from clawlog.events.domain.actor import (
    ActorEscalated,
    ActorFailed,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
    DeadLetter,
)
from clawlog.events.domain.agent import (
    HandoffCleared,
    HandoffRouted,
    SubagentFinished,
    SubagentSpawned,
)
from clawlog.events.domain.delegation import (
    DelegationCompleted,
    DelegationFailed,
    DelegationRequested,
)
from clawlog.events.domain.mcp import (
    McpAccessRequested,
    McpAccessReviewed,
    McpAgentGrantRevoked,
    McpAgentGrantSet,
    McpCallTimedOut,
    McpConnected,
    McpConnectFailed,
    McpConnecting,
    McpDisconnected,
    McpFailed,
    McpReconnectScheduled,
    McpServerConfigured,
    McpServerEnabledChanged,
    McpServerRemoved,
    McpToolInfo,
    McpToolsDiscovered,
    McpToolSkipped,
    McpToolsWithdrawn,
    McpUserGrantSet,
)
from clawlog.events.domain.session import (
    ModelReplied,
    ModelRequested,
    ToolCall,
    TurnCompleted,
    TurnStarted,
)
from clawlog.events.domain.team import (
    TeamCreated,
    TeamMember,
    TeamTaskClaimed,
    TeamTaskCompleted,
    TeamTaskCreated,
)
from clawlog.events.domain.timer import TimerCancelled, TimerFired, TimerMoved, TimerSet
from clawlog.events.domain.tool import (
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
    ToolCallRequested,
    ToolCallStarted,
    ToolLoopWarning,
)
from clawlog.events.streams import (
    agent_stream,
    guardian_stream,
    handoff_stream,
    link_stream,
    mcp_stream,
    session_stream,
    team_stream,
)

__all__ = ["dump_tables", "mixed_chunk", "write_mixed_log", "write_mixed_log_file"]

Chunk = tuple[str, list[Event], EventMetadata]


def dump_tables(path: str | Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of an SQLite file with its rows, sorted (row order is not data)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        return {name: sorted(conn.execute(f"SELECT * FROM {name}"), key=repr) for name in names}
    finally:
        conn.close()


async def write_mixed_log(store: EventStore, events: int, *, concurrency: int = 64) -> int:
    """Append about ``events`` events of every kind clawlog writes (sessions with tool
    calls that complete, are refused, wait for approval, fail or loop; team boards; actor
    lifecycles and dead letters; handoffs; delegations with their deadline timers;
    subagents). Returns the head.

    Numbering continues from the head, so a second call adds new calls, tasks and turns."""
    written = 0
    index = await store.head_position()
    while written < events:
        chunks = [mixed_chunk(index + k) for k in range(concurrency)]
        index += concurrency
        await asyncio.gather(*(store.append(s, e, ANY, meta) for s, e, meta in chunks))
        written += sum(len(e) for _, e, _ in chunks)
    return await store.head_position()


async def write_mixed_log_file(path: str | Path, events: int) -> int:
    """:func:`write_mixed_log` into the SQLite log at ``path`` (created, or continued),
    without an fsync per commit: a log made for tests and benchmarks, where generating it
    is not what is measured. Returns the head."""
    store = await open_store(path, synchronous="OFF")
    try:
        return await write_mixed_log(store, events)
    finally:
        await store.close()


def mixed_chunk(i: int) -> Chunk:
    """The ``i``-th append of the mixed log: (stream, events, metadata)."""
    match i % 10:
        case 0 | 1 | 2 | 3 | 4 | 5:
            return _turn(i)
        case 6:
            return _team(i)
        case 7:
            return _actor(i)
        case 8:
            return _handoff(i) if i % 20 < 10 else _delegation(i)
        case _:
            return _subagent(i) if i % 20 < 10 else _mcp(i)


def _turn(i: int) -> Chunk:
    agent, session_key = f"agent{i % 7}", f"user{i % 50}"
    stream, turn, call = session_stream(agent, session_key), f"turn-{i}", f"call-{i}"
    tool = ("read_file", "exec", "exec", "exec", "web_fetch", "web_fetch")[i // 10 % 6]
    who: dict[str, Any] = {
        "call_id": call,
        "tool": tool,
        "agent": agent,
        "session_key": session_key,
    }
    events: list[Event] = [
        TurnStarted(turn_id=turn, text=f"please do task {i}", user=session_key),
        ModelRequested(turn_id=turn, iteration=1, model="scripted", message_count=3),
        ModelReplied(
            turn_id=turn, iteration=1, tool_calls=[ToolCall(id=call, name=tool, arguments="{}")]
        ),
        ToolCallRequested(arguments={"n": i}, user=session_key, **who),
        *_tool_outcome(i // 10 % 6, who),
        ModelRequested(turn_id=turn, iteration=2, model="scripted", message_count=5),
        ModelReplied(turn_id=turn, iteration=2, text=f"done with {i}"),
        TurnCompleted(turn_id=turn, reply=f"answer {i}", iterations=2),
    ]
    return stream, events, EventMetadata(correlation_id=turn, actor=stream)


def _tool_outcome(variant: int, who: dict[str, Any]) -> list[Event]:
    ran: list[Event] = [
        ToolCallStarted(**who),
        ToolCallCompleted(for_llm="ok " * 30, duration_ms=12.5, **who),
    ]
    match variant:
        case 0:
            return ran
        case 1:
            return [
                ToolCallRefused(
                    step="policy", reason="exec is not in the tool list", rule="tools.allow", **who
                )
            ]
        case 2:
            return [
                ToolApprovalRequested(reason="exec asks first", summary="exec ls", **who),
                ToolApprovalDecided(decision="allow-once", by="operator", **who),
                *ran,
            ]
        case 3:
            return [
                ToolApprovalRequested(reason="exec asks first", summary="exec rm", **who),
                ToolApprovalDecided(decision="deny", by="operator", **who),
                ToolCallRefused(step="approval", reason="denied by operator", **who),
            ]
        case 4:
            return [
                ToolCallStarted(**who),
                ToolCallFailed(
                    error_kind="timeout", message="no reply in 30 s", duration_ms=30000.0, **who
                ),
            ]
        case _:
            warning = ToolLoopWarning(pattern="generic_repeat", count=3, message="same call", **who)
            return [warning, *ran]


def _team(i: int) -> Chunk:
    task = f"task-{i}"
    blocked = [f"task-{i - 50}"] if i % 30 == 16 else []
    events: list[Event] = []
    if i < 100:  # the first chunks create the team, later ones rename it (a reconfiguration)
        members = [TeamMember(agent=f"member{m}") for m in range(3)]
        name = f"team {i % 5}" + (" (renamed)" if i >= 50 else "")
        events.append(TeamCreated(team_id=f"team{i % 5}", name=name, lead="lead", members=members))
    events += [
        TeamTaskCreated(task_id=task, subject=f"subject {i}", priority=i % 5, blocked_by=blocked),
        TeamTaskClaimed(task_id=task, by=f"member{i % 3}"),
    ]
    if i % 3:
        events.append(TeamTaskCompleted(task_id=task, by=f"member{i % 3}", result="done"))
    team = team_stream(f"team{i % 5}")
    return team, events, EventMetadata(actor=team)


def _actor(i: int) -> Chunk:
    path = session_stream(f"agent{i % 7}", f"user{i % 50}")
    failed = ActorFailed(
        path=path, error_type="RuntimeError", message=f"boom {i}", traceback_digest=f"{i % 4:016x}"
    )
    lifecycles: list[list[Event]] = [
        [ActorStarted(path=path, kind="session", version=i)],
        [
            failed,
            ActorRestarted(path=path, attempt=1, delay_s=0.5),
            ActorStarted(path=path, kind="session"),
        ],
        [ActorStopped(path=path, reason="passivated")],
        [
            failed,
            ActorEscalated(
                path=path, failures=3, window_s=60.0, error_type="RuntimeError", message="too many"
            ),
        ],
    ]
    variant = i // 10 % 5
    if variant == 4:
        letter = DeadLetter(path=path, message_type="UserMessage", reason="actor stopped")
        return guardian_stream(), [letter], EventMetadata(actor=guardian_stream())
    return path, lifecycles[variant], EventMetadata(actor=path)


def _handoff(i: int) -> Chunk:
    channel, chat = "telegram", f"chat{i % 13}"
    event: Event = (
        HandoffRouted(channel=channel, chat_id=chat, from_agent="agent0", to_agent=f"agent{i % 7}")
        if i % 40 < 30
        else HandoffCleared(channel=channel, chat_id=chat, agent=f"agent{i % 7}")
    )
    return handoff_stream(channel, chat), [event], EventMetadata(actor=agent_stream("agent0"))


def _delegation(i: int) -> Chunk:
    source, target, delegation = f"agent{i % 7}", f"agent{(i + 1) % 7}", f"d-{i}"
    outcome: Event = (
        DelegationCompleted(delegation_id=delegation, result="done", at=i + 5.0)
        if i % 3
        else DelegationFailed(delegation_id=delegation, reason="timeout", at=i + 300.0)
    )
    requested = DelegationRequested(
        delegation_id=delegation, source=source, target=target, task=f"help with {i}", at=i
    )
    # Its deadline, a durable timer: cancelled by the answer, or fired (a timeout); some
    # links move it first, and every fourth one is still pending.
    timer = f"deadline:{delegation}"
    deadline: list[Event] = [
        TimerSet(timer_id=timer, kind="delegation_deadline", due_at=i + 300.0, subject=delegation)
    ]
    if i % 5 == 0:
        deadline.append(TimerMoved(timer_id=timer, due_at=i + 600.0, previous_due_at=i + 300.0))
    if i % 4 == 3:
        ended: list[Event] = []
    elif i % 3:
        ended = [TimerCancelled(timer_id=timer, reason=f"delegation {delegation} ended")]
    else:
        ended = [TimerFired(timer_id=timer, due_at=i + 300.0, fired_at=i + 300.0)]
    stream = link_stream(source, target)
    return stream, [requested, *deadline, *ended, outcome], EventMetadata(actor=stream)


def _subagent(i: int) -> Chunk:
    agent, task = f"agent{i % 7}", f"sub-{i}"
    events: list[Event] = [
        SubagentSpawned(
            task_id=task,
            parent_session=session_stream(agent, f"user{i % 50}"),
            task=f"research {i}",
            at=float(i),
        ),
        SubagentFinished(
            task_id=task, status="completed" if i % 4 else "failed", result="found it", at=i + 1.0
        ),
    ]
    return agent_stream(agent), events, EventMetadata(actor=agent_stream(agent))


def _mcp(i: int) -> Chunk:
    """A server's lifecycle in six steps: connected with tools, a timeout and a reconnect,
    attempts used up, grants and a request, disabled, removed (then configured again)."""
    server = f"server{i // 120 % 3}"
    tools = [
        McpToolInfo(name="echo", registered_name=f"mcp_{server}_echo", read_only=True),
        McpToolInfo(
            name="wipe",
            registered_name=f"mcp_{server}_wipe",
            destructive=True,
            requires_approval=True,
        ),
    ]
    skipped = [McpToolSkipped(name="exec", reason="shadows the built-in exec")]
    failed = McpConnectFailed(server=server, attempt=2, error_kind="connect_error", message="no")
    steps: list[list[Event]] = [
        [
            McpServerConfigured(server=server, transport="stdio", settings={"max_attempts": 3}),
            McpConnecting(server=server, attempt=1),
            McpConnected(server=server, attempt=1, server_name="demo", server_version=f"{i}"),
            McpToolsDiscovered(server=server, tools=tools, skipped=skipped),
        ],
        [
            McpCallTimedOut(server=server, tool="echo", timeout_s=2.5),
            McpDisconnected(server=server, cause="call_timeout", message="stalled"),
            McpToolsWithdrawn(server=server, names=[t.registered_name for t in tools]),
            McpReconnectScheduled(server=server, attempt=2, delay_s=2.0, max_attempts=3),
        ],
        [McpConnecting(server=server, attempt=2), failed, McpFailed(server=server, attempts=3)],
        [
            McpAgentGrantSet(server=server, agent=f"agent{i % 7}", tool_deny=["wipe"]),
            McpUserGrantSet(server=server, user="*", tool_allow=["echo"]),
            McpAccessRequested(server=server, request_id=f"r-{i}", scope="agent", subject="x"),
        ],
        [
            McpAccessReviewed(server=server, request_id=f"r-{i - 20}", decision="approved"),
            McpAgentGrantRevoked(server=server, agent=f"agent{(i - 20) % 7}"),
            McpServerEnabledChanged(server=server, enabled=False),
        ],
        [McpServerRemoved(server=server)],
    ]
    stream = mcp_stream(server)
    return stream, steps[i // 20 % 6], EventMetadata(actor=stream)
