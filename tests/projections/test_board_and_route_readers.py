"""Task boards, handoff routes, delegations and subagent tasks: their readers' queries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clawlog.events import ANY, Event, EventMetadata, EventStore, SqliteBackend, open_store
from clawlog.events.domain.agent import (
    HandoffCleared,
    HandoffRouted,
    SubagentFinished,
    SubagentSpawned,
)
from clawlog.events.domain.delegation import DelegationCompleted, DelegationRequested
from clawlog.events.domain.session import ModelReplied, ToolCall, TurnStarted
from clawlog.events.domain.team import (
    TeamCreated,
    TeamMember,
    TeamTaskClaimed,
    TeamTaskCompleted,
    TeamTaskCreated,
    TeamTaskUnblocked,
)
from clawlog.projections import (
    ALL_PROJECTIONS,
    DelegationReader,
    HandoffRouteReader,
    ProjectionRunner,
    ReadModels,
    SessionHistoryReader,
    SubagentTaskReader,
    TaskBoardReader,
)


async def append(store: EventStore, stream: str, *events: Event) -> int:
    recorded = await store.append(stream, list(events), ANY, EventMetadata(actor=stream))
    return recorded[-1].position


@pytest.fixture
async def views(tmp_path: Path) -> AsyncIterator[tuple[EventStore, ReadModels]]:
    projections = [p() for p in ALL_PROJECTIONS]
    async with (
        await open_store(SqliteBackend(tmp_path / "log.db")) as store,
        ProjectionRunner(store, None, projections) as runner,
    ):
        runner.start()
        async with ReadModels(runner.path, runner=runner) as models:
            yield store, models


async def test_a_board_lists_tasks_in_creation_order_with_blockers_and_claims(
    views: tuple[EventStore, ReadModels],
) -> None:
    store, models = views
    members = [TeamMember(agent="dev"), TeamMember(agent="qa")]
    await append(
        store, "team/rel", TeamCreated(team_id="rel", name="Release", lead="lead", members=members)
    )
    await append(
        store,
        "team/rel",
        TeamTaskCreated(task_id="t1", subject="changelog", priority=3),
        TeamTaskCreated(task_id="t2", subject="tag", priority=1, blocked_by=["t1"]),
        TeamTaskCreated(task_id="t3", subject="tests", priority=2),
        TeamTaskClaimed(task_id="t1", by="dev"),
    )
    last = await append(  # the Team actor records the unblocking it decides
        store,
        "team/rel",
        TeamTaskCompleted(task_id="t1", by="dev", result="ok"),
        TeamTaskUnblocked(task_id="t2"),
    )
    boards = TaskBoardReader(models)
    await boards.wait_until(last)
    board = await boards.board("rel")
    assert board is not None
    assert (board.name, board.lead, board.members) == ("Release", "lead", ["dev", "qa"])
    assert [(t.task_id, t.status, t.claimed_by, t.blocked_by) for t in board.tasks] == [
        ("t1", "completed", "dev", []),
        ("t2", "pending", "", ["t1"]),
        ("t3", "pending", "", []),
    ]
    assert await boards.teams() == [("rel", "Release", "lead")]
    pending = await boards.tasks("rel", status="pending", limit=1)
    assert [t.task_id for t in pending] == ["t2"]
    after = await boards.tasks("rel", status="pending", after=pending[-1].position)
    assert [t.task_id for t in after] == ["t3"]
    assert await boards.board("nope") is None


async def test_routes_follow_routing_and_clearing(views: tuple[EventStore, ReadModels]) -> None:
    store, models = views
    await append(
        store,
        "handoff/web/c1",
        HandoffRouted(channel="web", chat_id="c1", from_agent="a", to_agent="billing"),
    )
    await append(
        store,
        "handoff/cli/c2",
        HandoffRouted(channel="cli", chat_id="c2", from_agent="a", to_agent="support"),
    )
    last = await append(
        store, "handoff/web/c1", HandoffCleared(channel="web", chat_id="c1", agent="billing")
    )
    reader = HandoffRouteReader(models)
    await reader.wait_until(last)
    assert [(r.channel, r.chat_id, r.agent) for r in await reader.routes()] == [
        ("cli", "c2", "support")
    ]
    assert await reader.routes(channel="web") == []
    assert (await reader.route("cli", "c2")) is not None
    assert await reader.route("web", "c1") is None


async def test_delegations_show_which_are_overdue_as_of_a_time(
    views: tuple[EventStore, ReadModels],
) -> None:
    store, models = views
    ask = dict(source="lead", target="billing", task="check invoice", deadline_s=60.0)
    await append(
        store,
        "link/lead->billing",
        DelegationRequested(delegation_id="d1", at=1000.0, **ask),
        DelegationRequested(delegation_id="d2", at=1010.0, **ask),
    )
    last = await append(
        store,
        "link/lead->billing",
        DelegationCompleted(delegation_id="d1", result="paid", at=1020.0),
    )
    reader = DelegationReader(models)
    await reader.wait_until(last)
    every = await reader.delegations(now=1100.0)
    assert [(d.delegation_id, d.status, d.overdue) for d in every] == [
        ("d1", "completed", False),
        ("d2", "running", True),
    ]
    assert [d.delegation_id for d in await reader.delegations(overdue_only=True, now=1100.0)] == [
        "d2"
    ]
    assert await reader.delegations(overdue_only=True, now=1050.0) == []
    assert [d.delegation_id for d in await reader.delegations(status="completed")] == ["d1"]


async def test_subagent_tasks_by_agent_and_status(views: tuple[EventStore, ReadModels]) -> None:
    store, models = views
    await append(
        store,
        "agent/lead",
        SubagentSpawned(task_id="s1", parent_session="session/lead/u", task="sum", at=1.0),
        SubagentSpawned(task_id="s2", parent_session="session/lead/u", task="more", at=2.0),
    )
    last = await append(
        store, "agent/lead", SubagentFinished(task_id="s1", status="completed", result="3 fixes")
    )
    reader = SubagentTaskReader(models)
    await reader.wait_until(last)
    tasks = await reader.tasks(agent="lead")
    assert [(t.task_id, t.status, t.result) for t in tasks] == [
        ("s1", "completed", "3 fixes"),
        ("s2", "running", None),
    ]
    assert [t.task_id for t in await reader.tasks(status="running")] == ["s2"]


async def test_history_shows_tool_requests_but_not_plain_replies_twice(
    views: tuple[EventStore, ReadModels],
) -> None:
    store, models = views
    stream = "session/main/u1"
    last = await append(
        store,
        stream,
        TurnStarted(turn_id="t", text="hi", sender="user"),
        ModelReplied(
            turn_id="t",
            iteration=1,
            tool_calls=[ToolCall(id="c1", name="read_file", arguments='{"path":"a"}')],
        ),
        ModelReplied(turn_id="t", iteration=2, text="done"),
    )
    reader = SessionHistoryReader(models)
    await reader.wait_until(last)
    assert [(e.kind, e.who, e.text) for e in await reader.page(stream)] == [
        ("user", "user", "hi"),
        ("tool_calls", "main", 'read_file({"path":"a"})'),
    ]
