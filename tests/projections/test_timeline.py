"""Timelines straight from the log, with their filters and pages, and state as of a position."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawlog.events import ANY, EventMetadata, EventStore, RecordedEvent, open_store
from clawlog.events.domain.team import TeamTaskClaimed, TeamTaskCompleted, TeamTaskCreated
from clawlog.events.domain.tool import ToolCallCompleted, ToolCallRequested, ToolCallStarted
from clawlog.projections import TimelineQuery, read_timeline, state_as_of
from clawlog.projections.timeline import timeline
from tests.projections.support import write_turns


async def write_log(store: EventStore) -> list[RecordedEvent]:
    written = await write_turns(store, "session/main/u1", ["hello"])
    who: dict[str, Any] = {"call_id": "c1", "tool": "exec"}
    written += await store.append(
        "session/main/u1",
        [ToolCallRequested(**who), ToolCallStarted(**who), ToolCallCompleted(**who)],
        ANY,
        EventMetadata(correlation_id="turn-hello", actor="session/main/u1/tools"),
    )
    written += await write_turns(store, "session/ops/u2", ["other"])
    team = EventMetadata(correlation_id="job-7", actor="team/t1")
    for task in ("a", "b"):
        written += await store.append(
            "team/t1", [TeamTaskCreated(task_id=task, subject=f"do {task}")], ANY, team
        )
    written += await store.append("team/t1", [TeamTaskClaimed(task_id="a", by="dev")], ANY, team)
    written += await store.append(
        "team/t1", [TeamTaskCompleted(task_id="a", by="dev", result="ok")], ANY, team
    )
    return written


def kinds(events: list[RecordedEvent]) -> list[tuple[int, str]]:
    return [(e.position, e.type) for e in events]


async def test_timeline_filters(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "clawlog.db") as store:
        written = await write_log(store)

        async def positions(**filters: Any) -> list[int]:
            return [e.position for e in await read_timeline(store, TimelineQuery(**filters))]

        assert await positions() == [e.position for e in written] == list(range(1, 12))
        assert await positions(stream="session/main/u1") == [1, 2, 3, 4, 5]
        assert await positions(stream_prefix="session/") == [1, 2, 3, 4, 5, 6, 7]
        assert await positions(correlation_id="turn-hello") == [1, 2, 3, 4, 5]
        assert await positions(correlation_id="job-7", types=("team.task_created",)) == [8, 9]
        assert await positions(types=("tool.*",)) == [3, 4, 5]
        assert await positions(types=("tool.*", "session.turn_started")) == [1, 3, 4, 5, 6]
        assert await positions(types=("nothing.*",)) == []
        # An actor path matches itself and the paths below it, not its namesakes.
        assert await positions(actor="session/main/u1") == [1, 2, 3, 4, 5]
        assert await positions(actor="session/main/u1/tools") == [3, 4, 5]
        assert await positions(actor="session/main/u") == []
        assert await positions(stream="team/t1", actor="team/t1", types=("team.task_claimed",)) == [
            10
        ]
        assert await positions(stream="session/main/u1", stream_prefix="team/") == []
        cut = written[7].recorded_at
        assert all(e.recorded_at < cut for e in written[:7]), "commits are ordered in time"
        assert await positions(since=cut) == [8, 9, 10, 11]
        assert await positions(until=cut) == [1, 2, 3, 4, 5, 6, 7]
        assert await positions(since=cut, until=written[9].recorded_at) == [8, 9]


async def test_timeline_pages_and_bounds(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "clawlog.db") as store:
        await write_log(store)
        query = TimelineQuery(stream_prefix="session/")
        first = await read_timeline(store, query, limit=3)
        second = await read_timeline(store, query, after=first[-1].position, limit=3)
        third = await read_timeline(store, query, after=second[-1].position, limit=3)
        assert kinds(first + second + third) == kinds(await read_timeline(store, query))
        assert len(third) == 1
        in_stream = await read_timeline(store, TimelineQuery(stream="team/t1"), after=9)
        assert [e.position for e in in_stream] == [10, 11]
        bounded = [e.position async for e in timeline(store, up_to=4)]
        assert bounded == [1, 2, 3, 4]


def board(state: dict[str, str], recorded: RecordedEvent) -> dict[str, str]:
    event: Any = recorded.event
    status = {
        "team.task_created": "pending",
        "team.task_claimed": "claimed",
        "team.task_completed": "done",
    }[recorded.type]
    return {**state, event.task_id: status}


async def test_state_as_of_a_position(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "clawlog.db") as store:
        await write_log(store)
        empty: dict[str, str] = {}
        now = await state_as_of(store, "team/t1", board, empty)
        assert now.state == {"a": "done", "b": "pending"}
        assert (now.position, now.events) == (11, 4)
        then = await state_as_of(store, "team/t1", board, empty, position=10)
        assert then.state == {"a": "claimed", "b": "pending"} and then.position == 10
        before = await state_as_of(store, "team/t1", board, empty, position=7)
        assert (before.state, before.position, before.events) == ({}, 0, 0)

        def count(n: int, recorded: RecordedEvent) -> int:
            return n + 1

        in_turn = await state_as_of(
            store, TimelineQuery(correlation_id="turn-hello"), count, 0, position=4
        )
        assert (in_turn.state, in_turn.position) == (4, 4)
